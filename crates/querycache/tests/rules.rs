//! Every cacheability rule: each statement below is shown not cached, the others cached.

mod common;

use common::{cache, cache_with, exec, is_cached, session};
use querycache::{CacheType, Plan};

#[test]
fn cacheable_reads_are_cached() {
    let c = cache();
    let mut s = session(&c);
    for sql in [
        "SELECT c FROM sbtest1 WHERE id=10",
        "select c from sbtest1 where id = 10",
        "SELECT c FROM sbtest1 WHERE id BETWEEN 5 AND 104",
        "SELECT SUM(k) FROM sbtest1 WHERE id BETWEEN 5 AND 104",
        "SELECT c FROM sbtest1 WHERE id BETWEEN 5 AND 104 ORDER BY c",
        "SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN 5 AND 104 ORDER BY c",
        "SELECT * FROM sbtest.sbtest1 s JOIN t3 ON s.id = t3.id",
        "SELECT `c` FROM `sbtest1` WHERE `id` IN (1, 2, 3)",
        "SELECT COUNT(*), CONCAT(c, 'x'), ROUND(k / 3) FROM sbtest1 /* comment */ WHERE id > 3 -- trailing",
        "SELECT c FROM other.t1 WHERE id = -4",
        "SELECT SQL_CACHE c FROM sbtest1",
        "WITH x AS (SELECT id FROM sbtest1) SELECT * FROM x",
        "SELECT c FROM sbtest1 WHERE id = 1;",
        "(SELECT c FROM sbtest1 WHERE id = 1) UNION (SELECT c FROM t3 WHERE id = 2)",
    ] {
        assert!(is_cached(&c, &mut s, sql), "should be cached: {sql}");
    }
}

