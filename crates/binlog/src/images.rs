//! Row images of a ROWS event, decoded value by value.
//!
//! mysql_common's `RowsEventData::rows` builds, for every value of every row, a named
//! `Column` (schema, table and column name copied into new buffers) and parses the
//! table map's optional metadata again for every row. Under a write load (sets into a
//! SQL container, sysbench's writer) that was most of the follower's CPU. Here the
//! per-column facts (type, metadata, signedness) are taken from the table map once
//! ([`ColumnsInfo`]), and each row image is read directly: the NULL bitmap of the
//! columns the event carries, then one value per non-NULL column, each decoded by
//! mysql_common's own `BinlogValue` parser exactly as `rows` would, except one case
//! mysql_common 0.37.3 gets wrong (a negative `TIME(1)`/`TIME(2)` with a fraction,
//! [`time2_short_frac`]). MySQL's partial JSON updates (PARTIAL_UPDATE_ROWS_EVENT) are
//! left to mysql_common.

use std::io;

use mysql_async::binlog::events::{OptionalMetadataField, RowsEventData, TableMapEvent};
use mysql_async::binlog::value::BinlogValue;
use mysql_async::consts::ColumnType;
use mysql_async::Value;
use mysql_common::io::ParseBuf;

/// Per column of one table map: its type, its type metadata, and whether the binlog
/// marks it unsigned.
#[derive(Debug)]
pub(crate) struct ColumnsInfo(Vec<(ColumnType, Vec<u8>, bool)>);

impl ColumnsInfo {
    /// What the row images of `tme`'s table need; None if a column's type is unknown.
    pub fn of(tme: &TableMapEvent<'_>) -> Option<ColumnsInfo> {
        let mut unsigned: Vec<bool> = Vec::new();
        for f in tme.iter_optional_meta() {
            if let Ok(OptionalMetadataField::Signedness(bits)) = f {
                unsigned = bits.iter().by_vals().collect();
            }
        }
        // As mysql_common: one signedness flag per numeric column, in order.
        let mut flags = unsigned.into_iter();
        let n = tme.columns_count() as usize;
        let mut cols = Vec::with_capacity(n);
        for i in 0..n {
            let ty = tme.get_column_type(i).ok().flatten()?;
            let meta = tme.get_column_metadata(i).unwrap_or(&[]).to_vec();
            let unsigned = ty.is_numeric_type() && flags.next().unwrap_or(false);
            cols.push((ty, meta, unsigned));
        }
        Some(ColumnsInfo(cols))
    }

    /// Whether mysql_common decodes every value of this table right (no `TIME(1)` or
    /// `TIME(2)` column, see [`time2_short_frac`]); debug builds compare with it then.
    #[cfg(debug_assertions)]
    pub fn mysql_common_agrees(&self) -> bool {
        !self.0.iter().any(|(ty, meta, _)| short_frac_time(*ty, meta))
    }
}

/// Bytes of table-map metadata mysql_common's `BinlogValue` parser indexes for a column
/// of type `ty` (it assumes them: a shorter slice would panic).
fn meta_needed(ty: ColumnType) -> usize {
    use ColumnType::*;
    match ty {
        MYSQL_TYPE_STRING
        | MYSQL_TYPE_VARCHAR
        | MYSQL_TYPE_VAR_STRING
        | MYSQL_TYPE_BIT
        | MYSQL_TYPE_NEWDECIMAL
        | MYSQL_TYPE_ENUM
        | MYSQL_TYPE_SET => 2,
        MYSQL_TYPE_TINY_BLOB
        | MYSQL_TYPE_MEDIUM_BLOB
        | MYSQL_TYPE_LONG_BLOB
        | MYSQL_TYPE_BLOB
        | MYSQL_TYPE_GEOMETRY
        | MYSQL_TYPE_VECTOR
        | MYSQL_TYPE_TIMESTAMP2
        | MYSQL_TYPE_DATETIME2
        | MYSQL_TYPE_TIME2
        | MYSQL_TYPE_TYPED_ARRAY => 1,
        _ => 0,
    }
}

/// One non-NULL value, by mysql_common's parser. A value it cannot read is an error, never
/// a panic (its metadata is checked first, and a panic inside the parser on bytes it did
/// not expect is caught): the event is then reported table-level, and the follower lives.
fn value<'s>(buf: &mut ParseBuf<'s>, ty: ColumnType, meta: &'s [u8], unsigned: bool) -> io::Result<BinlogValue<'s>> {
    if meta.len() < meta_needed(ty) {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("{ty:?} column without its metadata")));
    }
    // A DECIMAL's size comes from its precision and scale: scale > precision would make
    // mysql_common size a buffer from an underflowed difference (an abort in release
    // builds, not a catchable panic).
    if ty == ColumnType::MYSQL_TYPE_NEWDECIMAL && (meta[0] == 0 || meta[0] > 65 || meta[1] > meta[0].min(38)) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("DECIMAL({}, {}) in a table map", meta[0], meta[1]),
        ));
    }
    let parsed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        buf.parse::<BinlogValue<'s>>((ty, meta, unsigned, false))
    }));
    parsed.unwrap_or_else(|_| Err(io::Error::new(io::ErrorKind::InvalidData, format!("unreadable {ty:?} value"))))
}

