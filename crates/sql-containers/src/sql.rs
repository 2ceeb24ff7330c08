//! SQL text for a validated container, one code path for every backend: what differs
//! (identifier quoting, parameter markers, locking reads, upserts, emptying a table) is
//! asked of [`Dialect`]. Identifiers come only from [`crate::validate`] (the backend's own
//! names, quoted here); keys and values are always parameters.

use crate::column::{ColKind, Column};

/// The backend's SQL flavour: identifier quoting and a few statement forms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// SQLite.
    Sqlite,
    /// MySQL or MariaDB.
    Mysql,
    /// PostgreSQL.
    Postgres,
}

impl Dialect {
    /// Quotes an identifier: `"x"` (SQLite, PostgreSQL) or `` `x` `` (MySQL), the quote
    /// doubled inside.
    pub fn quote(self, ident: &str) -> String {
        let q = match self {
            Dialect::Sqlite | Dialect::Postgres => '"',
            Dialect::Mysql => '`',
        };
        let mut s = String::with_capacity(ident.len() + 2);
        s.push(q);
        for c in ident.chars() {
            if c == q {
                s.push(q);
            }
            s.push(c);
        }
        s.push(q);
        s
    }

    /// `schema.table`, both quoted.
    pub fn qualified(self, schema: &str, table: &str) -> String {
        format!("{}.{}", self.quote(schema), self.quote(table))
    }

    /// The `n`-th parameter (1-based) holding a value of column `c`: `?`, or on PostgreSQL
    /// `$n` bound as text and cast to the column's type (`$n::text::numeric`; `$n::bytea`
    /// for binary columns, bound as bytes), so that no client-side type knowledge is needed.
    pub fn param(self, n: usize, c: &Column) -> String {
        match self {
            Dialect::Sqlite | Dialect::Mysql => "?".to_string(),
            Dialect::Postgres if c.kind == ColKind::Blob => format!("${n}::bytea"),
            Dialect::Postgres => match &c.cast {
                Some(t) => format!("${n}::text::{t}"),
                None => format!("${n}::text"),
            },
        }
    }

    /// Column `c` as a SELECT list names it: as is, or on PostgreSQL cast to text (binary
    /// columns as they are), so every value is read back as bytes of its text form.
    pub fn output(self, c: &Column) -> String {
        match self {
            Dialect::Postgres if c.kind != ColKind::Blob => format!("{}::text", c.quoted),
            _ => c.quoted.clone(),
        }
    }

    /// What makes a SELECT lock the rows it reads for the writer (none on SQLite, whose
    /// writer holds the database lock anyway).
    pub fn for_update(self) -> &'static str {
        match self {
            Dialect::Sqlite => "",
            Dialect::Mysql | Dialect::Postgres => " FOR UPDATE",
        }
    }

    /// The clause turning an INSERT into an upsert on key column `key` (quoted), before
    /// the `SET` list: `ON DUPLICATE KEY UPDATE` / `ON CONFLICT (k) DO UPDATE SET`.
    pub fn upsert(self, key: &str) -> String {
        match self {
            Dialect::Sqlite | Dialect::Postgres => format!(" ON CONFLICT ({key}) DO UPDATE SET "),
            Dialect::Mysql => " ON DUPLICATE KEY UPDATE ".to_string(),
        }
    }

    /// In an upsert's SET list, the value proposed for column `col` (quoted):
    /// `VALUES(c)` / `excluded.c`.
    pub fn excluded(self, col: &str) -> String {
        match self {
            Dialect::Sqlite | Dialect::Postgres => format!("excluded.{col}"),
            Dialect::Mysql => format!("VALUES({col})"),
        }
    }

    /// In an upsert's SET list, column `col` (quoted) of the row already in `table`
    /// (quoted, qualified): MySQL's bare name, else `table.col` (an unqualified name would
    /// be ambiguous with `excluded`'s there).
    pub fn existing(self, table: &str, col: &str) -> String {
        match self {
            Dialect::Mysql => col.to_string(),
            Dialect::Sqlite | Dialect::Postgres => format!("{table}.{col}"),
        }
    }

    /// What a plain single-row INSERT ends with: nothing, or on PostgreSQL `ON CONFLICT (k)
    /// DO NOTHING` (a row inserted meanwhile by another client makes it insert nothing
    /// instead of failing, which would abort the whole transaction and its batch).
    pub fn insert_tail(self, key: &str) -> String {
        match self {
            Dialect::Postgres => format!(" ON CONFLICT ({key}) DO NOTHING"),
            Dialect::Sqlite | Dialect::Mysql => String::new(),
        }
    }

    /// Empties a table: `DELETE FROM` (SQLite), `TRUNCATE TABLE` (MySQL, like the plugin;
    /// PostgreSQL).
    pub fn flush(self, table: &str) -> String {
        match self {
            Dialect::Sqlite => format!("DELETE FROM {table}"),
            Dialect::Mysql | Dialect::Postgres => format!("TRUNCATE TABLE {table}"),
        }
    }
}

