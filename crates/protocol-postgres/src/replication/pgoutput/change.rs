//! Row changes in pgoutput: Insert ('I'), Update ('U'), Delete ('D'), Truncate ('T').
//!
//! Each names its relation by OID (see the last Relation received for it). Insert carries
//! the new row (`N`). Update carries the new row, preceded by the old key (`K`) when the
//! replica identity is the key (or an index) and the key changed, or by the whole old row
//! (`O`) under `REPLICA IDENTITY FULL`; nothing else precedes it otherwise. Delete carries
//! the old key (`K`) or the old row (`O`); a table with `REPLICA IDENTITY NOTHING` sends no
//! Delete or Update at all.

use crate::error::Error;
use crate::reader::Reader;

use super::tuple::{OldTuple, TupleData};

/// Insert: a new row.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Insert<'a> {
    /// The transaction id, inside a streamed transaction (protocol 2).
    pub xid: Option<u32>,
    /// The relation's OID.
    pub relation: u32,
    /// The new row.
    pub new: TupleData<'a>,
}

/// Update: a changed row.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Update<'a> {
    /// The transaction id, inside a streamed transaction (protocol 2).
    pub xid: Option<u32>,
    /// The relation's OID.
    pub relation: u32,
    /// The old key (`K`) or old row (`O`), when sent.
    pub old: Option<OldTuple<'a>>,
    /// The new row (unchanged TOAST values are [`super::Column::UnchangedToast`]).
    pub new: TupleData<'a>,
}

/// Delete: a removed row.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Delete<'a> {
    /// The transaction id, inside a streamed transaction (protocol 2).
    pub xid: Option<u32>,
    /// The relation's OID.
    pub relation: u32,
    /// The old key (`K`) or old row (`O`).
    pub old: OldTuple<'a>,
}

/// Truncate: whole tables emptied.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Truncate {
    /// The transaction id, inside a streamed transaction (protocol 2).
    pub xid: Option<u32>,
    /// Option bits: 1 `CASCADE`, 2 `RESTART IDENTITY`.
    pub options: u8,
    /// The relations' OIDs (with CASCADE, the tables it reached too).
    pub relations: Vec<u32>,
}

impl Truncate {
    /// `TRUNCATE ... CASCADE`.
    pub fn cascade(&self) -> bool {
        self.options & 1 != 0
    }

    /// `TRUNCATE ... RESTART IDENTITY`.
    pub fn restart_identity(&self) -> bool {
        self.options & 2 != 0
    }
}

impl<'a> Insert<'a> {
    pub(crate) fn read(r: &mut Reader<'a>, xid: Option<u32>) -> Result<Insert<'a>, Error> {
        let relation = r.u32("Insert relation")?;
        if r.u8("Insert tuple kind")? != b'N' {
            return Err(Error::Invalid("Insert tuple kind"));
        }
        Ok(Insert { xid, relation, new: TupleData::read(r)? })
    }

    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.relation.to_be_bytes());
        out.push(b'N');
        self.new.write(out);
    }
}

impl<'a> Update<'a> {
    pub(crate) fn read(r: &mut Reader<'a>, xid: Option<u32>) -> Result<Update<'a>, Error> {
        let relation = r.u32("Update relation")?;
        let mut kind = r.u8("Update tuple kind")?;
        let mut old = None;
        if kind == b'K' || kind == b'O' {
            old = Some(OldTuple::read(kind, r)?);
            kind = r.u8("Update new tuple kind")?;
        }
        if kind != b'N' {
            return Err(Error::Invalid("Update tuple kind"));
        }
        Ok(Update { xid, relation, old, new: TupleData::read(r)? })
    }

    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.relation.to_be_bytes());
        if let Some(old) = &self.old {
            old.write(out);
        }
        out.push(b'N');
        self.new.write(out);
    }
}

impl<'a> Delete<'a> {
    pub(crate) fn read(r: &mut Reader<'a>, xid: Option<u32>) -> Result<Delete<'a>, Error> {
        let relation = r.u32("Delete relation")?;
        let kind = r.u8("Delete tuple kind")?;
        Ok(Delete { xid, relation, old: OldTuple::read(kind, r)? })
    }

    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.relation.to_be_bytes());
        self.old.write(out);
    }
}

impl Truncate {
    pub(crate) fn read(r: &mut Reader<'_>, xid: Option<u32>) -> Result<Truncate, Error> {
        let n = r.u32("Truncate relation count")? as usize;
        let options = r.u8("Truncate options")?;
        let relations = r.u32s(n, "Truncate relations")?;
        Ok(Truncate { xid, options, relations })
    }

    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&(self.relations.len() as u32).to_be_bytes());
        out.push(self.options);
        for r in &self.relations {
            out.extend_from_slice(&r.to_be_bytes());
        }
    }
}
