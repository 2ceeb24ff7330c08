//! The InnoDB memcached plugin's own tables (`innodb_memcache.containers`,
//! `cache_policies`, `config_options`), as rows read from a backend, mapped onto the same
//! [`ContainerDef`]s and options as the TOML file.

use crate::config::{split_column_list, CachePolicy, ContainerDef, OptionsConfig, PluginRows, Policy, Record};

/// The plugin's tables a backend reads, given those present in its schema (`present`), each
/// with the SELECT that reads it in `d`'s quoting; None without a `containers` table.
pub(crate) fn reads(d: crate::sql::Dialect, present: &[String]) -> Option<Vec<(PluginTable, String)>> {
    let has = |t: &str| present.iter().any(|p| p == t);
    if !has("containers") {
        return None;
    }
    let select = |t: &str, order: Option<&str>| {
        let order = order.map_or(String::new(), |c| format!(" ORDER BY {}", d.quote(c)));
        format!("SELECT * FROM {}{order}", d.qualified("innodb_memcache", t))
    };
    let mut out = vec![(PluginTable::Containers, select("containers", Some("name")))];
    if has("cache_policies") {
        out.push((PluginTable::CachePolicies, select("cache_policies", Some("policy_name"))));
    }
    if has("config_options") {
        out.push((PluginTable::ConfigOptions, select("config_options", None)));
    }
    Some(out)
}

/// One of the plugin's tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PluginTable {
    /// `containers`.
    Containers,
    /// `cache_policies`.
    CachePolicies,
    /// `config_options`.
    ConfigOptions,
}

impl PluginRows {
    /// Keeps the rows read from table `t`.
    pub(crate) fn set(&mut self, t: PluginTable, rows: Vec<Record>) {
        match t {
            PluginTable::Containers => self.containers = rows,
            PluginTable::CachePolicies => self.cache_policies = rows,
            PluginTable::ConfigOptions => self.config_options = rows,
        }
    }
}

fn field<'a>(r: &'a Record, name: &str) -> Option<&'a str> {
    r.get(name).and_then(|v| v.as_deref()).map(str::trim).filter(|s| !s.is_empty())
}

/// The plugin's optional column names: NULL, empty and the table's default `"0"` mean
/// "no such column".
fn optional_column(r: &Record, name: &str) -> Option<String> {
    field(r, name).filter(|s| *s != "0").map(str::to_string)
}

fn parse_policy_row(r: &Record) -> Result<Policy, String> {
    let name = field(r, "policy_name").unwrap_or("?");
    let one = |col: &str| -> Result<CachePolicy, String> {
        match field(r, col) {
            None => Ok(CachePolicy::InnodbOnly),
            Some(v) => CachePolicy::parse(v).ok_or_else(|| {
                format!(
                    "innodb_memcache.cache_policies row '{name}': {col} = '{v}' is not one of innodb_only, cache_only, caching, disabled"
                )
            }),
        }
    };
    Ok(Policy {
        get: one("get_policy")?,
        set: one("set_policy")?,
        delete: one("delete_policy")?,
        flush: one("flush_policy")?,
    })
}