/// Positions of the columns in every SELECT: key, values..., then flags, cas, expire
/// when mapped.
#[derive(Debug, Clone, Copy)]
pub struct Layout {
    /// Number of value columns: positions 1..=n_values (the key is at 0).
    pub n_values: usize,
    /// Position of the flags column, if mapped.
    pub flags: Option<usize>,
    /// Position of the cas column, if mapped.
    pub cas: Option<usize>,
    /// Position of the expire column, if mapped.
    pub expire: Option<usize>,
}

/// The SQL text of one container's operations, built once at validation.
#[derive(Debug)]
pub struct Statements {
    /// Where each column sits in the rows the SELECTs return.
    pub layout: Layout,
    dialect: Dialect,
    /// Key, values, flags, cas, expire: the insert column order (= `Layout`'s).
    all: Vec<Column>,
    /// The SELECT list (`Dialect::output` of `all`).
    cols: String,
    /// The insert column list (`all` quoted).
    names: String,
    table: String,
    /// `c = VALUES(c), ...` for every column but the key (multi-row upsert).
    upsert_sets: String,
    /// The same, but the cas column (if any) set to `GREATEST(VALUES(c), c + 1)`.
    set_sets: String,
    /// `SELECT cols FROM t WHERE k = ?`
    pub select: String,
    /// The same, locking the row for the writer (`FOR UPDATE` on MySQL and PostgreSQL).
    pub select_for_write: String,
    /// `INSERT INTO t (k, v.., flags, cas, exp) VALUES (?, ...)` (PostgreSQL: `ON CONFLICT
    /// (k) DO NOTHING`, see [`Dialect::insert_tail`]).
    pub insert: String,
    /// `UPDATE t SET v.. = ?, flags = ?, cas = ?, exp = ? WHERE k = ?`
    pub update: String,
    /// `UPDATE t SET exp = ? WHERE k = ?` (touch), when there is an expire column.
    pub touch: Option<String>,
    /// `DELETE FROM t WHERE k = ?`
    pub delete: String,
    /// `DELETE FROM t WHERE k = ? AND exp <> 0 AND exp <= ?` (lazy removal of an
    /// expired row, harmless if it was rewritten meanwhile).
    pub delete_expired: Option<String>,
    /// Empties the table ([`Dialect::flush`]).
    pub flush: String,
}

