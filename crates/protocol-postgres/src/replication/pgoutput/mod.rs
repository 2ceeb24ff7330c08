//! A decoder for `pgoutput`, PostgreSQL's built-in logical decoding output plugin (the one
//! native logical replication uses), protocol versions 1 and 2.
//!
//! Each XLogData of a logical replication stream started with
//! `START_REPLICATION SLOT s LOGICAL lsn (proto_version '1', publication_names 'p')` carries
//! one message: Begin, then Relation / Type (schema, before first use), Insert / Update /
//! Delete / Truncate, Origin, Message, then Commit. Version 2 (`streaming 'on'`) adds
//! streamed in-progress transactions: Stream Start / Stop around chunks whose changes carry
//! their transaction id, then Stream Commit or Stream Abort; [`Decoder`] follows those and
//! refuses them under version 1. Two-phase messages (version 3) and parallel streaming
//! (version 4) are refused with [`Error::Unsupported`], as is an unknown version.
//!
//! Names (schemas, tables, columns, types, origins, message prefixes) are decoded as UTF-8:
//! the walsender sends them in the connection's `client_encoding`, which the client sets to
//! `UTF8`. Values stay bytes.
//!
//! Why our own decoder: see the crate documentation ("Choices").

mod change;
mod relation;
mod tuple;
mod tx;

pub use change::{Delete, Insert, Truncate, Update};
pub use relation::{Relation, RelationColumn, ReplicaIdentity, Type};
pub use tuple::{Column, OldTuple, TupleData};
pub use tx::{Begin, Commit, Message, Origin, StreamAbort, StreamCommit, StreamStart};

use crate::error::Error;
use crate::reader::Reader;

