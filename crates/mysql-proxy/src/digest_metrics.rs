//! The query digest table and the per-table invalidation counts as metric families: the
//! [`TOP`] statements run most often and the [`TOP`] tables invalidated most, so the
//! number of series stays bounded however many statements the applications send.
//!
//! - `sqlcached_query_digest_executions_total{digest,query,outcome}`: executions by how
//!   they were answered (`hit`, `miss`, `bypassed`, `not_cached`, `write`, `other`);
//! - `sqlcached_query_digest_backend_seconds_total{digest,query}`: backend time of misses;
//! - `sqlcached_query_digest_bytes_total{digest,query}`: bytes of replies;
//! - `sqlcached_query_digest_invalidations_total{digest,query}`: its cached results dropped;
//! - `sqlcached_query_cache_table_invalidations_total{table}`.
//!
//! `digest` is the statement's 64-bit digest key in hex (stable across restarts), `query`
//! its normalized text (literals as `?`, at most 240 bytes).

use engine::stats::{Series, StatSink, Value};
use querycache::QueryCache;

/// Statements (and tables) exported.
pub const TOP: usize = 20;

/// Write the families.
pub fn write(qc: &QueryCache, sink: &mut dyn StatSink) {
    let (mut runs, mut backend, mut bytes, mut dropped) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for d in qc.digests(TOP) {
        let labels = || vec![("digest", format!("{:016x}", d.id)), ("query", d.text.clone())];
        let other = d.count.saturating_sub(d.hits + d.misses + d.bypassed + d.not_cached + d.writes);
        for (outcome, n) in [
            ("hit", d.hits),
            ("miss", d.misses),
            ("bypassed", d.bypassed),
            ("not_cached", d.not_cached),
            ("write", d.writes),
            ("other", other),
        ] {
            let mut l = labels();
            l.push(("outcome", outcome.to_string()));
            runs.push(Series::new(l, Value::Counter(n)));
        }
        backend.push(Series::new(labels(), Value::CounterFloat(d.backend_us as f64 / 1e6)));
        bytes.push(Series::new(labels(), Value::Counter(d.bytes)));
        dropped.push(Series::new(labels(), Value::Counter(d.invalidations)));
    }
    sink.family(
        "query_digest_executions",
        "Executions of the statements run most often (normalized text), by how they were answered",
        &runs,
    );
    sink.family("query_digest_backend_seconds", "Backend time of cache misses, per statement", &backend);
    sink.family("query_digest_bytes", "Bytes of replies (hits and misses), per statement", &bytes);
    sink.family(
        "query_digest_invalidations",
        "Cached results of the statement dropped because what they read changed",
        &dropped,
    );
    let tables: Vec<Series> = qc
        .table_invalidations(TOP)
        .into_iter()
        .map(|(t, n)| Series::new(vec![("table", t)], Value::Counter(n)))
        .collect();
    sink.family(
        "query_cache_table_invalidations",
        "Invalidations of cached results per table (rows or the whole table), the tables invalidated most",
        &tables,
    );
}
