//! Key values as tags: which key columns can be tagged by value, how a value is
//! normalized so that values MariaDB compares as equal become equal bytes, and how a
//! key's columns are encoded into one byte string.
//!
//! # The rule
//! A result tagged `email = 'abc'` must be dropped by every write to a row whose email
//! MariaDB would compare equal to `'abc'`. Equality depends on the column's collation:
//! `_ci` collations ignore case (and accents), PAD SPACE collations (all but `_nopad_`
//! ones) ignore trailing spaces, `binary` (VARBINARY) compares bytes. Normalization
//! therefore only ever *merges* values (merging more than MariaDB only costs extra
//! invalidations, merging less would leave stale results):
//!
//! | column | normalized value |
//! |---|---|
//! | integer (TINYINT..BIGINT) | the integer; only integer literals and parameters |
//! | VARBINARY (`binary` collation) | the bytes; only ASCII values |
//! | CHAR / VARCHAR, `_bin` / `_nopad_bin` | trailing spaces trimmed; only printable ASCII |
//! | CHAR / VARCHAR, a known `_ci` collation | ASCII-lowercased, trailing spaces trimmed; only printable ASCII |
//! | anything else (other collations or charsets, BINARY(n), TEXT, DECIMAL, dates, ENUM) | never tagged |
//!
//! Values outside the allowed bytes are refused everywhere: a read with such a literal is
//! not tagged on that key, and a write or binlog row with such a value drops every
//! result tagged on the key. ASCII only, because a literal travels in the connection's
//! character set and a binlog image holds the column's: only ASCII is the same bytes in
//! every character set allowed here (utf8mb3/utf8mb4, latin1, ascii); and printable only,
//! because UCA collations ignore some control characters (`'a\x01b' = 'ab'`). Non-ASCII
//! letters (`'é' = 'e'` under `_ai` collations, `'ß' = 'ss'` under German ones) therefore
//! never appear in a tag.

use std::sync::Arc;

use crate::types::{KeyValues, Param};

/// How values of one key column compare.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fold {
    /// An integer column.
    Int,
    /// VARBINARY: exact bytes (ASCII only).
    Bytes,
    /// A `_bin` collation: case-sensitive, trailing spaces ignored (printable ASCII only).
    Bin,
    /// A case-insensitive collation: ASCII case and trailing spaces ignored (printable ASCII only).
    Ci,
}

/// Character sets whose ASCII bytes are ASCII characters (and the connection's too).
const CHARSETS: [&str; 5] = ["utf8mb4_", "utf8mb3_", "utf8_", "latin1_", "ascii_"];

/// Case-insensitive collations (after the charset prefix) where two printable ASCII
/// strings are equal exactly when they are equal ignoring ASCII case and trailing spaces
/// (or, for `_nopad_` ones, ignoring ASCII case only: trimming merges more, so is safe).
/// Checked against MariaDB for every pair of short printable ASCII strings
/// (`tests/querycache/test_tags.py::test_collation_rule_matches_mariadb`); collations not
/// checked (UCA 14.0.0, MySQL's 0900, language tailorings) are not tagged.
const CI: [&str; 9] = [
    "general_ci",
    "general_nopad_ci",
    "general_mysql500_ci",
    "unicode_ci",
    "unicode_nopad_ci",
    "unicode_520_ci",
    "unicode_520_nopad_ci",
    "swedish_ci",
    "swedish_nopad_ci",
];

impl Fold {
    /// How a column of this `information_schema.COLUMNS` DATA_TYPE and COLLATION_NAME
    /// compares; None: it is never tagged.
    pub(crate) fn of(data_type: &str, collation: Option<&str>) -> Option<Fold> {
        let ty = data_type.to_ascii_lowercase();
        if matches!(ty.as_str(), "tinyint" | "smallint" | "mediumint" | "int" | "integer" | "bigint") {
            return Some(Fold::Int);
        }
        let coll = collation?.to_ascii_lowercase();
        match ty.as_str() {
            "varbinary" if coll == "binary" => Some(Fold::Bytes),
            "char" | "varchar" => {
                let rest = CHARSETS.iter().find_map(|c| coll.strip_prefix(c))?;
                if rest == "bin" || rest == "nopad_bin" {
                    Some(Fold::Bin)
                } else if CI.contains(&rest) {
                    Some(Fold::Ci)
                } else {
                    None
                }
            }
            _ => None,
        }
    }

    /// The normalized bytes of a string value; None if it has bytes this fold refuses.
    pub(crate) fn string(self, v: &[u8]) -> Option<Vec<u8>> {
        match self {
            Fold::Int => None,
            Fold::Bytes => v.is_ascii().then(|| v.to_vec()),
            Fold::Bin | Fold::Ci => {
                if !v.iter().all(|b| (0x20..0x7f).contains(b)) {
                    return None;
                }
                let end = v.iter().rposition(|b| *b != b' ').map_or(0, |p| p + 1);
                let mut out = v[..end].to_vec();
                if self == Fold::Ci {
                    out.make_ascii_lowercase();
                }
                Some(out)
            }
        }
    }

