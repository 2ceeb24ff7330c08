//! Fills checked against the changes since they began, singleflight, the memory bound, replies that are not stored.

mod common;

use std::sync::Arc;

use common::{cache, cache_with, read, result_set, rows, session};
use querycache::{CacheType, FillStart, Invalidation, Plan, Source};

fn plan(c: &querycache::QueryCache, s: &mut querycache::Session, sql: &str) -> (querycache::Key, querycache::Tags) {
    match c.on_query(s, sql.as_bytes()) {
        Plan::Cached { key, tags } => (key, tags),
        p => panic!("{p:?}"),
    }
}

fn leader(f: FillStart) -> querycache::Fill {
    match f {
        FillStart::Leader(f) => f,
        FillStart::Follower(_) | FillStart::Bypass | FillStart::Skip => panic!("expected leader"),
    }
}

#[test]
fn fill_racing_an_invalidation_is_refused() {
    let c = cache();
    let mut s = session(&c);
    let (key, tags) = plan(&c, &mut s, "SELECT c FROM sbtest1 WHERE id = 5");
    let f = leader(c.begin_fill(&key, &tags));
    // The backend answers the old row, then a write of row 5 is invalidated before the
    // fill finishes: the old row must not be stored.
    c.invalidate(
        &Invalidation::Keys {
            db: "sbtest".into(),
            table: "sbtest1".into(),
            keys: vec![5],
            values: vec![],
            change: querycache::RowChange::Any,
        },
        Source::Proxy,
    );
    c.finish_fill(f, Some(&rows("old")));
    assert_eq!(c.lookup(&key), None);
    assert_eq!(c.stats().fills_refused, 1);
    // An unrelated table's invalidation does not refuse it.
    let f = leader(c.begin_fill(&key, &tags));
    c.invalidate(&Invalidation::Table { db: "sbtest".into(), table: "t3".into() }, Source::Proxy);
    c.finish_fill(f, Some(&rows("new")));
    assert_eq!(c.lookup(&key), Some(rows("new")));
    // Drop-everything and offline/online transitions refuse too.
    let (key2, tags2) = plan(&c, &mut s, "SELECT c FROM sbtest1 WHERE id = 6");
    let f = leader(c.begin_fill(&key2, &tags2));
    c.invalidate(&Invalidation::All, Source::Binlog);
    c.finish_fill(f, Some(&rows("old")));
    assert_eq!(c.lookup(&key2), None);
    let f = leader(c.begin_fill(&key2, &tags2));
    c.set_online(false);
    c.set_online(true);
    c.finish_fill(f, Some(&rows("old")));
    assert_eq!(c.lookup(&key2), None);
}

#[test]
fn fill_racing_a_change_of_other_rows_is_stored() {
    let c = cache();
    let mut s = session(&c);
    let keys = |k: i64| Invalidation::Keys {
        db: "sbtest".into(),
        table: "sbtest1".into(),
        keys: vec![k],
        values: vec![],
        change: querycache::RowChange::Any,
    };
    let (key, tags) = plan(&c, &mut s, "SELECT c FROM sbtest1 WHERE id = 5");
    // Rows 7 and 9 change while row 5 is read: what it read cannot predate their changes.
    let f = leader(c.begin_fill(&key, &tags));
    c.invalidate(&keys(7), Source::Binlog);
    c.invalidate(&keys(9), Source::Proxy);
    c.finish_fill(f, Some(&rows("five")));
    assert_eq!(c.lookup(&key), Some(rows("five")));
    assert_eq!(c.stats().fills_refused, 0);
    // A range holding the changed row, or the whole table, is refused.
    let (key, tags) = plan(&c, &mut s, "SELECT c FROM sbtest1 WHERE id BETWEEN 1 AND 10");
    let f = leader(c.begin_fill(&key, &tags));
    c.invalidate(&keys(7), Source::Binlog);
    c.finish_fill(f, Some(&rows("range")));
    assert_eq!(c.lookup(&key), None);
    let (key, tags) = plan(&c, &mut s, "SELECT c FROM sbtest1 WHERE id = 6");
    let f = leader(c.begin_fill(&key, &tags));
    c.invalidate(&Invalidation::Table { db: "sbtest".into(), table: "sbtest1".into() }, Source::Binlog);
    c.finish_fill(f, Some(&rows("six")));
    assert_eq!(c.lookup(&key), None);
    assert_eq!(c.stats().fills_refused, 2);
}

