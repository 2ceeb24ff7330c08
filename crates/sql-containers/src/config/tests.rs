//! Tests of the containers file: parsing, defaults, errors, and that no value in any key panics.

use super::*;

const FULL: &str = r#"
[backend]
kind = "sqlite"
path = "/tmp/x.db"
pool_size = 3
plugin_tables = "off"
synchronous = "normal"
[backend.attach]
test = "/tmp/test.db"

[options]
separator = ","
r_batch_size = 10
w_batch_size = 20
bk_commit_interval = 2
cache_ttl = 30

[[container]]
name = "default"
schema = "test"
table = "demo_test"
key_column = "c1"
value_columns = "c2|c3, c4"
flags_column = "c5"
cas_column = "c6"
expire_column = "c7"
unique_index = "PRIMARY"
cache_ttl = 5
policy = "caching"

[[container]]
name = "other"
table = "t2"
key_column = "k"
value_columns = ["v"]
policy = { get = "caching", delete = "disabled" }
"#;

#[test]
fn toml_full_example() {
    let cfg = SqlConfig::from_toml_str(FULL).unwrap();
    assert_eq!(cfg.backend.kind, BackendKind::Sqlite);
    assert_eq!(cfg.backend.pool_size, 3);
    assert_eq!(cfg.backend.plugin_tables, PluginTables::Off);
    assert_eq!(cfg.backend.synchronous, Synchronous::Normal);
    assert_eq!(cfg.backend.attach["test"], PathBuf::from("/tmp/test.db"));
    let defs = cfg.container_defs();
    assert_eq!(defs.len(), 2);
    assert_eq!(defs[0].value_columns, vec!["c2", "c3", "c4"]);
    assert_eq!(defs[0].schema.as_deref(), Some("test"));
    assert_eq!(defs[0].policy, Policy::all(CachePolicy::Caching));
    assert_eq!(defs[0].cache_ttl, Some(5));
    assert_eq!(defs[0].unique_index.as_deref(), Some("PRIMARY"));
    assert_eq!(defs[1].value_columns, vec!["v"]);
    assert_eq!(
        defs[1].policy,
        Policy {
            get: CachePolicy::Caching,
            set: CachePolicy::InnodbOnly,
            delete: CachePolicy::Disabled,
            flush: CachePolicy::InnodbOnly
        }
    );
    assert_eq!(defs[1].schema, None);
    let o = resolve_options(&cfg.options, &OptionsConfig::default());
    assert_eq!(o.separator, ",");
    assert_eq!(o.table_map_delimiter, ".");
    assert_eq!((o.r_batch_size, o.w_batch_size), (10, 20));
    assert_eq!(o.bk_commit_interval, Duration::from_secs(2));
    assert_eq!(o.cache_ttl, 30);
}

#[test]
fn toml_mysql_minimal_and_defaults() {
    let cfg =
        SqlConfig::from_toml_str("[backend]\nkind = \"mariadb\"\nurl = \"mysql://u:p@127.0.0.1:3306/test\"\n").unwrap();
    assert_eq!(cfg.backend.kind, BackendKind::Mysql);
    assert_eq!(cfg.backend.pool_size, 4);
    assert_eq!(cfg.backend.plugin_tables, PluginTables::Auto);
    assert!(cfg.containers.is_empty());
    let o = resolve_options(&cfg.options, &OptionsConfig::default());
    assert_eq!(o, Options::default());
}

#[test]
fn toml_errors_are_clear() {
    let e = SqlConfig::from_toml_str("[backend]\nkind = \"sqlite\"\n").unwrap_err();
    assert!(e.contains("backend.path"), "{e}");
    let e = SqlConfig::from_toml_str("[backend]\nkind = \"sqlite\"\npath = \":memory:\"\n").unwrap_err();
    assert!(e.contains(":memory:"), "{e}");
    let e = SqlConfig::from_toml_str("[backend]\nkind = \"oracle\"\npath = \"x\"\n").unwrap_err();
    assert!(e.contains("oracle"), "{e}");
    let e = SqlConfig::from_toml_str("[backend]\nkind = \"sqlite\"\npath = \"x\"\npoolsize = 3\n").unwrap_err();
    assert!(e.contains("poolsize"), "{e}");
    let e = SqlConfig::from_toml_str("[backend]\nkind = \"sqlite\"\npath = \"x\"\n[options]\nw_batch_size = 0\n")
        .unwrap_err();
    assert!(e.contains("w_batch_size"), "{e}");
    let e = SqlConfig::from_toml_str(
        "[backend]\nkind = \"sqlite\"\npath = \"x\"\n[[container]]\nname = \"a\"\ntable = \"t\"\nkey_column = \"k\"\nvalue_columns = \"v\"\npolicy = \"sometimes\"\n",
    )
    .unwrap_err();
    assert!(e.contains("policy") || e.contains("variant"), "{e}");
    let e = SqlConfig::from_toml_str("[backend]\nkind = \"mysql\"\nurl = \"mysql://u@h/d\"\ninline_reads = false\n")
        .unwrap_err();
    assert!(e.contains("inline_reads is for SQLite only"), "{e}");
    let cfg = SqlConfig::from_toml_str("[backend]\nkind = \"sqlite\"\npath = \"x\"\ninline_reads = false\n").unwrap();
    assert_eq!(cfg.backend.inline_reads, Some(false));
}

