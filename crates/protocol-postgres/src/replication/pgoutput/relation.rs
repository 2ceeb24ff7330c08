//! Relation ('R') and Type ('Y'): the schema a change refers to.
//!
//! pgoutput sends a Relation before the first change of a table in a session, and again
//! after the table's definition changes (ALTER TABLE), so a consumer keeps a map from the
//! relation OID to its latest Relation and reads every change through it. A Type precedes
//! a Relation whose column has a non-built-in type.

use crate::error::Error;
use crate::reader::Reader;
use crate::writer;

/// `pg_class.relreplident`: what an UPDATE or DELETE tells about the old row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReplicaIdentity {
    /// `d`: the primary key (old key image only when the key changed; none without a key).
    Default,
    /// `n`: nothing.
    Nothing,
    /// `f`: the whole old row.
    Full,
    /// `i`: the columns of a chosen unique index.
    Index,
}

impl ReplicaIdentity {
    /// From the byte on the wire.
    pub fn from_byte(b: u8) -> Result<ReplicaIdentity, Error> {
        match b {
            b'd' => Ok(ReplicaIdentity::Default),
            b'n' => Ok(ReplicaIdentity::Nothing),
            b'f' => Ok(ReplicaIdentity::Full),
            b'i' => Ok(ReplicaIdentity::Index),
            _ => Err(Error::Invalid("replica identity")),
        }
    }

    /// The byte on the wire.
    pub fn byte(self) -> u8 {
        match self {
            ReplicaIdentity::Default => b'd',
            ReplicaIdentity::Nothing => b'n',
            ReplicaIdentity::Full => b'f',
            ReplicaIdentity::Index => b'i',
        }
    }
}

/// One column of a Relation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RelationColumn<'a> {
    /// Flags: bit 1 set when the column is part of the replica identity key.
    pub flags: u8,
    /// The column's name.
    pub name: &'a str,
    /// The data type's OID.
    pub type_oid: u32,
    /// The type modifier (`atttypmod`, -1 for none).
    pub type_modifier: i32,
}

impl RelationColumn<'_> {
    /// Whether the column is part of the replica identity key.
    pub fn is_key(&self) -> bool {
        self.flags & 1 != 0
    }
}

/// Relation: a published table's definition.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Relation<'a> {
    /// The transaction id, inside a streamed transaction (protocol 2).
    pub xid: Option<u32>,
    /// The table's OID, which later changes refer to.
    pub id: u32,
    /// The schema (an empty string on the wire means `pg_catalog`; kept as sent).
    pub namespace: &'a str,
    /// The table's name.
    pub name: &'a str,
    /// Its replica identity.
    pub replica_identity: ReplicaIdentity,
    /// Its published columns, in order (generated and dropped columns are not sent).
    pub columns: Vec<RelationColumn<'a>>,
}

impl<'a> Relation<'a> {
    pub(crate) fn read(r: &mut Reader<'a>, xid: Option<u32>) -> Result<Relation<'a>, Error> {
        let id = r.u32("Relation OID")?;
        let namespace = r.cstr_utf8("Relation namespace")?;
        let name = r.cstr_utf8("Relation name")?;
        let replica_identity = ReplicaIdentity::from_byte(r.u8("Relation replica identity")?)?;
        let n = r.count16("Relation column count")?;
        if n.saturating_mul(10) > r.remaining() {
            return Err(Error::Truncated("Relation columns"));
        }
        let mut columns = Vec::with_capacity(n);
        for _ in 0..n {
            columns.push(RelationColumn {
                flags: r.u8("Relation column flags")?,
                name: r.cstr_utf8("Relation column name")?,
                type_oid: r.u32("Relation column type")?,
                type_modifier: r.i32("Relation column type modifier")?,
            });
        }
        Ok(Relation { xid, id, namespace, name, replica_identity, columns })
    }

    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.id.to_be_bytes());
        writer::cstr(out, self.namespace.as_bytes());
        writer::cstr(out, self.name.as_bytes());
        out.push(self.replica_identity.byte());
        writer::count16(out, self.columns.len());
        for c in &self.columns {
            out.push(c.flags);
            writer::cstr(out, c.name.as_bytes());
            out.extend_from_slice(&c.type_oid.to_be_bytes());
            out.extend_from_slice(&c.type_modifier.to_be_bytes());
        }
    }
}

/// Type: a data type's name, for a column of a type that is not built in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Type<'a> {
    /// The transaction id, inside a streamed transaction (protocol 2).
    pub xid: Option<u32>,
    /// The type's OID.
    pub id: u32,
    /// Its schema (empty means `pg_catalog`).
    pub namespace: &'a str,
    /// Its name.
    pub name: &'a str,
}

impl<'a> Type<'a> {
    pub(crate) fn read(r: &mut Reader<'a>, xid: Option<u32>) -> Result<Type<'a>, Error> {
        Ok(Type {
            xid,
            id: r.u32("Type OID")?,
            namespace: r.cstr_utf8("Type namespace")?,
            name: r.cstr_utf8("Type name")?,
        })
    }

    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.id.to_be_bytes());
        writer::cstr(out, self.namespace.as_bytes());
        writer::cstr(out, self.name.as_bytes());
    }
}
