//! MariaDB/MySQL end to end. Runs when SQLCACHED_MARIADB=host:port:user:password names a
//! server (scripts/mariadb.sh start DIR PORT prints one); skipped (passing) otherwise.
//! Every test works in a database of its own.

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{BoxFut, Peek};
use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Opts, Value};
use sql_containers::{BackendError, CachePolicy, Containers, SqlConfig, StoreMode};

struct Server {
    host: String,
    port: u16,
    user: String,
    password: String,
}

fn server() -> Option<Server> {
    let v = std::env::var("SQLCACHED_MARIADB").ok().filter(|v| !v.is_empty())?;
    let mut p = v.splitn(4, ':');
    let (host, port, user, password) = (p.next()?, p.next()?, p.next()?, p.next().unwrap_or(""));
    Some(Server { host: host.into(), port: port.parse().ok()?, user: user.into(), password: password.into() })
}

macro_rules! need_server {
    () => {
        match server() {
            Some(s) => s,
            None => {
                eprintln!("SQLCACHED_MARIADB not set: MariaDB test skipped");
                return;
            }
        }
    };
}

impl Server {
    /// `port`: a proxy's; then no switch to the server's unix socket (mysql_async does
    /// that for loopback addresses by default), so that everything goes through it.
    fn url(&self, db: &str, port: Option<u16>) -> String {
        let q = if port.is_some() { "?prefer_socket=false" } else { "" };
        format!("mysql://{}:{}@{}:{}/{db}{q}", self.user, self.password, self.host, port.unwrap_or(self.port))
    }

    async fn conn(&self, db: &str) -> Conn {
        Conn::new(Opts::from_url(&self.url(db, None)).unwrap()).await.unwrap()
    }

    /// A fresh database `name` with `ddl` run in it.
    async fn database(&self, name: &str, ddl: &str) {
        let mut c = self.conn("").await;
        c.query_drop(format!("DROP DATABASE IF EXISTS `{name}`")).await.unwrap();
        c.query_drop(format!("CREATE DATABASE `{name}`")).await.unwrap();
        c.query_drop(format!("USE `{name}`")).await.unwrap();
        for stmt in ddl.split(';').map(str::trim).filter(|s| !s.is_empty()) {
            c.query_drop(stmt).await.unwrap_or_else(|e| panic!("{stmt}: {e}"));
        }
        c.disconnect().await.unwrap();
    }

    fn config(&self, db: &str, port: Option<u16>, backend_extra: &str, options: &str, containers: &str) -> SqlConfig {
        let toml = format!(
            "[backend]\nkind = \"mariadb\"\nurl = \"{}\"\npool_size = 4\nplugin_tables = \"off\"\n{backend_extra}\n[options]\n{options}\n{containers}",
            self.url(db, port)
        );
        SqlConfig::from_toml_str(&toml).unwrap()
    }
}

const DDL: &str = "
CREATE TABLE demo (c1 VARCHAR(250) NOT NULL PRIMARY KEY, c2 TEXT, c3 INT UNSIGNED, c4 BIGINT UNSIGNED, c5 INT);
CREATE TABLE multi (k VARCHAR(250) NOT NULL, a TEXT, n BIGINT, b TEXT, f INT UNSIGNED, c BIGINT UNSIGNED, e INT, UNIQUE KEY multi_k (k));
CREATE TABLE plain (k VARBINARY(250) NOT NULL PRIMARY KEY, v MEDIUMBLOB)
";

struct MyPeek {
    url: String,
}

