//! SQL containers (`--containers FILE`, crate `tier-sql`): the InnoDB memcached plugin's
//! `@@name.key` routing, `bind`, and the cache policies, on top of the protocol front
//! ends. See `docs/containers.md`.
//!
//! A command that reaches a container becomes a [`Job`]: an owned future that produces
//! the command's reply bytes. The front end stores it in the connection's [`Ctx`] and
//! stops (`Flow::Job`); `conn.rs` awaits it, appends the reply and goes on with the
//! buffer, so replies stay in request order and worker threads never block on SQL.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use engine::ops::{self as eops, GetOptions};
use engine::{Engine, EngineConfig};
use tier_sql::{
    ArithOutcome, BackendError, CachePolicy, Container, Containers, DeleteOutcome, PlainKeys, Row, SqlConfig,
    StoreMode, StoreOutcome,
};

use crate::ctx::Ctx;

/// A container command in flight: resolves to its reply bytes.
pub type Job = Pin<Box<dyn Future<Output = Vec<u8>> + Send>>;

/// Bytes of the header the `caching` policy keeps in front of a cached value: the row's
/// backend cas and absolute exptime (so a hit answers what the table would).
const CACHE_HEADER: usize = 16;

/// The loaded containers and their memory copies.
pub struct Sql {
    pub set: Containers,
    list: Vec<Container>,
    /// One private engine per container whose policy uses memory (cache_only/caching):
    /// container keys never share a namespace with client keys.
    caches: Vec<Option<Engine>>,
    default: usize,
}

/// Where one key goes.
pub enum Target<'k> {
    /// The in-memory engine (plain memcached).
    Memory,
    /// Container `i`, key `k`.
    Container(usize, &'k [u8]),
    /// `@@name` alone: bind to container `i`.
    Bind(usize),
    /// `@@name...` naming no container.
    Unknown(&'k [u8]),
}

/// Why a container operation produced no outcome: the reply line (without `\r\n`).
pub enum Fail {
    Client(String),
    Server(String),
}

impl Fail {
    pub fn line(&self) -> Vec<u8> {
        let (p, s) = match self {
            Fail::Client(s) => ("CLIENT_ERROR ", s),
            Fail::Server(s) => ("SERVER_ERROR ", s),
        };
        let mut v = p.as_bytes().to_vec();
        v.extend(s.bytes().map(|b| if b == b'\r' || b == b'\n' { b' ' } else { b }));
        v.extend_from_slice(b"\r\n");
        v
    }

    pub fn text(&self) -> &str {
        match self {
            Fail::Client(s) | Fail::Server(s) => s,
        }
    }
}

impl From<BackendError> for Fail {
    fn from(e: BackendError) -> Fail {
        match e {
            BackendError::Invalid(_) => Fail::Client(e.to_string()),
            _ => Fail::Server(e.to_string()),
        }
    }
}

/// One operation on a container (owned: it outlives the read buffer).
pub enum Op {
    /// get/gets (`touch` None) or gat/gats.
    Get {
        keys: Vec<Vec<u8>>,
        touch: Option<i64>,
    },
    Store {
        mode: StoreMode,
        key: Vec<u8>,
        value: Vec<u8>,
        flags: u32,
        exptime: i64,
        cas: u64,
    },
    Delete {
        key: Vec<u8>,
        cas: u64,
    },
    Arith {
        key: Vec<u8>,
        incr: bool,
        delta: u64,
        init: Option<(u64, i64)>,
    },
    Touch {
        key: Vec<u8>,
        exptime: i64,
    },
    Flush,
}

/// What an [`Op`] answered.
pub enum Out {
    Rows(Vec<Option<Row>>),
    Store(StoreOutcome),
    Delete(DeleteOutcome),
    Arith(ArithOutcome),
    Touch(Option<Row>),
    Done,
}

/// Load `--containers FILE`: parse, start the backend, validate every container.
pub fn load(path: &str, main: &Engine) -> Result<Sql, String> {
    let cfg = SqlConfig::from_file(path.as_ref())?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("containers: runtime: {e}"))?;
    let set = rt.block_on(Containers::load(&cfg))?;
    let list: Vec<Container> = set.iter().cloned().collect();
    let default = list.iter().position(|c| c.name() == set.default_container().name()).unwrap_or(0);
    let users = list
        .iter()
        .filter(|c| {
            let p = c.policy();
            [p.get, p.set, p.delete, p.flush].iter().any(|p| matches!(p, CachePolicy::CacheOnly | CachePolicy::Caching))
        })
        .count()
        .max(1);
    let per = (main.memory_limit() / 4 / users).max(2 << 20);
    let caches = list
        .iter()
        .map(|c| {
            let p = c.policy();
            [p.get, p.set, p.delete, p.flush]
                .iter()
                .any(|p| matches!(p, CachePolicy::CacheOnly | CachePolicy::Caching))
                .then(|| {
                    Engine::with_clock(
                        EngineConfig {
                            memory_limit: per,
                            item_size_max: main.config().item_size_max,
                            evict: true,
                            use_cas: true,
                            shards: 16,
                        },
                        main.clock().clone(),
                    )
                })
        })
        .collect();
    Ok(Sql { set, list, caches, default })
}

