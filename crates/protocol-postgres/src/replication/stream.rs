//! What the CopyData messages of a streaming replication connection carry, after
//! `START_REPLICATION` answered CopyBothResponse. Each payload starts with its own byte.
//!
//! From the server: XLogData ('w': a piece of WAL, or for a logical slot one message of
//! the output plugin, here pgoutput) and PrimaryKeepalive ('k': the server's WAL end, and
//! whether it wants a status update now: a walsender that hears nothing for
//! `wal_sender_timeout` hangs up). From the client: StandbyStatusUpdate ('r': the
//! positions written, flushed and applied; for a logical slot the flushed one is what the
//! slot confirms, and WAL before it may be recycled) and HotStandbyFeedback ('h').
//!
//! Times are microseconds since 2000-01-01 00:00:00 UTC (PostgreSQL's epoch).

use std::time::{SystemTime, UNIX_EPOCH};

use crate::error::Error;
use crate::lsn::Lsn;
use crate::reader::Reader;

/// Seconds from the Unix epoch to PostgreSQL's (2000-01-01 UTC).
pub const PG_EPOCH_UNIX_SECS: u64 = 946_684_800;

/// A time as PostgreSQL sends it: microseconds since 2000-01-01 UTC.
pub fn pg_timestamp(t: SystemTime) -> i64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_micros() as i64 - (PG_EPOCH_UNIX_SECS as i64) * 1_000_000,
        Err(_) => -(PG_EPOCH_UNIX_SECS as i64) * 1_000_000,
    }
}

/// XLogData: WAL (or one logical decoding message) starting at `wal_start`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct XLogData<'a> {
    /// Where this data starts in the WAL (for pgoutput: the message's LSN; 0 for some).
    pub wal_start: Lsn,
    /// The server's current end of WAL.
    pub wal_end: Lsn,
    /// When the server sent it.
    pub send_time: i64,
    /// The payload (a pgoutput message for a logical slot).
    pub data: &'a [u8],
}

/// PrimaryKeepalive: the server is alive; answer at once if `reply_requested`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PrimaryKeepalive {
    /// The server's current end of WAL.
    pub wal_end: Lsn,
    /// When the server sent it.
    pub send_time: i64,
    /// The server wants a StandbyStatusUpdate now (or it times the client out).
    pub reply_requested: bool,
}

/// A CopyData payload from a walsender.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerMessage<'a> {
    /// 'w'.
    XLogData(XLogData<'a>),
    /// 'k'.
    PrimaryKeepalive(PrimaryKeepalive),
}

impl<'a> ServerMessage<'a> {
    /// Parses a CopyData payload from the server.
    pub fn parse(data: &'a [u8]) -> Result<ServerMessage<'a>, Error> {
        let mut r = Reader::new(data);
        match r.u8("replication message type")? {
            b'w' => {
                let wal_start = Lsn(r.u64("XLogData start")?);
                let wal_end = Lsn(r.u64("XLogData end")?);
                let send_time = r.i64("XLogData send time")?;
                Ok(ServerMessage::XLogData(XLogData { wal_start, wal_end, send_time, data: r.rest() }))
            }
            b'k' => {
                let wal_end = Lsn(r.u64("keepalive WAL end")?);
                let send_time = r.i64("keepalive send time")?;
                let reply_requested = r.u8("keepalive reply flag")? != 0;
                r.finish("PrimaryKeepalive")?;
                Ok(ServerMessage::PrimaryKeepalive(PrimaryKeepalive { wal_end, send_time, reply_requested }))
            }
            tag => Err(Error::UnknownTag { side: "walsender", tag }),
        }
    }

    /// Appends the CopyData payload (not the 'd' frame around it).
    pub fn write(&self, out: &mut Vec<u8>) {
        match self {
            ServerMessage::XLogData(x) => {
                out.push(b'w');
                out.extend_from_slice(&x.wal_start.0.to_be_bytes());
                out.extend_from_slice(&x.wal_end.0.to_be_bytes());
                out.extend_from_slice(&x.send_time.to_be_bytes());
                out.extend_from_slice(x.data);
            }
            ServerMessage::PrimaryKeepalive(k) => {
                out.push(b'k');
                out.extend_from_slice(&k.wal_end.0.to_be_bytes());
                out.extend_from_slice(&k.send_time.to_be_bytes());
                out.push(u8::from(k.reply_requested));
            }
        }
    }
}

/// StandbyStatusUpdate: how far the client got.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StandbyStatusUpdate {
    /// The last WAL byte + 1 received and written.
    pub written: Lsn,
    /// The last WAL byte + 1 flushed (for a logical slot: confirmed, never sent again).
    pub flushed: Lsn,
    /// The last WAL byte + 1 applied.
    pub applied: Lsn,
    /// When the client sent it.
    pub send_time: i64,
    /// Ask the server to answer with a keepalive at once.
    pub reply_requested: bool,
}