impl Peek for MyPeek {
    fn one<'a>(&'a self, sql: &'a str, param: &'a [u8]) -> BoxFut<'a, Option<Vec<u8>>> {
        Box::pin(async move {
            let mut c = Conn::new(Opts::from_url(&self.url).unwrap()).await.unwrap();
            let v: Option<Value> = c.exec_first(sql, (param.to_vec(),)).await.unwrap();
            c.disconnect().await.unwrap();
            v.map(|v| match v {
                Value::NULL => b"NULL".to_vec(),
                Value::Bytes(b) => b,
                other => other.as_sql(true).into_bytes(),
            })
        })
    }

    fn count<'a>(&'a self, table: &'a str) -> BoxFut<'a, i64> {
        Box::pin(async move {
            let mut c = Conn::new(Opts::from_url(&self.url).unwrap()).await.unwrap();
            let n: Option<i64> = c.query_first(format!("SELECT COUNT(*) FROM `{table}`")).await.unwrap();
            c.disconnect().await.unwrap();
            n.unwrap()
        })
    }
}

async fn setup(s: &Server, db: &str, options: &str) -> (Containers, MyPeek) {
    s.database(db, DDL).await;
    let cs = Containers::load(&s.config(db, None, "", options, common::CONTAINERS)).await.unwrap();
    (cs, MyPeek { url: s.url(db, None) })
}

#[tokio::test]
async fn every_operation() {
    let s = need_server!();
    let (cs, peek) = setup(&s, "sqlcached_t_ops", "").await;
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
    let s = need_server!();
    let (cs, peek) = setup(&s, "sqlcached_t_multi", "").await;
    common::multi(&cs, &peek, "SELECT b FROM multi WHERE k = ?").await;
}

#[tokio::test]
async fn empty_parts_in_not_null_columns() {
    let s = need_server!();
    let db = "sqlcached_t_strict";
    let strict = "CREATE TABLE strict (k VARCHAR(250) NOT NULL, a TEXT NOT NULL, n INT NOT NULL, b TEXT, \
                  UNIQUE KEY strict_k (k))";
    s.database(db, &format!("{DDL};{strict}")).await;
    let containers = format!("{}{}", common::CONTAINERS, common::STRICT);
    let cs = Containers::load(&s.config(db, None, "", "", &containers)).await.unwrap();
    common::empty_parts(&cs, &MyPeek { url: s.url(db, None) }, "strict").await;
}

#[tokio::test]
async fn expiry() {
    let s = need_server!();
    let (cs, peek) = setup(&s, "sqlcached_t_exp", "").await;
    common::expire(&cs, &peek, "SELECT c2 FROM demo WHERE c1 = ?").await;
}

#[tokio::test]
async fn injection_is_inert() {
    let s = need_server!();
    let (cs, peek) = setup(&s, "sqlcached_t_inj", "").await;
    common::injection(&cs, &peek, "demo", "SELECT c2 FROM demo WHERE c1 = ?").await;
    let mut c = s.conn("sqlcached_t_inj").await;
    let n: Option<i64> = c
        .query_first("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'sqlcached_t_inj'")
        .await
        .unwrap();
    assert_eq!(n, Some(3), "no table dropped");
}

#[tokio::test]
async fn batching_and_background_commit() {
    let s = need_server!();
    s.database("sqlcached_t_batch", DDL).await;
    let peek = MyPeek { url: s.url("sqlcached_t_batch", None) };
    // One writer connection: all three writes land in the same batch.
    let cs = Containers::load(&s.config(
        "sqlcached_t_batch",
        None,
        "writers = 1",
        "w_batch_size = 3\nbk_commit_interval = 1",
        common::CONTAINERS,
    ))
    .await
    .unwrap();
    common::batching(&cs, &peek, "SELECT c2 FROM demo WHERE c1 = ?").await;
}

#[tokio::test]
async fn read_batching() {
    let s = need_server!();
    let (cs, _) = setup(&s, "sqlcached_t_rbatch", "r_batch_size = 4\nbk_commit_interval = 1").await;
    let c = cs.default_container();
    for i in 0..10 {
        let k = format!("r{i}");
        common::set(c, k.as_bytes(), b"x").await;
        assert_eq!(common::val(c, k.as_bytes()).await.unwrap(), b"x");
    }
    // Flush with read transactions open on reader connections: they commit first.
    c.flush().await.unwrap();
    assert_eq!(c.get(b"r1").await.unwrap(), None);
}

