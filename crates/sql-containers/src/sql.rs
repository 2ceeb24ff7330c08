//! SQL text for a validated container. Identifiers come only from [`crate::validate`]
//! (the backend's own names, quoted here); keys and values are always `?` parameters.

use crate::column::Column;

/// The backend's SQL flavour: identifier quoting and a few statement forms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// SQLite.
    Sqlite,
    /// MySQL or MariaDB.
    Mysql,
}

impl Dialect {
    /// Quotes an identifier: `"x"` (SQLite) or `` `x` `` (MySQL), the quote doubled inside.
    pub fn quote(self, ident: &str) -> String {
        let q = match self {
            Dialect::Sqlite => '"',
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
    cols: String,
    table: String,
    key: String,
    /// `(?, ?, ...)`: one row of the insert columns (= `cols`).
    row_marks: String,
    /// `c = VALUES(c), ...` for every column but the key (multi-row upsert).
    upsert_sets: String,
    /// The same, but the cas column (if any) set to `GREATEST(VALUES(c), c + 1)`.
    set_sets: String,
    /// `SELECT cols FROM t WHERE k = ?`
    pub select: String,
    /// The same, locking the row for the writer (`FOR UPDATE` on MySQL).
    pub select_for_write: String,
    /// `INSERT INTO t (k, v.., flags, cas, exp) VALUES (?, ...)`
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
    /// Empties the table: `DELETE FROM` (SQLite), `TRUNCATE TABLE` (MySQL, like the plugin).
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
        let mut all: Vec<&Column> = vec![key];
        all.extend(values.iter());
        let mut next = 1 + values.len();
        let mut pos = |c: Option<&Column>| {
            c.map(|_| {
                next += 1;
                next - 1
            })
        };
        let layout = Layout { n_values: values.len(), flags: pos(flags), cas: pos(cas), expire: pos(expire) };
        all.extend(flags);
        all.extend(cas);
        all.extend(expire);
        let cols: Vec<&str> = all.iter().map(|c| c.quoted.as_str()).collect();
        let cols = cols.join(", ");
        let k = &key.quoted;
        let select = format!("SELECT {cols} FROM {table} WHERE {k} = ?");
        let select_for_write = match dialect {
            Dialect::Sqlite => select.clone(),
            Dialect::Mysql => format!("{select} FOR UPDATE"),
        };
        let marks = vec!["?"; all.len()].join(", ");
        let insert = format!("INSERT INTO {table} ({cols}) VALUES ({marks})");
        let row_marks = format!("({marks})");
        let upsert_sets: Vec<String> = all[1..].iter().map(|c| format!("{0} = VALUES({0})", c.quoted)).collect();
        let upsert_sets = upsert_sets.join(", ");
        let set_sets: Vec<String> = all[1..]
            .iter()
            .map(|c| match cas {
                Some(k) if k.quoted == c.quoted => format!("{0} = GREATEST(VALUES({0}), {0} + 1)", c.quoted),
                _ => format!("{0} = VALUES({0})", c.quoted),
            })
            .collect();
        let set_sets = set_sets.join(", ");
        let sets: Vec<String> = all[1..].iter().map(|c| format!("{} = ?", c.quoted)).collect();
        let update = format!("UPDATE {table} SET {} WHERE {k} = ?", sets.join(", "));
        let touch = expire.map(|e| format!("UPDATE {table} SET {} = ? WHERE {k} = ?", e.quoted));
        let delete = format!("DELETE FROM {table} WHERE {k} = ?");
        let delete_expired = expire.map(|e| {
            let e = &e.quoted;
            format!("DELETE FROM {table} WHERE {k} = ? AND {e} <> 0 AND {e} <= ?")
        });
        let flush = match dialect {
            Dialect::Sqlite => format!("DELETE FROM {table}"),
            Dialect::Mysql => format!("TRUNCATE TABLE {table}"),
        };
        Statements {
            layout,
            cols,
            table: table.to_string(),
            key: k.clone(),
            row_marks,
            upsert_sets,
            set_sets,
            select,
            select_for_write,
            insert,
            update,
            touch,
            delete,
            delete_expired,
            flush,
        }
    }

    /// `SELECT cols FROM t WHERE k IN (?, ... n times)`.
    pub fn select_in(&self, n: usize) -> String {
        let marks = vec!["?"; n].join(", ");
        format!("SELECT {} FROM {} WHERE {} IN ({marks})", self.cols, self.table, self.key)
    }

    /// The same, locking the rows (MySQL group commit).
    pub fn select_in_for_update(&self, n: usize) -> String {
        format!("{} FOR UPDATE", self.select_in(n))
    }

    /// `INSERT INTO t (cols) VALUES (...), ... n rows` (new rows of a group commit).
    pub fn insert_rows(&self, n: usize) -> String {
        format!("INSERT INTO {} ({}) VALUES {}", self.table, self.cols, vec![&self.row_marks[..]; n].join(", "))
    }

    /// `INSERT ... n rows ON DUPLICATE KEY UPDATE c = VALUES(c), ...` (MySQL): rewrites
    /// rows the group holds locked, all mapped columns at once.
    pub fn upsert_rows(&self, n: usize) -> String {
        format!("{} ON DUPLICATE KEY UPDATE {}", self.insert_rows(n), self.upsert_sets)
    }

    /// `INSERT ... n rows ON DUPLICATE KEY UPDATE`, the cas column kept above its previous
    /// value: plain `set`s without reading the rows first (MySQL). No padding: a repeated
    /// row would bump the cas again.
    pub fn set_rows(&self, n: usize) -> String {
        format!("{} ON DUPLICATE KEY UPDATE {}", self.insert_rows(n), self.set_sets)
    }

    /// `DELETE FROM t WHERE k IN (?, ... n times)`.
    pub fn delete_in(&self, n: usize) -> String {
        format!("DELETE FROM {} WHERE {} IN ({})", self.table, self.key, vec!["?"; n].join(", "))
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