impl Sql {
    /// The binding a fresh connection starts with.
    pub fn initial_binding(&self) -> Option<usize> {
        (self.set.options().plain_keys == PlainKeys::DefaultContainer).then_some(self.default)
    }

    /// Do `@@name.key` references also bind the connection? (Yes in the plugin's mode,
    /// `plain_keys = "default_container"`; with `memory` only `get @@name` / `bind` do.)
    pub fn mapped_key_binds(&self) -> bool {
        self.set.options().plain_keys == PlainKeys::DefaultContainer
    }

    pub fn index(&self, name: &[u8]) -> Option<usize> {
        let name = std::str::from_utf8(name).ok()?;
        self.list.iter().position(|c| c.name() == name)
    }

    pub fn name(&self, i: usize) -> &str {
        self.list[i].name()
    }

    /// Route one key for a connection bound to `bound`.
    pub fn resolve<'k>(&self, bound: Option<usize>, key: &'k [u8]) -> Target<'k> {
        match self.set.split_mapped_key(key) {
            Some((name, k)) => match (self.index(name), k) {
                (Some(i), Some(k)) => Target::Container(i, k),
                (Some(i), None) => Target::Bind(i),
                (None, _) => Target::Unknown(name),
            },
            None => match bound {
                Some(i) => Target::Container(i, key),
                None => Target::Memory,
            },
        }
    }

    /// Resolve a key and apply the binding side effects; `Memory` stays `Memory`.
    pub fn route<'k>(&self, ctx: &Ctx<'_>, key: &'k [u8]) -> Target<'k> {
        let t = self.resolve(ctx.bound.get(), key);
        match t {
            Target::Bind(i) => ctx.bound.set(Some(i)),
            Target::Container(i, _) if self.mapped_key_binds() && key.starts_with(b"@@") => ctx.bound.set(Some(i)),
            _ => {}
        }
        t
    }

    /// Is `key` one for the containers (mapped, or the connection is bound)?
    pub fn claims(&self, ctx: &Ctx<'_>, key: &[u8]) -> bool {
        ctx.bound.get().is_some() || key.starts_with(b"@@")
    }

    pub fn unknown(name: &[u8]) -> Fail {
        Fail::Client(format!("unknown container '{}'", String::from_utf8_lossy(name)))
    }

    pub fn missing_key(&self, i: usize) -> Fail {
        Fail::Client(format!("no key after container name '{}' (connection now bound to it)", self.name(i)))
    }

    /// Run one operation on container `i` under its policy.
    pub async fn run(self: Arc<Self>, i: usize, op: Op) -> Result<Out, Fail> {
        let c = &self.list[i];
        let p = c.policy();
        let policy = match &op {
            Op::Get { touch: None, .. } => p.get,
            Op::Get { .. } | Op::Store { .. } | Op::Arith { .. } | Op::Touch { .. } => p.set,
            Op::Delete { .. } => p.delete,
            Op::Flush => p.flush,
        };
        let cache = self.caches[i].as_ref();
        match (policy, cache) {
            (CachePolicy::Disabled, _) => Err(Fail::Server(format!("operation disabled for container {}", c.name()))),
            (CachePolicy::CacheOnly, Some(e)) => memory_op(e, op),
            (CachePolicy::Caching, Some(e)) => caching_op(c, e, op).await,
            _ => backend_op(c, op).await,
        }
    }
}