#[tokio::test]
async fn integer_and_case_insensitive_keys() {
    let s = need_server!();
    let db = "sqlcached_t_keys";
    s.database(
        db,
        "CREATE TABLE ik (id BIGINT NOT NULL PRIMARY KEY, v TEXT);
         CREATE TABLE ci (k VARCHAR(100) COLLATE utf8mb4_general_ci NOT NULL, v TEXT, UNIQUE KEY (k))",
    )
    .await;
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
    let cs = Containers::load(&s.config(db, None, "", "", containers)).await.unwrap();
    let c = cs.get("ints").unwrap();
    common::set(c, b"42", b"answer").await;
    common::set(c, b"7", b"seven").await;
    let rows = c.get_many(&[b"42", b"042", b"7", b"8"]).await.unwrap();
    assert_eq!(rows.iter().map(Option::is_some).collect::<Vec<_>>(), vec![true, true, true, false]);
    let e = c.store(StoreMode::Set, b"abc", b"x", 0, 0, 0).await.unwrap_err();
    assert!(matches!(e, BackendError::Invalid(_)), "{e:?}");
    assert_eq!(
        c.get_many(&[b"abc", b"7"]).await.unwrap().iter().map(Option::is_some).collect::<Vec<_>>(),
        vec![false, true]
    );
    let c = cs.get("ci").unwrap();
    common::set(c, b"Foo", b"1").await;
    let rows = c.get_many(&[b"foo", b"FOO", b"bar"]).await.unwrap();
    assert_eq!(rows.iter().filter(|r| r.is_some()).count(), 2);
}

/// A backend that refuses connections or whose name does not resolve is `Unreachable`
/// (the server starts and retries), unlike a wrong configuration (`Invalid`).
#[tokio::test]
async fn unreachable_backend_is_told_apart() {
    for host in ["127.0.0.1:1", "no-such-host.invalid:3306"] {
        let toml = format!(
            "[backend]\nkind = \"mysql\"\nurl = \"mysql://u:p@{host}/db\"\nconnect_timeout_ms = 2000\n\
             plugin_tables = \"off\"\n{}",
            one("t", "")
        );
        match Containers::load(&SqlConfig::from_toml_str(&toml).unwrap()).await {
            Err(sql_containers::LoadError::Unreachable(e)) => assert!(e.contains("cannot connect"), "{host}: {e}"),
            Err(e) => panic!("{host}: not Unreachable: {e:?}"),
            Ok(_) => panic!("{host}: loaded"),
        }
    }
}

fn one(table: &str, extra: &str) -> String {
    format!("[[container]]\nname = \"bad\"\ntable = \"{table}\"\nkey_column = \"k\"\nvalue_columns = \"v\"\n{extra}\n")
}

