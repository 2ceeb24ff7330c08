//! TupleData: the column values of a row image in a pgoutput change.
//!
//! An int16 column count, then per column one byte: `n` NULL, `u` an unchanged TOASTed
//! value (an UPDATE that did not touch a large out-of-line value does not send it: the
//! value is *unknown* here, never NULL and never empty), `t` text (int32 length and the
//! value in the type's text output form), `b` binary (the type's send form; only with the
//! `binary` option).

use crate::error::Error;
use crate::reader::Reader;
use crate::writer;

/// One column's value in a row image.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Column<'a> {
    /// `n`: NULL.
    Null,
    /// `u`: an unchanged TOASTed value that was not sent. Not a value: the consumer must
    /// keep what it had (or treat the column as unknown).
    UnchangedToast,
    /// `t`: the value in text form.
    Text(&'a [u8]),
    /// `b`: the value in binary form.
    Binary(&'a [u8]),
}

/// A row image: one [`Column`] per column of the relation.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct TupleData<'a> {
    /// The values, in the relation's column order.
    pub columns: Vec<Column<'a>>,
}

impl<'a> TupleData<'a> {
    /// Reads one TupleData.
    pub(crate) fn read(r: &mut Reader<'a>) -> Result<TupleData<'a>, Error> {
        let n = r.count16("TupleData column count")?;
        if n > r.remaining() {
            return Err(Error::Truncated("TupleData columns"));
        }
        let mut columns = Vec::with_capacity(n);
        for _ in 0..n {
            columns.push(match r.u8("TupleData column kind")? {
                b'n' => Column::Null,
                b'u' => Column::UnchangedToast,
                b't' => Column::Text(value(r)?),
                b'b' => Column::Binary(value(r)?),
                _ => return Err(Error::Invalid("TupleData column kind")),
            });
        }
        Ok(TupleData { columns })
    }

    /// Appends this TupleData.
    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        writer::count16(out, self.columns.len());
        for c in &self.columns {
            match c {
                Column::Null => out.push(b'n'),
                Column::UnchangedToast => out.push(b'u'),
                Column::Text(v) | Column::Binary(v) => {
                    out.push(if matches!(c, Column::Text(_)) { b't' } else { b'b' });
                    writer::nullable_bytes(out, Some(v));
                }
            }
        }
    }
}

fn value<'a>(r: &mut Reader<'a>) -> Result<&'a [u8], Error> {
    r.nullable_bytes("TupleData value")?.ok_or(Error::Invalid("TupleData value length"))
}

/// The old row image an UPDATE or DELETE carries.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum OldTuple<'a> {
    /// `K`: the replica identity key columns only (others are NULL in the image).
    Key(TupleData<'a>),
    /// `O`: the whole old row (`REPLICA IDENTITY FULL`).
    Full(TupleData<'a>),
}

impl<'a> OldTuple<'a> {
    /// The image, whichever kind.
    pub fn tuple(&self) -> &TupleData<'a> {
        match self {
            OldTuple::Key(t) | OldTuple::Full(t) => t,
        }
    }

    /// Reads the kind byte and the image; `kind` is the byte already read.
    pub(crate) fn read(kind: u8, r: &mut Reader<'a>) -> Result<OldTuple<'a>, Error> {
        match kind {
            b'K' => Ok(OldTuple::Key(TupleData::read(r)?)),
            b'O' => Ok(OldTuple::Full(TupleData::read(r)?)),
            _ => Err(Error::Invalid("old tuple kind")),
        }
    }

    /// Appends the kind byte and the image.
    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        out.push(match self {
            OldTuple::Key(_) => b'K',
            OldTuple::Full(_) => b'O',
        });
        self.tuple().write(out);
    }
}
