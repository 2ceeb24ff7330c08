//! DDL in the WAL, on request (`FollowConfig::ddl_trigger`): logical replication carries
//! rows, not DDL (an ALTER TABLE shows only as a new Relation before the table's next row
//! change; GRANT, REVOKE, DROP and policies never). An event trigger installed in the
//! database emits a transactional logical message (prefix [`PREFIX`]) naming each object a
//! DDL command touched, so the follower reports it, in commit order, as a change of that
//! table (or of everything when the object is not a table).
//!
//! Installed as: schema `sqlcached`, function `sqlcached.ddl_to_wal()`, event triggers
//! `sqlcached_ddl_end` (ddl_command_end) and `sqlcached_ddl_drop` (sql_drop); needs a
//! superuser; `--pg-drop-slot` removes them too.

use sql_source::Change;

use crate::conn::Connection;
use crate::error::Error;

/// The logical message prefix.
pub const PREFIX: &str = "sqlcached_ddl";

/// The SQL that installs the event triggers (idempotent).
pub const INSTALL: &str = "CREATE SCHEMA IF NOT EXISTS sqlcached;
CREATE OR REPLACE FUNCTION sqlcached.ddl_to_wal() RETURNS event_trigger LANGUAGE plpgsql AS $f$
DECLARE r record;
BEGIN
  IF TG_EVENT = 'sql_drop' THEN
    FOR r IN SELECT object_identity, object_type FROM pg_event_trigger_dropped_objects() LOOP
      PERFORM pg_logical_emit_message(true, 'sqlcached_ddl', r.object_type || ' ' || coalesce(r.object_identity, ''));
    END LOOP;
  ELSE
    FOR r IN SELECT object_identity, object_type FROM pg_event_trigger_ddl_commands() LOOP
      PERFORM pg_logical_emit_message(true, 'sqlcached_ddl', coalesce(r.object_type, '') || ' ' || coalesce(r.object_identity, ''));
    END LOOP;
    IF NOT FOUND THEN
      PERFORM pg_logical_emit_message(true, 'sqlcached_ddl', 'command ' || TG_TAG);
    END IF;
  END IF;
END $f$;
DO $d$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_event_trigger WHERE evtname = 'sqlcached_ddl_end') THEN
    CREATE EVENT TRIGGER sqlcached_ddl_end ON ddl_command_end EXECUTE FUNCTION sqlcached.ddl_to_wal();
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_event_trigger WHERE evtname = 'sqlcached_ddl_drop') THEN
    CREATE EVENT TRIGGER sqlcached_ddl_drop ON sql_drop EXECUTE FUNCTION sqlcached.ddl_to_wal();
  END IF;
END $d$;";

/// The SQL that removes them.
pub const UNINSTALL: &str = "DROP EVENT TRIGGER IF EXISTS sqlcached_ddl_end; DROP EVENT TRIGGER IF EXISTS \
                             sqlcached_ddl_drop; DROP FUNCTION IF EXISTS sqlcached.ddl_to_wal();";

/// Installs the event triggers with `c` (a superuser's session).
pub async fn install(c: &mut Connection) -> Result<(), Error> {
    c.simple_query(INSTALL).await.map(|_| ())
}

/// What a DDL message means: a table's change (`table schema.name`, `table column
/// schema.name.col`, `index ...` on no table: everything), or everything.
pub fn change(content: &[u8]) -> Change {
    let text = String::from_utf8_lossy(content);
    let (kind, identity) = ["table column ", "table constraint ", "table "]
        .iter()
        .find_map(|k| text.strip_prefix(k).map(|rest| (k.trim_end(), rest)))
        .unwrap_or(("", ""));
    let parts = split_identity(identity);
    match (kind, parts.as_slice()) {
        ("table", [s, t]) | ("table column", [s, t, _]) | ("table constraint", [_, s, t]) => {
            Change::Table { db: s.clone(), table: t.clone() }
        }
        _ => Change::All { reason: format!("DDL: {text}") },
    }
}

/// `a."B c".d` → [a, B c, d] (the quoting of `quote_ident`).
fn split_identity(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            '.' if !quoted => out.push(std::mem::take(&mut cur)),
            ' ' if !quoted => {
                out.push(std::mem::take(&mut cur));
                // `constraint on schema.table`: keep what follows " on ".
                let rest: String = chars.by_ref().collect();
                let rest = rest.strip_prefix("on ").unwrap_or(&rest).to_string();
                out.extend(split_identity(&rest));
                return out;
            }
            c => cur.push(c),
        }
    }
    out.push(cur);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identities() {
        let t = |s: &str, n: &str| Change::Table { db: s.into(), table: n.into() };
        assert_eq!(change(b"table public.users"), t("public", "users"));
        assert_eq!(change(b"table \"My\"\"S\".\"a.b\""), t("My\"S", "a.b"));
        assert_eq!(change(b"table column public.users.email"), t("public", "users"));
        assert_eq!(change(b"table constraint pk on public.users"), t("public", "users"));
        assert!(matches!(change(b"command GRANT"), Change::All { .. }));
        assert!(matches!(change(b"function public.f()"), Change::All { .. }));
    }
}
