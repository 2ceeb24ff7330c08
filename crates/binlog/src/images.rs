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
    pub fn mysql_common_agrees(&self) -> bool {
        !self.0.iter().any(|(ty, meta, _)| short_frac_time(*ty, meta))
    }
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
            out.push(buf.parse::<BinlogValue<'s>>((*ty, meta.as_slice(), *unsigned, false))?);
        }
    }
    *data = buf.0;
    Ok(out)
}