#[test]
fn rule_table_reads_not_cached() {
    let c = cache();
    let mut s = session(&c);
    let cases: &[(&str, &str)] = &[
        ("SELECT NOW() FROM sbtest1", "NOW"),
        ("SELECT SYSDATE() FROM sbtest1", "SYSDATE"),
        ("SELECT CURDATE() FROM sbtest1", "CURDATE"),
        ("SELECT CURTIME() FROM sbtest1", "CURTIME"),
        ("SELECT c FROM sbtest1 WHERE d < CURRENT_DATE", "CURRENT_DATE bare"),
        ("SELECT CURRENT_TIME FROM sbtest1", "CURRENT_TIME"),
        ("SELECT CURRENT_TIMESTAMP() FROM sbtest1", "CURRENT_TIMESTAMP"),
        ("SELECT LOCALTIME FROM sbtest1", "LOCALTIME"),
        ("SELECT LOCALTIMESTAMP() FROM sbtest1", "LOCALTIMESTAMP"),
        ("SELECT UTC_DATE(), UTC_TIME, UTC_TIMESTAMP FROM sbtest1", "UTC_*"),
        ("SELECT UNIX_TIMESTAMP() FROM sbtest1", "UNIX_TIMESTAMP"),
        ("SELECT c FROM sbtest1 ORDER BY RAND() LIMIT 1", "RAND"),
        ("SELECT UUID() FROM sbtest1", "UUID"),
        ("SELECT UUID_SHORT() FROM sbtest1", "UUID_SHORT"),
        ("SELECT CONNECTION_ID() FROM sbtest1", "CONNECTION_ID"),
        ("SELECT c FROM sbtest1 WHERE id = LAST_INSERT_ID()", "LAST_INSERT_ID"),
        ("SELECT FOUND_ROWS() FROM sbtest1", "FOUND_ROWS"),
        ("SELECT ROW_COUNT() FROM sbtest1", "ROW_COUNT"),
        ("SELECT USER() FROM sbtest1", "USER"),
        ("SELECT CURRENT_USER FROM sbtest1", "CURRENT_USER"),
        ("SELECT SESSION_USER() FROM sbtest1", "SESSION_USER"),
        ("SELECT SYSTEM_USER() FROM sbtest1", "SYSTEM_USER"),
        ("SELECT DATABASE() FROM sbtest1", "DATABASE"),
        ("SELECT SCHEMA() FROM sbtest1", "SCHEMA"),
        ("SELECT BENCHMARK(10, 1) FROM sbtest1", "BENCHMARK"),
        ("SELECT SLEEP(1) FROM sbtest1", "SLEEP"),
        ("SELECT GET_LOCK('a', 1) FROM sbtest1", "GET_LOCK"),
        ("SELECT RELEASE_LOCK('a') FROM sbtest1", "RELEASE_LOCK"),
        ("SELECT IS_FREE_LOCK('a') FROM sbtest1", "IS_FREE_LOCK"),
        ("SELECT IS_USED_LOCK('a') FROM sbtest1", "IS_USED_LOCK"),
        ("SELECT MASTER_POS_WAIT('f', 4) FROM sbtest1", "MASTER_POS_WAIT"),
        ("SELECT LOAD_FILE('/etc/passwd') FROM sbtest1", "LOAD_FILE"),
        ("SELECT RANDOM_BYTES(4) FROM sbtest1", "RANDOM_BYTES"),
        ("SELECT NEXTVAL(s1) FROM sbtest1", "NEXTVAL"),
        ("SELECT LASTVAL(s1) FROM sbtest1", "LASTVAL"),
        ("SELECT SETVAL(s1, 5) FROM sbtest1", "SETVAL"),
        ("SELECT NEXT VALUE FOR s1 FROM sbtest1", "NEXT VALUE FOR"),
        ("SELECT my_func(c) FROM sbtest1", "stored function"),
        ("SELECT sbtest.my_func(c) FROM sbtest1", "qualified stored function"),
        ("SELECT @x FROM sbtest1", "user variable"),
        ("SELECT c FROM sbtest1 WHERE id = @id", "user variable in WHERE"),
        ("SELECT @@sql_mode FROM sbtest1", "system variable"),
        ("SELECT c FROM sbtest1 WHERE id = 1 FOR UPDATE", "FOR UPDATE"),
        ("SELECT c FROM sbtest1 WHERE id = 1 LOCK IN SHARE MODE", "LOCK IN SHARE MODE"),
        ("SELECT c FROM sbtest1 WHERE id = 1 FOR SHARE", "FOR SHARE"),
        ("SELECT c FROM sbtest1 INTO OUTFILE '/tmp/x'", "INTO OUTFILE"),
        ("SELECT c FROM sbtest1 INTO DUMPFILE '/tmp/x'", "INTO DUMPFILE"),
        ("SELECT c INTO @v FROM sbtest1 WHERE id = 1", "INTO @var"),
        ("SELECT SQL_NO_CACHE c FROM sbtest1", "SQL_NO_CACHE"),
        ("SELECT /*!40001 SQL_NO_CACHE */ c FROM sbtest1", "SQL_NO_CACHE in executable comment"),
        ("SELECT SQL_CALC_FOUND_ROWS c FROM sbtest1 LIMIT 1", "SQL_CALC_FOUND_ROWS"),
        ("SELECT * FROM mysql.user", "system schema mysql"),
        ("SELECT * FROM information_schema.tables", "information_schema"),
        ("SELECT * FROM performance_schema.threads", "performance_schema"),
        ("SELECT * FROM sys.version", "sys"),
        ("SELECT * FROM v1", "view"),
        ("SELECT * FROM unknown_table", "table unknown to the registry"),
        ("SELECT c FROM sbtest1; SELECT c FROM t3", "multi-statement"),
        ("SELECT 1", "no tables"),
        ("SELECT c FROM sbtest1 WHERE c = 'unterminated", "malformed"),
        ("SHOW TABLES", "SHOW"),
        ("SELECT c FROM sbtest1 PROCEDURE ANALYSE()", "PROCEDURE"),
        ("SELECT * FROM JSON_TABLE('[1]', '$[*]' COLUMNS (a INT PATH '$')) j", "table function"),
    ];
    for (sql, why) in cases {
        assert!(!is_cached(&c, &mut s, sql), "{why}: should not be cached: {sql}");
    }
    assert!(c.stats().not_cached >= cases.len() as u64 - 2);
}

