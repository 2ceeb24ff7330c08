//! SQLite end to end: every operation, multi-column values, expiry, cas, batching and
//! background commit, validation errors, injection, config and plugin tables.

mod common;

use std::path::{Path, PathBuf};

use common::{BoxFut, Peek};
use rusqlite::Connection;
use sql_containers::{CachePolicy, Containers, SqlConfig, StoreMode};

const SCHEMA: &str = "
CREATE TABLE demo (c1 VARCHAR(250) PRIMARY KEY, c2 TEXT, c3 INTEGER, c4 BIGINT, c5 INTEGER);
CREATE TABLE multi (k TEXT NOT NULL, a TEXT, n INTEGER, b TEXT, f INTEGER, c INTEGER, e INTEGER);
CREATE UNIQUE INDEX multi_k ON multi (k);
CREATE TABLE plain (k BLOB PRIMARY KEY, v BLOB);
";

struct Fx {
    _dir: tempfile::TempDir,
    db: PathBuf,
}

fn fixture(schema: &str) -> Fx {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("cache.db");
    Connection::open(&db).unwrap().execute_batch(schema).unwrap();
    Fx { _dir: dir, db }
}

fn config(db: &Path, options: &str, containers: &str) -> SqlConfig {
    let toml = format!(
        "[backend]\nkind = \"sqlite\"\npath = {:?}\npool_size = 3\n\n[options]\n{options}\n{containers}",
        db.to_str().unwrap()
    );
    SqlConfig::from_toml_str(&toml).unwrap()
}

async fn load(fx: &Fx, options: &str) -> Containers {
    Containers::load(&config(&fx.db, options, common::CONTAINERS)).await.unwrap()
}

struct SqlitePeek(PathBuf);

fn sqlite_bytes(v: rusqlite::types::ValueRef<'_>) -> Vec<u8> {
    use rusqlite::types::ValueRef::*;
    match v {
        Null => b"NULL".to_vec(),
        Integer(i) => i.to_string().into_bytes(),
        Real(f) => f.to_string().into_bytes(),
        Text(b) | Blob(b) => b.to_vec(),
    }
}

impl Peek for SqlitePeek {
    fn one<'a>(&'a self, sql: &'a str, param: &'a [u8]) -> BoxFut<'a, Option<Vec<u8>>> {
        let conn = Connection::open(&self.0).unwrap();
        let r = conn
            .query_row(sql, [String::from_utf8_lossy(param).into_owned()], |r| Ok(sqlite_bytes(r.get_ref(0)?)))
            .map(Some)
            .or_else(|e| if let rusqlite::Error::QueryReturnedNoRows = e { Ok(None) } else { Err(e) })
            .unwrap();
        Box::pin(async move { r })
    }

    fn count<'a>(&'a self, table: &'a str) -> BoxFut<'a, i64> {
        let conn = Connection::open(&self.0).unwrap();
        let n = conn.query_row(&format!("SELECT count(*) FROM \"{table}\""), [], |r| r.get(0)).unwrap();
        Box::pin(async move { n })
    }
}

#[tokio::test]
async fn every_operation() {
    let fx = fixture(SCHEMA);
    let cs = load(&fx, "").await;
    let peek = SqlitePeek(fx.db.clone());
    common::basic(&cs).await;
    common::cas(&cs).await;
    common::arith(&cs).await;
    common::binary(&cs).await;
    common::many(&cs).await;
    common::flush(&cs, &peek).await;
    common::unbatched(&cs, &peek, "SELECT c2 FROM demo WHERE c1 = ?").await;
    assert_eq!(cs.stats().lost_writes, 0);
}

#[tokio::test]
async fn multi_column_values() {
    let fx = fixture(SCHEMA);
    let cs = load(&fx, "").await;
    common::multi(&cs, &SqlitePeek(fx.db.clone()), "SELECT b FROM multi WHERE k = ?").await;
}

#[tokio::test]
async fn empty_parts_in_not_null_columns() {
    let strict = "CREATE TABLE strict (k TEXT NOT NULL, a TEXT NOT NULL, n INTEGER NOT NULL, b TEXT);
                  CREATE UNIQUE INDEX strict_k ON strict (k);";
    let fx = fixture(&format!("{SCHEMA}{strict}"));
    let cfg = config(&fx.db, "", &format!("{}{}", common::CONTAINERS, common::STRICT));
    let cs = Containers::load(&cfg).await.unwrap();
    common::empty_parts(&cs, &SqlitePeek(fx.db.clone()), "strict").await;
}