async fn backend_op(c: &Container, op: Op) -> Result<Out, Fail> {
    Ok(match op {
        Op::Get { keys, touch: None } => {
            let ks: Vec<&[u8]> = keys.iter().map(|k| &k[..]).collect();
            Out::Rows(c.get_many(&ks).await?)
        }
        Op::Get { keys, touch: Some(t) } => {
            let mut rows = Vec::with_capacity(keys.len());
            for k in &keys {
                rows.push(c.touch(k, t).await?);
            }
            Out::Rows(rows)
        }
        Op::Store { mode, key, value, flags, exptime, cas } => {
            Out::Store(c.store(mode, &key, &value, flags, exptime, cas).await?)
        }
        Op::Delete { key, cas } => Out::Delete(c.delete(&key, cas).await?),
        Op::Arith { key, incr, delta, init } => Out::Arith(c.arith(&key, incr, delta, init).await?),
        Op::Touch { key, exptime } => Out::Touch(c.touch(&key, exptime).await?),
        Op::Flush => {
            c.flush().await?;
            Out::Done
        }
    })
}

fn row_of(e: &Engine, it: &engine::item::Item) -> Row {
    let exptime = if it.exptime == 0 { 0 } else { e.clock().to_unix(it.exptime) };
    Row { value: it.value().to_vec(), flags: it.flags, cas: it.cas, exptime }
}

/// `cache_only`: the container's private engine, memcached's semantics.
fn memory_op(e: &Engine, op: Op) -> Result<Out, Fail> {
    Ok(match op {
        Op::Get { keys, touch } => Out::Rows(
            keys.iter().map(|k| eops::get(e, k, GetOptions { touch }, |it| it.map(|it| row_of(e, it)))).collect(),
        ),
        Op::Store { mode, key, value, flags, exptime, cas } => {
            let mode = match mode {
                StoreMode::Set => eops::StoreMode::Set,
                StoreMode::Add => eops::StoreMode::Add,
                StoreMode::Replace => eops::StoreMode::Replace,
                StoreMode::Append => eops::StoreMode::Append,
                StoreMode::Prepend => eops::StoreMode::Prepend,
                StoreMode::Cas => eops::StoreMode::Cas,
            };
            let req = eops::StoreRequest {
                mode,
                key: &key,
                value: &value,
                flags,
                exptime,
                cas,
                set_stale: false,
                vivify: None,
                key_binary: false,
            };
            Out::Store(match eops::store(e, &req) {
                eops::StoreOutcome::Stored(cas) => StoreOutcome::Stored { cas },
                eops::StoreOutcome::NotStored => StoreOutcome::NotStored,
                eops::StoreOutcome::Exists => StoreOutcome::Exists,
                eops::StoreOutcome::NotFound => StoreOutcome::NotFound,
                eops::StoreOutcome::NoMemory => return Err(Fail::Server("out of memory storing object".into())),
            })
        }
        Op::Delete { key, cas } => Out::Delete(match eops::delete(e, &key, cas) {
            eops::DeleteOutcome::Deleted => DeleteOutcome::Deleted,
            eops::DeleteOutcome::Exists => DeleteOutcome::Exists,
            _ => DeleteOutcome::NotFound,
        }),
        Op::Arith { key, incr, delta, init } => {
            let req = eops::ArithRequest { key: &key, incr, delta, cas: 0, create: init, touch: None };
            Out::Arith(match eops::arith(e, &req) {
                eops::ArithOutcome::Done { value, cas, .. } => ArithOutcome::Value { value, cas },
                eops::ArithOutcome::NonNumeric => ArithOutcome::NonNumeric,
                eops::ArithOutcome::NoMemory => return Err(Fail::Server("out of memory".into())),
                _ => ArithOutcome::NotFound,
            })
        }
        Op::Touch { key, exptime } => {
            Out::Touch(eops::get(e, &key, GetOptions { touch: Some(exptime) }, |it| it.map(|it| row_of(e, it))))
        }
        Op::Flush => {
            e.flush_all(0);
            Out::Done
        }
    })
}

