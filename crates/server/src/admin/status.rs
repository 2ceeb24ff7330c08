//! `GET /` (the live status page) and `GET /stats.json` (what it polls).
//!
//! The page is one HTML file with its script and styles inline, embedded in the binary:
//! it works without internet. Every second it fetches `/stats.json` (every `stats` figure,
//! from the same [`StatSink`] producers as the memcached port and `/metrics`, and the
//! admin thread's last two minutes of rates, `super::history`) and draws rates, ratios
//! and the last two minutes as charts with a time axis.

use std::path::Path;
use std::sync::Arc;

use engine::stats::{Kind, StatSink};
use serde_json::{Map, Value};

use super::history::History;
use crate::shared::Shared;

/// The page.
pub const PAGE: &str = include_str!("status.html");

/// A [`StatSink`] building a JSON object: numbers stay numbers, the rest are strings.
struct JsonSink(Map<String, Value>);

impl StatSink for JsonSink {
    fn stat(&mut self, name: &str, _kind: Kind, value: &dyn std::fmt::Display) {
        let text = value.to_string();
        let v = match text.parse::<u64>() {
            Ok(n) => Value::from(n),
            Err(_) => match text.parse::<f64>() {
                Ok(f) if f.is_finite() => Value::from(f),
                _ => Value::from(text),
            },
        };
        self.0.insert(name.to_string(), v);
    }
}

/// Every `stats` figure as one JSON object: the flat report the page and [`History`] read.
pub fn report(shared: &Arc<Shared>) -> Map<String, Value> {
    let mut sink = JsonSink(Map::new());
    crate::stats::report(b"", shared, &mut sink);
    sink.0
}

/// What `/stats.json` answers: the report, with the MySQL query digest table's top 20
/// statements under `queries` (when the proxy caches) and the PostgreSQL one's under
/// `pg_queries`, the containers and `--invalidate`
/// rules in detail, the data directory's bytes on disk, and the last two minutes of rates
/// under `history`.
pub fn json(shared: &Arc<Shared>, history: &History) -> String {
    let mut out = report(shared);
    if let Some(cache) = shared.mysql.as_ref().and_then(|p| p.cache.as_ref()) {
        let rows = cache.digests(20).into_iter().map(|d| {
            let mut row = digest_row(&d);
            row.insert("invalidations".into(), d.invalidations.into());
            row.insert("bypassed".into(), d.bypassed.into());
            row.insert("bypassed_now".into(), cache.bypassed(d.id).into());
            Value::Object(row)
        });
        out.insert("queries".into(), Value::Array(rows.collect()));
    }
    if let Some((cache, _)) = shared.postgres.as_ref().and_then(|p| p.cache.as_ref()) {
        let rows = cache.digests(20).into_iter().map(|d| Value::Object(digest_row(&d)));
        out.insert("pg_queries".into(), Value::Array(rows.collect()));
    }
    if let Some(slot) = &shared.sql {
        out.insert("containers".into(), crate::containers::describe::status(slot));
    }
    if let Some(rules) = &shared.invalidate {
        out.insert("invalidate".into(), rules.status());
    }
    if let Some(dir) = &shared.cfg.persistence.data_dir {
        out.insert("disk_allocated".into(), Value::from(allocated(Path::new(dir))));
    }
    out.insert("history".into(), history.json());
    Value::Object(out).to_string()
}

/// One row of a query cache's digest table, as both caches show it.
fn digest_row(d: &sql_source::digests::DigestStats) -> Map<String, Value> {
    let v = serde_json::json!({
        "text": d.text, "count": d.count, "hits": d.hits, "misses": d.misses,
        "not_cached": d.not_cached, "reason": d.reason, "writes": d.writes,
        "backend_us": d.backend_us, "bytes": d.bytes,
    });
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// Bytes the files under `dir` take on disk: their allocated blocks, not their apparent
/// sizes (fjall's journal is preallocated as a sparse file: 64 MiB long, a few KiB used).
fn allocated(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => allocated(&e.path()),
            Ok(m) => m.blocks() * 512,
            Err(_) => 0,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_stay_numbers() {
        let mut s = JsonSink(Map::new());
        s.stat("a", Kind::Counter, &7u64);
        s.stat("b", Kind::Gauge, &"0.25");
        s.stat("c", Kind::Info, &"say \"hi\"");
        let v = Value::Object(s.0).to_string();
        assert_eq!(v, r#"{"a":7,"b":0.25,"c":"say \"hi\""}"#);
    }
}
