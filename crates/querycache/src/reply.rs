//! Which backend replies may be stored: complete result sets only, ending without
//! warnings, more results, session-state changes or a cursor; the transaction bits of
//! their final status are rewritten for each session served; and the primary keys of the
//! rows a stored result holds ([`pk_values`], for row tags).

use protocol_mysql::lenenc::parse_lenenc_int;
use protocol_mysql::reply::{read_status, status_offset};
use protocol_mysql::resultset::{parse_binary_row, parse_text_row_into, ColumnDefinition};
use protocol_mysql::value::Value;

use crate::types::RowTag;
use protocol_mysql::{
    SERVER_MORE_RESULTS_EXISTS, SERVER_SESSION_STATE_CHANGED, SERVER_STATUS_AUTOCOMMIT, SERVER_STATUS_CURSOR_EXISTS,
    SERVER_STATUS_IN_TRANS, SERVER_STATUS_IN_TRANS_READONLY,
};

/// Whether `reply` (packets with headers, first sequence id 1) is a clean result set.
pub(crate) fn storable(reply: &[u8], deprecate_eof: bool) -> bool {
    let mut pos = 0;
    let mut seq: u8 = 1;
    let mut first: Option<&[u8]> = None;
    let mut last: &[u8] = &[];
    while pos < reply.len() {
        let Some(h) = reply.get(pos..pos + 4) else { return false };
        let len = h[0] as usize | (h[1] as usize) << 8 | (h[2] as usize) << 16;
        if h[3] != seq || len == 0xff_ffff {
            return false;
        }
        let Some(p) = reply.get(pos + 4..pos + 4 + len) else { return false };
        first.get_or_insert(p);
        last = p;
        seq = seq.wrapping_add(1);
        pos += 4 + len;
    }
    match first.and_then(|p| p.first()) {
        Some(0x00 | 0xff | 0xfb) | None => return false,
        _ => {}
    }
    if last.first() != Some(&0xfe) || last.len() >= 0xff_ffff {
        return false;
    }
    let Some((status, warnings)) = read_status(last, deprecate_eof) else { return false };
    // The transaction bits are rewritten for each session that is served ([`set_txn_status`]).
    let unsafe_status = SERVER_MORE_RESULTS_EXISTS | SERVER_STATUS_CURSOR_EXISTS | SERVER_SESSION_STATE_CHANGED;
    warnings == 0 && status & unsafe_status == 0
}

/// Rewrites the transaction bits of the final status of a stored reply (packets with
/// headers) for the session it is served to: IN_TRANS, IN_TRANS_READONLY and AUTOCOMMIT as
/// given, every other flag as the backend sent it. False if the reply has no readable
/// terminator (it is then left alone).
pub(crate) fn set_txn_status(
    reply: &mut [u8],
    deprecate_eof: bool,
    in_trans: bool,
    read_only: bool,
    autocommit: bool,
) -> bool {
    let mut pos = 0;
    let mut last = None;
    while let Some(h) = reply.get(pos..pos + 4) {
        let len = h[0] as usize | (h[1] as usize) << 8 | (h[2] as usize) << 16;
        if pos + 4 + len > reply.len() {
            return false;
        }
        last = Some((pos + 4, len));
        pos += 4 + len;
    }
    let Some((start, len)) = last else { return false };
    let Some(at) = status_offset(&reply[start..start + len], deprecate_eof) else { return false };
    let i = start + at;
    let mut status = u16::from_le_bytes([reply[i], reply[i + 1]]);
    let bits = SERVER_STATUS_IN_TRANS | SERVER_STATUS_IN_TRANS_READONLY | SERVER_STATUS_AUTOCOMMIT;
    status &= !bits;
    if in_trans {
        status |= SERVER_STATUS_IN_TRANS;
    }
    if in_trans && read_only {
        status |= SERVER_STATUS_IN_TRANS_READONLY;
    }
    if autocommit {
        status |= SERVER_STATUS_AUTOCOMMIT;
    }
    reply[i..i + 2].copy_from_slice(&status.to_le_bytes());
    true
}

/// Most rows a result is tagged with by primary key (a larger one keeps its scope only).
pub(crate) const MAX_ROW_TAGS: usize = 64;

