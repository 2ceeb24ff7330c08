//! Start-up validation: a container is only usable if its table and columns exist with
//! usable types and its key has a unique index. The result, [`Mapping`], is the only
//! place SQL identifiers come from (the names as the backend reported them, quoted).

pub use crate::column::{mysql_kind, postgres_kind, sqlite_kind, ColKind, Column};
use crate::config::{ContainerDef, Policy};
use crate::sql::{Dialect, Statements};

/// A column as the backend describes it.
#[derive(Debug, Clone)]
pub struct ColumnInfo {
    /// The column's name as the backend spells it.
    pub name: String,
    /// The declared type, for messages.
    pub decl: String,
    /// How the declared type maps onto memcached bytes.
    pub kind: ColKind,
    /// Whether the column accepts NULL.
    pub nullable: bool,
    /// Equal values are equal bytes (binary types, `_bin` collations). False for
    /// integers ("042" finds 42) and case-insensitive collations.
    pub exact: bool,
    /// PostgreSQL: the type name values are cast to from text ([`Column::cast`]).
    pub cast: Option<String>,
}

/// An index as the backend describes it.
#[derive(Debug, Clone)]
pub struct IndexInfo {
    /// The index's name (a primary key is `PRIMARY` on MySQL).
    pub name: String,
    /// Whether the index is unique.
    pub unique: bool,
    /// Whether it is the table's primary key.
    pub primary: bool,
    /// The indexed columns, in index order.
    pub columns: Vec<String>,
    /// False for partial (SQLite) or prefix (MySQL) indexes: they do not make the full
    /// key unique.
    pub complete: bool,
}

/// A table as the backend describes it: its columns and indexes.
#[derive(Debug, Clone, Default)]
pub struct TableInfo {
    /// The table's columns.
    pub columns: Vec<ColumnInfo>,
    /// The table's indexes.
    pub indexes: Vec<IndexInfo>,
}

/// A validated container: what every statement is built from.
#[derive(Debug)]
pub struct Mapping {
    /// The container's name.
    pub name: String,
    /// Schema as the backend knows it (SQLite: `main` or an attached name; MySQL: the
    /// database).
    pub schema: String,
    /// The table's name, in `schema`.
    pub table: String,
    /// The key column.
    pub key: Column,
    /// The value columns, in order.
    pub values: Vec<Column>,
    /// The flags column, if mapped.
    pub flags: Option<Column>,
    /// The cas column, if mapped.
    pub cas: Option<Column>,
    /// The expire column, if mapped.
    pub expire: Option<Column>,
    /// Policy per operation family (reported to the server, not applied here).
    pub policy: Policy,
    /// Staleness bound in seconds under `caching`: the container's `cache_ttl`, else `options.cache_ttl`.
    pub cache_ttl: u64,
    /// `options.separator` as bytes: joins value columns on read, splits the value on write.
    pub separator: Vec<u8>,
    /// The container's SQL statements, built from these columns.
    pub sql: Statements,
    /// Distinguishes tables when keys are spread over writer connections.
    pub table_hash: u64,
    /// memcached's `-I`: append/prepend may not grow a value past it (the server's).
    pub item_limit: engine::ItemLimit,
}

/// Validates one container definition against its table's description (None: the table
/// does not exist). `schema` is the resolved schema name.
pub fn validate(
    def: &ContainerDef,
    schema: &str,
    info: Option<&TableInfo>,
    dialect: Dialect,
    separator: &str,
    default_cache_ttl: u64,
) -> Result<Mapping, String> {
    let who = format!("container '{}' ({})", def.name, def.origin);
    let info = info.ok_or_else(|| format!("{who}: table {schema}.{} does not exist", def.table))?;
    let lookup = |role: &str, col: &str, allowed: &[ColKind]| -> Result<Column, String> {
        let c =
            info.columns.iter().find(|c| c.name.eq_ignore_ascii_case(col)).ok_or_else(|| {
                format!("{who}: {role} column '{col}' does not exist in table {schema}.{}", def.table)
            })?;
        if !allowed.contains(&c.kind) {
            let want: Vec<&str> = allowed.iter().map(|k| k.describe()).collect();
            return Err(format!(
                "{who}: {role} column '{}' has type '{}' ({}); it must be of {} type",
                c.name,
                c.decl,
                c.kind.describe(),
                want.join(", ").replacen(", binary, integer", ", binary or integer", 1)
            ));
        }
        Ok(Column {
            name: c.name.clone(),
            quoted: dialect.quote(&c.name),
            kind: c.kind,
            nullable: c.nullable,
            exact: c.exact,
            cast: c.cast.clone(),
        })
    };
    let data = [ColKind::Text, ColKind::Blob, ColKind::Int];
    let key = lookup("key", &def.key_column, &data)?;
    if def.value_columns.is_empty() {
        return Err(format!("{who}: no value columns"));
    }
    let values = def.value_columns.iter().map(|c| lookup("value", c, &data)).collect::<Result<Vec<_>, _>>()?;
    let int = [ColKind::Int];
    let flags = def.flags_column.as_deref().map(|c| lookup("flags", c, &int)).transpose()?;
    let cas = def.cas_column.as_deref().map(|c| lookup("cas", c, &int)).transpose()?;
    let expire = def.expire_column.as_deref().map(|c| lookup("expire time", c, &int)).transpose()?;

    // One role per column: an update must never rewrite the key, nor one column twice.
    let mut seen: Vec<&str> = Vec::new();
    for c in std::iter::once(&key).chain(&values).chain(flags.iter()).chain(cas.iter()).chain(expire.iter()) {
        if seen.iter().any(|s| s.eq_ignore_ascii_case(&c.name)) {
            return Err(format!("{who}: column '{}' is mapped twice", c.name));
        }
        seen.push(&c.name);
    }

    let on_key_only = |ix: &IndexInfo| {
        ix.unique && ix.complete && ix.columns.len() == 1 && ix.columns[0].eq_ignore_ascii_case(&key.name)
    };
    let named_ok = def.unique_index.as_deref().is_some_and(|n| {
        info.indexes.iter().any(|ix| {
            (ix.name.eq_ignore_ascii_case(n) || (n.eq_ignore_ascii_case("PRIMARY") && ix.primary)) && on_key_only(ix)
        })
    });
    if !named_ok && !info.indexes.iter().any(on_key_only) {
        let named = match &def.unique_index {
            Some(n) => format!(" (index '{n}' is not a unique index on exactly that column)"),
            None => String::new(),
        };
        return Err(format!(
            "{who}: key column '{}' of table {schema}.{} has no unique or primary index on exactly that column{named}",
            key.name, def.table
        ));
    }

    let table_sql = dialect.qualified(schema, &def.table);
    let sql = Statements::build(dialect, &table_sql, &key, &values, flags.as_ref(), cas.as_ref(), expire.as_ref());
    let mut h = 0xcbf29ce484222325u64;
    for b in schema.bytes().chain(std::iter::once(0)).chain(def.table.bytes()) {
        h = (h ^ b as u64).wrapping_mul(0x100000001b3);
    }
    Ok(Mapping {
        name: def.name.clone(),
        schema: schema.to_string(),
        table: def.table.clone(),
        key,
        values,
        flags,
        cas,
        expire,
        policy: def.policy,
        cache_ttl: def.cache_ttl.unwrap_or(default_cache_ttl),
        separator: separator.as_bytes().to_vec(),
        sql,
        table_hash: h,
        item_limit: engine::ItemLimit::NONE,
    })
}
