//! Result sets: the response to COM_QUERY / COM_STMT_EXECUTE, and COM_STMT_PREPARE_OK.
//!
//! A result set is: a column count packet; unless metadata is skipped, that many
//! ColumnDefinition41 packets (followed by an EOF packet without
//! `CLIENT_DEPRECATE_EOF`); rows (text rows for COM_QUERY, binary rows for
//! COM_STMT_EXECUTE); then an EOF packet, or an OK packet with header `0xfe` with
//! `CLIENT_DEPRECATE_EOF` (see [`crate::ResponseKind::classify`]); or an ERR packet.

use crate::error::Error;
use crate::flags::{CLIENT_OPTIONAL_RESULTSET_METADATA, UNSIGNED_FLAG};
use crate::lenenc::{write_lenenc_int, write_lenenc_opt_str, write_lenenc_str};
use crate::reader::Reader;
use crate::response::{ErrPacket, OkPacket, ERR_HEADER, OK_HEADER};
use crate::value::{
    is_null, null_bitmap_len, parse_binary_value, write_binary_value, write_null_bitmap, ColumnType, FieldType, Value,
};

/// Header byte of a LOCAL INFILE request.
pub const LOCAL_INFILE_HEADER: u8 = 0xfb;

/// The first packet of the response to COM_QUERY (or COM_STMT_EXECUTE).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum QueryResponse<'a> {
    /// No result set.
    Ok(OkPacket<'a>),
    /// The query failed.
    Err(ErrPacket<'a>),
    /// `LOAD DATA LOCAL INFILE`: the server asks for this file.
    LocalInfile(&'a [u8]),
    /// A result set with this many columns follows.
    ResultSet {
        /// The column count.
        column_count: u64,
        /// Whether column definitions follow (always, unless
        /// `CLIENT_OPTIONAL_RESULTSET_METADATA` was negotiated and the server skips them).
        metadata_follows: bool,
    },
}

impl<'a> QueryResponse<'a> {
    /// Parses the first response packet.
    pub fn parse(payload: &'a [u8], capabilities: u32) -> Result<Self, Error> {
        match payload.first() {
            Some(&OK_HEADER) => OkPacket::parse(payload, capabilities).map(QueryResponse::Ok),
            Some(&ERR_HEADER) => ErrPacket::parse(payload).map(QueryResponse::Err),
            Some(&LOCAL_INFILE_HEADER) => Ok(QueryResponse::LocalInfile(&payload[1..])),
            _ => {
                let mut r = Reader::new(payload);
                let column_count = r.lenenc_int("column count")?;
                let metadata_follows = if capabilities & CLIENT_OPTIONAL_RESULTSET_METADATA != 0 {
                    r.u8("metadata follows")? != 0
                } else {
                    true
                };
                Ok(QueryResponse::ResultSet { column_count, metadata_follows })
            }
        }
    }
}

/// Appends a column count packet's payload (with the metadata-follows byte when
/// `CLIENT_OPTIONAL_RESULTSET_METADATA` is set; it is then always "full metadata").
pub fn write_column_count(out: &mut Vec<u8>, count: u64, capabilities: u32) {
    write_lenenc_int(out, count);
    if capabilities & CLIENT_OPTIONAL_RESULTSET_METADATA != 0 {
        out.push(1);
    }
}

/// A column definition (Protocol::ColumnDefinition41), borrowed from the payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ColumnDefinition<'a> {
    /// Always `def`.
    pub catalog: &'a [u8],
    /// Schema name.
    pub schema: &'a [u8],
    /// Table alias.
    pub table: &'a [u8],
    /// Physical table name.
    pub org_table: &'a [u8],
    /// Column alias.
    pub name: &'a [u8],
    /// Physical column name.
    pub org_name: &'a [u8],
    /// Collation id.
    pub charset: u16,
    /// Maximum display length.
    pub column_length: u32,
    /// Column type.
    pub column_type: ColumnType,
    /// Column flags (`*_FLAG`).
    pub flags: u16,
    /// Decimals (0x00 for integers and static strings, 0x1f for dynamic strings/floats, 0-0x51 for decimals).
    pub decimals: u8,
    /// Default values, sent only in COM_FIELD_LIST responses.
    pub default_values: Option<&'a [u8]>,
}

impl<'a> ColumnDefinition<'a> {
    /// A definition of column `name` of `schema.table` (aliases equal to the physical
    /// names), of type `column_type`: binary collation, display length 11, no flags.
    pub fn new(schema: &'a [u8], table: &'a [u8], name: &'a [u8], column_type: ColumnType) -> Self {
        ColumnDefinition {
            catalog: b"def",
            schema,
            table,
            org_table: table,
            name,
            org_name: name,
            charset: 63,
            column_length: 11,
            column_type,
            flags: 0,
            decimals: 0,
            default_values: None,
        }
    }

    /// Parses a ColumnDefinition41 payload. The fixed-length block's length is normally
    /// 0x0c; longer blocks are accepted and their extra bytes skipped.
    pub fn parse(payload: &'a [u8]) -> Result<Self, Error> {
        let mut r = Reader::new(payload);
        let catalog = r.lenenc_str("catalog")?;
        let schema = r.lenenc_str("schema")?;
        let table = r.lenenc_str("table")?;
        let org_table = r.lenenc_str("org_table")?;
        let name = r.lenenc_str("name")?;
        let org_name = r.lenenc_str("org_name")?;
        let fixed = r.lenenc_int("fixed-length fields length")?;
        if fixed < 12 {
            return Err(Error::Invalid("fixed-length fields length"));
        }
        let mut f = Reader::new(r.bytes(usize::try_from(fixed).unwrap_or(usize::MAX), "fixed-length fields")?);
        let col = ColumnDefinition {
            catalog,
            schema,
            table,
            org_table,
            name,
            org_name,
            charset: f.u16("character set")?,
            column_length: f.u32("column length")?,
            column_type: ColumnType::from_u8(f.u8("column type")?),
            flags: f.u16("column flags")?,
            decimals: f.u8("decimals")?,
            default_values: None,
        };
        let default_values = if r.is_empty() { None } else { r.lenenc_str_or_null("default values")? };
        Ok(ColumnDefinition { default_values, ..col })
    }

    /// The column's type and signedness, as binary rows need them.
    pub fn field_type(&self) -> FieldType {
        FieldType { column_type: self.column_type, unsigned: self.flags & UNSIGNED_FLAG != 0 }
    }

    /// Appends the payload.
    pub fn write(&self, out: &mut Vec<u8>) {
        for s in [self.catalog, self.schema, self.table, self.org_table, self.name, self.org_name] {
            write_lenenc_str(out, s);
        }
        out.push(0x0c);
        out.extend_from_slice(&self.charset.to_le_bytes());
        out.extend_from_slice(&self.column_length.to_le_bytes());
        out.push(self.column_type.code());
        out.extend_from_slice(&self.flags.to_le_bytes());
        out.push(self.decimals);
        out.extend_from_slice(&[0, 0]);
        if let Some(d) = self.default_values {
            write_lenenc_str(out, d);
        }
    }
}

/// Parses a text-protocol row of `columns` values into `out` (cleared first): each value
/// is a length-encoded string or NULL (`0xfb`). The row must be exactly `columns` values.
pub fn parse_text_row_into<'a>(
    payload: &'a [u8],
    columns: usize,
    out: &mut Vec<Option<&'a [u8]>>,
) -> Result<(), Error> {
    out.clear();
    let mut r = Reader::new(payload);
    for _ in 0..columns {
        if r.is_empty() {
            return Err(Error::Truncated("text row"));
        }
        out.push(r.lenenc_str_or_null("text row value")?);
    }
    if !r.is_empty() {
        return Err(Error::Invalid("text row (more values than columns)"));
    }
    Ok(())
}

