//! The memory side of the container policies: `cache_only` (a private engine with
//! memcached's semantics) and `caching` (that engine in front of the table).

use engine::ops::{self as eops, GetOptions};
use engine::Engine;
use sql_containers::{Container, Row};

use sql_containers::{Reply, Request};

use super::stats::ContainerStats;
use super::Fail;
use ::binlog::fresh::Freshness;

/// Bytes of the header the `caching` policy keeps in front of a cached value: the row's
/// backend cas and absolute exptime (so a hit answers what the table would).
const CACHE_HEADER: usize = 16;

fn row_of(e: &Engine, it: &engine::item::Item) -> Row {
    let exptime = if it.exptime == 0 { 0 } else { e.clock().to_unix(it.exptime) };
    Row { value: it.value().to_vec(), flags: it.flags, cas: it.cas, exptime }
}

/// `cache_only`: the container's private engine, memcached's semantics.
pub(crate) fn memory_op(e: &Engine, op: Request) -> Result<Reply, Fail> {
    Ok(match op {
        Request::Get { keys, touch } => Reply::Rows(
            keys.iter()
                .map(|k| {
                    eops::get(e, k, GetOptions { touch }, engine::Receipt::none(), |it| it.map(|it| row_of(e, it)))
                })
                .collect(),
        ),
        Request::Store { mode, key, value, flags, exptime, cas } => {
            let req = eops::StoreRequest::new(mode, &key, &value, flags, exptime, cas);
            Reply::Store(eops::store(e, &req, engine::Receipt::none()))
        }
        Request::Delete { key, cas: Some(0) } => {
            // `md k C0` compares like any CAS: an item's CAS is never 0 while CAS is on.
            let found = e.access(&key, engine::Receipt::none()).lookup().map(|it| it.cas).ok();
            match found {
                Some(c) if c != 0 => Reply::Delete(eops::DeleteOutcome::Exists),
                _ => Reply::Delete(eops::delete(e, &key, 0, engine::Receipt::none())),
            }
        }
        Request::Delete { key, cas } => Reply::Delete(eops::delete(e, &key, cas.unwrap_or(0), engine::Receipt::none())),
        Request::Arith { key, incr, delta, init, cas, touch } => {
            let req = eops::ArithRequest { key: &key, incr, delta, cas, create: init, touch };
            Reply::Arith(eops::arith(e, &req, engine::Receipt::none()))
        }
        Request::Touch { key, exptime } => {
            Reply::Touch(eops::get(e, &key, GetOptions { touch: Some(exptime) }, engine::Receipt::none(), |it| {
                it.map(|it| row_of(e, it))
            }))
        }
        Request::Flush => {
            e.flush_all(0, engine::Receipt::none());
            Reply::Done
        }
    })
}

/// A cached copy of a row (`caching`), if present.
fn cached(e: &Engine, key: &[u8]) -> Option<Row> {
    eops::get(e, key, GetOptions { touch: None }, engine::Receipt::none(), |it| {
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
    let req = eops::StoreRequest::new(eops::StoreMode::Set, key, &v, row.flags, ttl, 0);
    let _ = eops::store(e, &req, engine::Receipt::none());
}

/// `caching`: reads from memory first (a miss reads the table and fills memory for at
/// most `cache_ttl`); writes go to the table first, then drop the memory copy (the next
/// read refills it); flush empties both.
///
/// While the binlog follower is too far behind (`fresh` says so), gets skip memory and read
/// the table; what they read is newer than the follower, so it still fills memory (the
/// follower's older changes can only drop it).
pub(crate) async fn caching_op(
    c: &Container,
    e: &Engine,
    op: Request,
    fresh: Option<&Freshness>,
    stats: &ContainerStats,
) -> Result<Reply, Fail> {
    match op {
        Request::Get { keys, touch: None } => {
            let mut rows: Vec<Option<Row>> = if fresh.is_none_or(Freshness::fresh) {
                keys.iter().map(|k| cached(e, k)).collect()
            } else {
                stats.lag_bypassed();
                vec![None; keys.len()]
            };
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
            Ok(Reply::Rows(rows))
        }
        Request::Flush => {
            let r = c.execute(Request::Flush).await.map_err(Fail::from);
            e.flush_all(0, engine::Receipt::none());
            r
        }
        op => {
            let keys = op.keys();
            let r = c.execute(op).await.map_err(Fail::from);
            // Dropped whatever the outcome: a failed write may still have happened.
            for k in &keys {
                e.access(k, engine::Receipt::none()).remove();
            }
            r
        }
    }
}