#[test]
fn fill_racing_an_update_of_columns_it_does_not_name_is_stored() {
    let c = cache();
    let mut s = session(&c);
    let update = |k: i64, col: &str| Invalidation::Keys {
        db: "sbtest".into(),
        table: "sbtest1".into(),
        keys: vec![k],
        values: vec![],
        change: querycache::RowChange::Update(vec![col.into()]),
    };
    // sysbench's writer (`SET k = k + 1 WHERE id = ?`) changes row 5 while `SELECT c` reads it.
    let (key, tags) = plan(&c, &mut s, "SELECT c FROM sbtest1 WHERE id = 5");
    let f = leader(c.begin_fill(&key, &tags));
    c.invalidate(&update(5, "k"), Source::Binlog);
    c.finish_fill(f, Some(&rows("five")));
    assert_eq!(c.lookup(&key), Some(rows("five")));
    // A column it names, or a read of every column, is refused.
    let f = leader(c.begin_fill(&key, &tags));
    c.invalidate(&update(5, "c"), Source::Binlog);
    c.finish_fill(f, Some(&rows("five")));
    assert_eq!(c.lookup(&key), None);
    let (key, tags) = plan(&c, &mut s, "SELECT * FROM sbtest1 WHERE id = 5");
    let f = leader(c.begin_fill(&key, &tags));
    c.invalidate(&update(5, "k"), Source::Binlog);
    c.finish_fill(f, Some(&rows("star")));
    assert_eq!(c.lookup(&key), None);
    assert_eq!(c.stats().fills_refused, 2);
}

#[test]
fn identical_concurrent_misses_share_one_query() {
    let c = Arc::new(cache());
    let mut s = session(&c);
    let (key, tags) = plan(&c, &mut s, "SELECT c FROM sbtest1 WHERE id = 9");
    let f = leader(c.begin_fill(&key, &tags));
    let waiters: Vec<_> = (0..4)
        .map(|_| match c.begin_fill(&key, &tags) {
            FillStart::Follower(w) => w,
            FillStart::Leader(_) | FillStart::Bypass | FillStart::Skip => panic!("second miss must follow"),
        })
        .collect();
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let tasks: Vec<_> = waiters
        .into_iter()
        .map(|w| {
            std::thread::spawn(move || {
                tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(w.wait())
            })
        })
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(20));
    c.finish_fill(f, Some(&rows("shared")));
    for t in tasks {
        assert_eq!(t.join().unwrap().as_deref(), Some(&rows("shared")[..]));
    }
    assert_eq!(c.stats().shared_misses, 4);
    drop(rt);

    // A failed leader sends followers to the backend; so does a dropped leader.
    let (key, tags) = plan(&c, &mut s, "SELECT c FROM sbtest1 WHERE id = 10");
    let f = leader(c.begin_fill(&key, &tags));
    let FillStart::Follower(w) = c.begin_fill(&key, &tags) else { panic!() };
    c.finish_fill(f, None);
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    assert_eq!(rt.block_on(w.wait()), None);
    let f = leader(c.begin_fill(&key, &tags));
    let FillStart::Follower(w) = c.begin_fill(&key, &tags) else { panic!() };
    drop(f);
    assert_eq!(rt.block_on(w.wait()), None);
    // After a dropped leader the next miss leads again.
    let _f = leader(c.begin_fill(&key, &tags));
}

#[test]
fn a_miss_after_an_invalidation_does_not_follow_an_older_query() {
    let c = cache();
    let mut s = session(&c);
    let (key, tags) = plan(&c, &mut s, "SELECT c FROM sbtest1 WHERE id = 11");
    let _old = leader(c.begin_fill(&key, &tags));
    c.invalidate(
        &Invalidation::Keys {
            db: "sbtest".into(),
            table: "sbtest1".into(),
            keys: vec![11],
            values: vec![],
            change: querycache::RowChange::Any,
        },
        Source::Proxy,
    );
    assert!(matches!(c.begin_fill(&key, &tags), FillStart::Leader(_)));
}