#[tokio::test]
async fn multi_column_custom_separator() {
    let fx = fixture(SCHEMA);
    let cs = load(&fx, "separator = \"::\"").await;
    let c = cs.get("multi").unwrap();
    common::set(c, b"k", b"a::1::b|c").await;
    assert_eq!(common::val(c, b"k").await.unwrap(), b"a::1::b|c");
    let peek = SqlitePeek(fx.db.clone());
    assert_eq!(peek.one("SELECT b FROM multi WHERE k = ?", b"k").await.unwrap(), b"b|c");
}

#[tokio::test]
async fn expiry() {
    let fx = fixture(SCHEMA);
    let cs = load(&fx, "").await;
    common::expire(&cs, &SqlitePeek(fx.db.clone()), "SELECT c2 FROM demo WHERE c1 = ?").await;
}

#[tokio::test]
async fn injection_is_inert() {
    let fx = fixture(SCHEMA);
    let cs = load(&fx, "").await;
    common::injection(&cs, &SqlitePeek(fx.db.clone()), "demo", "SELECT c2 FROM demo WHERE c1 = ?").await;
    let n: i64 = Connection::open(&fx.db)
        .unwrap()
        .query_row("SELECT count(*) FROM sqlite_master WHERE name IN ('demo', 'multi', 'plain')", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 3, "no table dropped");
}

#[tokio::test]
async fn odd_identifiers_are_quoted() {
    let fx =
        fixture("CREATE TABLE \"we\"\"ird tab\" (\"k'ey\" TEXT PRIMARY KEY, \"v\"\"al\" TEXT, \"select\" INTEGER);");
    let containers = r#"
[[container]]
name = "odd"
table = 'we"ird tab'
key_column = "k'ey"
value_columns = ['v"al']
flags_column = "select"
"#;
    let cs = Containers::load(&config(&fx.db, "", containers)).await.unwrap();
    let c = cs.get("odd").unwrap();
    assert_eq!(c.table(), "main.we\"ird tab");
    c.store(StoreMode::Set, b"a'b", b"v\"1", 3, 0, 0).await.unwrap();
    let r = c.get(b"a'b").await.unwrap().unwrap();
    assert_eq!((r.value.as_slice(), r.flags), (&b"v\"1"[..], 3));
}

#[tokio::test]
async fn batching_and_background_commit() {
    let fx = fixture(SCHEMA);
    let cs = load(&fx, "w_batch_size = 3\nbk_commit_interval = 1").await;
    common::batching(&cs, &SqlitePeek(fx.db.clone()), "SELECT c2 FROM demo WHERE c1 = ?").await;
}

#[tokio::test]
async fn read_batching_still_reads() {
    let fx = fixture(SCHEMA);
    let cs = load(&fx, "r_batch_size = 4\nbk_commit_interval = 1").await;
    let c = cs.default_container();
    for i in 0..10 {
        let k = format!("r{i}");
        common::set(c, k.as_bytes(), b"x").await;
        assert_eq!(common::val(c, k.as_bytes()).await.unwrap(), b"x");
    }
    cs.commit_all().await.unwrap();
}

