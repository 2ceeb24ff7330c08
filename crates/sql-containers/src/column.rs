//! A mapped container column and how its type maps onto memcached bytes: what the SQL
//! builder (`sql.rs`) and the start-up validation (`validate.rs`) share.

/// How a column's type maps onto memcached bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColKind {
    /// Character data: bound and read as text (bytes kept as they are).
    Text,
    /// Binary data: bound and read as bytes.
    Blob,
    /// Integer: bound as decimal text, read back as decimal digits.
    Int,
    /// Anything else (floating point, decimal, dates, JSON, ...): refused.
    Other,
}

impl ColKind {
    /// The kind as messages name it.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            ColKind::Text => "character",
            ColKind::Blob => "binary",
            ColKind::Int => "integer",
            ColKind::Other => "unsupported",
        }
    }
}

/// SQLite's type affinity rules (section 3.1 of "Datatypes In SQLite").
pub fn sqlite_kind(decl: &str) -> ColKind {
    let d = decl.to_ascii_uppercase();
    if d.contains("INT") {
        ColKind::Int
    } else if d.contains("CHAR") || d.contains("CLOB") || d.contains("TEXT") {
        ColKind::Text
    } else if d.contains("BLOB") || d.trim().is_empty() {
        ColKind::Blob
    } else {
        ColKind::Other
    }
}

/// MySQL/MariaDB `information_schema.COLUMNS.DATA_TYPE`.
pub fn mysql_kind(data_type: &str) -> ColKind {
    match data_type.to_ascii_lowercase().as_str() {
        "char" | "varchar" | "tinytext" | "text" | "mediumtext" | "longtext" => ColKind::Text,
        "binary" | "varbinary" | "tinyblob" | "blob" | "mediumblob" | "longblob" => ColKind::Blob,
        "tinyint" | "smallint" | "mediumint" | "int" | "integer" | "bigint" => ColKind::Int,
        _ => ColKind::Other,
    }
}

/// PostgreSQL `pg_type.typname` (of the column's base type, domains resolved): its kind
/// and whether equal values are equal bytes of the text form. Types with a text form are
/// mapped as character data (numeric, bool, timestamptz, uuid, jsonb, ...: the value is
/// the text PostgreSQL reads and writes, which it checks and may normalize), hence not
/// exact; text and varchar are (deterministic collations), char(n) is not (padding).
pub fn postgres_kind(typname: &str) -> (ColKind, bool) {
    match typname {
        "text" | "varchar" | "name" => (ColKind::Text, true),
        "bytea" => (ColKind::Blob, true),
        "int2" | "int4" | "int8" => (ColKind::Int, false),
        "bpchar" | "citext" | "numeric" | "bool" | "timestamptz" | "timestamp" | "date" | "time" | "timetz"
        | "interval" | "uuid" | "json" | "jsonb" | "float4" | "float8" | "inet" | "cidr" | "macaddr" | "xml" => {
            (ColKind::Text, false)
        }
        _ => (ColKind::Other, false),
    }
}

/// A mapped column: the backend's own spelling, quoted for the dialect.
#[derive(Debug, Clone)]
pub struct Column {
    /// The column's name as the backend spells it.
    pub name: String,
    /// The name quoted for the backend's dialect, ready to put in SQL.
    pub quoted: String,
    /// How the column's type maps onto memcached bytes.
    pub kind: ColKind,
    /// Whether the column accepts NULL.
    pub nullable: bool,
    /// Equal values are equal bytes (binary types, `_bin` collations); false for integers and `_ci` collations.
    pub exact: bool,
    /// PostgreSQL: the type a text parameter is cast to (`int8`, `numeric`, a quoted
    /// user type); None elsewhere.
    pub cast: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postgres_types_map_to_kinds() {
        assert_eq!(postgres_kind("int8"), (ColKind::Int, false));
        assert_eq!(postgres_kind("varchar"), (ColKind::Text, true));
        assert_eq!(postgres_kind("bytea"), (ColKind::Blob, true));
        for t in ["numeric", "bool", "timestamptz", "uuid", "jsonb", "bpchar"] {
            assert_eq!(postgres_kind(t), (ColKind::Text, false), "{t}");
        }
        for t in ["point", "_int4", "tsvector"] {
            assert_eq!(postgres_kind(t).0, ColKind::Other, "{t}");
        }
    }
}
