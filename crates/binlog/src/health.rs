//! Whether a cache fed by the binlog can work with its account: checked at start by
//! logging in as that account ([`crate::account::check`]: the login, replication rights,
//! the binlog's settings, what `information_schema` shows), before the server says it is
//! ready. Used by the MySQL proxy's query cache (`mysql proxy`, stats `mysql_proxy_*`) and
//! the `caching` containers (`containers`, stats `containers_binlog_*`).
//!
//! A problem that stops the cache from following the binlog (a wrong password, no
//! REPLICATION SLAVE, no binlog) does not stop the start: the proxy still relays every
//! query and the containers read their tables (clients keep working, only slower), but it
//! is said in one line at the default level (`mysql proxy: DEGRADED: ...`, with the fix), in
//! `stats` (`<prefix>_degraded 1`, `<prefix>_degraded_reason`, `<prefix>_degraded_message`),
//! in `/metrics` (`sqlcached_<prefix>_degraded`, `sqlcached_<prefix>_degraded_reason{reason}`)
//! and on the status page. The check runs again every [`RECHECK`] until it passes, so a
//! GRANT on the backend is enough: no restart (docs/querycache.md, "Checked at start").

use std::sync::{Arc, Mutex};
use std::time::Duration;

use engine::stats::{Kind, Series, StatSink, Value};

use crate::account::{self, Problem, Verdict};

/// How often a degraded (or unreachable) proxy checks its account again.
pub const RECHECK: Duration = Duration::from_secs(10);
/// How long one step of the check may take.
const TIMEOUT: Duration = Duration::from_secs(5);

/// The last check's outcome.
#[derive(Default)]
struct State {
    /// What stops caching (empty: nothing).
    blocking: Vec<Problem>,
    /// The last check's whole verdict (None: not checked, the settings said enough).
    verdict: Option<Verdict>,
}

/// Who a [`Health`] speaks for.
#[derive(Clone, Copy, Debug)]
pub struct Who {
    /// How log lines start (`mysql proxy`).
    pub name: &'static str,
    /// What degraded means for it (`not caching, every query goes to the backend`).
    pub degraded: &'static str,
    /// Its stats names' prefix (`mysql_proxy`: `mysql_proxy_degraded`, ...).
    pub stats: &'static str,
}

/// One cache's account check and what it found.
pub struct Health {
    who: Who,
    state: Mutex<State>,
}

impl Health {
    /// Health with a problem known from the settings alone (no account given).
    pub fn misconfigured(who: Who, problem: Problem) -> Arc<Health> {
        log::error!("{}: DEGRADED: {}: {}", who.name, who.degraded, problem.message);
        Arc::new(Health { who, state: Mutex::new(State { blocking: vec![problem], verdict: None }) })
    }

    /// Checks `cfg`'s account now (logging what it finds), and again every [`RECHECK`] on a
    /// thread of its own while something blocks following the binlog or the backend does
    /// not answer.
    pub fn start(who: Who, cfg: crate::Config) -> Arc<Health> {
        let health = Arc::new(Health { who, state: Mutex::default() });
        let verdict = account::check(&cfg, TIMEOUT);
        let settled = health.apply(&cfg.backend, &verdict, true);
        if !settled {
            let (h, cfg) = (health.clone(), cfg);
            let spawned = std::thread::Builder::new().name("sqlcached-account-check".into()).spawn(move || loop {
                std::thread::sleep(RECHECK);
                if h.apply(&cfg.backend, &account::check(&cfg, TIMEOUT), false) {
                    return;
                }
            });
            if let Err(e) = spawned {
                log::error!("{}: cannot start the account check thread: {e}", who.name);
            }
        }
        health
    }

    /// Takes a check's verdict, logging what changed; true when settled (nothing blocks).
    fn apply(&self, backend: &str, verdict: &Verdict, first: bool) -> bool {
        let who = self.who;
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        st.verdict = Some(verdict.clone());
        match verdict {
            Verdict::Unreachable(why) => {
                if first {
                    log::warn!(
                        "{}: backend {backend} does not answer ({why}): its account is checked again every {} s",
                        who.name,
                        RECHECK.as_secs()
                    );
                }
                false
            }
            Verdict::Checked { version, problems } => {
                let blocking: Vec<Problem> = problems.iter().filter(|p| p.blocking).cloned().collect();
                if first {
                    for p in problems.iter().filter(|p| !p.blocking) {
                        log::warn!("{}: {}", who.name, p.message);
                    }
                }
                if blocking.is_empty() {
                    if !st.blocking.is_empty() {
                        log::warn!(
                            "{}: no longer degraded: its account passes every check on {backend} ({version}); the \
                             binlog is followed as soon as it flows",
                            who.name
                        );
                    } else if first {
                        log::info!(
                            "{}: account checked on {backend} ({version}): login, replication rights, binlog",
                            who.name
                        );
                    }
                } else if blocking != st.blocking {
                    let what: Vec<&str> = blocking.iter().map(|p| p.message.as_str()).collect();
                    log::error!(
                        "{}: DEGRADED: {}: {} (checked again every {} s)",
                        who.name,
                        who.degraded,
                        what.join("; "),
                        RECHECK.as_secs()
                    );
                }
                let settled = blocking.is_empty();
                st.blocking = blocking;
                settled
            }
        }
    }

    /// The last check's verdict (for `--check-config`, which prints it).
    pub fn verdict(&self) -> Option<Verdict> {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).verdict.clone()
    }

    /// The checks that stop caching now (empty: none).
    pub fn blocking(&self) -> Vec<Problem> {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).blocking.clone()
    }

    /// `<prefix>_degraded` (0/1), `<prefix>_degraded_reason` (the checks, comma-separated)
    /// and `<prefix>_degraded_message` (what is wrong, and the fix); for the metrics, one
    /// `<prefix>_degraded_reason{reason}` series per failing check.
    pub fn write_stats(&self, sink: &mut dyn StatSink) {
        let blocking = self.blocking();
        let reasons: Vec<&str> = blocking.iter().map(|p| p.check).collect();
        let messages: Vec<&str> = blocking.iter().map(|p| p.message.as_str()).collect();
        let name = |what: &str| format!("{}_{what}", self.who.stats);
        sink.stat(&name("degraded"), Kind::Gauge, &u8::from(!blocking.is_empty()));
        sink.stat(&name("degraded_reason"), Kind::Info, &reasons.join(","));
        sink.stat(&name("degraded_message"), Kind::Info, &messages.join("; "));
        if sink.wants_families() && !reasons.is_empty() {
            let series: Vec<Series> = reasons
                .iter()
                .map(|r| Series { labels: vec![("reason", r.to_string())], value: Value::Gauge(1) })
                .collect();
            let help = format!("why {} is degraded (1 per failing check)", self.who.name);
            sink.family(&name("degraded_reason"), &help, &series);
        }
    }
}