#[tokio::test]
async fn dropping_commits_open_batch() {
    let fx = fixture(SCHEMA);
    {
        let cs = load(&fx, "w_batch_size = 100\nbk_commit_interval = 60").await;
        common::set(cs.default_container(), b"d1", b"x").await;
        let peek = SqlitePeek(fx.db.clone());
        assert_eq!(peek.one("SELECT c2 FROM demo WHERE c1 = ?", b"d1").await, None);
    }
    let peek = SqlitePeek(fx.db.clone());
    for _ in 0..100 {
        if peek.one("SELECT c2 FROM demo WHERE c1 = ?", b"d1").await.is_some() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("the writer did not commit when the backend was dropped");
}

#[tokio::test]
async fn integer_and_nocase_keys() {
    let fx = fixture(
        "CREATE TABLE ik (id INTEGER PRIMARY KEY, v TEXT);
         CREATE TABLE ci (k TEXT COLLATE NOCASE PRIMARY KEY, v TEXT);",
    );
    let containers = r#"
[[container]]
name = "ints"
table = "ik"
key_column = "id"
value_columns = "v"
[[container]]
name = "ci"
table = "ci"
key_column = "k"
value_columns = "v"
"#;
    let cs = Containers::load(&config(&fx.db, "", containers)).await.unwrap();
    let c = cs.get("ints").unwrap();
    common::set(c, b"42", b"answer").await;
    common::set(c, b"7", b"seven").await;
    let rows = c.get_many(&[b"42", b"042", b"7", b"8"]).await.unwrap();
    let v: Vec<bool> = rows.iter().map(Option::is_some).collect();
    assert_eq!(v, vec![true, true, true, false], "matched like the table compares");
    let e = c.store(StoreMode::Set, b"abc", b"x", 0, 0, 0).await.unwrap_err();
    assert!(matches!(e, sql_containers::BackendError::Invalid(_)), "{e:?}");
    assert_eq!(c.get(b"abc").await.unwrap(), None);
    assert_eq!(c.delete(b"abc", 0).await.unwrap(), sql_containers::DeleteOutcome::NotFound);
    let c = cs.get("ci").unwrap();
    common::set(c, b"Foo", b"1").await;
    let rows = c.get_many(&[b"foo", b"FOO", b"bar"]).await.unwrap();
    assert_eq!(rows.iter().filter(|r| r.is_some()).count(), 2);
}

fn load_err(schema: &str, containers: &str) -> String {
    let fx = fixture(schema);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    match rt.block_on(Containers::load(&config(&fx.db, "", containers))) {
        Ok(_) => panic!("expected a validation error"),
        Err(e) => e.to_string(),
    }
}

fn one(table: &str, extra: &str) -> String {
    format!("[[container]]\nname = \"bad\"\ntable = \"{table}\"\nkey_column = \"k\"\nvalue_columns = \"v\"\n{extra}\n")
}

#[test]
fn validation_errors_name_container_and_column() {
    let ok = "CREATE TABLE t (k TEXT PRIMARY KEY, v TEXT, f INTEGER, r REAL, s TEXT, d DATE);";
    let e = load_err(ok, &one("missing", ""));
    assert!(e.contains("'bad'") && e.contains("missing") && e.contains("does not exist"), "{e}");
    let e = load_err(ok, &one("t", "flags_column = \"nope\""));
    assert!(e.contains("'bad'") && e.contains("flags column 'nope'"), "{e}");
    let e =
        load_err(ok, "[[container]]\nname = \"bad\"\ntable = \"t\"\nkey_column = \"k\"\nvalue_columns = \"v,zz\"\n");
    assert!(e.contains("value column 'zz' does not exist"), "{e}");
    let e = load_err(ok, "[[container]]\nname = \"bad\"\ntable = \"t\"\nkey_column = \"k\"\nvalue_columns = \"r\"\n");
    assert!(e.contains("'bad'") && e.contains("value column 'r'") && e.contains("REAL"), "{e}");
    let e = load_err(ok, "[[container]]\nname = \"bad\"\ntable = \"t\"\nkey_column = \"d\"\nvalue_columns = \"v\"\n");
    assert!(e.contains("key column 'd'") && e.contains("DATE"), "{e}");
    let e = load_err(ok, &one("t", "cas_column = \"s\""));
    assert!(e.contains("cas column 's'") && e.contains("integer"), "{e}");
    let e = load_err(ok, &one("t", "expire_column = \"v\""));
    assert!(e.contains("expire time column 'v'"), "{e}");
    let e = load_err(ok, &one("t", "expire_column = \"k\""));
    assert!(e.contains("'k'"), "{e}");
    let e = load_err(ok, "[[container]]\nname = \"bad\"\ntable = \"t\"\nkey_column = \"k\"\nvalue_columns = \"v,v\"\n");
    assert!(e.contains("mapped twice"), "{e}");

    // Unique index: none, not unique, on two columns, partial.
    for (ddl, what) in [
        ("CREATE TABLE t (k TEXT, v TEXT);", "no index"),
        ("CREATE TABLE t (k TEXT, v TEXT); CREATE INDEX i ON t(k);", "non-unique index"),
        ("CREATE TABLE t (k TEXT, v TEXT, PRIMARY KEY (k, v));", "composite primary key"),
        ("CREATE TABLE t (k TEXT, v TEXT); CREATE UNIQUE INDEX i ON t(k) WHERE v IS NOT NULL;", "partial index"),
        ("CREATE TABLE t (k TEXT, v TEXT); CREATE UNIQUE INDEX i ON t(lower(k));", "expression index"),
    ] {
        let e = load_err(ddl, &one("t", ""));
        assert!(e.contains("'bad'") && e.contains("key column 'k'") && e.contains("no unique"), "{what}: {e}");
    }
    let e = load_err("CREATE TABLE t (k TEXT, v TEXT); CREATE INDEX i ON t(k);", &one("t", "unique_index = \"i\""));
    assert!(e.contains("index 'i' is not a unique index"), "{e}");
    let e = load_err("CREATE VIEW t AS SELECT 1 AS k, 2 AS v;", &one("t", ""));
    assert!(e.contains("view"), "{e}");
    let e = load_err(
        ok,
        "[[container]]\nname = \"bad\"\nschema = \"test\"\ntable = \"t\"\nkey_column = \"k\"\nvalue_columns = \"v\"\n",
    );
    assert!(e.contains("'bad'") && e.contains("schema 'test'"), "{e}");
}

#[tokio::test]
async fn unique_indexes_accepted() {
    let fx = fixture(
        "CREATE TABLE a (k TEXT, v TEXT); CREATE UNIQUE INDEX a_k ON a(k);
         CREATE TABLE b (id INTEGER PRIMARY KEY, k BLOB UNIQUE, v TEXT);
         CREATE TABLE c (k TEXT PRIMARY KEY, v TEXT) WITHOUT ROWID;",
    );
    let containers = r#"
[[container]]
name = "a"
table = "a"
key_column = "k"
value_columns = "v"
unique_index = "a_k"
[[container]]
name = "b"
table = "b"
key_column = "k"
value_columns = "v"
unique_index = "PRIMARY"   # wrong name: any unique index on exactly k still qualifies
[[container]]
name = "c"
table = "c"
key_column = "k"
value_columns = "v"
unique_index = "PRIMARY"
"#;
    let cs = Containers::load(&config(&fx.db, "", containers)).await.unwrap();
    for n in ["a", "b", "c"] {
        let c = cs.get(n).unwrap();
        common::set(c, b"key", n.as_bytes()).await;
        assert_eq!(common::val(c, b"key").await.unwrap(), n.as_bytes());
    }
    assert_eq!(cs.default_container().name(), "a", "no 'default': the first");
}

const PLUGIN_TABLES: &str = "
CREATE TABLE {p}containers (name VARCHAR(50) PRIMARY KEY, db_schema VARCHAR(250) NOT NULL,
  db_table VARCHAR(250) NOT NULL, key_columns VARCHAR(250) NOT NULL, value_columns VARCHAR(250),
  flags VARCHAR(250) NOT NULL DEFAULT '0', cas_column VARCHAR(250), expire_time_column VARCHAR(250),
  unique_idx_name_on_key VARCHAR(250) NOT NULL);
CREATE TABLE {p}cache_policies (policy_name VARCHAR(40) PRIMARY KEY, get_policy TEXT NOT NULL,
  set_policy TEXT NOT NULL, delete_policy TEXT NOT NULL, flush_policy TEXT NOT NULL);
CREATE TABLE {p}config_options (name VARCHAR(50) PRIMARY KEY, value VARCHAR(50));
INSERT INTO {p}cache_policies VALUES ('cache_policy', 'innodb_only', 'innodb_only', 'innodb_only', 'innodb_only');
INSERT INTO {p}cache_policies VALUES ('zzz', 'caching', 'caching', 'innodb_only', 'disabled');
INSERT INTO {p}config_options VALUES ('separator', ';');
INSERT INTO {p}config_options VALUES ('table_map_delimiter', ':');
INSERT INTO {p}containers VALUES ('zzz', '{s}', 'demo_test', 'c1', 'c2,c21', 'c3', 'c4', 'c5', 'PRIMARY');
INSERT INTO {p}containers VALUES ('aaa', '{s}', 'demo_test', 'c1', 'c2', '0', NULL, NULL, 'PRIMARY');
";
const DEMO_TEST: &str = "CREATE TABLE demo_test (c1 VARCHAR(32) PRIMARY KEY, c2 VARCHAR(1024), c21 VARCHAR(1024),
  c3 INT, c4 BIGINT UNSIGNED, c5 INT);";