/// Parses a text-protocol row of `columns` values (see [`parse_text_row_into`]).
pub fn parse_text_row(payload: &[u8], columns: usize) -> Result<Vec<Option<&[u8]>>, Error> {
    let mut out = Vec::with_capacity(columns.min(payload.len()));
    parse_text_row_into(payload, columns, &mut out)?;
    Ok(out)
}

/// Appends a text-protocol row.
pub fn write_text_row(out: &mut Vec<u8>, values: &[Option<&[u8]>]) {
    for v in values {
        write_lenenc_opt_str(out, *v);
    }
}

/// Parses a binary-protocol row (header `0x00`, null bitmap with offset 2, values) of
/// columns with the given types.
pub fn parse_binary_row<'a>(payload: &'a [u8], types: &[FieldType]) -> Result<Vec<Value<'a>>, Error> {
    let mut r = Reader::new(payload);
    let header = r.u8("binary row header")?;
    if header != 0 {
        return Err(Error::UnexpectedHeader { expected: "binary row", found: header });
    }
    let bitmap = r.bytes(null_bitmap_len(types.len(), 2), "null bitmap")?;
    let mut out = Vec::with_capacity(types.len().min(payload.len()));
    let mut rest = r.rest();
    for (i, &ty) in types.iter().enumerate() {
        if is_null(bitmap, i, 2) {
            out.push(Value::Null);
            continue;
        }
        let (v, used) = parse_binary_value(ty, rest)?;
        out.push(v);
        rest = &rest[used..];
    }
    if !rest.is_empty() {
        return Err(Error::Invalid("binary row (bytes after the last value)"));
    }
    Ok(out)
}

