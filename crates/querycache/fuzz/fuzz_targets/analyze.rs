//! Any statement text (and any reply bytes) must be handled without panicking: lexer,
//! digest, analysis (sqlparser), session tracking, key tags, fills and invalidations.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use querycache::{Config, FillStart, CacheType, Param, PkColumn, Plan, QueryCache, TableInfo};

fn cache() -> &'static QueryCache {
    static C: OnceLock<QueryCache> = OnceLock::new();
    C.get_or_init(|| {
        let c = QueryCache::new(Config { size: 4 << 20, limit: 1 << 16, mode: CacheType::On, ..Config::default() });
        let id = vec![PkColumn::int("id")];
        for t in ["t", "t1", "sbtest1"] {
            c.schema().set_table("db", t, TableInfo::base(id.clone()));
        }
        c
    })
}

fuzz_target!(|data: &[u8]| {
    let c = cache();
    // First byte: status flags of the reply; the rest split at the first NUL into a
    // statement and a backend reply.
    let (flags, rest) = data.split_first().map_or((0, data), |(f, r)| (*f as u16, r));
    let (sql, reply) = match rest.iter().position(|b| *b == 0) {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, &[][..]),
    };
    let mut s = c.session("u", Some("db"), 45, 0x0100_0200 * (flags as u64 & 1));
    for _ in 0..2 {
        match c.on_query(&mut s, sql) {
            Plan::Cached { key, tags } => {
                if c.lookup(&key).is_none() {
                    if let FillStart::Leader(f) = c.begin_fill(&key, &tags) {
                        c.finish_fill(f, Some(reply));
                    }
                }
            }
            Plan::Write(_) | Plan::Forward { .. } => {}
        }
        c.on_reply(&mut s, flags, flags & 4 == 0);
    }
    let p = c.prepare(&s, sql);
    let params: Vec<Param> = (0..p.param_count()).map(|i| Param::Int(i as i64 - 1)).collect();
    let _ = c.on_execute(&mut s, &p, reply, &params, true);
    c.on_reply(&mut s, flags, true);
});