/// One pgoutput message.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum LogicalMessage<'a> {
    /// 'B'.
    Begin(Begin),
    /// 'C'.
    Commit(Commit),
    /// 'O'.
    Origin(Origin<'a>),
    /// 'R'.
    Relation(Relation<'a>),
    /// 'Y'.
    Type(Type<'a>),
    /// 'I'.
    Insert(Insert<'a>),
    /// 'U'.
    Update(Update<'a>),
    /// 'D'.
    Delete(Delete<'a>),
    /// 'T'.
    Truncate(Truncate),
    /// 'M'.
    Message(Message<'a>),
    /// 'S' (protocol 2).
    StreamStart(StreamStart),
    /// 'E' (protocol 2).
    StreamStop,
    /// 'c' (protocol 2).
    StreamCommit(StreamCommit),
    /// 'A' (protocol 2).
    StreamAbort(StreamAbort),
}

impl<'a> LogicalMessage<'a> {
    /// Parses one message. `in_stream`: between Stream Start and Stream Stop, where the
    /// changes, Relation, Type and Message carry a transaction id first. [`Decoder`]
    /// tracks that for you.
    pub fn parse(data: &'a [u8], in_stream: bool) -> Result<LogicalMessage<'a>, Error> {
        let mut r = Reader::new(data);
        let tag = r.u8("pgoutput message type")?;
        let xid = |r: &mut Reader<'a>| -> Result<Option<u32>, Error> {
            if in_stream {
                r.u32("streamed transaction id").map(Some)
            } else {
                Ok(None)
            }
        };
        let m = match tag {
            b'B' => LogicalMessage::Begin(Begin::read(&mut r)?),
            b'C' => LogicalMessage::Commit(Commit::read(&mut r)?),
            b'O' => LogicalMessage::Origin(Origin::read(&mut r)?),
            b'R' => {
                let x = xid(&mut r)?;
                LogicalMessage::Relation(Relation::read(&mut r, x)?)
            }
            b'Y' => {
                let x = xid(&mut r)?;
                LogicalMessage::Type(Type::read(&mut r, x)?)
            }
            b'I' => {
                let x = xid(&mut r)?;
                LogicalMessage::Insert(Insert::read(&mut r, x)?)
            }
            b'U' => {
                let x = xid(&mut r)?;
                LogicalMessage::Update(Update::read(&mut r, x)?)
            }
            b'D' => {
                let x = xid(&mut r)?;
                LogicalMessage::Delete(Delete::read(&mut r, x)?)
            }
            b'T' => {
                let x = xid(&mut r)?;
                LogicalMessage::Truncate(Truncate::read(&mut r, x)?)
            }
            b'M' => {
                let x = xid(&mut r)?;
                LogicalMessage::Message(Message::read(&mut r, x)?)
            }
            b'S' => LogicalMessage::StreamStart(StreamStart::read(&mut r)?),
            b'E' => LogicalMessage::StreamStop,
            b'c' => {
                let xid = r.u32("Stream Commit xid")?;
                LogicalMessage::StreamCommit(StreamCommit { xid, commit: Commit::read(&mut r)? })
            }
            b'A' => LogicalMessage::StreamAbort(StreamAbort {
                xid: r.u32("Stream Abort xid")?,
                subxid: r.u32("Stream Abort subtransaction xid")?,
            }),
            b'b' | b'P' | b'K' | b'r' | b'p' => {
                return Err(Error::Unsupported("pgoutput two-phase message (protocol version 3, two_phase on)"))
            }
            tag => return Err(Error::UnknownTag { side: "pgoutput", tag }),
        };
        r.finish("pgoutput message")?;
        Ok(m)
    }

    /// The message's type byte.
    pub fn tag(&self) -> u8 {
        match self {
            LogicalMessage::Begin(_) => b'B',
            LogicalMessage::Commit(_) => b'C',
            LogicalMessage::Origin(_) => b'O',
            LogicalMessage::Relation(_) => b'R',
            LogicalMessage::Type(_) => b'Y',
            LogicalMessage::Insert(_) => b'I',
            LogicalMessage::Update(_) => b'U',
            LogicalMessage::Delete(_) => b'D',
            LogicalMessage::Truncate(_) => b'T',
            LogicalMessage::Message(_) => b'M',
            LogicalMessage::StreamStart(_) => b'S',
            LogicalMessage::StreamStop => b'E',
            LogicalMessage::StreamCommit(_) => b'c',
            LogicalMessage::StreamAbort(_) => b'A',
        }
    }

    /// The streamed transaction id a change, Relation, Type or Message carries.
    pub fn stream_xid(&self) -> Option<u32> {
        match self {
            LogicalMessage::Relation(m) => m.xid,
            LogicalMessage::Type(m) => m.xid,
            LogicalMessage::Insert(m) => m.xid,
            LogicalMessage::Update(m) => m.xid,
            LogicalMessage::Delete(m) => m.xid,
            LogicalMessage::Truncate(m) => m.xid,
            LogicalMessage::Message(m) => m.xid,
            _ => None,
        }
    }

    /// Appends the message as pgoutput sends it (the XLogData payload). A transaction id
    /// is written where [`LogicalMessage::stream_xid`] has one.
    pub fn write(&self, out: &mut Vec<u8>) {
        out.push(self.tag());
        if let Some(x) = self.stream_xid() {
            out.extend_from_slice(&x.to_be_bytes());
        }
        match self {
            LogicalMessage::Begin(m) => m.write(out),
            LogicalMessage::Commit(m) => m.write(out),
            LogicalMessage::Origin(m) => m.write(out),
            LogicalMessage::Relation(m) => m.write(out),
            LogicalMessage::Type(m) => m.write(out),
            LogicalMessage::Insert(m) => m.write(out),
            LogicalMessage::Update(m) => m.write(out),
            LogicalMessage::Delete(m) => m.write(out),
            LogicalMessage::Truncate(m) => m.write(out),
            LogicalMessage::Message(m) => m.write(out),
            LogicalMessage::StreamStart(m) => m.write(out),
            LogicalMessage::StreamStop => {}
            LogicalMessage::StreamCommit(m) => {
                out.extend_from_slice(&m.xid.to_be_bytes());
                m.commit.write(out);
            }
            LogicalMessage::StreamAbort(m) => {
                out.extend_from_slice(&m.xid.to_be_bytes());
                out.extend_from_slice(&m.subxid.to_be_bytes());
            }
        }
    }
}

/// The newest pgoutput protocol version [`Decoder`] reads.
pub const MAX_PROTO_VERSION: u32 = 2;

/// Decodes a stream of pgoutput messages under one protocol version, tracking whether a
/// streamed chunk is open.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decoder {
    version: u32,
    in_stream: bool,
}

impl Decoder {
    /// A decoder for `proto_version` 1 or 2; others are [`Error::Unsupported`].
    pub fn new(version: u32) -> Result<Decoder, Error> {
        match version {
            1 | 2 => Ok(Decoder { version, in_stream: false }),
            3 => Err(Error::Unsupported("pgoutput protocol version 3 (two-phase)")),
            4 => Err(Error::Unsupported("pgoutput protocol version 4 (parallel streaming)")),
            _ => Err(Error::Unsupported("pgoutput protocol version")),
        }
    }

    /// The protocol version.
    pub fn version(&self) -> u32 {
        self.version
    }

    /// Whether a streamed chunk is open (between Stream Start and Stream Stop).
    pub fn in_stream(&self) -> bool {
        self.in_stream
    }

    /// Decodes one XLogData payload.
    pub fn decode<'a>(&mut self, data: &'a [u8]) -> Result<LogicalMessage<'a>, Error> {
        let streaming = matches!(data.first(), Some(b'S' | b'E' | b'c' | b'A'));
        if streaming && self.version < 2 {
            return Err(Error::Unsupported("pgoutput streaming message under protocol version 1"));
        }
        let m = LogicalMessage::parse(data, self.in_stream)?;
        match (&m, self.in_stream) {
            (LogicalMessage::StreamStart(_), false) => self.in_stream = true,
            (LogicalMessage::StreamStop, true) => self.in_stream = false,
            (LogicalMessage::StreamStart(_) | LogicalMessage::StreamStop, _) => {
                return Err(Error::Invalid("pgoutput Stream Start/Stop out of order"))
            }
            (LogicalMessage::Begin(_) | LogicalMessage::Commit(_) | LogicalMessage::StreamCommit(_), true) => {
                return Err(Error::Invalid("pgoutput transaction boundary inside a streamed chunk"))
            }
            _ => {}
        }
        Ok(m)
    }
}

#[cfg(test)]
mod tests;