/// Appends a binary-protocol row; `values[i]` is written as `types[i]`. Fails (writing
/// nothing) if the lengths differ or a value does not fit its type.
pub fn write_binary_row(out: &mut Vec<u8>, types: &[FieldType], values: &[Value<'_>]) -> Result<(), Error> {
    if types.len() != values.len() {
        return Err(Error::Invalid("binary row (types and values differ in number)"));
    }
    let mark = out.len();
    out.push(0);
    write_null_bitmap(out, values, 2);
    for (ty, v) in types.iter().zip(values) {
        if let Err(e) = write_binary_value(out, *ty, v) {
            out.truncate(mark);
            return Err(e);
        }
    }
    Ok(())
}

/// COM_STMT_PREPARE_OK: followed by `num_params` parameter definitions and `num_columns`
/// column definitions (each group ended by EOF without `CLIENT_DEPRECATE_EOF`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StmtPrepareOk {
    /// The statement id.
    pub stmt_id: u32,
    /// Columns of the result set (0 if none).
    pub num_columns: u16,
    /// Parameters (`?` placeholders).
    pub num_params: u16,
    /// Warning count.
    pub warnings: u16,
    /// The metadata-follows byte, present with `CLIENT_OPTIONAL_RESULTSET_METADATA`.
    pub metadata_follows: Option<u8>,
}

impl StmtPrepareOk {
    /// Parses the payload (header `0x00`). Old servers may stop before the warning count.
    pub fn parse(payload: &[u8]) -> Result<Self, Error> {
        let mut r = Reader::new(payload);
        let header = r.u8("prepare OK header")?;
        if header != 0 {
            return Err(Error::UnexpectedHeader { expected: "COM_STMT_PREPARE_OK", found: header });
        }
        let mut ok = StmtPrepareOk {
            stmt_id: r.u32("statement id")?,
            num_columns: r.u16("column count")?,
            num_params: r.u16("parameter count")?,
            ..StmtPrepareOk::default()
        };
        if r.is_empty() {
            return Ok(ok);
        }
        r.u8("reserved")?;
        ok.warnings = r.u16("warnings")?;
        if !r.is_empty() {
            ok.metadata_follows = Some(r.u8("metadata follows")?);
        }
        Ok(ok)
    }