#[tokio::test]
async fn validation_errors_name_container_and_column() {
    let s = need_server!();
    let db = "sqlcached_t_valid";
    s.database(
        db,
        "CREATE TABLE t (k VARCHAR(50) NOT NULL PRIMARY KEY, v TEXT, f INT, r DOUBLE, s VARCHAR(10), d DATETIME);
         CREATE TABLE noidx (k VARCHAR(50), v TEXT);
         CREATE TABLE nonuniq (k VARCHAR(50), v TEXT, KEY (k));
         CREATE TABLE prefix (k VARCHAR(50), v TEXT, UNIQUE KEY p (k(10)));
         CREATE TABLE composite (k VARCHAR(50), v VARCHAR(50), PRIMARY KEY (k, v));
         CREATE VIEW vw AS SELECT k, v FROM t",
    )
    .await;
    let err = |containers: String| {
        let cfg = s.config(db, None, "", "", &containers);
        async move {
            match Containers::load(&cfg).await {
                Ok(_) => panic!("expected an error for {containers}"),
                Err(e) => e.to_string(),
            }
        }
    };
    let e = err(one("missing", "")).await;
    assert!(e.contains("'bad'") && e.contains("missing") && e.contains("does not exist"), "{e}");
    let e = err(one("t", "flags_column = \"nope\"")).await;
    assert!(e.contains("flags column 'nope'"), "{e}");
    let e =
        err("[[container]]\nname = \"bad\"\ntable = \"t\"\nkey_column = \"k\"\nvalue_columns = \"r\"\n".into()).await;
    assert!(e.contains("value column 'r'") && e.contains("double"), "{e}");
    let e =
        err("[[container]]\nname = \"bad\"\ntable = \"t\"\nkey_column = \"d\"\nvalue_columns = \"v\"\n".into()).await;
    assert!(e.contains("key column 'd'"), "{e}");
    let e = err(one("t", "cas_column = \"s\"")).await;
    assert!(e.contains("cas column 's'") && e.contains("varchar"), "{e}");
    for t in ["noidx", "nonuniq", "prefix", "composite"] {
        let e = err(one(t, "")).await;
        assert!(e.contains("'bad'") && e.contains("key column 'k'") && e.contains("no unique"), "{t}: {e}");
    }
    let e = err(one("vw", "")).await;
    assert!(e.contains("view"), "{e}");
    let e = err(one("t", "schema = \"no_such_db\"")).await;
    assert!(e.contains("'bad'") && e.contains("no_such_db"), "{e}");
}

#[tokio::test]
async fn plugin_tables() {
    let s = need_server!();
    // MySQL's innodb_memcached_config.sql, as shipped (5.6/5.7/8.0).
    s.database(
        "innodb_memcache",
        "CREATE TABLE IF NOT EXISTS cache_policies(
            policy_name VARCHAR(40) PRIMARY KEY,
            get_policy ENUM('innodb_only', 'cache_only', 'caching','disabled') NOT NULL,
            set_policy ENUM('innodb_only', 'cache_only','caching','disabled') NOT NULL,
            delete_policy ENUM('innodb_only', 'cache_only', 'caching','disabled') NOT NULL,
            flush_policy ENUM('innodb_only', 'cache_only','caching','disabled') NOT NULL
         ) ENGINE = INNODB;
         CREATE TABLE IF NOT EXISTS containers(
            name varchar(50) not null primary key,
            db_schema VARCHAR(250) NOT NULL,
            db_table VARCHAR(250) NOT NULL,
            key_columns VARCHAR(250) NOT NULL,
            value_columns VARCHAR(250),
            flags VARCHAR(250) NOT NULL DEFAULT '0',
            cas_column VARCHAR(250),
            expire_time_column VARCHAR(250),
            unique_idx_name_on_key VARCHAR(250) NOT NULL
         ) ENGINE = InnoDB;
         CREATE TABLE IF NOT EXISTS config_options(
            name varchar(50) not null primary key,
            value varchar(50)) ENGINE = InnoDB;
         INSERT INTO cache_policies VALUES('cache_policy', 'innodb_only', 'innodb_only', 'innodb_only', 'innodb_only');
         INSERT INTO cache_policies VALUES('setup_2', 'caching', 'caching', 'caching', 'disabled');
         INSERT INTO config_options VALUES('separator', '|');
         INSERT INTO config_options VALUES('table_map_delimiter', '.');
         INSERT INTO containers VALUES ('aaa', 'sqlcached_t_plugin', 'demo_test', 'c1', 'c2', 'c3', 'c4', 'c5', 'PRIMARY');
         INSERT INTO containers VALUES ('setup_2', 'sqlcached_t_plugin', 'new_demo', 'c1', 'c2,c21', 'c3', 'c4', 'c5', 'secondary_index_x')",
    )
    .await;
    s.database(
        "sqlcached_t_plugin",
        "CREATE TABLE demo_test (c1 VARCHAR(32), c2 VARCHAR(1024), c3 INT, c4 BIGINT UNSIGNED, c5 INT, primary key(c1)) ENGINE = INNODB;
         CREATE TABLE new_demo (id INT AUTO_INCREMENT PRIMARY KEY, c1 VARCHAR(32), c2 VARCHAR(1024), c21 VARCHAR(1024),
            c3 INT, c4 BIGINT UNSIGNED, c5 INT, UNIQUE KEY secondary_index_x (c1)) ENGINE = INNODB;
         INSERT INTO demo_test VALUES ('AA', 'HELLO, HELLO', 8, 0, 0)",
    )
    .await;
    let toml = format!("[backend]\nkind = \"mysql\"\nurl = \"{}\"\nplugin_tables = \"required\"\n", s.url("", None));
    let cs = Containers::load(&SqlConfig::from_toml_str(&toml).unwrap()).await.unwrap();
    assert_eq!(cs.iter().map(|c| c.name()).collect::<Vec<_>>(), vec!["aaa", "setup_2"]);
    assert_eq!(cs.default_container().name(), "aaa");
    let r = cs.default_container().get(b"AA").await.unwrap().unwrap();
    assert_eq!((r.value.as_slice(), r.flags), (&b"HELLO, HELLO"[..], 8), "the plugin's sample row");
    let c = cs.get("setup_2").unwrap();
    assert_eq!(c.policy().get, CachePolicy::Caching);
    assert_eq!(c.policy().flush, CachePolicy::Disabled);
    assert_eq!(cs.get("aaa").unwrap().policy().get, CachePolicy::InnodbOnly);
    common::set(c, b"k", b"x|y").await;
    assert_eq!(common::val(c, b"k").await.unwrap(), b"x|y");
    let mut conn = s.conn("sqlcached_t_plugin").await;
    let v: Option<(String, String)> = conn.query_first("SELECT c2, c21 FROM new_demo WHERE c1 = 'k'").await.unwrap();
    assert_eq!(v, Some(("x".into(), "y".into())));
    conn.query_drop("DROP DATABASE innodb_memcache").await.unwrap();
}

