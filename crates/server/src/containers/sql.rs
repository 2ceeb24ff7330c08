//! [`Sql`]: the loaded containers, their private engines (the memory copies of `cache_only`
//! and `caching` containers), their counters, and how a key is routed to one of them.

use std::cell::Cell;
use std::sync::Arc;
use std::time::Instant;

use engine::{Clock, Engine, EngineConfig};
use sql_containers::{CachePolicy, Container, Containers, LoadError, PlainKeys, Reply, Request, SqlConfig};

use super::cache::{caching_op, Copy};
use super::stats::{ContainerStats, Counted};
use super::through::Expect;
use crate::feeds::SourceFeeds as Feeds;
use crate::pending::Fail;

/// The loaded containers and their memory copies.
pub struct Sql {
    pub set: Containers,
    pub(super) list: Vec<Container>,
    /// One private engine per container whose policy uses memory (cache_only/caching):
    /// container keys never share a namespace with client keys.
    caches: Vec<Option<Arc<Engine>>>,
    /// The same engines as `caching` memory copies (with their write-through and read
    /// bypass state).
    copies: Vec<Option<Arc<Copy>>>,
    default: usize,
    /// Per-container counters, for `stats` ([`Sql::stats_lines`]).
    counters: Vec<Arc<ContainerStats>>,
    /// Whether operations are timed (`--metrics-listen`).
    timing: bool,
    /// The `caching` containers' freshness rule (`max_lag_ms`; none without a binlog).
    fresh: Option<Arc<::sql_source::fresh::Freshness>>,
    /// The check of the account the `caching` containers follow the binlog with (none
    /// without a binlog): degraded or not.
    pub health: Option<Arc<::binlog::health::Health>>,
    /// The backend in words (`SQLite ./data/containers.db`), for the log and status page.
    pub(super) backend: String,
    /// The main engine's clock (rows' TTLs as replies show them).
    clock: Clock,
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
    // `caching` gets follow the backend's log (MariaDB/MySQL's binlog, PostgreSQL's WAL), and
    // their writes are written through when the log shows their rows.
    let login = cfg.backend.mysql_login();
    let wal = cfg.backend.kind == sql_containers::BackendKind::Postgres && cfg.backend.url.is_some();
    let copies: Vec<Option<Arc<Copy>>> = list
        .iter()
        .zip(&caches)
        .map(|(c, e): (&Container, &Option<Arc<Engine>>)| {
            let watched = (login.is_some() || wal) && c.policy().get == CachePolicy::Caching;
            Some(Arc::new(Copy::new(e.clone()?, watched.then(|| Arc::new(Expect::default())))))
        })
        .collect();
    let watched: Vec<super::binlog::Watched> = list
        .iter()
        .zip(&copies)
        .zip(&counters)
        .filter(|((c, _), _)| c.policy().get == CachePolicy::Caching)
        .filter_map(|((c, copy), stats)| {
            Some(super::binlog::Watched {
                db: c.schema_name().to_string(),
                table: c.table_name().to_string(),
                key_column: c.key_column().to_string(),
                container: c.clone(),
                copy: copy.clone()?,
                stats: stats.clone(),
            })
        })
        .collect();
    let (fresh, health) = match (login, cfg.backend.kind, cfg.backend.url.as_deref()) {
        (Some(login), _, _) => super::binlog::start(login, watched, feeds, set.options().max_lag_ms),
        (None, sql_containers::BackendKind::Postgres, Some(url)) => {
            (super::wal::start(url, watched, feeds, set.options().max_lag_ms), None)
        }
        _ => (None, None),
    };
    let backend = super::describe::backend(&cfg);
    let clock = budget.clock.clone();
    Ok(Sql { set, list, caches, copies, default, counters, timing, fresh, health, backend, clock })
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

    /// Bytes the containers' memory copies hold now (the memory budget's containers share).
    pub fn memory_used(&self) -> usize {
        self.caches.iter().flatten().map(|e| e.mem_used()).sum()
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

    /// `@@name` alone: the connection is bound to container `i` now.
    pub fn missing_key(&self, i: usize) -> Fail {
        Fail::Bound(format!("no key after container name '{}' (connection now bound to it)", self.name(i)))
    }

    /// Container `i`.
    pub fn container(&self, i: usize) -> &Container {
        &self.list[i]
    }

    /// Container `i`'s private engine (its policy uses memory: `cache_only`, `caching`).
    pub fn memory(&self, i: usize) -> Option<&Engine> {
        self.caches[i].as_deref()
    }

    /// Unix time now, as the server's clock says.
    pub fn unix_now(&self) -> i64 {
        self.clock.unix_now()
    }

    /// When an operation starts, if operations are timed (`--metrics-listen`).
    pub fn started(&self) -> Option<Instant> {
        self.timing.then(Instant::now)
    }

    /// Count one operation of container `i` (begun at `t`, if timed).
    pub fn record(&self, i: usize, what: Counted, t: Option<Instant>) {
        let s = &self.counters[i];
        s.timed(what.op_index(), t);
        s.count(what);
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
    pub(super) fn stats_lines(&self) -> Vec<(String, u64)> {
        let mut out = Vec::new();
        for (c, s) in self.list.iter().zip(&self.counters) {
            s.lines(c.name(), &mut out);
        }
        super::stats::backend_lines(&self.set.stats(), &mut out);
        out
    }

    /// Run one operation on container `i` under its `caching` or `innodb_only` policy,
    /// counting it (`cache_only` operations run in memory: `crate::exec`).
    pub async fn run(self: Arc<Self>, i: usize, op: Request) -> Result<Reply, Fail> {
        let get = matches!(op, Request::Get { touch: None, .. });
        let kind = match &op {
            Request::Delete { .. } => Counted::Delete,
            Request::Flush => Counted::Flush,
            _ => Counted::Write,
        };
        let t = self.started();
        let r = self.clone().run_uncounted(i, op).await;
        let what = match &r {
            Err(_) => Counted::Error,
            Ok(Reply::Rows(rows)) if get => {
                Counted::Get { keys: rows.len() as u64, hits: rows.iter().filter(|r| r.is_some()).count() as u64 }
            }
            Ok(_) => kind,
        };
        // An error is timed as the operation it was (a get's as a get).
        let timed = if get { Counted::Get { keys: 0, hits: 0 } } else { kind };
        self.counters[i].timed(timed.op_index(), t);
        self.counters[i].count(what);
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
        match (policy, self.copies[i].as_deref()) {
            (CachePolicy::Disabled, _) => Err(Fail::Server(format!("operation disabled for container {}", c.name()))),
            (CachePolicy::CacheOnly, _) => Err(Fail::Server("internal: cache_only operations run in memory".into())),
            (CachePolicy::Caching, Some(e)) => caching_op(c, e, op, self.fresh.as_deref(), &self.counters[i]).await,
            _ => Ok(c.execute(op).await?),
        }
    }
}
