//! Shared helpers for the query cache tests.
#![allow(dead_code)]

use querycache::{CacheType, Config, InTransactions, PkColumn, Plan, QueryCache, Session, TableInfo};

/// A cache with sbtest.sbtest1 (id INT primary key), sbtest.t2 (no integer key),
/// sbtest.v1 (a view), sbtest.t3 (id primary key) known to the registry.
pub fn cache_with(mode: CacheType, size: usize) -> QueryCache {
    cache_with_policy(mode, size, InTransactions::ReadOnly)
}

/// [`cache_with`], with a policy for reads inside transactions.
pub fn cache_with_policy(mode: CacheType, size: usize, in_transactions: InTransactions) -> QueryCache {
    let c = QueryCache::new(Config { size, limit: 1 << 20, mode, in_transactions });
    let id = || vec![PkColumn::int("id")];
    c.schema().set_table("sbtest", "sbtest1", TableInfo::base(id()));
    c.schema().set_table("sbtest", "t3", TableInfo::base(id()));
    c.schema().set_table(
        "sbtest",
        "t2",
        TableInfo::base(vec![PkColumn { name: "name".into(), integer: false, string: None }]),
    );
    c.schema().set_table("sbtest", "v1", TableInfo::not_base());
    c.schema().set_table("other", "t1", TableInfo::base(id()));
    c.schema().set_table("mysql", "user", TableInfo::base(vec![]));
    // No triggers, cascades or stored functions but `shop.touch`.
    let mut fx = querycache::EffectsBuilder::default();
    fx.function("shop", "touch");
    c.schema().set_effects(fx.build());
    c
}

/// The default test cache.
pub fn cache() -> QueryCache {
    cache_with(CacheType::On, 64 << 20)
}

/// A session of user app in db sbtest (CLIENT_PROTOCOL_41, no DEPRECATE_EOF).
pub fn session(c: &QueryCache) -> Session {
    c.session("app", Some("sbtest"), 45, 0x0000_0200)
}

fn packet(seq: u8, payload: &[u8], out: &mut Vec<u8>) {
    let n = payload.len();
    out.extend_from_slice(&[n as u8, (n >> 8) as u8, (n >> 16) as u8, seq]);
    out.extend_from_slice(payload);
}

/// A text result set with one column and the given rows, ending with EOF (given
/// warnings and status flags).
pub fn result_set(rows: &[&str], warnings: u16, status: u16) -> Vec<u8> {
    let mut out = Vec::new();
    packet(1, &[1], &mut out);
    packet(2, b"\x03def\x00\x00\x00\x01c\x01c\x0c\x21\x00\x78\x00\x00\x00\xfe\x00\x00\x00\x00\x00", &mut out);
    packet(3, &[0xfe, 0, 0, 2, 0], &mut out);
    let mut seq = 4;
    for r in rows {
        let mut p = vec![r.len() as u8];
        p.extend_from_slice(r.as_bytes());
        packet(seq, &p, &mut out);
        seq += 1;
    }
    let w = warnings.to_le_bytes();
    let s = status.to_le_bytes();
    packet(seq, &[0xfe, w[0], w[1], s[0], s[1]], &mut out);
    out
}

/// A clean one-row result set.
pub fn rows(r: &str) -> Vec<u8> {
    result_set(&[r], 0, 0x0002)
}

/// Run a read through the cache as the proxy would: hit, or fill with `backend`'s
/// reply. Returns (reply, was_hit).
pub fn read(c: &QueryCache, s: &mut Session, sql: &str, backend: &[u8]) -> (Vec<u8>, bool) {
    read_with_status(c, s, sql, backend, 0x0002)
}

/// [`read`], the backend's reply carrying these status flags (IN_TRANS: still inside a
/// transaction).
pub fn read_with_status(c: &QueryCache, s: &mut Session, sql: &str, backend: &[u8], status: u16) -> (Vec<u8>, bool) {
    match c.on_query(s, sql.as_bytes()) {
        Plan::Cached { key, tags } => {
            if let Some(hit) = c.lookup(&key) {
                return (hit, true);
            }
            match c.begin_fill(&key, &tags) {
                querycache::FillStart::Leader(f) => c.finish_fill(f, Some(backend)),
                querycache::FillStart::Follower(_) => panic!("no concurrent fill in this test"),
                querycache::FillStart::Bypass | querycache::FillStart::Skip => {}
            }
            c.on_reply(s, status, true);
            (backend.to_vec(), false)
        }
        _ => {
            c.on_reply(s, status, true);
            (backend.to_vec(), false)
        }
    }
}

/// Run a write (or any forwarded statement) and its OK reply with these status flags.
pub fn exec(c: &QueryCache, s: &mut Session, sql: &str, status: u16) -> Plan {
    let p = c.on_query(s, sql.as_bytes());
    c.on_reply(s, status, true);
    p
}

/// Whether a statement is planned as a cacheable read.
pub fn is_cached(c: &QueryCache, s: &mut Session, sql: &str) -> bool {
    matches!(c.on_query(s, sql.as_bytes()), Plan::Cached { .. })
}