/// A TCP proxy in front of MariaDB that the test can break and restore.
struct Proxy {
    port: u16,
    target: u16,
    mode: Arc<AtomicU64>, // 0 forward, 1 refuse (closed), 2 black hole
    conns: Arc<Mutex<Vec<tokio::task::JoinHandle<()>>>>,
    accept: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Proxy {
    async fn start(target: u16) -> Arc<Proxy> {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let p = Arc::new(Proxy {
            port: l.local_addr().unwrap().port(),
            target,
            mode: Arc::new(AtomicU64::new(0)),
            conns: Arc::default(),
            accept: Mutex::new(None),
        });
        p.serve(l);
        p
    }

    fn serve(self: &Arc<Self>, l: tokio::net::TcpListener) {
        let me = self.clone();
        let h = tokio::spawn(async move {
            loop {
                let Ok((mut inbound, _)) = l.accept().await else { return };
                let black_hole = me.mode.load(Ordering::SeqCst) == 2;
                let target = me.target;
                let h = tokio::spawn(async move {
                    if black_hole {
                        tokio::time::sleep(Duration::from_secs(3600)).await;
                        return;
                    }
                    let Ok(mut out) = tokio::net::TcpStream::connect(("127.0.0.1", target)).await else { return };
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut out).await;
                });
                me.conns.lock().unwrap().push(h);
            }
        });
        *self.accept.lock().unwrap() = Some(h);
    }

    /// Closes the listener and every proxied connection: the backend "goes away".
    fn kill(&self) {
        self.mode.store(1, Ordering::SeqCst);
        if let Some(h) = self.accept.lock().unwrap().take() {
            h.abort();
        }
        for h in self.conns.lock().unwrap().drain(..) {
            h.abort();
        }
    }