/// A `TIME(1)` or `TIME(2)` column (MySQL 5.6+ / MariaDB `TIME2` format, 1 byte of fraction).
fn short_frac_time(ty: ColumnType, meta: &[u8]) -> bool {
    ty == ColumnType::MYSQL_TYPE_TIME2 && matches!(meta.first(), Some(1 | 2))
}

/// Decodes a `TIME2` value with one byte of fraction as MySQL's
/// `my_time_packed_from_binary` does. mysql_common 0.37.3 keeps the fraction in a `u32`
/// and subtracts 0x100 from it for a negative time (`-00:00:01.50` and the like): an
/// overflow (a panic in debug builds, a huge wrong fraction in release), so a key column
/// of that type would name the wrong row.
fn time2_short_frac<'s>(buf: &mut ParseBuf<'s>) -> io::Result<BinlogValue<'s>> {
    const TIMEF_INT_OFS: i64 = 0x80_0000;
    let b = buf.checked_eat(4).ok_or_else(|| io::Error::new(io::ErrorKind::UnexpectedEof, "short TIME value"))?;
    let mut int = i64::from(u32::from_be_bytes([0, b[0], b[1], b[2]])) - TIMEF_INT_OFS;
    let mut frac = i64::from(b[3]);
    if int < 0 && frac > 0 {
        int += 1;
        frac -= 0x100;
    }
    let packed = (int << 24) + frac * 10_000;
    Ok(BinlogValue::Value(mysql_common::binlog::misc::time_from_packed(packed)))
}

/// A row image: the values of the columns the event carries, in column order.
pub(crate) type Image<'s> = Vec<BinlogValue<'s>>;

/// One row of a rows event: its before image (updates, deletes) and after image
/// (inserts, updates).
pub(crate) type RowImages<'s> = (Option<Image<'s>>, Option<Image<'s>>);

/// The (before, after) images of every row of `re`; None for a partial JSON update
/// (use mysql_common's `rows` then).
pub(crate) fn images<'s>(re: &'s RowsEventData<'s>, cols: &'s ColumnsInfo) -> Option<io::Result<Vec<RowImages<'s>>>> {
    if matches!(re, RowsEventData::PartialUpdateRowsEvent(_)) {
        return None;
    }
    // The columns each image carries: one bitmap per event, not per row.
    let before: Option<Vec<bool>> = re.columns_before_image().map(|b| b.iter().by_vals().collect());
    let after: Option<Vec<bool>> = re.columns_after_image().map(|b| b.iter().by_vals().collect());
    let mut data = re.rows_data();
    let mut rows = Vec::new();
    let read = |present: &Option<Vec<bool>>, data: &mut &'s [u8]| -> io::Result<Option<Image<'s>>> {
        present.as_deref().map(|p| image(data, p, cols)).transpose()
    };
    while !data.is_empty() {
        let row = read(&before, &mut data).and_then(|b| Ok((b, read(&after, &mut data)?)));
        match row {
            Ok(row) => rows.push(row),
            Err(e) => return Some(Err(e)),
        }
    }
    Some(Ok(rows))
}

