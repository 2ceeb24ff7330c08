//! `--invalidate` rules (binlog-driven key invalidation for plain memcached data, see
//! docs/invalidation.md) and their two settings.
//!
//! On the command line one flag per key template, `--invalidate=DB.TABLE=TEMPLATE` (a table
//! of `--mysql-backend`, followed through its binlog) or
//! `--invalidate=postgres:SCHEMA.TABLE=TEMPLATE` (a table of `--pg-backend`'s `--pg-database`,
//! followed through its WAL); in the config file a table per rule (`backend = "postgres"`
//! for PostgreSQL):
//!
//! ```toml
//! [[invalidate]]
//! table = "shop.users"
//! keys = ["user:{id}", "user_by_email:{email}"]
//!
//! [[invalidate]]
//! table = "test.customers"
//! keys = ["SELECT firstname,lastname FROM test.customers where id={id}"]
//! hash = "md5"
//! ```

use crate::template::KeyTemplate;

use crate::usage::{Opt, Section};

/// Which server's log a rule follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RuleSource {
    /// `--mysql-backend`'s binlog (the default).
    Mysql,
    /// `--pg-backend`'s WAL (logical replication).
    Postgres,
}

impl RuleSource {
    /// `mysql` or `postgres`, as written before a rule's table.
    pub fn name(self) -> &'static str {
        match self {
            RuleSource::Mysql => "mysql",
            RuleSource::Postgres => "postgres",
        }
    }
}

/// One key template of one table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuleSpec {
    /// The server whose log names the changed rows.
    pub source: RuleSource,
    /// Database of the table.
    pub db: String,
    /// The table.
    pub table: String,
    /// The key it names for a changed row.
    pub template: KeyTemplate,
}

/// What a change to a whole table (TRUNCATE, ALTER, statement-format DML, a binlog gap)
/// does to the keys of its rules: they cannot be named one by one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TableChanges {
    /// `flush_all` the plain keys (the default: nothing stale survives).
    Flush,
    /// Log it and leave the keys to their TTL.
    Ignore,
}

/// The invalidation settings.
#[derive(Clone, Debug)]
pub struct InvalidateConfig {
    /// `--invalidate` rules, in the order given.
    pub rules: Vec<RuleSpec>,
    /// `--invalidate-hold-ms`: how long an invalidated key refuses fills (0: not at all).
    pub hold_ms: u64,
    /// `--invalidate-table-changes flush|ignore`.
    pub table_changes: TableChanges,
}

impl Default for InvalidateConfig {
    fn default() -> Self {
        InvalidateConfig { rules: Vec::new(), hold_ms: 2000, table_changes: TableChanges::Flush }
    }
}

/// The long flags this module parses (each takes a value).
pub const FLAGS: &[&str] = &["invalidate", "invalidate-hold-ms", "invalidate-table-changes"];

/// Parses `DB.TABLE=TEMPLATE`.
pub fn parse_rule(v: &str) -> Result<RuleSpec, String> {
    let bad = |why: &str| format!("--invalidate '{v}': {why}");
    let (source, rest) = match v.split_once(':') {
        Some(("postgres", rest)) => (RuleSource::Postgres, rest),
        Some(("mysql", rest)) => (RuleSource::Mysql, rest),
        _ => (RuleSource::Mysql, v),
    };
    let (table, template) = rest.split_once('=').ok_or_else(|| bad("want [postgres:]DB.TABLE=KEY-TEMPLATE"))?;
    let (db, table) = table.trim().split_once('.').ok_or_else(|| bad("name the table as DB.TABLE"))?;
    let ident = |s: &str| !s.is_empty() && s.len() <= 64 && !s.contains(['`', '.', ' ', '\0']);
    if !ident(db) || !ident(table) {
        return Err(bad("name the table as DB.TABLE"));
    }
    let template = KeyTemplate::parse(template).map_err(|e| bad(&e))?;
    Ok(RuleSpec { source, db: db.to_string(), table: table.to_string(), template })
}

impl InvalidateConfig {
    /// Applies one flag of [`FLAGS`] with its value.
    pub fn set(&mut self, flag: &str, v: &str) -> Result<(), String> {
        match flag {
            "invalidate" => self.rules.push(parse_rule(v)?),
            "invalidate-hold-ms" => {
                self.hold_ms =
                    v.trim().parse().ok().filter(|&ms| ms <= 3_600_000).ok_or_else(|| {
                        format!("--invalidate-hold-ms takes milliseconds from 0 to 3600000, not '{v}'")
                    })?
            }
            "invalidate-table-changes" => {
                self.table_changes = match v {
                    "flush" => TableChanges::Flush,
                    "ignore" => TableChanges::Ignore,
                    _ => return Err(format!("--invalidate-table-changes must be flush or ignore, not '{v}'")),
                }
            }
            _ => return Err(format!("unknown flag --{flag}")),
        }
        Ok(())
    }