    /// The normalized part for a decoded value (a parameter or a binlog column); None if
    /// the value is not of this column's kind or is refused.
    pub(crate) fn value(self, v: &Param) -> Option<Part> {
        match (self, v) {
            (Fold::Int, Param::Int(i)) => Some(Part::Int(*i)),
            (Fold::Int, Param::UInt(u)) => i64::try_from(*u).ok().map(Part::Int),
            (Fold::Int, _) => None,
            (_, Param::Str(s)) => self.string(s).map(Part::Str),
            _ => None,
        }
    }
}

/// One column's normalized value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Part {
    /// An integer column's value.
    Int(i64),
    /// A string column's normalized bytes.
    Str(Vec<u8>),
}

/// Encode a key's normalized column values into one byte string (each part tagged and
/// length-prefixed, so distinct tuples never encode alike).
pub(crate) fn encode(parts: &[Part]) -> Box<[u8]> {
    let mut out = Vec::with_capacity(parts.len() * 9);
    for p in parts {
        match p {
            Part::Int(i) => {
                out.push(1);
                out.extend_from_slice(&i.to_be_bytes());
            }
            Part::Str(s) => {
                out.push(2);
                out.extend_from_slice(&(s.len() as u32).to_be_bytes());
                out.extend_from_slice(s);
            }
        }
    }
    out.into()
}

/// A key whose values tag results: a string or composite primary key, or a unique
/// secondary key, every column of which can be tagged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct KeyDef {
    /// The key's name ([`KeyValues::key`]).
    pub id: Arc<str>,
    /// Lower-cased column names and how they compare, in key order.
    pub columns: Vec<(Arc<str>, Fold)>,
}

impl KeyDef {
    /// The key named by these columns, if every one can be tagged.
    pub(crate) fn new(columns: &[(String, Option<Fold>)]) -> Option<KeyDef> {
        let cols: Vec<(Arc<str>, Fold)> =
            columns.iter().map(|(n, f)| Some((Arc::from(n.to_ascii_lowercase()), (*f)?))).collect::<Option<_>>()?;
        if cols.is_empty() {
            return None;
        }
        let id: Vec<&str> = cols.iter().map(|(n, _)| &**n).collect();
        Some(KeyDef { id: id.join(",").into(), columns: cols })
    }
}

/// Most values in one [`KeyValues`] of a read (an IN list, or the combinations of a
/// composite key's IN lists); beyond, the read is tagged table-level.
pub(crate) const MAX_VALUES: usize = 64;

/// Every combination of per-column candidate parts (a composite key bound by IN lists),
/// encoded, sorted, deduplicated; None if there are more than `max`.
pub(crate) fn combinations(per_column: &[Vec<Part>], max: usize) -> Option<Vec<Box<[u8]>>> {
    let mut n = 1usize;
    for c in per_column {
        n = n.checked_mul(c.len())?;
    }
    if n > max {
        return None;
    }
    let mut out = Vec::with_capacity(n);
    let mut idx = vec![0usize; per_column.len()];
    if n == 0 {
        return Some(out);
    }
    loop {
        let parts: Vec<Part> = idx.iter().zip(per_column).map(|(i, c)| c[*i].clone()).collect();
        out.push(encode(&parts));
        let mut k = per_column.len();
        loop {
            if k == 0 {
                out.sort();
                out.dedup();
                return Some(out);
            }
            k -= 1;
            idx[k] += 1;
            if idx[k] < per_column[k].len() {
                break;
            }
            idx[k] = 0;
        }
    }
}