    /// Appends the payload (12 bytes, 13 with the metadata-follows byte).
    pub fn write(&self, out: &mut Vec<u8>) {
        out.push(0);
        out.extend_from_slice(&self.stmt_id.to_le_bytes());
        out.extend_from_slice(&self.num_columns.to_le_bytes());
        out.extend_from_slice(&self.num_params.to_le_bytes());
        out.push(0);
        out.extend_from_slice(&self.warnings.to_le_bytes());
        if let Some(m) = self.metadata_follows {
            out.push(m);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flags::*;
    use crate::value::DateTime;

    fn column(name: &'static [u8], ty: ColumnType, flags: u16) -> ColumnDefinition<'static> {
        ColumnDefinition {
            catalog: b"def",
            schema: b"shop",
            table: b"u",
            org_table: b"users",
            name,
            org_name: name,
            charset: 63,
            column_length: 11,
            column_type: ty,
            flags,
            decimals: 0,
            default_values: None,
        }
    }

    #[test]
    fn query_responses() {
        let caps = CLIENT_PROTOCOL_41;
        assert_eq!(
            QueryResponse::parse(&[3], caps),
            Ok(QueryResponse::ResultSet { column_count: 3, metadata_follows: true })
        );
        assert_eq!(
            QueryResponse::parse(&[0xfc, 0x2c, 0x01, 0], caps | CLIENT_OPTIONAL_RESULTSET_METADATA),
            Ok(QueryResponse::ResultSet { column_count: 300, metadata_follows: false })
        );
        assert!(
            matches!(QueryResponse::parse(&[0, 1, 0, 2, 0, 0, 0], caps), Ok(QueryResponse::Ok(ok)) if ok.affected_rows == 1)
        );
        assert!(matches!(QueryResponse::parse(b"\xff\x10\x04#HY000x", caps), Ok(QueryResponse::Err(_))));
        assert_eq!(QueryResponse::parse(b"\xfb/tmp/a.csv", caps), Ok(QueryResponse::LocalInfile(b"/tmp/a.csv")));
        assert!(QueryResponse::parse(&[], caps).is_err());
        let mut out = Vec::new();
        write_column_count(&mut out, 2, caps | CLIENT_OPTIONAL_RESULTSET_METADATA);
        assert_eq!(out, [2, 1]);
    }

    #[test]
    fn column_definitions() {
        let c = column(b"id", ColumnType::LongLong, NOT_NULL_FLAG | PRI_KEY_FLAG | UNSIGNED_FLAG);
        let mut out = Vec::new();
        c.write(&mut out);
        assert_eq!(ColumnDefinition::parse(&out).unwrap(), c);
        assert_eq!(c.field_type(), FieldType::unsigned(ColumnType::LongLong));
        for cut in 0..out.len() {
            assert!(ColumnDefinition::parse(&out[..cut]).is_err());
        }
        let with_default = ColumnDefinition { default_values: Some(b"0"), ..c };
        let mut out = Vec::new();
        with_default.write(&mut out);
        assert_eq!(ColumnDefinition::parse(&out).unwrap(), with_default);
    }

    #[test]
    fn text_rows() {
        let vals: [Option<&[u8]>; 3] = [Some(b"1"), None, Some(b"")];
        let mut out = Vec::new();
        write_text_row(&mut out, &vals);
        assert_eq!(out, [1, b'1', 0xfb, 0]);
        assert_eq!(parse_text_row(&out, 3).unwrap(), vals);
        assert!(parse_text_row(&out, 2).is_err());
        assert!(parse_text_row(&out, 4).is_err());
        assert!(parse_text_row(&[0xff], 1).is_err());
        assert_eq!(parse_text_row(&[], 0).unwrap(), Vec::<Option<&[u8]>>::new());
    }

    #[test]
    fn binary_rows() {
        let types = [
            FieldType::new(ColumnType::Long),
            FieldType::new(ColumnType::VarString),
            FieldType::new(ColumnType::Double),
            FieldType::new(ColumnType::DateTime),
            FieldType::unsigned(ColumnType::Tiny),
            FieldType::new(ColumnType::Blob),
            FieldType::new(ColumnType::Short),
        ];
        let values = [
            Value::Int(-7),
            Value::Null,
            Value::Double(2.5),
            Value::DateTime(DateTime { year: 2000, month: 1, day: 2, ..DateTime::default() }),
            Value::UInt(200),
            Value::Bytes(b"blob"),
            Value::Null,
        ];
        let mut out = Vec::new();
        write_binary_row(&mut out, &types, &values).unwrap();
        assert_eq!(&out[..3], &[0, 0b0000_1000, 0b0000_0001]); // bits 1+2 and 6+2
        assert_eq!(parse_binary_row(&out, &types).unwrap(), values);
        for cut in 0..out.len() {
            assert!(parse_binary_row(&out[..cut], &types).is_err());
        }
        assert!(write_binary_row(&mut out, &types[..1], &values).is_err());
    }

    #[test]
    fn prepare_ok() {
        let ok = StmtPrepareOk { stmt_id: 5, num_columns: 2, num_params: 1, warnings: 0, metadata_follows: None };
        let mut out = Vec::new();
        ok.write(&mut out);
        assert_eq!(out.len(), 12);
        assert_eq!(StmtPrepareOk::parse(&out).unwrap(), ok);
        assert_eq!(StmtPrepareOk::parse(&out[..9]).unwrap(), ok);
        let m = StmtPrepareOk { metadata_follows: Some(1), ..ok };
        let mut out = Vec::new();
        m.write(&mut out);
        assert_eq!(StmtPrepareOk::parse(&out).unwrap(), m);
        assert!(StmtPrepareOk::parse(&[0xff, 0, 0]).is_err());
    }
}