/// Maps the plugin's tables onto container definitions and option overrides
/// (`separator`, `table_map_delimiter`).
///
/// Policy of a container: the `cache_policies` row named by the container's
/// `cache_policy` column if the `containers` table has one (not in MySQL's definition, an
/// extension); else the row whose `policy_name` is the container's name; else the row
/// named `cache_policy` (the one MySQL ships and the plugin applies to every container);
/// else the first row; else `innodb_only` for all four.
pub fn from_plugin_rows(rows: &PluginRows) -> Result<(Vec<ContainerDef>, OptionsConfig), String> {
    let mut policies: Vec<(String, Policy)> = Vec::new();
    for r in &rows.cache_policies {
        let name = field(r, "policy_name").unwrap_or("").to_string();
        policies.push((name, parse_policy_row(r)?));
    }
    let find = |n: &str| policies.iter().find(|(name, _)| name == n).map(|(_, p)| *p);
    let mut defs = Vec::new();
    for r in &rows.containers {
        let name = field(r, "name").ok_or("innodb_memcache.containers: a row has no name")?.to_string();
        let ctx = |what: &str| format!("innodb_memcache.containers row '{name}': {what}");
        let table = field(r, "db_table").ok_or_else(|| ctx("db_table is empty"))?.to_string();
        let key_cols = split_column_list(field(r, "key_columns").ok_or_else(|| ctx("key_columns is empty"))?);
        if key_cols.len() != 1 {
            return Err(ctx("key_columns must name exactly one column"));
        }
        let value_columns = split_column_list(field(r, "value_columns").unwrap_or(""));
        if value_columns.is_empty() {
            return Err(ctx("value_columns is empty"));
        }
        let policy = match field(r, "cache_policy") {
            Some(p) => {
                find(p).ok_or_else(|| ctx(&format!("cache_policy '{p}' is not in innodb_memcache.cache_policies")))?
            }
            None => find(&name)
                .or_else(|| find("cache_policy"))
                .or_else(|| policies.first().map(|(_, p)| *p))
                .unwrap_or_default(),
        };
        defs.push(ContainerDef {
            name: name.clone(),
            schema: field(r, "db_schema").map(str::to_string),
            table,
            key_column: key_cols.into_iter().next().unwrap(),
            value_columns,
            flags_column: optional_column(r, "flags"),
            cas_column: optional_column(r, "cas_column"),
            expire_column: optional_column(r, "expire_time_column"),
            unique_index: field(r, "unique_idx_name_on_key").map(str::to_string),
            policy,
            cache_ttl: None,
            origin: "innodb_memcache.containers",
        });
    }
    let mut opts = OptionsConfig::default();
    for r in &rows.config_options {
        // The value is taken as is (a separator may be a space): only NULL is "unset".
        let value = r.get("value").and_then(|v| v.clone());
        match field(r, "name") {
            Some("separator") => opts.separator = value.filter(|v| !v.is_empty()),
            Some("table_map_delimiter") => opts.table_map_delimiter = value.filter(|v| !v.is_empty()),
            _ => {}
        }
    }
    Ok((defs, opts))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::resolve_options;

    fn rec(pairs: &[(&str, Option<&str>)]) -> Record {
        pairs.iter().map(|(k, v)| (k.to_string(), v.map(str::to_string))).collect()
    }

    #[test]
    fn plugin_rows_map_like_the_plugin() {
        let rows = PluginRows {
            containers: vec![
                rec(&[
                    ("name", Some("aaa")),
                    ("db_schema", Some("test")),
                    ("db_table", Some("demo_test")),
                    ("key_columns", Some("c1")),
                    ("value_columns", Some("c2,c21;c22|c23 c24")),
                    ("flags", Some("c3")),
                    ("cas_column", Some("c4")),
                    ("expire_time_column", Some("c5")),
                    ("unique_idx_name_on_key", Some("PRIMARY")),
                ]),
                rec(&[
                    ("name", Some("bbb")),
                    ("db_schema", Some("test")),
                    ("db_table", Some("t2")),
                    ("key_columns", Some("k")),
                    ("value_columns", Some("v")),
                    ("flags", Some("0")),
                    ("cas_column", None),
                    ("expire_time_column", Some("")),
                    ("unique_idx_name_on_key", Some("k_idx")),
                ]),
            ],
            cache_policies: vec![
                rec(&[
                    ("policy_name", Some("bbb")),
                    ("get_policy", Some("caching")),
                    ("set_policy", Some("CACHING")),
                    ("delete_policy", Some("disabled")),
                    ("flush_policy", Some("cache_only")),
                ]),
                rec(&[
                    ("policy_name", Some("cache_policy")),
                    ("get_policy", Some("innodb_only")),
                    ("set_policy", Some("innodb_only")),
                    ("delete_policy", Some("innodb_only")),
                    ("flush_policy", Some("disabled")),
                ]),
            ],
            config_options: vec![
                rec(&[("name", Some("separator")), ("value", Some(";"))]),
                rec(&[("name", Some("table_map_delimiter")), ("value", Some(":"))]),
                rec(&[("name", Some("something_else")), ("value", Some("x"))]),
            ],
        };
        let (defs, opts) = from_plugin_rows(&rows).unwrap();
        assert_eq!(defs[0].value_columns, vec!["c2", "c21", "c22", "c23", "c24"]);
        assert_eq!(defs[0].flags_column.as_deref(), Some("c3"));
        assert_eq!(defs[0].expire_column.as_deref(), Some("c5"));
        // aaa has no row of its own: the plugin's `cache_policy` row applies.
        assert_eq!(defs[0].policy.flush, CachePolicy::Disabled);
        assert_eq!(defs[0].policy.get, CachePolicy::InnodbOnly);
        // bbb has a row named like it.
        assert_eq!(defs[1].policy.get, CachePolicy::Caching);
        assert_eq!(defs[1].policy.set, CachePolicy::Caching);
        assert_eq!(defs[1].policy.delete, CachePolicy::Disabled);
        assert_eq!(defs[1].policy.flush, CachePolicy::CacheOnly);
        // "0", NULL and "" mean no column.
        assert_eq!(
            (defs[1].flags_column.clone(), defs[1].cas_column.clone(), defs[1].expire_column.clone()),
            (None, None, None)
        );
        assert_eq!(opts.separator.as_deref(), Some(";"));
        assert_eq!(opts.table_map_delimiter.as_deref(), Some(":"));
        // The file wins over the plugin table, which wins over the default.
        let file = OptionsConfig { separator: Some("#".into()), ..Default::default() };
        let o = resolve_options(&file, &opts);
        assert_eq!((o.separator.as_str(), o.table_map_delimiter.as_str()), ("#", ":"));
    }

    #[test]
    fn plugin_policy_column_and_errors() {
        let c = |extra: (&str, Option<&str>)| PluginRows {
            containers: vec![rec(&[
                ("name", Some("x")),
                ("db_schema", Some("s")),
                ("db_table", Some("t")),
                ("key_columns", Some("k")),
                ("value_columns", Some("v")),
                extra,
            ])],
            cache_policies: vec![rec(&[
                ("policy_name", Some("p1")),
                ("get_policy", Some("cache_only")),
                ("set_policy", Some("cache_only")),
                ("delete_policy", Some("cache_only")),
                ("flush_policy", Some("cache_only")),
            ])],
            config_options: vec![],
        };
        let (d, _) = from_plugin_rows(&c(("cache_policy", Some("p1")))).unwrap();
        assert_eq!(d[0].policy, Policy::all(CachePolicy::CacheOnly));
        let e = from_plugin_rows(&c(("cache_policy", Some("nope")))).unwrap_err();
        assert!(e.contains("'x'") && e.contains("nope"), "{e}");
        // No row for it, no `cache_policy` row: the first row.
        let (d, _) = from_plugin_rows(&c(("unused", None))).unwrap();
        assert_eq!(d[0].policy, Policy::all(CachePolicy::CacheOnly));
        let mut two_keys = c(("unused", None));
        two_keys.containers[0].insert("key_columns".into(), Some("k1,k2".into()));
        assert!(from_plugin_rows(&two_keys).unwrap_err().contains("exactly one"));
        let mut bad = c(("unused", None));
        bad.cache_policies[0].insert("get_policy".into(), Some("always".into()));
        assert!(from_plugin_rows(&bad).unwrap_err().contains("always"));
    }
}
