//! The InnoDB memcached plugin's own tables (`innodb_memcache.containers`,
//! `cache_policies`, `config_options`), as rows read from a backend, mapped onto the same
//! [`ContainerDef`]s and options as the TOML file.

use crate::config::{split_column_list, CachePolicy, ContainerDef, OptionsConfig, PluginRows, Policy, Record};

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