#[tokio::test]
async fn plugin_tables_in_main_database() {
    let fx = fixture(&(PLUGIN_TABLES.replace("{p}", "innodb_memcache_").replace("{s}", "main") + DEMO_TEST));
    let cfg = SqlConfig::from_toml_str(&format!(
        "[backend]\nkind = \"sqlite\"\npath = {:?}\nplugin_tables = \"required\"\n",
        fx.db.to_str().unwrap()
    ))
    .unwrap();
    let cs = Containers::load(&cfg).await.unwrap();
    assert_eq!(cs.iter().map(|c| c.name()).collect::<Vec<_>>(), vec!["aaa", "zzz"], "ordered by name");
    assert_eq!(cs.default_container().name(), "aaa", "no 'default': the first row");
    assert_eq!(cs.options().separator, ";");
    assert_eq!(cs.options().table_map_delimiter, ":");
    let z = cs.get("zzz").unwrap();
    assert_eq!(z.policy().get, CachePolicy::Caching, "policy row named like the container");
    assert_eq!(z.policy().flush, CachePolicy::Disabled);
    assert!(z.has_cas() && z.has_flags() && z.has_expire());
    let a = cs.get("aaa").unwrap();
    assert_eq!(*a.policy(), sql_containers::Policy::all(CachePolicy::InnodbOnly), "the `cache_policy` row");
    assert!(!a.has_cas() && !a.has_flags() && !a.has_expire(), "flags '0' and NULLs: no such columns");
    common::set(z, b"k", b"x;y").await;
    assert_eq!(common::val(a, b"k").await.unwrap(), b"x", "same table, other mapping");
    assert_eq!(cs.split_mapped_key(b"@@zzz:k"), Some((&b"zzz"[..], Some(&b"k"[..]))));
    assert_eq!(cs.split_mapped_key(b"@@zzz"), Some((&b"zzz"[..], None)));
    assert_eq!(cs.split_mapped_key(b"zzz:k"), None);
}

