//! Transaction framing in pgoutput: Begin ('B') / Commit ('C') around the changes of one
//! committed transaction, Origin ('O') for a transaction replicated from elsewhere, the
//! logical decoding Message ('M', `pg_logical_emit_message`), and protocol 2's streamed
//! transactions: Stream Start ('S') / Stop ('E') around each chunk of a large transaction
//! still in progress, then Stream Commit ('c') or Stream Abort ('A').
//!
//! Times are microseconds since 2000-01-01 UTC.

use crate::error::Error;
use crate::lsn::Lsn;
use crate::reader::Reader;
use crate::writer;

/// Begin: a transaction's changes follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Begin {
    /// The LSN of the transaction's commit record.
    pub final_lsn: Lsn,
    /// Its commit time.
    pub commit_time: i64,
    /// Its transaction id.
    pub xid: u32,
}

impl Begin {
    pub(crate) fn read(r: &mut Reader<'_>) -> Result<Begin, Error> {
        Ok(Begin { final_lsn: Lsn(r.u64("Begin LSN")?), commit_time: r.i64("Begin time")?, xid: r.u32("Begin xid")? })
    }

    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.final_lsn.0.to_be_bytes());
        out.extend_from_slice(&self.commit_time.to_be_bytes());
        out.extend_from_slice(&self.xid.to_be_bytes());
    }
}

/// Commit: the transaction's changes are complete.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Commit {
    /// Flags (unused, 0).
    pub flags: u8,
    /// The LSN of the commit record.
    pub commit_lsn: Lsn,
    /// The end of the commit record: the position to confirm once the transaction is
    /// applied (a restart from it does not send this transaction again).
    pub end_lsn: Lsn,
    /// The commit time.
    pub commit_time: i64,
}

impl Commit {
    pub(crate) fn read(r: &mut Reader<'_>) -> Result<Commit, Error> {
        Ok(Commit {
            flags: r.u8("Commit flags")?,
            commit_lsn: Lsn(r.u64("Commit LSN")?),
            end_lsn: Lsn(r.u64("Commit end LSN")?),
            commit_time: r.i64("Commit time")?,
        })
    }

    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        out.push(self.flags);
        out.extend_from_slice(&self.commit_lsn.0.to_be_bytes());
        out.extend_from_slice(&self.end_lsn.0.to_be_bytes());
        out.extend_from_slice(&self.commit_time.to_be_bytes());
    }
}

/// Origin: the transaction was replicated from another node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Origin<'a> {
    /// The commit LSN on the origin server.
    pub commit_lsn: Lsn,
    /// The origin's name.
    pub name: &'a str,
}

impl<'a> Origin<'a> {
    pub(crate) fn read(r: &mut Reader<'a>) -> Result<Origin<'a>, Error> {
        Ok(Origin { commit_lsn: Lsn(r.u64("Origin LSN")?), name: r.cstr_utf8("Origin name")? })
    }

    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.commit_lsn.0.to_be_bytes());
        writer::cstr(out, self.name.as_bytes());
    }
}

/// Message: a `pg_logical_emit_message` (sent only with the `messages` option).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Message<'a> {
    /// The transaction id, inside a streamed transaction (protocol 2).
    pub xid: Option<u32>,
    /// Flags: bit 1 set for a transactional message.
    pub flags: u8,
    /// The message's LSN.
    pub lsn: Lsn,
    /// The prefix given to `pg_logical_emit_message`.
    pub prefix: &'a str,
    /// The content.
    pub content: &'a [u8],
}

impl<'a> Message<'a> {
    /// Whether the message is part of its transaction (else it was emitted at once).
    pub fn transactional(&self) -> bool {
        self.flags & 1 != 0
    }

    pub(crate) fn read(r: &mut Reader<'a>, xid: Option<u32>) -> Result<Message<'a>, Error> {
        let flags = r.u8("Message flags")?;
        let lsn = Lsn(r.u64("Message LSN")?);
        let prefix = r.cstr_utf8("Message prefix")?;
        let n = r.u32("Message length")? as usize;
        let content = r.bytes(n, "Message content")?;
        Ok(Message { xid, flags, lsn, prefix, content })
    }

    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        out.push(self.flags);
        out.extend_from_slice(&self.lsn.0.to_be_bytes());
        writer::cstr(out, self.prefix.as_bytes());
        out.extend_from_slice(&(self.content.len() as u32).to_be_bytes());
        out.extend_from_slice(self.content);
    }
}

/// Stream Start: a chunk of an in-progress transaction follows (protocol 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StreamStart {
    /// The transaction id.
    pub xid: u32,
    /// 1 for the transaction's first chunk.
    pub first_segment: u8,
}

impl StreamStart {
    pub(crate) fn read(r: &mut Reader<'_>) -> Result<StreamStart, Error> {
        Ok(StreamStart { xid: r.u32("Stream Start xid")?, first_segment: r.u8("Stream Start first segment")? })
    }

    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.xid.to_be_bytes());
        out.push(self.first_segment);
    }
}

/// Stream Commit: a streamed transaction committed (protocol 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StreamCommit {
    /// The transaction id.
    pub xid: u32,
    /// The commit fields, as in [`Commit`].
    pub commit: Commit,
}

/// Stream Abort: a streamed (sub)transaction rolled back (protocol 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StreamAbort {
    /// The top-level transaction id.
    pub xid: u32,
    /// The aborted subtransaction (equal to `xid` for the whole transaction).
    pub subxid: u32,
}