#[test]
fn demand_mode_needs_sql_cache() {
    let c = cache_with(CacheType::Demand, 1 << 24);
    let mut s = session(&c);
    assert!(!is_cached(&c, &mut s, "SELECT c FROM sbtest1 WHERE id = 1"));
    assert!(is_cached(&c, &mut s, "SELECT SQL_CACHE c FROM sbtest1 WHERE id = 1"));
    let off = cache_with(CacheType::Off, 1 << 24);
    let mut s = session(&off);
    assert!(!is_cached(&off, &mut s, "SELECT SQL_CACHE c FROM sbtest1 WHERE id = 1"));
}

#[test]
fn no_database_selected_is_not_cached() {
    let c = cache();
    let mut s = c.session("app", None, 45, 0x200);
    assert!(!is_cached(&c, &mut s, "SELECT c FROM sbtest1"));
    assert!(is_cached(&c, &mut s, "SELECT c FROM sbtest.sbtest1"));
}

#[test]
fn transactions_go_to_the_backend() {
    let c = cache();
    let mut s = session(&c);
    exec(&c, &mut s, "BEGIN", 0x0003);
    assert!(!is_cached(&c, &mut s, "SELECT c FROM sbtest1 WHERE id = 1"), "inside BEGIN");
    exec(&c, &mut s, "COMMIT", 0x0002);
    assert!(is_cached(&c, &mut s, "SELECT c FROM sbtest1 WHERE id = 1"), "after COMMIT");
    exec(&c, &mut s, "SET autocommit = 0", 0x0000);
    assert!(!is_cached(&c, &mut s, "SELECT c FROM sbtest1 WHERE id = 1"), "autocommit=0");
    exec(&c, &mut s, "SET autocommit = 1", 0x0002);
    assert!(is_cached(&c, &mut s, "SELECT c FROM sbtest1 WHERE id = 1"), "autocommit=1");
}

#[test]
fn untrackable_session_state_turns_caching_off_for_good() {
    for stmt in [
        "CREATE TEMPORARY TABLE tmp (a INT)",
        "SET sql_mode = CONCAT(@@sql_mode, ',STRICT_ALL_TABLES')",
        "SET @@session.time_zone = @tz",
        "SET ROLE admin",
        "SET SESSION TRANSACTION ISOLATION LEVEL READ UNCOMMITTED",
        "SET tx_isolation = 'READ-UNCOMMITTED'",
        "SET sql_mode = 'ANSI_QUOTES'",
        "SET sql_mode = 'NO_BACKSLASH_ESCAPES'",
        "SET NAMES utf8mb4; SELECT 1",
    ] {
        let c = cache();
        let mut s = session(&c);
        exec(&c, &mut s, stmt, 0x0002);
        assert!(s.caching_disabled().is_some(), "{stmt}");
        assert!(!is_cached(&c, &mut s, "SELECT c FROM sbtest1 WHERE id = 1"), "after {stmt}");
        exec(&c, &mut s, "SET sql_mode = ''", 0x0002);
        assert!(!is_cached(&c, &mut s, "SELECT c FROM sbtest1 WHERE id = 1"), "still off after {stmt}");
    }
}

#[test]
fn trackable_set_keeps_caching() {
    let c = cache();
    let mut s = session(&c);
    for stmt in [
        "SET @x = 1",
        "SET GLOBAL max_connections = 100",
        "SET sql_mode = 'STRICT_TRANS_TABLES'",
        "SET SESSION time_zone = '+00:00', @@session.sql_select_limit = 10",
        "SET NAMES utf8mb4 COLLATE utf8mb4_bin",
        "SET CHARACTER SET latin1",
        "SET TRANSACTION ISOLATION LEVEL READ COMMITTED",
    ] {
        exec(&c, &mut s, stmt, 0x0002);
        assert!(s.caching_disabled().is_none(), "{stmt}");
        assert!(is_cached(&c, &mut s, "SELECT c FROM sbtest1 WHERE id = 1"), "after {stmt}");
    }
}

#[test]
fn offline_caches_nothing() {
    let c = cache();
    let mut s = session(&c);
    c.set_online(false);
    assert!(matches!(c.on_query(&mut s, b"SELECT c FROM sbtest1 WHERE id = 1"), Plan::Forward { .. }));
    c.set_online(true);
    assert!(is_cached(&c, &mut s, "SELECT c FROM sbtest1 WHERE id = 1"));
}
