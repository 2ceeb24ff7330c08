//! SQL containers (`--containers FILE`, crate `sql-containers`): the InnoDB memcached plugin's
//! `@@name.key` routing, `bind`, and the cache policies, on top of the protocol front
//! ends. See `docs/containers.md`.
//!
//! Which keys go here is decided by `crate::route`; an operation on a container returns a
//! `crate::pending::Later` outcome, which the front end turns into a pending reply
//! (`Flow::Pending`); `conn.rs` awaits it in request order, so worker threads never block
//! on SQL.

use std::sync::Arc;

use engine::{Clock, Engine, EngineConfig};
use sql_containers::{
    BackendError, CachePolicy, Container, Containers, LoadError, PlainKeys, Reply, Request, SqlConfig,
};

use std::cell::Cell;

pub use crate::pending::Fail;

pub mod binlog;
mod cache;
pub mod describe;
pub mod slot;
pub mod stats;
use self::cache::{caching_op, memory_op};
pub use self::slot::Slot;
use self::stats::{ContainerStats, Counted};
use ::binlog::feeds::Feeds;

/// The loaded containers and their memory copies.
pub struct Sql {
    pub set: Containers,
    list: Vec<Container>,
    /// One private engine per container whose policy uses memory (cache_only/caching):
    /// container keys never share a namespace with client keys.
    caches: Vec<Option<Arc<Engine>>>,
    default: usize,
    /// Per-container counters, for `stats` ([`Sql::stats_lines`]).
    counters: Vec<Arc<ContainerStats>>,
    /// Whether operations are timed (`--metrics-listen`).
    timing: bool,
    /// The `caching` containers' freshness rule (`max_lag_ms`; none without a binlog).
    fresh: Option<Arc<::binlog::fresh::Freshness>>,
    /// The check of the account the `caching` containers follow the binlog with (none
    /// without a binlog): degraded or not.
    pub health: Option<Arc<::binlog::health::Health>>,
    /// The backend in words (`SQLite ./data/containers.db`), for the log and status page.
    backend: String,
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

impl From<BackendError> for Fail {
    fn from(e: BackendError) -> Fail {
        match e {
            BackendError::Invalid(_) => Fail::Client(e.to_string()),
            _ => Fail::Server(e.to_string()),
        }
    }
}

/// What the containers' memory copies are sized and timed by: the main engine's figures
/// (memory, -I, -C and clock).
#[derive(Clone)]
pub struct Budget {
    memory_limit: usize,
    item_size_max: usize,
    use_cas: bool,
    clock: Clock,
}

impl Budget {
    /// The main engine's memory limit, item size limit and clock.
    pub fn of(main: &Engine) -> Budget {
        Budget {
            memory_limit: main.memory_limit(),
            item_size_max: main.config().item_size_max,
            use_cas: main.config().use_cas,
            clock: main.clock().clone(),
        }
    }
}

/// Load `--containers FILE` and say what to do if it fails: a slot that is ready, or one
/// that waits for an unreachable backend (retried by [`Slot::retry`]); `Err` for a wrong
/// configuration.
pub fn start(path: &str, budget: &Budget, timing: bool, feeds: &Arc<Feeds>) -> Result<Slot, String> {
    match load(path, budget, timing, feeds) {
        Ok(sql) => Ok(Slot::ready(sql)),
        Err(LoadError::Unreachable(why)) => {
            let cfg = SqlConfig::from_file(path.as_ref())?;
            Ok(Slot::waiting(why, cfg.file_plain_keys() == PlainKeys::DefaultContainer))
        }
        Err(LoadError::Invalid(e)) => Err(e),
    }
}

/// Load `--containers FILE`: parse, start the backend, validate every container.
/// Operations are timed for the latency histograms when `timing` (`--metrics-listen`);
/// `caching` containers on MariaDB/MySQL follow the backend's binlog on `feeds`.
pub fn load(path: &str, budget: &Budget, timing: bool, feeds: &Feeds) -> Result<Sql, LoadError> {
    let mut cfg = SqlConfig::from_file(path.as_ref())?;
    sqlite_dir_exists(&cfg)?;
    // Containers measure items against -I exactly as the engine does.
    cfg.options.item_limit = Some(engine::ItemLimit { max: budget.item_size_max, use_cas: budget.use_cas });
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
    let per = (budget.memory_limit / 4 / users).max(2 << 20);
    let caches = list
        .iter()
        .map(|c| {
            let p = c.policy();
            [p.get, p.set, p.delete, p.flush]
                .iter()
                .any(|p| matches!(p, CachePolicy::CacheOnly | CachePolicy::Caching))
                .then(|| {
                    Arc::new(Engine::with_clock(
                        EngineConfig {
                            memory_limit: per,
                            item_size_max: budget.item_size_max,
                            evict: true,
                            use_cas: budget.use_cas,
                            shards: 16,
                        },
                        budget.clock.clone(),
                    ))
                })
        })
        .collect();
    let counters: Vec<Arc<ContainerStats>> = list.iter().map(|_| Arc::default()).collect();
    let watched: Vec<self::binlog::Watched> = list
        .iter()
        .zip(&caches)
        .zip(&counters)
        .filter(|((c, _), _)| c.policy().get == CachePolicy::Caching)
        .filter_map(|((c, e), stats): ((&Container, &Option<Arc<Engine>>), &Arc<ContainerStats>)| {
            Some(self::binlog::Watched {
                db: c.schema_name().to_string(),
                table: c.table_name().to_string(),
                key_column: c.key_column().to_string(),
                cache: e.clone()?,
                stats: stats.clone(),
            })
        })
        .collect();
    let (fresh, health) = match cfg.backend.mysql_login() {
        Some(login) => self::binlog::start(login, watched, feeds, set.options().max_lag_ms),
        None => (None, None),
    };
    let backend = describe::backend(&cfg);
    Ok(Sql { set, list, caches, default, counters, timing, fresh, health, backend })
}

/// SQLite creates its database file but not the directory it is in: say so, rather than
/// SQLite's `unable to open database file`.
fn sqlite_dir_exists(cfg: &SqlConfig) -> Result<(), String> {
    let Some(file) = cfg.backend.path.as_deref().filter(|_| cfg.backend.kind == sql_containers::BackendKind::Sqlite)
    else {
        return Ok(());
    };
    let dir = file.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
    if dir.is_dir() {
        return Ok(());
    }
    let cwd =
        std::env::current_dir().map(|d| format!(" (relative paths start at {})", d.display())).unwrap_or_default();
    Err(format!(
        "SQLite {}: the directory {} does not exist{cwd}; create it (mkdir -p {}) and the tables the containers \
         name, or give another path",
        file.display(),
        dir.display(),
        dir.display()
    ))
}

impl Sql {
    /// The binding a fresh connection starts with.
    pub fn initial_binding(&self) -> Option<usize> {
        (self.set.options().plain_keys == PlainKeys::DefaultContainer).then_some(self.default)
    }