/// A cached copy of a row (`caching`), if present.
fn cached(e: &Engine, key: &[u8]) -> Option<Row> {
    eops::get(e, key, GetOptions { touch: None }, |it| {
        let it = it?;
        let v = it.value();
        (v.len() >= CACHE_HEADER).then(|| Row {
            cas: u64::from_be_bytes(v[..8].try_into().unwrap_or_default()),
            exptime: i64::from_be_bytes(v[8..16].try_into().unwrap_or_default()),
            flags: it.flags,
            value: v[CACHE_HEADER..].to_vec(),
        })
    })
}

/// Keep a row in memory for at most `cache_ttl` (and not past the row's own expiry).
fn fill(c: &Container, e: &Engine, key: &[u8], row: &Row) {
    let mut ttl = c.cache_ttl().as_secs() as i64;
    if row.exptime > 0 {
        ttl = ttl.min(row.exptime - e.clock().unix_now());
    }
    if ttl <= 0 {
        return;
    }
    let mut v = Vec::with_capacity(CACHE_HEADER + row.value.len());
    v.extend_from_slice(&row.cas.to_be_bytes());
    v.extend_from_slice(&row.exptime.to_be_bytes());
    v.extend_from_slice(&row.value);
    let req = eops::StoreRequest {
        mode: eops::StoreMode::Set,
        key,
        value: &v,
        flags: row.flags,
        exptime: ttl,
        cas: 0,
        set_stale: false,
        vivify: None,
        key_binary: false,
    };
    let _ = eops::store(e, &req);
}

/// `caching`: reads from memory first (a miss reads the table and fills memory for at
/// most `cache_ttl`); writes go to the table first, then drop the memory copy (the next
/// read refills it); flush empties both.
async fn caching_op(c: &Container, e: &Engine, op: Op) -> Result<Out, Fail> {
    match op {
        Op::Get { keys, touch: None } => {
            let mut rows: Vec<Option<Row>> = keys.iter().map(|k| cached(e, k)).collect();
            let miss: Vec<usize> = (0..keys.len()).filter(|&j| rows[j].is_none()).collect();
            if !miss.is_empty() {
                let ks: Vec<&[u8]> = miss.iter().map(|&j| &keys[j][..]).collect();
                let got = c.get_many(&ks).await?;
                for (j, r) in miss.into_iter().zip(got) {
                    if let Some(r) = &r {
                        fill(c, e, &keys[j], r);
                    }
                    rows[j] = r;
                }
            }
            Ok(Out::Rows(rows))
        }
        Op::Flush => {
            let r = backend_op(c, Op::Flush).await;
            e.flush_all(0);
            r
        }
        op => {
            let keys: Vec<Vec<u8>> = match &op {
                Op::Get { keys, .. } => keys.clone(),
                Op::Store { key, .. } | Op::Delete { key, .. } | Op::Arith { key, .. } | Op::Touch { key, .. } => {
                    vec![key.clone()]
                }
                Op::Flush => Vec::new(),
            };
            let r = backend_op(c, op).await;
            // Dropped whatever the outcome: a failed write may still have happened.
            for k in &keys {
                e.access(k).remove();
            }
            r
        }
    }
}