/// Timeouts of 0 (every statement would fail at once) and past SQLite's `int` of
/// milliseconds (its busy timeout would panic at open) are refused with their bounds.
#[test]
fn timeouts_out_of_range_are_refused() {
    for (key, v) in [("query_timeout_ms", "0"), ("query_timeout_ms", "3000000000"), ("connect_timeout_ms", "0")] {
        let text = format!("[backend]\nkind = \"sqlite\"\npath = \"/tmp/x.db\"\n{key} = {v}\n");
        let e = SqlConfig::from_toml_str(&text).and_then(|c| c.check()).unwrap_err();
        assert_eq!(e, format!("backend.{key} must be 1..=2147483647 (about 24 days), not {v}"));
    }
    let ok = "[backend]\nkind = \"sqlite\"\npath = \"/tmp/x.db\"\nquery_timeout_ms = 2147483647\n";
    SqlConfig::from_toml_str(ok).unwrap().check().unwrap();
}

/// A MySQL file with every backend key, for [`any_value_in_any_key_parses_or_fails_cleanly`].
const MYSQL_ALL: &str = r#"
[backend]
kind = "mariadb"
url = "mysql://u:p@127.0.0.1:3306/test"
pool_size = 6
writers = 2
thread_readers = 2
thread_writers = 2
connect_timeout_ms = 500
query_timeout_ms = 2000
plugin_tables = "auto"
inline_reads = false

[options]
separator = "|"
table_map_delimiter = "."
r_batch_size = 1
w_batch_size = 1
bk_commit_interval = 1

[[container]]
name = "users"
table = "users"
key_column = "id"
value_columns = ["name", "email"]
policy = { get = "caching", set = "innodb_only", delete = "innodb_only", flush = "disabled" }
cache_ttl = 0
"#;

/// Property: a containers file with any value in any key (numbers at and past their
/// type's limits, negative ones, strings, arrays, tables, booleans, nothing) parses and
/// checks to a value or a message, never a panic; options then resolve without one.
#[test]
fn any_value_in_any_key_parses_or_fails_cleanly() {
    const VALUES: &[&str] = &[
        "0",
        "1",
        "-1",
        "2",
        "65535",
        "4294967296",
        "18446744073709551615",
        "99999999999999999999",
        "1.5",
        "-0.0",
        "\"\"",
        "\"x\"",
        "\" , | \"",
        "\"mysql://\"",
        "\"sqlite\"",
        "\"mariadb\"",
        "\"caching\"",
        "\"/\"",
        "true",
        "false",
        "[]",
        "[\"\"]",
        "[1, 2]",
        "{}",
        "{ get = \"x\" }",
        "\"a|b|\"",
        "\"\\u0000\"",
    ];
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let (mut parsed, mut refused) = (0, 0);
    for base in [FULL, MYSQL_ALL] {
        let lines: Vec<&str> = base.lines().collect();
        for _ in 0..3_000 {
            // One to three lines get a new value (or lose theirs, or go).
            let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
            for _ in 0..1 + next() % 3 {
                let i = (next() % out.len() as u64) as usize;
                let Some((key, _)) = out[i].split_once(" = ") else { continue };
                out[i] = match next() % 8 {
                    0 => String::new(),
                    1 => format!("{key} ="),
                    _ => format!("{key} = {}", VALUES[(next() % VALUES.len() as u64) as usize]),
                };
            }
            let text = out.join("\n");
            let run = std::panic::catch_unwind(|| match SqlConfig::from_toml_str(&text) {
                Ok(cfg) => {
                    let checked = cfg.check().is_ok();
                    if checked {
                        // What the backends then do with the values must not panic either.
                        let ms = i32::try_from(cfg.backend.query_timeout_ms).expect("SQLite's busy timeout");
                        assert!(ms > 0 && cfg.backend.connect_timeout_ms > 0);
                    }
                    let _ = resolve_options(&cfg.options, &OptionsConfig::default());
                    let _ = cfg.container_defs();
                    checked
                }
                Err(e) => {
                    assert!(!e.is_empty());
                    false
                }
            });
            match run {
                Ok(true) => parsed += 1,
                Ok(false) => refused += 1,
                Err(_) => panic!("a panic on:\n{text}"),
            }
        }
    }
    assert!(parsed > 100 && refused > 100, "parsed {parsed}, refused {refused}: the mutations should reach both");
}