#[tokio::test]
async fn plugin_tables_in_attached_database() {
    let dir = tempfile::tempdir().unwrap();
    let plugin = dir.path().join("innodb_memcache.db");
    let test = dir.path().join("test.db");
    Connection::open(&plugin)
        .unwrap()
        .execute_batch(
            &(PLUGIN_TABLES.replace("{p}", "").replace("{s}", "test")
                + "INSERT INTO containers VALUES ('default', 'test', 'demo_test', 'c1', 'c2', 'c3', 'c4', 'c5', 'PRIMARY');"),
        )
        .unwrap();
    Connection::open(&test).unwrap().execute_batch(DEMO_TEST).unwrap();
    let main = dir.path().join("main.db");
    let toml = format!(
        r#"
[backend]
kind = "sqlite"
path = {:?}
[backend.attach]
innodb_memcache = {:?}
test = {:?}
[options]
separator = "|"
[[container]]
name = "mine"
schema = "test"
table = "demo_test"
key_column = "c1"
value_columns = "c2"
"#,
        main.to_str().unwrap(),
        plugin.to_str().unwrap(),
        test.to_str().unwrap()
    );
    let cs = Containers::load(&SqlConfig::from_toml_str(&toml).unwrap()).await.unwrap();
    assert_eq!(cs.iter().map(|c| c.name()).collect::<Vec<_>>(), vec!["mine", "aaa", "default", "zzz"]);
    assert_eq!(cs.default_container().name(), "default");
    assert_eq!(cs.options().separator, "|", "the file's option wins over config_options");
    let d = cs.default_container();
    assert_eq!(d.table(), "test.demo_test");
    common::set(d, b"k", b"v").await;
    let n: String = Connection::open(&test)
        .unwrap()
        .query_row("SELECT c2 FROM demo_test WHERE c1 = 'k'", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, "v", "written to the attached database");
}

#[test]
fn plugin_errors() {
    let e = load_err("CREATE TABLE t (k TEXT PRIMARY KEY, v TEXT);", "");
    assert!(e.contains("no containers"), "{e}");
    let fx = fixture("CREATE TABLE t (k TEXT PRIMARY KEY, v TEXT);");
    let cfg = SqlConfig::from_toml_str(&format!(
        "[backend]\nkind = \"sqlite\"\npath = {:?}\nplugin_tables = \"required\"\n",
        fx.db.to_str().unwrap()
    ))
    .unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let e = rt.block_on(Containers::load(&cfg)).err().unwrap();
    assert!(matches!(&e, sql_containers::LoadError::Invalid(m) if m.contains("required")), "{e}");
    let e = load_err(
        &(PLUGIN_TABLES.replace("{p}", "innodb_memcache_").replace("{s}", "main") + DEMO_TEST),
        "[[container]]\nname = \"aaa\"\ntable = \"demo_test\"\nkey_column = \"c1\"\nvalue_columns = \"c2\"\n",
    );
    assert!(e.contains("'aaa' is defined twice"), "{e}");
    let e = load_err(
        &(PLUGIN_TABLES.replace("{p}", "innodb_memcache_").replace("{s}", "main")
            + "CREATE TABLE demo_test (c1 VARCHAR(32) PRIMARY KEY, c2 VARCHAR(1024), c3 INT);"),
        "",
    );
    assert!(e.contains("'zzz' (innodb_memcache.containers)") && e.contains("c21"), "{e}");
}