#[test]
fn memory_bound_holds_with_many_entries() {
    let size = 4 << 20;
    let c = cache_with(CacheType::On, size);
    let mut s = session(&c);
    let big = "x".repeat(200);
    for id in 0..40_000 {
        read(&c, &mut s, &format!("SELECT c FROM sbtest1 WHERE id={id}"), &rows(&big));
    }
    let st = c.stats();
    assert!(st.bytes as usize <= size, "{} > {size}", st.bytes);
    assert!(st.lowmem_prunes > 0);
    assert!(st.queries_in_cache > 1000 && st.queries_in_cache < 40_000);
    assert!(c.index_refs() <= 40_000);
    // The most recent entries are there and still invalidate correctly.
    assert!(read(&c, &mut s, "SELECT c FROM sbtest1 WHERE id=39999", &rows(&big)).1);
    c.invalidate(
        &Invalidation::Keys {
            db: "sbtest".into(),
            table: "sbtest1".into(),
            keys: vec![39999],
            values: vec![],
            change: querycache::RowChange::Any,
        },
        Source::Binlog,
    );
    assert!(!read(&c, &mut s, "SELECT c FROM sbtest1 WHERE id=39999", &rows(&big)).1);
}

#[test]
fn replies_that_are_not_stored() {
    let c = cache();
    let mut s = session(&c);
    let cases = [
        ("warnings", result_set(&["a"], 1, 0x0002)),
        ("more results", result_set(&["a"], 0, 0x000a)),
        ("session state changed", result_set(&["a"], 0, 0x4002)),
        ("error", b"\x17\x00\x00\x01\xff\x7a\x04#42S02Table doesn't exist".to_vec()),
        ("truncated", rows("a")[..20].to_vec()),
    ];
    for (i, (why, reply)) in cases.iter().enumerate() {
        let sql = format!("SELECT c FROM sbtest1 WHERE id={i}");
        read(&c, &mut s, &sql, reply);
        assert!(!read(&c, &mut s, &sql, reply).1, "{why} must not be stored");
    }
    // A reply inside a transaction is stored (its transaction bits are rewritten per
    // session served: `serve_as`), unlike MariaDB's cache which keeps such results apart.
    read(&c, &mut s, "SELECT c FROM sbtest1 WHERE id=77", &result_set(&["a"], 0, 0x0003));
    assert!(read(&c, &mut s, "SELECT c FROM sbtest1 WHERE id=77", &result_set(&["a"], 0, 0x0003)).1);
    let small = querycache::QueryCache::new(querycache::Config {
        size: 1 << 20,
        limit: 100,
        mode: CacheType::On,
        ..Default::default()
    });
    small.schema().set_table("sbtest", "sbtest1", querycache::TableInfo::base(vec![]));
    let mut s = session(&small);
    read(&small, &mut s, "SELECT c FROM sbtest1", &rows(&"y".repeat(200)));
    assert!(!read(&small, &mut s, "SELECT c FROM sbtest1", &rows("y")).1, "over the limit");
}

#[test]
fn hits_replay_exact_bytes_and_compare_full_keys() {
    let c = cache();
    let mut s = session(&c);
    let r = result_set(&["a", "bb", "ccc"], 0, 0x0022);
    read(&c, &mut s, "SELECT c FROM sbtest1 WHERE id BETWEEN 1 AND 3", &r);
    let (got, hit) = read(&c, &mut s, "SELECT c FROM sbtest1 WHERE id BETWEEN 1 AND 3", &rows("other"));
    assert!(hit);
    assert_eq!(got, r);
    assert_eq!(c.stats().hits, 1);
    // Different literals, different text: different entries.
    assert!(!read(&c, &mut s, "SELECT c FROM sbtest1 WHERE id BETWEEN 1 AND 4", &r).1);
    assert!(!read(&c, &mut s, "select c FROM sbtest1 WHERE id BETWEEN 1 AND 3", &r).1);
}