impl Statements {
    /// Builds every statement from the quoted, schema-qualified `table` and the mapped columns.
    pub fn build(
        dialect: Dialect,
        table: &str,
        key: &Column,
        values: &[Column],
        flags: Option<&Column>,
        cas: Option<&Column>,
        expire: Option<&Column>,
    ) -> Statements {
        let mut all: Vec<Column> = vec![key.clone()];
        all.extend(values.iter().cloned());
        let mut next = 1 + values.len();
        let mut pos = |c: Option<&Column>| {
            c.map(|_| {
                next += 1;
                next - 1
            })
        };
        let layout = Layout { n_values: values.len(), flags: pos(flags), cas: pos(cas), expire: pos(expire) };
        all.extend(flags.cloned());
        all.extend(cas.cloned());
        all.extend(expire.cloned());
        let d = dialect;
        let cols = all.iter().map(|c| d.output(c)).collect::<Vec<_>>().join(", ");
        let names = all.iter().map(|c| c.quoted.as_str()).collect::<Vec<_>>().join(", ");
        let k = &key.quoted;
        let select = format!("SELECT {cols} FROM {table} WHERE {k} = {}", d.param(1, key));
        let select_for_write = format!("{select}{}", d.for_update());
        let marks = Self::marks(d, &all, 1);
        let insert = format!("INSERT INTO {table} ({names}) VALUES {marks}{}", d.insert_tail(k));
        let upsert_sets: Vec<String> =
            all[1..].iter().map(|c| format!("{} = {}", c.quoted, d.excluded(&c.quoted))).collect();
        let upsert_sets = upsert_sets.join(", ");
        let set_sets: Vec<String> = all[1..]
            .iter()
            .map(|c| {
                let q = &c.quoted;
                match cas {
                    Some(x) if x.quoted == *q => {
                        format!("{q} = GREATEST({}, {} + 1)", d.excluded(q), d.existing(table, q))
                    }
                    _ => format!("{q} = {}", d.excluded(q)),
                }
            })
            .collect();
        let set_sets = set_sets.join(", ");
        let sets: Vec<String> =
            all[1..].iter().enumerate().map(|(i, c)| format!("{} = {}", c.quoted, d.param(i + 1, c))).collect();
        let update = format!("UPDATE {table} SET {} WHERE {k} = {}", sets.join(", "), d.param(all.len(), key));
        let touch = expire
            .map(|e| format!("UPDATE {table} SET {} = {} WHERE {k} = {}", e.quoted, d.param(1, e), d.param(2, key)));
        let delete = format!("DELETE FROM {table} WHERE {k} = {}", d.param(1, key));
        let delete_expired = expire.map(|e| {
            let q = &e.quoted;
            format!("DELETE FROM {table} WHERE {k} = {} AND {q} <> 0 AND {q} <= {}", d.param(1, key), d.param(2, e))
        });
        Statements {
            layout,
            dialect,
            cols,
            names,
            table: table.to_string(),
            upsert_sets,
            set_sets,
            select,
            select_for_write,
            insert,
            update,
            touch,
            delete,
            delete_expired,
            flush: d.flush(table),
            all,
        }
    }

    /// `(?, ?, ...)`: one row of `cols`' parameters, numbered from `first`.
    fn marks(d: Dialect, cols: &[Column], first: usize) -> String {
        let m: Vec<String> = cols.iter().enumerate().map(|(i, c)| d.param(first + i, c)).collect();
        format!("({})", m.join(", "))
    }

    /// `k IN (?, ... n times)`.
    fn key_in(&self, n: usize) -> String {
        let key = &self.all[0];
        let m: Vec<String> = (1..=n).map(|i| self.dialect.param(i, key)).collect();
        format!("{} IN ({})", key.quoted, m.join(", "))
    }

    /// `SELECT cols FROM t WHERE k IN (?, ... n times)`.
    pub fn select_in(&self, n: usize) -> String {
        format!("SELECT {} FROM {} WHERE {}", self.cols, self.table, self.key_in(n))
    }

    /// The same, locking the rows (MySQL group commit).
    pub fn select_in_for_update(&self, n: usize) -> String {
        format!("{}{}", self.select_in(n), self.dialect.for_update())
    }

    /// `INSERT INTO t (cols) VALUES (...), ... n rows` (new rows of a group commit).
    pub fn insert_rows(&self, n: usize) -> String {
        let w = self.all.len();
        let rows: Vec<String> = (0..n).map(|r| Self::marks(self.dialect, &self.all, 1 + r * w)).collect();
        format!("INSERT INTO {} ({}) VALUES {}", self.table, self.names, rows.join(", "))
    }

    /// `INSERT ... n rows ON DUPLICATE KEY UPDATE c = VALUES(c), ...` ([`Dialect::upsert`]):
    /// rewrites rows the group holds locked, all mapped columns at once.
    pub fn upsert_rows(&self, n: usize) -> String {
        format!("{}{}{}", self.insert_rows(n), self.dialect.upsert(&self.all[0].quoted), self.upsert_sets)
    }