    /// Listens again on the same port (forwarding, or swallowing connections).
    async fn revive(self: &Arc<Self>, black_hole: bool) {
        self.mode.store(if black_hole { 2 } else { 0 }, Ordering::SeqCst);
        let mut tries = 0;
        let l = loop {
            match tokio::net::TcpListener::bind(("127.0.0.1", self.port)).await {
                Ok(l) => break l,
                Err(e) if tries < 50 => {
                    tries += 1;
                    let _ = e;
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Err(e) => panic!("rebinding the proxy port: {e}"),
            }
        };
        self.serve(l);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backend_going_away() {
    let s = need_server!();
    let db = "sqlcached_t_outage";
    s.database(db, DDL).await;
    let proxy = Proxy::start(s.port).await;
    let backend = "writers = 1\nconnect_timeout_ms = 1000\nquery_timeout_ms = 1500";
    let cs = Containers::load(&s.config(db, Some(proxy.port), backend, "", common::CONTAINERS)).await.unwrap();
    let c = cs.default_container().clone();
    common::set(&c, b"before", b"1").await;

    // Refused: every operation fails at once.
    proxy.kill();
    tokio::time::sleep(Duration::from_millis(100)).await;
    for op in 0..3 {
        let t = Instant::now();
        let e = if op == 0 {
            c.get(b"before").await.unwrap_err()
        } else {
            c.store(StoreMode::Set, b"during", b"x", 0, 0, 0).await.unwrap_err()
        };
        assert!(matches!(e, BackendError::Unavailable(_)), "{e:?}");
        assert!(t.elapsed() < Duration::from_secs(3), "answered in {:?}", t.elapsed());
    }

    // Back: the pool reconnects; acknowledged writes are there.
    proxy.revive(false).await;
    tokio::time::sleep(Duration::from_millis(1100)).await; // past the fail-fast second
    let mut ok = false;
    for _ in 0..50 {
        if c.get(b"before").await.is_ok() {
            ok = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(ok, "reconnected");
    assert_eq!(common::val(&c, b"before").await.unwrap(), b"1");
    common::set(&c, b"after", b"2").await;

    // A black hole (accepts, never answers): bounded by the connect/query timeouts.
    proxy.kill();
    proxy.revive(true).await;
    let t = Instant::now();
    let e = c.store(StoreMode::Set, b"hole", b"x", 0, 0, 0).await.unwrap_err();
    assert!(matches!(e, BackendError::Unavailable(_)), "{e:?}");
    assert!(t.elapsed() < Duration::from_secs(5), "answered in {:?}", t.elapsed());
    proxy.kill();
    proxy.revive(false).await;
    tokio::time::sleep(Duration::from_millis(1100)).await;
    for _ in 0..50 {
        if c.get(b"after").await.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(common::val(&c, b"after").await.unwrap(), b"2");
    assert_eq!(cs.stats().lost_writes, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lost_batch_is_reported_not_replayed() {
    let s = need_server!();
    let db = "sqlcached_t_lost";
    s.database(db, DDL).await;
    let proxy = Proxy::start(s.port).await;
    let backend = "writers = 1\nconnect_timeout_ms = 1000\nquery_timeout_ms = 1500";
    let cs = Containers::load(&s.config(
        db,
        Some(proxy.port),
        backend,
        "w_batch_size = 10\nbk_commit_interval = 60",
        common::CONTAINERS,
    ))
    .await
    .unwrap();
    let c = cs.default_container().clone();
    for k in [&b"l1"[..], b"l2", b"l3"] {
        common::set(&c, k, b"acked").await;
    }
    proxy.kill();
    tokio::time::sleep(Duration::from_millis(100)).await; // the aborts take effect
    let e = c.store(StoreMode::Set, b"l4", b"x", 0, 0, 0).await.unwrap_err();
    match e {
        BackendError::Lost { ops, .. } => assert_eq!(ops, 3),
        other => panic!("expected Lost, got {other:?}"),
    }
    let st = cs.stats();
    assert_eq!((st.lost_batches, st.lost_writes), (1, 3));
    proxy.revive(false).await;
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let peek = MyPeek { url: s.url(db, None) };
    assert_eq!(peek.count("demo").await, 0, "the lost batch was rolled back and not replayed");
    common::set(&c, b"l5", b"x").await;
    cs.commit_all().await.unwrap();
    assert_eq!(peek.count("demo").await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_wait_is_bounded() {
    let s = need_server!();
    let db = "sqlcached_t_lockwait";
    s.database(db, DDL).await;
    let backend = "connect_timeout_ms = 1000\nquery_timeout_ms = 1500";
    let cs = Containers::load(&s.config(db, None, backend, "", common::CONTAINERS)).await.unwrap();
    let c = cs.default_container().clone();
    common::set(&c, b"locked", b"1").await;
    // Another SQL session holds the row.
    let mut other = s.conn(db).await;
    other.query_drop("START TRANSACTION").await.unwrap();
    other.query_drop("SELECT * FROM demo WHERE c1 = 'locked' FOR UPDATE").await.unwrap();
    let t = Instant::now();
    let e = c.store(StoreMode::Set, b"locked", b"2", 0, 0, 0).await.unwrap_err();
    assert!(matches!(e, BackendError::Unavailable(_) | BackendError::Sql(_)), "{e:?}");
    assert!(t.elapsed() < Duration::from_secs(3), "answered in {:?}", t.elapsed());
    // Reads are not blocked by the lock (consistent reads).
    assert_eq!(common::val(&c, b"locked").await.unwrap(), b"1");
    other.query_drop("COMMIT").await.unwrap();
    common::set(&c, b"locked", b"3").await;
    assert_eq!(common::val(&c, b"locked").await.unwrap(), b"3");
    assert_eq!(cs.stats().lost_writes, 0);
}

/// A real server restart with scripts/mariadb.sh. Only when asked for (it stops the
/// server other tests use): SQLCACHED_MARIADB_RESTART_DIR=the DIR given to the script;
/// run it alone: `cargo test -p sql-containers --test mysql real_restart`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_restart() {
    let s = need_server!();
    let Some(dir) = std::env::var("SQLCACHED_MARIADB_RESTART_DIR").ok() else {
        eprintln!("SQLCACHED_MARIADB_RESTART_DIR not set: restart test skipped");
        return;
    };
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/mariadb.sh");
    let run = |args: Vec<String>| {
        let st = std::process::Command::new("bash").arg(script).args(&args).status().unwrap();
        assert!(st.success(), "mariadb.sh {args:?}");
    };
    let db = "sqlcached_t_restart";
    s.database(db, DDL).await;
    let backend = "connect_timeout_ms = 1000\nquery_timeout_ms = 1500";
    let cs = Containers::load(&s.config(db, None, backend, "", common::CONTAINERS)).await.unwrap();
    let c = cs.default_container().clone();
    common::set(&c, b"acked", b"1").await;
    run(vec!["stop".into(), dir.clone()]);
    let t = Instant::now();
    let e = c.store(StoreMode::Set, b"down", b"x", 0, 0, 0).await.unwrap_err();
    assert!(matches!(e, BackendError::Unavailable(_)), "{e:?}");
    let e = c.get(b"acked").await.unwrap_err();
    assert!(matches!(e, BackendError::Unavailable(_)), "{e:?}");
    assert!(t.elapsed() < Duration::from_secs(3), "answered in {:?}", t.elapsed());
    run(vec!["start".into(), dir.clone(), s.port.to_string()]);
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let mut back = None;
    for _ in 0..50 {
        if let Ok(v) = c.get(b"acked").await {
            back = Some(v);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(back.expect("reconnected").unwrap().value, b"1", "acknowledged write survived");
    common::set(&c, b"after", b"2").await;
}
