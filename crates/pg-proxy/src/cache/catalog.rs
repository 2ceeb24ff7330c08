//! What the cache knows of the server's tables, read from its catalog every 250 ms on a
//! connection of the proxy's own (`--pg-user`): which relation a name means, whether its
//! reads may be cached, its single-column primary key (for point tags), whether a write
//! to it may change other tables (triggers, rules, partitions, inheritance), and a
//! signature of its privileges and columns (a changed signature — GRANT, REVOKE, ALTER
//! TABLE, a policy — drops its results, since none of these reaches the WAL).
//!
//! A table's reads are cached only if it is a permanent table (not temporary, unlogged,
//! a view, a materialized view or a foreign table), has no row security, and is in the
//! publication the WAL is followed through (so every change to it is seen).

use std::collections::HashMap;

use crate::cache::analyze::Named;

/// Whether a table's single-column primary key compares as its text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyKind {
    /// int2, int4, int8: compared as integers.
    Int,
    /// text, varchar: compared as bytes (deterministic collations).
    Text,
}

/// One relation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Table {
    /// Its schema.
    pub schema: String,
    /// Its name.
    pub name: String,
    /// Why its reads are never cached (None: they may be).
    pub not_cached: Option<&'static str>,
    /// Its single-column primary key, if that key's values compare as their text.
    pub key: Option<(String, KeyKind)>,
    /// A write to it may change other tables (triggers, rules, partitions, inheritance).
    pub spreads: bool,
    /// Privileges and columns, hashed.
    pub signature: String,
    /// It is in the publication.
    pub published: bool,
    /// It is a permanent table with a replica identity (could be published).
    pub publishable: bool,
}

/// The catalog query: every user relation.
pub fn query(publication: &str) -> String {
    let p = publication.replace('\'', "''");
    format!(
        "SELECT n.nspname, c.relname, c.relkind, c.relpersistence, \
           (c.relrowsecurity OR c.relforcerowsecurity)::text, \
           (c.relhastriggers OR c.relhasrules OR c.relkind = 'p' OR c.relispartition OR c.relhassubclass)::text, \
           md5(coalesce(c.relacl::text, '') || coalesce((SELECT string_agg(a.attname || ':' || a.atttypid || ':' || \
             a.atttypmod || ':' || coalesce(a.attacl::text, ''), ',' ORDER BY a.attnum) FROM pg_catalog.pg_attribute a \
             WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped), '') || \
             coalesce((SELECT string_agg(pol.polname::text || pol.polcmd::text || \
             coalesce(pg_catalog.pg_get_expr(pol.polqual, pol.polrelid), ''), ',') FROM pg_catalog.pg_policy pol \
             WHERE pol.polrelid = c.oid), '')), \
           (SELECT a.attname || ':' || a.atttypid FROM pg_catalog.pg_index i JOIN pg_catalog.pg_attribute a \
             ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0] \
             WHERE i.indrelid = c.oid AND i.indisprimary AND i.indnkeyatts = 1), \
           EXISTS (SELECT 1 FROM pg_catalog.pg_publication_tables p WHERE p.pubname = '{p}' \
             AND p.schemaname = n.nspname AND p.tablename = c.relname)::text, \
           (c.relreplident = 'f' OR EXISTS (SELECT 1 FROM pg_catalog.pg_index i WHERE i.indrelid = c.oid \
             AND (i.indisprimary OR i.indisreplident)))::text, \
           (c.relkind = 'p' OR c.relhassubclass)::text \
         FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
         WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f') AND n.nspname NOT IN ('pg_catalog', 'information_schema') \
           AND n.nspname !~ '^pg_(toast|temp)'"
    )
}