/// Reads one image from the front of `data` (advancing it).
fn image<'s>(data: &mut &'s [u8], present: &[bool], cols: &'s ColumnsInfo) -> io::Result<Image<'s>> {
    let n = present.iter().filter(|p| **p).count();
    let bitmap_len = n.div_ceil(8);
    if data.len() < bitmap_len {
        return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "short NULL bitmap"));
    }
    let (nulls, rest) = data.split_at(bitmap_len);
    let mut buf = ParseBuf(rest);
    let mut out = Vec::with_capacity(n);
    let mut k = 0;
    for (i, (ty, meta, unsigned)) in cols.0.iter().enumerate() {
        if !present.get(i).copied().unwrap_or(false) {
            continue;
        }
        let null = nulls[k / 8] >> (k % 8) & 1 == 1;
        k += 1;
        if null {
            out.push(BinlogValue::Value(Value::NULL));
        } else if short_frac_time(*ty, meta) {
            out.push(time2_short_frac(&mut buf)?);
        } else {
            out.push(value(&mut buf, *ty, meta, *unsigned)?);
        }
    }
    *data = buf.0;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rng::Rng;

    /// Every column type mysql_common knows (and a few it does not), for the property test.
    const TYPES: &[ColumnType] = {
        use ColumnType::*;
        &[
            MYSQL_TYPE_DECIMAL,
            MYSQL_TYPE_TINY,
            MYSQL_TYPE_SHORT,
            MYSQL_TYPE_LONG,
            MYSQL_TYPE_FLOAT,
            MYSQL_TYPE_DOUBLE,
            MYSQL_TYPE_NULL,
            MYSQL_TYPE_TIMESTAMP,
            MYSQL_TYPE_LONGLONG,
            MYSQL_TYPE_INT24,
            MYSQL_TYPE_DATE,
            MYSQL_TYPE_TIME,
            MYSQL_TYPE_DATETIME,
            MYSQL_TYPE_YEAR,
            MYSQL_TYPE_NEWDATE,
            MYSQL_TYPE_VARCHAR,
            MYSQL_TYPE_BIT,
            MYSQL_TYPE_TIMESTAMP2,
            MYSQL_TYPE_DATETIME2,
            MYSQL_TYPE_TIME2,
            MYSQL_TYPE_TYPED_ARRAY,
            MYSQL_TYPE_VECTOR,
            MYSQL_TYPE_JSON,
            MYSQL_TYPE_NEWDECIMAL,
            MYSQL_TYPE_ENUM,
            MYSQL_TYPE_SET,
            MYSQL_TYPE_TINY_BLOB,
            MYSQL_TYPE_MEDIUM_BLOB,
            MYSQL_TYPE_LONG_BLOB,
            MYSQL_TYPE_BLOB,
            MYSQL_TYPE_VAR_STRING,
            MYSQL_TYPE_STRING,
            MYSQL_TYPE_GEOMETRY,
        ]
    };

    /// Plausible metadata for `ty` (what a table map carries), or random bytes of a random
    /// length (a damaged one).
    fn meta_for(rng: &mut Rng, ty: ColumnType) -> Vec<u8> {
        use ColumnType::*;
        if rng.below(4) == 0 {
            let n = rng.below(4);
            return rng.bytes(n);
        }
        match ty {
            MYSQL_TYPE_NEWDECIMAL => {
                let precision = 1 + rng.below(65) as u8;
                vec![precision, rng.below(precision.min(30) as usize + 1) as u8]
            }
            MYSQL_TYPE_TIMESTAMP2 | MYSQL_TYPE_DATETIME2 | MYSQL_TYPE_TIME2 => vec![rng.below(7) as u8],
            MYSQL_TYPE_BLOB | MYSQL_TYPE_GEOMETRY | MYSQL_TYPE_JSON => vec![1 + rng.below(4) as u8],
            MYSQL_TYPE_STRING => vec![[0xfe, 0xf7, 0xf8][rng.below(3)], rng.next() as u8],
            MYSQL_TYPE_ENUM | MYSQL_TYPE_SET => vec![rng.below(3) as u8, 1 + rng.below(8) as u8],
            MYSQL_TYPE_VARCHAR | MYSQL_TYPE_VAR_STRING | MYSQL_TYPE_BIT => rng.bytes(2),
            MYSQL_TYPE_FLOAT | MYSQL_TYPE_DOUBLE => vec![4 + 4 * rng.below(2) as u8],
            _ => Vec::new(),
        }
    }

    /// Property: whatever the bytes of a row image and whatever the table map says about
    /// its columns, decoding returns values or an error and never panics (a panic would end
    /// the follower thread, and with it every invalidation), and consumes no more than it has.
    #[test]
    fn any_row_image_decodes_or_fails_cleanly() {
        let mut rng = Rng(0x5EED_0FB1_7106);
        let (mut ok, mut failed) = (0, 0);
        for case in 0..40_000 {
            let ncols = 1 + rng.below(6);
            let cols: Vec<(ColumnType, Vec<u8>, bool)> = (0..ncols)
                .map(|_| {
                    let ty = TYPES[rng.below(TYPES.len())];
                    (ty, meta_for(&mut rng, ty), rng.below(2) == 0)
                })
                .collect();
            let cols = ColumnsInfo(cols);
            let present: Vec<bool> = (0..ncols).map(|_| rng.below(5) != 0).collect();
            let len = rng.below(64);
            let data = rng.bytes(len);
            let mut rest: &[u8] = &data;
            let got = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| image(&mut rest, &present, &cols)));
            match got {
                Ok(Ok(vals)) => {
                    assert_eq!(vals.len(), present.iter().filter(|p| **p).count(), "case {case}");
                    assert!(rest.len() <= data.len());
                    ok += 1;
                }
                Ok(Err(_)) => failed += 1,
                Err(_) => panic!("case {case}: decoding {:?} over {data:?} panicked", cols.0),
            }
        }
        assert!(ok > 1_000 && failed > 1_000, "ok {ok}, failed {failed}: the generator should reach both");
    }
}