    /// `INSERT ... n rows ON DUPLICATE KEY UPDATE`, the cas column kept above its previous
    /// value: plain `set`s without reading the rows first. No padding: a repeated row
    /// would bump the cas again (and PostgreSQL refuses one key twice in one upsert).
    pub fn set_rows(&self, n: usize) -> String {
        format!("{}{}{}", self.insert_rows(n), self.dialect.upsert(&self.all[0].quoted), self.set_sets)
    }

    /// `DELETE FROM t WHERE k IN (?, ... n times)`.
    pub fn delete_in(&self, n: usize) -> String {
        format!("DELETE FROM {} WHERE {}", self.table, self.key_in(n))
    }
}

/// Multi-key reads are issued in IN-lists of these sizes (the last key repeated to fill
/// one), so that only a handful of distinct statements are prepared and cached.
pub const IN_SIZES: [usize; 6] = [1, 2, 4, 8, 16, 32];

/// Splits `n` keys into IN-list chunks: (start, len, padded size).
pub fn in_chunks(n: usize) -> Vec<(usize, usize, usize)> {
    let max = *IN_SIZES.last().unwrap();
    let mut out = Vec::new();
    let mut start = 0;
    while start < n {
        let len = (n - start).min(max);
        let size = *IN_SIZES.iter().find(|&&s| s >= len).unwrap();
        out.push((start, len, size));
        start += len;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_are_quoted_with_quotes_doubled() {
        assert_eq!(Dialect::Sqlite.quote("t"), "\"t\"");
        assert_eq!(Dialect::Sqlite.quote("a\"b"), "\"a\"\"b\"");
        assert_eq!(Dialect::Mysql.quote("a`b"), "`a``b`");
        assert_eq!(Dialect::Mysql.quote("x'; DROP TABLE t; --"), "`x'; DROP TABLE t; --`");
        assert_eq!(Dialect::Mysql.qualified("db", "t"), "`db`.`t`");
    }

    fn col(name: &str, kind: ColKind, cast: &str) -> Column {
        Column {
            name: name.into(),
            quoted: Dialect::Postgres.quote(name),
            kind,
            nullable: true,
            exact: kind != ColKind::Int,
            cast: Some(cast.into()),
        }
    }

    #[test]
    fn postgres_statements_number_and_cast_their_parameters() {
        let d = Dialect::Postgres;
        assert_eq!(d.quote("a\"b"), "\"a\"\"b\"");
        let k = col("id", ColKind::Int, "bigint");
        let vals = [
            col("name", ColKind::Text, "text"),
            col("price", ColKind::Text, "numeric"),
            col("img", ColKind::Blob, "bytea"),
        ];
        let (f, c, e) =
            (col("fl", ColKind::Int, "integer"), col("cs", ColKind::Int, "bigint"), col("ex", ColKind::Int, "bigint"));
        let t = d.qualified("public", "items");
        let s = Statements::build(d, &t, &k, &vals, Some(&f), Some(&c), Some(&e));
        let cols = "\"id\"::text, \"name\"::text, \"price\"::text, \"img\", \"fl\"::text, \"cs\"::text, \"ex\"::text";
        assert_eq!(s.select, format!("SELECT {cols} FROM \"public\".\"items\" WHERE \"id\" = $1::text::bigint"));
        assert_eq!(s.select_for_write, format!("{} FOR UPDATE", s.select));
        assert_eq!(
            s.insert,
            "INSERT INTO \"public\".\"items\" (\"id\", \"name\", \"price\", \"img\", \"fl\", \"cs\", \"ex\") VALUES \
             ($1::text::bigint, $2::text::text, $3::text::numeric, $4::bytea, $5::text::integer, $6::text::bigint, \
             $7::text::bigint) ON CONFLICT (\"id\") DO NOTHING"
        );
        assert_eq!(
            s.update,
            "UPDATE \"public\".\"items\" SET \"name\" = $1::text::text, \"price\" = $2::text::numeric, \"img\" = $3::bytea, \
             \"fl\" = $4::text::integer, \"cs\" = $5::text::bigint, \"ex\" = $6::text::bigint WHERE \"id\" = $7::text::bigint"
        );
        assert_eq!(
            s.touch.as_deref(),
            Some("UPDATE \"public\".\"items\" SET \"ex\" = $1::text::bigint WHERE \"id\" = $2::text::bigint")
        );
        assert_eq!(s.delete, "DELETE FROM \"public\".\"items\" WHERE \"id\" = $1::text::bigint");
        assert_eq!(
            s.delete_expired.as_deref(),
            Some("DELETE FROM \"public\".\"items\" WHERE \"id\" = $1::text::bigint AND \"ex\" <> 0 AND \"ex\" <= $2::text::bigint")
        );
        assert_eq!(s.flush, "TRUNCATE TABLE \"public\".\"items\"");
        assert_eq!(
            s.select_in(2),
            format!("SELECT {cols} FROM \"public\".\"items\" WHERE \"id\" IN ($1::text::bigint, $2::text::bigint)")
        );
        assert_eq!(s.delete_in(1), "DELETE FROM \"public\".\"items\" WHERE \"id\" IN ($1::text::bigint)");
        // Rows of a multi-row insert number on: the second row starts at $8.
        assert!(s.insert_rows(2).contains("), ($8::text::bigint, $9::text::text,"), "{}", s.insert_rows(2));
        let up = s.set_rows(1);
        assert!(up.contains(" ON CONFLICT (\"id\") DO UPDATE SET \"name\" = excluded.\"name\", "), "{up}");
        assert!(
            up.ends_with(
                "\"cs\" = GREATEST(excluded.\"cs\", \"public\".\"items\".\"cs\" + 1), \"ex\" = excluded.\"ex\""
            ),
            "{up}"
        );
    }

    #[test]
    fn mysql_statements_keep_their_form() {
        let d = Dialect::Mysql;
        let mk = |n: &str, kind| Column {
            name: n.into(),
            quoted: d.quote(n),
            kind,
            nullable: true,
            exact: true,
            cast: None,
        };
        let (k, v, c) = (mk("k", ColKind::Text), mk("v", ColKind::Text), mk("c", ColKind::Int));
        let s = Statements::build(d, "`db`.`t`", &k, std::slice::from_ref(&v), None, Some(&c), None);
        assert_eq!(s.select_for_write, "SELECT `k`, `v`, `c` FROM `db`.`t` WHERE `k` = ? FOR UPDATE");
        assert_eq!(s.insert, "INSERT INTO `db`.`t` (`k`, `v`, `c`) VALUES (?, ?, ?)");
        assert_eq!(s.update, "UPDATE `db`.`t` SET `v` = ?, `c` = ? WHERE `k` = ?");
        assert_eq!(s.flush, "TRUNCATE TABLE `db`.`t`");
        assert_eq!(
            s.set_rows(2),
            "INSERT INTO `db`.`t` (`k`, `v`, `c`) VALUES (?, ?, ?), (?, ?, ?) ON DUPLICATE KEY UPDATE `v` = VALUES(`v`), \
             `c` = GREATEST(VALUES(`c`), `c` + 1)"
        );
        assert_eq!(s.select_in_for_update(2), "SELECT `k`, `v`, `c` FROM `db`.`t` WHERE `k` IN (?, ?) FOR UPDATE");
        let lite = Statements::build(Dialect::Sqlite, "\"main\".\"t\"", &k, &[v], None, None, None);
        assert_eq!(lite.select_for_write, lite.select);
        assert_eq!(lite.flush, "DELETE FROM \"main\".\"t\"");
    }

    #[test]
    fn in_chunks_cover_every_key_once() {
        for n in 1..100 {
            let c = in_chunks(n);
            assert_eq!(c.iter().map(|x| x.1).sum::<usize>(), n);
            assert!(c.iter().all(|&(_, len, size)| len <= size && IN_SIZES.contains(&size)));
        }
        assert_eq!(in_chunks(3), vec![(0, 3, 4)]);
        assert_eq!(in_chunks(33), vec![(0, 32, 32), (32, 1, 1)]);
    }
}