/// Values of `key` from rows whose columns `value(row, column)` gives; None if any row's
/// value is unknown or refused (then every result tagged on the key must go). A NULL in
/// a key column is unknown too: a binlog image shows a column it left out as NULL.
pub(crate) fn row_values<R>(key: &KeyDef, rows: &[R], value: impl Fn(&R, &str) -> Option<Param>) -> Option<KeyValues> {
    let mut values = Vec::with_capacity(rows.len());
    for r in rows {
        let parts: Vec<Part> = key.columns.iter().map(|(c, f)| f.value(&value(r, c)?)).collect::<Option<_>>()?;
        values.push(encode(&parts));
    }
    values.sort();
    values.dedup();
    Some(KeyValues { key: key.id.clone(), values })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(f: Fold, v: &str) -> Option<Vec<u8>> {
        f.string(v.as_bytes())
    }

    #[test]
    fn collations_classify() {
        assert_eq!(Fold::of("int", None), Some(Fold::Int));
        assert_eq!(Fold::of("BIGINT", None), Some(Fold::Int));
        assert_eq!(Fold::of("varchar", Some("utf8mb4_general_ci")), Some(Fold::Ci));
        assert_eq!(Fold::of("char", Some("latin1_swedish_ci")), Some(Fold::Ci));
        assert_eq!(Fold::of("varchar", Some("utf8mb4_unicode_520_ci")), Some(Fold::Ci));
        assert_eq!(Fold::of("varchar", Some("utf8mb4_uca1400_ai_ci")), None);
        assert_eq!(Fold::of("varchar", Some("utf8mb4_bin")), Some(Fold::Bin));
        assert_eq!(Fold::of("varchar", Some("utf8mb4_nopad_bin")), Some(Fold::Bin));
        assert_eq!(Fold::of("varbinary", Some("binary")), Some(Fold::Bytes));
        // Unknown behaviour: case-sensitive non-binary, other charsets, padded binary, TEXT.
        assert_eq!(Fold::of("varchar", Some("latin1_general_cs")), None);
        assert_eq!(Fold::of("varchar", Some("utf8mb4_uca1400_as_cs")), None);
        assert_eq!(Fold::of("varchar", Some("ucs2_general_ci")), None);
        assert_eq!(Fold::of("varchar", Some("utf16_bin")), None);
        assert_eq!(Fold::of("varchar", Some("utf8mb4_danish_ci")), None);
        assert_eq!(Fold::of("binary", Some("binary")), None);
        assert_eq!(Fold::of("text", Some("utf8mb4_general_ci")), None);
        assert_eq!(Fold::of("decimal", None), None);
        assert_eq!(Fold::of("varchar", None), None);
    }

    #[test]
    fn ci_merges_case_and_trailing_spaces() {
        let f = Fold::Ci;
        assert_eq!(s(f, "abc"), s(f, "ABC"));
        assert_eq!(s(f, "abc"), s(f, "abc "));
        assert_eq!(s(f, "abc"), s(f, "aBc   "));
        assert_ne!(s(f, "abc"), s(f, " abc"));
        assert_ne!(s(f, "abc"), s(f, "abd"));
        assert_eq!(s(f, ""), s(f, "  "));
        // Non-ASCII and control characters are refused, never guessed.
        assert_eq!(s(f, "é"), None);
        assert_eq!(s(f, "a\u{1}b"), None);
        assert_eq!(s(f, "a\tb"), None);
    }

    #[test]
    fn bin_keeps_case_and_bytes_keep_everything() {
        let f = Fold::Bin;
        assert_ne!(s(f, "abc"), s(f, "ABC"));
        assert_eq!(s(f, "abc"), s(f, "abc "));
        assert_eq!(s(f, "é"), None);
        let b = Fold::Bytes;
        assert_ne!(s(b, "abc"), s(b, "ABC"));
        assert_ne!(s(b, "abc"), s(b, "abc "));
        assert_eq!(s(b, "a\u{0}"), Some(b"a\0".to_vec()));
        assert_eq!(b.string(&[0xc3, 0xa9]), None);
    }

    #[test]
    fn values_of_the_right_kind_only() {
        assert_eq!(Fold::Int.value(&Param::Int(5)), Some(Part::Int(5)));
        assert_eq!(Fold::Int.value(&Param::UInt(5)), Some(Part::Int(5)));
        assert_eq!(Fold::Int.value(&Param::UInt(u64::MAX)), None);
        assert_eq!(Fold::Int.value(&Param::Str(b"5".to_vec().into())), None);
        assert_eq!(Fold::Ci.value(&Param::Int(5)), None);
        assert_eq!(Fold::Ci.value(&Param::Null), None);
        assert_eq!(Fold::Ci.value(&Param::Str(b"AB ".to_vec().into())), Some(Part::Str(b"ab".to_vec())));
    }

    #[test]
    fn encodings_are_distinct_and_combinations_bounded() {
        let a = encode(&[Part::Str(b"ab".to_vec()), Part::Str(b"c".to_vec())]);
        let b = encode(&[Part::Str(b"a".to_vec()), Part::Str(b"bc".to_vec())]);
        assert_ne!(a, b);
        assert_ne!(encode(&[Part::Int(1)]), encode(&[Part::Str(vec![0, 0, 0, 0, 0, 0, 0, 1])]));
        let cols = vec![vec![Part::Int(1), Part::Int(2)], vec![Part::Int(3), Part::Int(3), Part::Int(4)]];
        let c = combinations(&cols, 64).unwrap();
        assert_eq!(c.len(), 4);
        assert!(c.contains(&encode(&[Part::Int(2), Part::Int(4)])));
        assert_eq!(combinations(&cols, 5), None);
        assert_eq!(combinations(&[vec![], vec![Part::Int(1)]], 64), Some(vec![]));
    }

    #[test]
    fn rows_give_values_or_nothing() {
        let k = KeyDef::new(&[("A".into(), Some(Fold::Int)), ("b".into(), Some(Fold::Ci))]).unwrap();
        assert_eq!(&*k.id, "a,b");
        let rows = [(1, "X"), (1, "x "), (2, "y")];
        let get = |r: &(i64, &str), c: &str| {
            Some(if c == "a" { Param::Int(r.0) } else { Param::Str(r.1.as_bytes().to_vec().into()) })
        };
        let v = row_values(&k, &rows, get).unwrap();
        assert_eq!(v.values.len(), 2);
        assert_eq!(row_values(&k, &rows, |r, c| if c == "b" { Some(Param::Null) } else { get(r, c) }), None);
        assert_eq!(KeyDef::new(&[("a".into(), Some(Fold::Int)), ("t".into(), None)]), None);
    }
}