/// HotStandbyFeedback: a physical standby's oldest transaction ids still needed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HotStandbyFeedback {
    /// When the client sent it.
    pub send_time: i64,
    /// The standby's xmin (0 to clear it).
    pub xmin: u32,
    /// Its epoch.
    pub xmin_epoch: u32,
    /// The standby's catalog xmin.
    pub catalog_xmin: u32,
    /// Its epoch.
    pub catalog_xmin_epoch: u32,
}

/// A CopyData payload from a replication client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientMessage {
    /// 'r'.
    StandbyStatusUpdate(StandbyStatusUpdate),
    /// 'h'.
    HotStandbyFeedback(HotStandbyFeedback),
}

impl ClientMessage {
    /// Parses a CopyData payload from the client.
    pub fn parse(data: &[u8]) -> Result<ClientMessage, Error> {
        let mut r = Reader::new(data);
        let m = match r.u8("standby message type")? {
            b'r' => ClientMessage::StandbyStatusUpdate(StandbyStatusUpdate {
                written: Lsn(r.u64("written LSN")?),
                flushed: Lsn(r.u64("flushed LSN")?),
                applied: Lsn(r.u64("applied LSN")?),
                send_time: r.i64("status send time")?,
                reply_requested: r.u8("status reply flag")? != 0,
            }),
            b'h' => ClientMessage::HotStandbyFeedback(HotStandbyFeedback {
                send_time: r.i64("feedback send time")?,
                xmin: r.u32("feedback xmin")?,
                xmin_epoch: r.u32("feedback xmin epoch")?,
                catalog_xmin: r.u32("feedback catalog xmin")?,
                catalog_xmin_epoch: r.u32("feedback catalog xmin epoch")?,
            }),
            tag => return Err(Error::UnknownTag { side: "standby", tag }),
        };
        r.finish("standby message")?;
        Ok(m)
    }

    /// Appends the CopyData payload (not the 'd' frame around it).
    pub fn write(&self, out: &mut Vec<u8>) {
        match self {
            ClientMessage::StandbyStatusUpdate(s) => {
                out.push(b'r');
                for l in [s.written, s.flushed, s.applied] {
                    out.extend_from_slice(&l.0.to_be_bytes());
                }
                out.extend_from_slice(&s.send_time.to_be_bytes());
                out.push(u8::from(s.reply_requested));
            }
            ClientMessage::HotStandbyFeedback(h) => {
                out.push(b'h');
                out.extend_from_slice(&h.send_time.to_be_bytes());
                for v in [h.xmin, h.xmin_epoch, h.catalog_xmin, h.catalog_xmin_epoch] {
                    out.extend_from_slice(&v.to_be_bytes());
                }
            }
        }
    }

    /// Appends the whole CopyData message ('d' frame) holding this payload.
    pub fn write_copy_data(&self, out: &mut Vec<u8>) {
        let at = crate::writer::begin(out, b'd');
        self.write(out);
        crate::writer::finish(out, at);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_sizes() {
        let mut out = Vec::new();
        let k =
            ServerMessage::PrimaryKeepalive(PrimaryKeepalive { wal_end: Lsn(99), send_time: 5, reply_requested: true });
        k.write(&mut out);
        assert_eq!(out.len(), 18);
        assert_eq!(ServerMessage::parse(&out).unwrap(), k);
        out.clear();
        let s = ClientMessage::StandbyStatusUpdate(StandbyStatusUpdate {
            written: Lsn(3),
            flushed: Lsn(2),
            applied: Lsn(1),
            send_time: -7,
            reply_requested: false,
        });
        s.write(&mut out);
        assert_eq!(out.len(), 34);
        assert_eq!(ClientMessage::parse(&out).unwrap(), s);
        assert!(ServerMessage::parse(b"k\0").is_err());
        assert_eq!(ServerMessage::parse(b"x"), Err(Error::UnknownTag { side: "walsender", tag: b'x' }));
        assert_eq!(pg_timestamp(UNIX_EPOCH + std::time::Duration::from_secs(PG_EPOCH_UNIX_SECS)), 0);
    }
}
