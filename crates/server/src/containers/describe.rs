//! What the containers are, in words: the start log's line (which containers loaded, on
//! which table, under which policy) and the status page's rows.

use serde_json::{json, Value};
use sql_containers::{BackendKind, Container, Policy, SqlConfig};

use super::{Slot, Sql};

/// The backend as the log says it: `SQLite /var/lib/sqlcached/containers.db`, `MariaDB/MySQL
/// 127.0.0.1:3306`, `PostgreSQL 127.0.0.1:5432/app` (never the URL's password).
pub fn backend(cfg: &SqlConfig) -> String {
    match cfg.backend.kind {
        BackendKind::Sqlite => {
            format!("SQLite {}", cfg.backend.path.as_deref().map(|p| p.display().to_string()).unwrap_or_default())
        }
        BackendKind::Mysql => {
            format!("MariaDB/MySQL {}", cfg.backend.mysql_login().map(|l| l.address).unwrap_or_else(|| "?".into()))
        }
        BackendKind::Postgres => {
            format!("PostgreSQL {}", cfg.backend.postgres_address().unwrap_or_else(|| "?".into()))
        }
    }
}

/// `caching`, or each family's when they differ: `get caching, set innodb_only, ...`.
pub fn policy(p: &Policy) -> String {
    let each = [("get", p.get), ("set", p.set), ("delete", p.delete), ("flush", p.flush)];
    if each.iter().all(|(_, c)| *c == p.get) {
        return p.get.as_str().to_string();
    }
    each.iter().map(|(op, c)| format!("{op} {}", c.as_str())).collect::<Vec<_>>().join(", ")
}

fn one(c: &Container) -> String {
    format!("@@{} -> {} (key {}; {})", c.name(), c.table(), c.key_column(), policy(c.policy()))
}

/// The start log's line: `2 containers on SQLite ./data/containers.db: @@default -> main.kv
/// (key k; innodb_only), @@users -> main.users (key id; get caching, ...)`.
pub fn summary(sql: &Sql) -> String {
    let n = sql.list.len();
    let list = sql.list.iter().map(one).collect::<Vec<_>>().join(", ");
    format!("{n} container{} on {}: {list}", if n == 1 { "" } else { "s" }, sql.backend)
}

/// The status page's view: the backend and its state, then per container its table,
/// policy and counters.
pub fn status(slot: &Slot) -> Value {
    let Some(sql) = slot.get() else {
        return json!({ "ready": false, "state": slot.unavailable().text() });
    };
    let lines: std::collections::HashMap<String, u64> = sql.stats_lines().into_iter().collect();
    let stat = |c: &str, what: &str| lines.get(&format!("container_{c}_{what}")).copied().unwrap_or(0);
    let rows: Vec<Value> = sql
        .list
        .iter()
        .map(|c| {
            let n = c.name();
            json!({
                "name": n, "table": c.table(), "key": c.key_column(), "policy": policy(c.policy()),
                "hits": stat(n, "get_hits"), "misses": stat(n, "get_misses"), "writes": stat(n, "writes"),
                "deletes": stat(n, "deletes"), "errors": stat(n, "errors"),
                "written_through": stat(n, "written_through"), "read_bypasses": stat(n, "read_bypasses"),
            })
        })
        .collect();
    let b = sql.set.stats();
    json!({
        "ready": true, "backend": sql.backend, "state": "ok",
        "backend_errors": b.errors, "backend_commits": b.commits, "list": rows,
    })
}