/// The rows of [`query`] as tables.
pub fn tables(rows: &[Vec<Option<String>>]) -> Vec<Table> {
    let col = |r: &Vec<Option<String>>, i: usize| r.get(i).cloned().flatten().unwrap_or_default();
    rows.iter()
        .map(|r| {
            let (kind, persistence) = (col(r, 2), col(r, 3));
            let published = col(r, 8) == "true";
            let permanent = matches!(kind.as_str(), "r" | "p") && persistence == "p";
            let not_cached = if !matches!(kind.as_str(), "r" | "p") {
                Some("not a table (view, materialized view, foreign table)")
            } else if persistence == "t" {
                Some("temporary table")
            } else if persistence == "u" {
                Some("unlogged table (not in the WAL)")
            } else if col(r, 4) == "true" {
                Some("row security")
            } else if col(r, 10) == "true" {
                // Its partitions' or children's changes reach the WAL as theirs, not its.
                Some("partitioned or inherited from")
            } else if !published {
                Some("not in the publication")
            } else {
                None
            };
            let key = col(r, 7).rsplit_once(':').and_then(|(name, oid)| match oid {
                "20" | "21" | "23" => Some((name.to_string(), KeyKind::Int)),
                "25" | "1043" => Some((name.to_string(), KeyKind::Text)),
                _ => None,
            });
            Table {
                schema: col(r, 0),
                name: col(r, 1),
                not_cached,
                key,
                spreads: col(r, 5) == "true",
                signature: col(r, 6),
                published,
                publishable: permanent && col(r, 4) != "true" && col(r, 9) == "true",
            }
        })
        .collect()
}

/// The tables by name, and how names resolve.
#[derive(Default)]
pub struct Catalog {
    by_name: HashMap<String, Vec<Table>>,
}

impl Catalog {
    /// A catalog of these tables.
    pub fn new(tables: Vec<Table>) -> Catalog {
        let mut by_name: HashMap<String, Vec<Table>> = HashMap::new();
        for t in tables {
            by_name.entry(t.name.clone()).or_default().push(t);
        }
        Catalog { by_name }
    }

    /// The relation `n` means under `search_path` (its schemas in order, `$user` already
    /// replaced); None if there is none (the server will say so).
    pub fn resolve(&self, n: &Named, search_path: &[String]) -> Option<&Table> {
        let same = self.by_name.get(&n.table)?;
        match &n.schema {
            Some(s) => same.iter().find(|t| t.schema == *s),
            None => search_path.iter().find_map(|s| same.iter().find(|t| t.schema == *s)),
        }
    }

    /// Every table.
    pub fn all(&self) -> impl Iterator<Item = &Table> {
        self.by_name.values().flatten()
    }
}

/// `search_path` as PostgreSQL reads it: comma-separated, `"quoted"` kept, others folded,
/// `$user` replaced by `user`.
pub fn search_path(setting: &str, user: &str) -> Vec<String> {
    setting
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            if let Some(q) = s.strip_prefix('"').and_then(|s| s.strip_suffix('"')) {
                if q == "$user" {
                    user.to_string()
                } else {
                    q.replace("\"\"", "\"")
                }
            } else if s == "$user" {
                user.to_string()
            } else {
                s.to_lowercase()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_resolve_through_the_search_path() {
        let t = |s: &str, n: &str| Table {
            schema: s.into(),
            name: n.into(),
            not_cached: None,
            key: None,
            spreads: false,
            signature: String::new(),
            published: true,
            publishable: true,
        };
        let c = Catalog::new(vec![t("public", "users"), t("app", "users"), t("app", "orders")]);
        let path = search_path("\"$user\", public", "app");
        assert_eq!(path, ["app", "public"]);
        let users = Named { schema: None, table: "users".into() };
        assert_eq!(c.resolve(&users, &path).unwrap().schema, "app");
        assert_eq!(c.resolve(&users, &search_path("public", "app")).unwrap().schema, "public");
        let q = Named { schema: Some("public".into()), table: "users".into() };
        assert_eq!(c.resolve(&q, &path).unwrap().schema, "public");
        assert!(c.resolve(&Named { schema: None, table: "orders".into() }, &["public".into()]).is_none());
    }
}
