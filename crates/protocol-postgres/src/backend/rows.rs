//! Result sets: RowDescription ('T'), DataRow ('D') and ParameterDescription ('t').
//!
//! A query that returns rows answers RowDescription (one field per column: name, source
//! table and column if any, type OID, size, modifier, format), then one DataRow per row
//! (per column an int32 length, -1 for NULL, then the value in the column's format), then
//! CommandComplete. Describe of a statement answers ParameterDescription (the parameter
//! type OIDs) then RowDescription or NoData.

use crate::error::Error;
use crate::reader::Reader;
use crate::writer;

/// One column of a RowDescription.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldDescription<'a> {
    /// The column's name (as the query labels it).
    pub name: &'a [u8],
    /// The OID of the table the column comes from, 0 if none.
    pub table_oid: u32,
    /// The column's attribute number in that table, 0 if none.
    pub column: i16,
    /// The data type's OID.
    pub type_oid: u32,
    /// `pg_type.typlen`: the type's size, negative for variable width.
    pub type_size: i16,
    /// `pg_attribute.atttypmod`: the type modifier (-1 for none).
    pub type_modifier: i32,
    /// 0 text, 1 binary (0 when the format is not known yet: Describe of a statement).
    pub format: i16,
}

/// RowDescription: the columns of the rows that follow.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowDescription<'a> {
    /// One entry per column.
    pub fields: Vec<FieldDescription<'a>>,
}

impl<'a> RowDescription<'a> {
    /// Parses the body of a 'T' message.
    pub fn parse(body: &'a [u8]) -> Result<RowDescription<'a>, Error> {
        let mut r = Reader::new(body);
        let n = r.count16("RowDescription field count")?;
        // Each field takes at least 19 bytes: no allocation for a count the body cannot hold.
        if n.saturating_mul(19) > r.remaining() {
            return Err(Error::Truncated("RowDescription fields"));
        }
        let mut fields = Vec::with_capacity(n);
        for _ in 0..n {
            fields.push(FieldDescription {
                name: r.cstr("field name")?,
                table_oid: r.u32("field table OID")?,
                column: r.i16("field column number")?,
                type_oid: r.u32("field type OID")?,
                type_size: r.i16("field type size")?,
                type_modifier: r.i32("field type modifier")?,
                format: r.i16("field format")?,
            });
        }
        r.finish("RowDescription")?;
        Ok(RowDescription { fields })
    }

    /// Appends the whole message.
    pub fn write(&self, out: &mut Vec<u8>) {
        let at = writer::begin(out, b'T');
        writer::count16(out, self.fields.len());
        for f in &self.fields {
            writer::cstr(out, f.name);
            out.extend_from_slice(&f.table_oid.to_be_bytes());
            out.extend_from_slice(&f.column.to_be_bytes());
            out.extend_from_slice(&f.type_oid.to_be_bytes());
            out.extend_from_slice(&f.type_size.to_be_bytes());
            out.extend_from_slice(&f.type_modifier.to_be_bytes());
            out.extend_from_slice(&f.format.to_be_bytes());
        }
        writer::finish(out, at);
    }
}

/// DataRow: one row's values, checked once at parse and then read without allocating.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataRow<'a> {
    columns: usize,
    /// The values part of the body (after the column count).
    values: &'a [u8],
}

impl<'a> DataRow<'a> {
    /// Parses (and checks) the body of a 'D' message.
    pub fn parse(body: &'a [u8]) -> Result<DataRow<'a>, Error> {
        let mut r = Reader::new(body);
        let columns = r.count16("DataRow column count")?;
        let values = &body[2..];
        for _ in 0..columns {
            r.nullable_bytes("DataRow value")?;
        }
        r.finish("DataRow")?;
        Ok(DataRow { columns, values })
    }

    /// How many columns the row has.
    pub fn len(&self) -> usize {
        self.columns
    }

    /// Whether the row has no column.
    pub fn is_empty(&self) -> bool {
        self.columns == 0
    }

    /// The values in order, `None` for NULL.
    pub fn iter(&self) -> DataRowIter<'a> {
        DataRowIter { rest: self.values, left: self.columns }
    }

    /// The values appended to `out` (cleared first): reuse one Vec across rows.
    pub fn values_into(&self, out: &mut Vec<Option<&'a [u8]>>) {
        out.clear();
        out.extend(self.iter());
    }

    /// Appends this row as a whole message (its values copied as they came).
    pub fn write_to(&self, out: &mut Vec<u8>) {
        let at = writer::begin(out, b'D');
        writer::count16(out, self.columns);
        out.extend_from_slice(self.values);
        writer::finish(out, at);
    }

    /// Appends a DataRow holding `values`.
    pub fn write(out: &mut Vec<u8>, values: &[Option<&[u8]>]) {
        let at = writer::begin(out, b'D');
        writer::count16(out, values.len());
        for v in values {
            writer::nullable_bytes(out, *v);
        }
        writer::finish(out, at);
    }
}

/// The values of a [`DataRow`].
#[derive(Clone, Debug)]
pub struct DataRowIter<'a> {
    rest: &'a [u8],
    left: usize,
}

impl<'a> Iterator for DataRowIter<'a> {
    type Item = Option<&'a [u8]>;

    fn next(&mut self) -> Option<Option<&'a [u8]>> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        // Checked by DataRow::parse: the lengths are in bounds.
        let (len, rest) = self.rest.split_first_chunk::<4>()?;
        let len = i32::from_be_bytes(*len);
        if len < 0 {
            self.rest = rest;
            return Some(None);
        }
        let (v, rest) = rest.split_at_checked(len as usize)?;
        self.rest = rest;
        Some(Some(v))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

/// ParameterDescription: a prepared statement's parameter type OIDs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParameterDescription {
    /// One OID per parameter.
    pub types: Vec<u32>,
}

impl ParameterDescription {
    /// Parses the body of a 't' message.
    pub fn parse(body: &[u8]) -> Result<ParameterDescription, Error> {
        let mut r = Reader::new(body);
        let n = r.count16("ParameterDescription count")?;
        let types = r.u32s(n, "ParameterDescription types")?;
        r.finish("ParameterDescription")?;
        Ok(ParameterDescription { types })
    }

    /// Appends the whole message.
    pub fn write(&self, out: &mut Vec<u8>) {
        let at = writer::begin(out, b't');
        writer::count16(out, self.types.len());
        for t in &self.types {
            out.extend_from_slice(&t.to_be_bytes());
        }
        writer::finish(out, at);
    }
}