    /// Whether any rule follows `source`.
    pub fn follows(&self, source: RuleSource) -> bool {
        self.rules.iter().any(|r| r.source == source)
    }

    /// Checks the combination with the MySQL and PostgreSQL settings (the logs to follow).
    pub fn validate(
        &self,
        mysql: &super::mysql::MysqlConfig,
        postgres: &super::postgres::PostgresConfig,
        given: bool,
    ) -> Result<(), String> {
        if self.rules.is_empty() {
            if given {
                return Err("--invalidate-hold-ms and --invalidate-table-changes apply to --invalidate rules: \
                            give at least one"
                    .into());
            }
            return Ok(());
        }
        if self.follows(RuleSource::Mysql) && (mysql.backend.is_none() || mysql.user.is_none()) {
            return Err("--invalidate rules follow a binlog: give --mysql-backend HOST:PORT and --mysql-user USER \
                        (an account with REPLICATION SLAVE, BINLOG MONITOR and SELECT on information_schema)"
                .into());
        }
        if self.follows(RuleSource::Postgres) && (postgres.backend.is_none() || postgres.user.is_none()) {
            return Err("--invalidate=postgres:... rules follow PostgreSQL's WAL: give --pg-backend HOST:PORT and \
                        --pg-user USER (a role with REPLICATION; its password in SQLCACHED_PG_PASSWORD or \
                        --pg-password-file) and --pg-database DB"
                .into());
        }
        Ok(())
    }
}

/// The `--help` section of these flags.
pub const HELP: Section = Section {
    title: "Binlog- and WAL-driven invalidation of plain keys (docs/invalidation.md)",
    options: &[
        Opt(
            "--invalidate=<db.t=key>",
            "when the binlog of --mysql-backend (read as --mysql-user) shows a row of db.t inserted, \
             updated or deleted, delete the key built from its old and new images: user:{id}, \
             md5(SELECT ... id={id}); repeat for each key (or [[invalidate]] tables in --config); \
             postgres:schema.t=key follows --pg-backend's WAL instead (--pg-slot, --pg-publication)",
        ),
        Opt(
            "--invalidate-hold-ms=<n>",
            "after an invalidation the key refuses set/add for n ms (answered STORED, not kept), so a \
             reader that read the old row cannot put it back (default: 2000; 0: off)",
        ),
        Opt(
            "--invalidate-table-changes=<m>",
            "flush (default): a change to a whole table (TRUNCATE, ALTER, a binlog gap) flushes the \
             plain keys; ignore: logged only",
        ),
    ],
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_parse() {
        let r = parse_rule("shop.users=user_by_email:{email|lower}").unwrap();
        assert_eq!((r.db.as_str(), r.table.as_str()), ("shop", "users"));
        assert_eq!(r.template.columns().collect::<Vec<_>>(), ["email"]);
        assert!(parse_rule("users=user:{id}").unwrap_err().contains("DB.TABLE"));
        assert!(parse_rule("shop.users").unwrap_err().contains("DB.TABLE=KEY-TEMPLATE"));
        assert!(parse_rule("shop.users=user:{id").unwrap_err().contains("not closed"));
        let mut c = InvalidateConfig::default();
        c.set("invalidate-hold-ms", "0").unwrap();
        assert!(c.set("invalidate-hold-ms", "-1").is_err());
        assert!(c.set("invalidate-table-changes", "drop").is_err());
        let mut m = super::super::mysql::MysqlConfig::default();
        let mut pg = super::super::postgres::PostgresConfig::default();
        assert!(c.validate(&m, &pg, true).unwrap_err().contains("at least one"));
        c.set("invalidate", "shop.users=user:{id}").unwrap();
        assert!(c.validate(&m, &pg, true).unwrap_err().contains("--mysql-backend"));
        m.backend = Some("127.0.0.1:3306".into());
        m.user = Some("repl".into());
        c.validate(&m, &pg, true).unwrap();
        // A PostgreSQL rule: its table is SCHEMA.TABLE of --pg-database, followed through the WAL.
        c.set("invalidate", "postgres:public.users=user:{id}").unwrap();
        let r = c.rules.last().unwrap();
        assert_eq!((r.source, r.db.as_str(), r.table.as_str()), (RuleSource::Postgres, "public", "users"));
        assert_eq!(c.rules[0].source, RuleSource::Mysql);
        assert!(c.validate(&m, &pg, true).unwrap_err().contains("--pg-backend"));
        pg.backend = Some("127.0.0.1:5432".into());
        pg.user = Some("repl".into());
        c.validate(&m, &pg, true).unwrap();
        assert_eq!(parse_rule("mysql:shop.users=u:{id}").unwrap().source, RuleSource::Mysql);
    }
}