/// The values of integer column `tag.pk` of `table` in every row of a storable result
/// (packets with headers; `tag.binary`: rows in the binary protocol); None if the result
/// has no such column, a value is not an integer, or it has more than `max` rows. In a
/// join (`tag.alias`), the column must come from the table under that name, and NULLs (a
/// LEFT JOIN row with no match on that side) are skipped.
pub(crate) fn pk_values(reply: &[u8], deprecate_eof: bool, tag: &RowTag, table: &str, max: usize) -> Option<Vec<i64>> {
    let (binary, pk, alias) = (tag.binary, &*tag.pk, tag.alias.as_deref());
    let mut packets = Vec::new();
    let mut pos = 0;
    while let Some(h) = reply.get(pos..pos + 4) {
        let len = h[0] as usize | (h[1] as usize) << 8 | (h[2] as usize) << 16;
        packets.push(reply.get(pos + 4..pos + 4 + len)?);
        pos += 4 + len;
    }
    let (count, used) = parse_lenenc_int(packets.first()?).ok()?;
    let n = usize::try_from(count?).ok().filter(|n| used == packets[0].len() && *n > 0)?;
    let defs = packets.get(1..1 + n)?;
    let mut at = None;
    let mut types = Vec::with_capacity(n);
    for (i, p) in defs.iter().enumerate() {
        let c = ColumnDefinition::parse(p).ok()?;
        if at.is_none()
            && c.org_table.eq_ignore_ascii_case(table.as_bytes())
            && c.org_name.eq_ignore_ascii_case(pk.as_bytes())
            && alias.is_none_or(|a| c.table == a.as_bytes())
        {
            at = Some(i);
        }
        types.push(c.field_type());
    }
    let at = at?;
    let first_row = 1 + n + usize::from(!deprecate_eof);
    let rows = packets.get(first_row..packets.len().checked_sub(1)?)?;
    if rows.len() > max {
        return None;
    }
    let mut out = Vec::with_capacity(rows.len());
    let mut text = Vec::with_capacity(n);
    for r in rows {
        let v = if binary {
            match parse_binary_row(r, &types).ok()?.get(at)? {
                Value::Int(v) => Some(*v),
                Value::UInt(u) => Some(i64::try_from(*u).ok()?),
                Value::Null if alias.is_some() => None,
                _ => return None,
            }
        } else {
            parse_text_row_into(r, n, &mut text).ok()?;
            match *text.get(at)? {
                Some(t) => Some(std::str::from_utf8(t).ok()?.parse().ok()?),
                None if alias.is_some() => None,
                None => return None,
            }
        };
        out.extend(v);
    }
    out.sort_unstable();
    out.dedup();
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol_mysql::resultset::{write_binary_row, write_text_row};
    use protocol_mysql::value::{ColumnType, FieldType};

    fn packet(seq: &mut u8, payload: &[u8], out: &mut Vec<u8>) {
        let n = payload.len();
        out.extend_from_slice(&[n as u8, (n >> 8) as u8, (n >> 16) as u8, *seq]);
        out.extend_from_slice(payload);
        *seq += 1;
    }

    fn tag(pk: &str, binary: bool, alias: Option<&str>) -> RowTag {
        RowTag { pk: pk.into(), deps: None, binary, alias: alias.map(Into::into) }
    }

    /// A result of columns (org_table, org_name, type) and rows written by `row`.
    fn result(cols: &[(&str, &str, ColumnType)], eof: bool, rows: &[Vec<u8>]) -> Vec<u8> {
        let cols: Vec<_> = cols.iter().map(|&(t, n, ty)| ("alias", t, n, ty)).collect();
        aliased(&cols, eof, rows)
    }

    /// A result of columns (table as named, org_table, org_name, type).
    fn aliased(cols: &[(&str, &str, &str, ColumnType)], eof: bool, rows: &[Vec<u8>]) -> Vec<u8> {
        let (mut out, mut seq) = (Vec::new(), 1);
        packet(&mut seq, &[cols.len() as u8], &mut out);
        for (a, t, n, ty) in cols {
            let def = ColumnDefinition {
                table: a.as_bytes(),
                name: b"x",
                ..ColumnDefinition::new(b"d", t.as_bytes(), n.as_bytes(), *ty)
            };
            let mut p = Vec::new();
            def.write(&mut p);
            packet(&mut seq, &p, &mut out);
        }
        if eof {
            packet(&mut seq, &[0xfe, 0, 0, 2, 0], &mut out);
        }
        for r in rows {
            packet(&mut seq, r, &mut out);
        }
        packet(&mut seq, &[0xfe, 0, 0, 2, 0], &mut out);
        out
    }

    fn text(values: &[&str]) -> Vec<u8> {
        let mut p = Vec::new();
        write_text_row(&mut p, &values.iter().map(|v| Some(v.as_bytes())).collect::<Vec<_>>());
        p
    }

    #[test]
    fn text_rows_give_the_key_column() {
        let cols = [("users", "name", ColumnType::VarString), ("users", "ID", ColumnType::Long)];
        let r = result(&cols, true, &[text(&["b", "7"]), text(&["a", "3"]), text(&["c", "7"])]);
        assert_eq!(pk_values(&r, false, &tag("id", false, None), "users", 64), Some(vec![3, 7]));
        assert_eq!(pk_values(&r, false, &tag("id", false, None), "users", 2), None, "too many rows");
        assert_eq!(pk_values(&r, false, &tag("id", false, None), "posts", 64), None, "another table's column");
        assert_eq!(pk_values(&r, false, &tag("name", false, None), "users", 64), None, "not integers");
        let empty = result(&cols, false, &[]);
        assert_eq!(pk_values(&empty, true, &tag("id", false, None), "users", 64), Some(vec![]));
        let null = result(&cols, true, &[vec![1, b'a', 0xfb]]);
        assert_eq!(pk_values(&null, false, &tag("id", false, None), "users", 64), None);
        assert_eq!(pk_values(&r[..r.len() - 3], false, &tag("id", false, None), "users", 64), None, "truncated");
    }

    #[test]
    fn a_join_reads_the_key_of_the_table_under_its_name() {
        // A self-join: both columns are users.id; `u2`'s is wanted, NULL where unmatched.
        let cols = [("u1", "users", "id", ColumnType::Long), ("u2", "users", "id", ColumnType::Long)];
        let row = |a: &str, b: Option<&str>| {
            let mut p = Vec::new();
            write_text_row(&mut p, &[Some(a.as_bytes()), b.map(str::as_bytes)]);
            p
        };
        let r = aliased(&cols, true, &[row("1", Some("5")), row("2", None), row("3", Some("4"))]);
        assert_eq!(pk_values(&r, false, &tag("id", false, Some("u2")), "users", 64), Some(vec![4, 5]));
        assert_eq!(pk_values(&r, false, &tag("id", false, Some("u1")), "users", 64), Some(vec![1, 2, 3]));
        assert_eq!(pk_values(&r, false, &tag("id", false, Some("U2")), "users", 64), None, "aliases are exact");
        // A single-table read never has a NULL key: one is no answer.
        assert_eq!(pk_values(&r, false, &tag("id", false, None), "users", 64), Some(vec![1, 2, 3]));
        let r = aliased(&cols[1..], true, &[text(&["5"]), vec![0xfb]]);
        assert_eq!(pk_values(&r, false, &tag("id", false, None), "users", 64), None);
    }

    #[test]
    fn binary_rows_give_the_key_column() {
        let cols = [("t", "s", ColumnType::VarString), ("t", "id", ColumnType::LongLong)];
        let types = [FieldType::new(ColumnType::VarString), FieldType::new(ColumnType::LongLong)];
        let row = |s: &str, id: i64| {
            let mut p = Vec::new();
            write_binary_row(&mut p, &types, &[Value::Bytes(s.as_bytes()), Value::Int(id)]).unwrap();
            p
        };
        let r = result(&cols, false, &[row("x", -4), row("yy", 12)]);
        assert_eq!(pk_values(&r, true, &tag("id", true, None), "t", 64), Some(vec![-4, 12]));
        assert_eq!(pk_values(&r, true, &tag("id", false, None), "t", 64), None, "not text rows");
    }

    /// Every truncation and every one-byte change of a valid reply is answered (a value or
    /// None), never a panic; the fuzz target `analyze` feeds it arbitrary replies too.
    #[test]
    fn damaged_replies_do_not_panic() {
        let cols = [("t", "id", ColumnType::Long), ("t", "s", ColumnType::VarString)];
        for binary in [false, true] {
            let types = [FieldType::new(ColumnType::Long), FieldType::new(ColumnType::VarString)];
            let row = |id: i64| {
                let mut p = Vec::new();
                if binary {
                    write_binary_row(&mut p, &types, &[Value::Int(id), Value::Bytes(b"abc")]).unwrap();
                } else {
                    write_text_row(&mut p, &[Some(id.to_string().as_bytes()), Some(b"abc")]);
                }
                p
            };
            let r = result(&cols, !binary, &[row(1), row(22), row(-3)]);
            assert_eq!(pk_values(&r, binary, &tag("id", binary, None), "t", 64), Some(vec![-3, 1, 22]));
            for n in 0..r.len() {
                let _ = pk_values(&r[..n], binary, &tag("id", binary, None), "t", 64);
                for x in [0u8, 1, 0x7f, 0xfb, 0xfc, 0xfe, 0xff] {
                    let mut m = r.clone();
                    m[n] = x;
                    let _ = pk_values(&m, binary, &tag("id", binary, None), "t", 64);
                }
            }
        }
    }
}