    /// The container this connection's plain keys go to: its `bind`, else the initial
    /// binding (also for connections opened before the containers loaded).
    pub fn binding(&self, bound: &Cell<Option<usize>>) -> Option<usize> {
        bound.get().or_else(|| self.initial_binding())
    }

    /// Do `@@name.key` references also bind the connection? (Yes in the plugin's mode,
    /// Bytes the containers' memory copies hold now (the memory budget's containers share).
    pub fn memory_used(&self) -> usize {
        self.caches.iter().flatten().map(|e| e.mem_used()).sum()
    }

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
    pub fn route<'k>(&self, bound: &Cell<Option<usize>>, key: &'k [u8]) -> Target<'k> {
        let t = self.resolve(self.binding(bound), key);
        match t {
            Target::Bind(i) => bound.set(Some(i)),
            Target::Container(i, _) if self.mapped_key_binds() && key.starts_with(b"@@") => bound.set(Some(i)),
            _ => {}
        }
        t
    }

    /// Is `key` one for the containers (mapped, or the connection is bound)?
    pub fn claims(&self, bound: &Cell<Option<usize>>, key: &[u8]) -> bool {
        self.binding(bound).is_some() || key.starts_with(b"@@")
    }

    pub fn unknown(name: &[u8]) -> Fail {
        Fail::Client(format!("unknown container '{}'", String::from_utf8_lossy(name)))
    }

    pub fn missing_key(&self, i: usize) -> Fail {
        Fail::Client(format!("no key after container name '{}' (connection now bound to it)", self.name(i)))
    }

    /// Writes the containers' figures (all counters) into `sink`, and their labeled
    /// families (keys by outcome, operations, latencies) for the metrics.
    pub fn write_stats(&self, sink: &mut dyn engine::stats::StatSink) {
        for (name, value) in self.stats_lines() {
            sink.stat(&name, engine::stats::Kind::Counter, &value);
        }
        if let Some(h) = &self.health {
            h.write_stats(sink);
        }
        let (mut keys, mut ops, mut latency) = (Vec::new(), Vec::new(), Vec::new());
        for (c, s) in self.list.iter().zip(&self.counters) {
            s.series(c.name(), &mut keys, &mut ops, &mut latency);
        }
        sink.family("container_keys", "Container keys looked up, by container and outcome", &keys);
        sink.family("container_operations", "Container operations other than gets, by container and kind", &ops);
        sink.family(
            "container_operation_duration",
            "Time of a container operation (backend and memory copy), by container and kind",
            &latency,
        );
    }

    /// Drop `key`'s value from container `i` if that container keeps values only in
    /// memory (`cache_only` writes): a refused `set` must not leave the old value.
    pub fn forget_cache_only(&self, i: usize, key: &[u8]) {
        if let (CachePolicy::CacheOnly, Some(e)) = (self.list[i].policy().set, &self.caches[i]) {
            e.access(key, engine::Receipt::none()).remove();
        }
    }

    /// Zero the containers' counters (`stats reset`; the backend's own stay).
    pub fn reset_stats(&self) {
        self.counters.iter().for_each(|c| c.reset());
    }

    /// The containers' counters by their `stats` names.
    fn stats_lines(&self) -> Vec<(String, u64)> {
        let mut out = Vec::new();
        for (c, s) in self.list.iter().zip(&self.counters) {
            s.lines(c.name(), &mut out);
        }
        self::stats::backend_lines(&self.set.stats(), &mut out);
        out
    }

    /// Run one operation on container `i` under its policy, counting it.
    pub async fn run(self: Arc<Self>, i: usize, op: Request) -> Result<Reply, Fail> {
        let kind = match &op {
            Request::Get { touch: None, .. } => None,
            Request::Get { .. } | Request::Store { .. } | Request::Arith { .. } | Request::Touch { .. } => {
                Some(Counted::Write)
            }
            Request::Delete { .. } => Some(Counted::Delete),
            Request::Flush => Some(Counted::Flush),
        };
        let timed = match &kind {
            None => 0,
            Some(Counted::Delete) => 2,
            Some(Counted::Flush) => 3,
            Some(_) => 1,
        };
        let t = self.timing.then(std::time::Instant::now);
        let r = self.clone().run_uncounted(i, op).await;
        let s = &self.counters[i];
        s.timed(timed, t);
        match (&r, kind) {
            (Err(_), _) => s.count(Counted::Error),
            (Ok(Reply::Rows(rows)), None) => {
                let hits = rows.iter().filter(|r| r.is_some()).count() as u64;
                s.count(Counted::Get { keys: rows.len() as u64, hits })
            }
            (Ok(_), Some(k)) => s.count(k),
            (Ok(_), None) => {}
        }
        r
    }

    async fn run_uncounted(self: Arc<Self>, i: usize, op: Request) -> Result<Reply, Fail> {
        let c = &self.list[i];
        let p = c.policy();
        let policy = match &op {
            Request::Get { touch: None, .. } => p.get,
            Request::Get { .. } | Request::Store { .. } | Request::Arith { .. } | Request::Touch { .. } => p.set,
            Request::Delete { .. } => p.delete,
            Request::Flush => p.flush,
        };
        let cache = self.caches[i].as_deref();
        match (policy, cache) {
            (CachePolicy::Disabled, _) => Err(Fail::Server(format!("operation disabled for container {}", c.name()))),
            (CachePolicy::CacheOnly, Some(e)) => memory_op(e, op),
            (CachePolicy::Caching, Some(e)) => caching_op(c, e, op, self.fresh.as_deref(), &self.counters[i]).await,
            _ => Ok(c.execute(op).await?),
        }
    }
}
