//! The logical replication stream: START_REPLICATION, then decoded pgoutput messages,
//! keepalive replies and standby status updates.
//!
//! The consumer reads [`Event`]s with [`ReplicationStream::recv`] and, once it has durably
//! applied a transaction, confirms the transaction's `Commit.end_lsn` with
//! [`ReplicationStream::confirm`]. The stream reports that position as flushed in every
//! StandbyStatusUpdate: at once when a keepalive asks for a reply (a walsender that hears
//! nothing for `wal_sender_timeout` ends the session), and every `status_interval`
//! otherwise. The slot then keeps only WAL after it, and a new session started from it
//! (or from `0/0`, which means "the slot's confirmed position") sends no transaction the
//! consumer confirmed, and every one it did not.
//!
//! When the published tables are idle while others are written, the slot would hold WAL
//! for nothing: with `confirm_idle_keepalives` (default on), a keepalive's WAL end is
//! confirmed while no transaction is open and everything received is confirmed, as
//! PostgreSQL's own subscriber does.

use std::collections::HashSet;
use std::ops::Range;
use std::time::{Duration, SystemTime};

use protocol_postgres::replication::pgoutput::{Decoder, LogicalMessage};
use protocol_postgres::replication::stream::pg_timestamp;
use protocol_postgres::{ClientMessage, FrontendMessage, Lsn, ServerMessage, StandbyStatusUpdate};
use tokio::time::Instant;

use super::client::ReplicationClient;
use crate::conn::server_error;
use crate::error::Error;
use crate::sql::{quote_ident, quote_literal};

/// How to start streaming.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StartOptions {
    /// pgoutput `proto_version`: 1, or 2 with `streaming` (in-progress transactions).
    pub proto_version: u32,
    /// The publications whose tables to stream.
    pub publications: Vec<String>,
    /// Ask for `pg_logical_emit_message` messages too.
    pub messages: bool,
    /// Stream large in-progress transactions (needs `proto_version` 2).
    pub streaming: bool,
    /// How often to send a standby status update when nothing asks for one.
    pub status_interval: Duration,
    /// Confirm idle keepalives' WAL end (see the module documentation).
    pub confirm_idle_keepalives: bool,
}

impl StartOptions {
    /// Protocol 1 over `publications`, status every 10 s (as pg_recvlogical).
    pub fn new(publications: &[&str]) -> StartOptions {
        StartOptions {
            proto_version: 1,
            publications: publications.iter().map(|p| p.to_string()).collect(),
            messages: false,
            streaming: false,
            status_interval: Duration::from_secs(10),
            confirm_idle_keepalives: true,
        }
    }
}

/// One thing the stream delivered.
#[derive(Debug, PartialEq, Eq)]
pub enum Event<'a> {
    /// A pgoutput message, from an XLogData.
    Message {
        /// The XLogData's start position (the message's LSN; 0 for some messages).
        wal_start: Lsn,
        /// The server's WAL end when it sent it.
        wal_end: Lsn,
        /// The decoded message, borrowing the stream's buffer until the next `recv`.
        message: LogicalMessage<'a>,
    },
    /// A keepalive (already answered if it asked for a reply).
    Keepalive {
        /// The server's WAL end.
        wal_end: Lsn,
        /// Whether it asked for a reply.
        reply_requested: bool,
    },
}

/// Counters about the stream's own traffic.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StreamStats {
    /// XLogData messages received.
    pub messages: u64,
    /// Keepalives received.
    pub keepalives: u64,
    /// Keepalives that asked for a reply, answered.
    pub replies: u64,
    /// Standby status updates sent (replies included).
    pub status_updates: u64,
}

/// A logical replication stream from one slot.
pub struct ReplicationStream {
    client: ReplicationClient,
    decoder: Decoder,
    opts: StartOptions,
    received: Lsn,
    server_end: Lsn,
    confirmed: Lsn,
    /// The end of the last Commit delivered (what "all received is confirmed" means).
    last_commit_end: Lsn,
    in_transaction: bool,
    open_streams: HashSet<u32>,
    next_status: Instant,
    stats: StreamStats,
}

/// What `next_raw` found (no borrow, so that `recv` can re-read the buffer).
enum Raw {
    XLog { range: Range<usize>, in_stream: bool },
    Keepalive { wal_end: Lsn, reply_requested: bool },
}

impl ReplicationClient {
    /// START_REPLICATION SLOT slot LOGICAL from (options): the session becomes a stream.
    /// `from` = `0/0` resumes at the slot's confirmed position. A missing slot is
    /// [`Error::SlotMissing`], one in use [`Error::SlotInUse`].
    pub async fn start(mut self, slot: &str, from: Lsn, opts: StartOptions) -> Result<ReplicationStream, Error> {
        let decoder = Decoder::new(opts.proto_version)?;
        if opts.streaming && opts.proto_version < 2 {
            return Err(Error::Config("streaming needs pgoutput proto_version 2".into()));
        }
        let pubs: Vec<String> = opts.publications.iter().map(|p| quote_ident(p)).collect();
        let mut options = vec![
            format!("proto_version {}", quote_literal(&opts.proto_version.to_string())),
            format!("publication_names {}", quote_literal(&pubs.join(","))),
        ];
        if opts.messages {
            options.push("messages 'true'".into());
        }
        if opts.streaming {
            options.push("streaming 'on'".into());
        }
        let sql = format!("START_REPLICATION SLOT {} LOGICAL {from} ({})", quote_ident(slot), options.join(", "));
        FrontendMessage::Query(sql.as_bytes()).write(self.conn.out());
        self.conn.flush().await?;
        loop {
            let (tag, range) = self.conn.read_frame().await?;
            match tag {
                b'W' => break,
                b'E' => {
                    let err = server_error(self.conn.body(range));
                    self.drain_to_ready().await?;
                    return Err(err);
                }
                b'N' | b'S' => {}
                t => {
                    return Err(Error::Protocol(format!("unexpected message {:?} after START_REPLICATION", t as char)))
                }
            }
        }
        let interval = opts.status_interval;
        Ok(ReplicationStream {
            client: self,
            decoder,
            opts,
            received: from,
            server_end: from,
            confirmed: from,
            last_commit_end: from,
            in_transaction: false,
            open_streams: HashSet::new(),
            next_status: Instant::now() + interval,
            stats: StreamStats::default(),
        })
    }

    /// Reads up to ReadyForQuery (after an error, or after the copy ended).
    async fn drain_to_ready(&mut self) -> Result<(), Error> {
        loop {
            let (tag, _) = self.conn.read_frame().await?;
            if tag == b'Z' {
                return Ok(());
            }
        }
    }
}

impl ReplicationStream {
    /// The next event. Cancel-safe between events (a timeout around it loses nothing).
    pub async fn recv(&mut self) -> Result<Event<'_>, Error> {
        match self.next_raw().await? {
            Raw::Keepalive { wal_end, reply_requested } => Ok(Event::Keepalive { wal_end, reply_requested }),
            Raw::XLog { range, in_stream } => {
                let ServerMessage::XLogData(x) = ServerMessage::parse(self.client.conn.body(range))? else {
                    return Err(Error::Protocol("XLogData expected".into()));
                };
                let message = LogicalMessage::parse(x.data, in_stream)?;
                Ok(Event::Message { wal_start: x.wal_start, wal_end: x.wal_end, message })
            }
        }
    }

    async fn next_raw(&mut self) -> Result<Raw, Error> {
        loop {
            if Instant::now() >= self.next_status {
                self.send_status(false).await?;
            }
            let read = tokio::time::timeout_at(self.next_status, self.client.conn.read_frame()).await;
            let Ok(read) = read else { continue };
            let (tag, range) = read?;
            match tag {
                b'd' => {}
                b'E' => return Err(server_error(self.client.conn.body(range))),
                b'c' => return Err(Error::ConnectionLost("the server ended the replication stream".into())),
                b'N' | b'S' => continue,
                t => {
                    return Err(Error::Protocol(format!(
                        "unexpected message {:?} in the replication stream",
                        t as char
                    )))
                }
            }
            match ServerMessage::parse(self.client.conn.body(range.clone()))? {
                ServerMessage::XLogData(x) => {
                    self.stats.messages += 1;
                    self.received = self.received.max(x.wal_start);
                    self.server_end = self.server_end.max(x.wal_end);
                    let in_stream = self.decoder.in_stream();
                    match self.decoder.decode(x.data)? {
                        LogicalMessage::Begin(_) => self.in_transaction = true,
                        LogicalMessage::Commit(c) => {
                            self.in_transaction = false;
                            self.last_commit_end = self.last_commit_end.max(c.end_lsn);
                            self.received = self.received.max(c.end_lsn);
                        }
                        LogicalMessage::StreamStart(s) => {
                            self.open_streams.insert(s.xid);
                        }
                        LogicalMessage::StreamCommit(c) => {
                            self.open_streams.remove(&c.xid);
                            self.last_commit_end = self.last_commit_end.max(c.commit.end_lsn);
                            self.received = self.received.max(c.commit.end_lsn);
                        }
                        LogicalMessage::StreamAbort(a) if a.xid == a.subxid => {
                            self.open_streams.remove(&a.xid);
                        }
                        _ => {}
                    }
                    return Ok(Raw::XLog { range, in_stream });
                }
                ServerMessage::PrimaryKeepalive(k) => {
                    self.stats.keepalives += 1;
                    self.server_end = self.server_end.max(k.wal_end);
                    let idle = !self.in_transaction && self.open_streams.is_empty() && !self.decoder.in_stream();
                    if self.opts.confirm_idle_keepalives && idle && self.confirmed >= self.last_commit_end {
                        self.received = self.received.max(k.wal_end);
                        self.confirmed = self.confirmed.max(k.wal_end);
                    }
                    if k.reply_requested {
                        self.stats.replies += 1;
                        self.send_status(false).await?;
                    }
                    return Ok(Raw::Keepalive { wal_end: k.wal_end, reply_requested: k.reply_requested });
                }
            }
        }
    }

    /// Marks everything up to `lsn` (a Commit's `end_lsn`) as durably applied; sent with
    /// the next status update. Never moves backwards.
    pub fn confirm(&mut self, lsn: Lsn) {
        self.confirmed = self.confirmed.max(lsn);
    }

    /// Sends a standby status update now (flushed = the confirmed position);
    /// `reply_requested` asks the server for a keepalive back.
    pub async fn send_status(&mut self, reply_requested: bool) -> Result<(), Error> {
        let update = StandbyStatusUpdate {
            written: self.received.max(self.confirmed),
            flushed: self.confirmed,
            applied: self.confirmed,
            send_time: pg_timestamp(SystemTime::now()),
            reply_requested,
        };
        ClientMessage::StandbyStatusUpdate(update).write_copy_data(self.client.conn.out());
        self.client.conn.flush().await?;
        self.stats.status_updates += 1;
        self.next_status = Instant::now() + self.opts.status_interval;
        Ok(())
    }

    /// The confirmed position (what the slot will resume after).
    pub fn confirmed(&self) -> Lsn {
        self.confirmed
    }

    /// The furthest position received.
    pub fn received(&self) -> Lsn {
        self.received
    }

    /// The server's WAL end as last reported (lag = this minus [`ReplicationStream::confirmed`]).
    pub fn server_wal_end(&self) -> Lsn {
        self.server_end
    }

    /// Traffic counters.
    pub fn stats(&self) -> StreamStats {
        self.stats
    }

    /// The walsender's process id (`pg_stat_replication.pid`).
    pub fn backend_pid(&self) -> u32 {
        self.client.conn.backend_pid()
    }

    /// Sends a last status update, ends the copy (CopyDone) and returns the session, ready
    /// for more commands (DROP_REPLICATION_SLOT, another START_REPLICATION).
    pub async fn stop(mut self) -> Result<ReplicationClient, Error> {
        self.send_status(false).await?;
        FrontendMessage::CopyDone.write(self.client.conn.out());
        self.client.conn.flush().await?;
        // The server may still send data it had in flight, then CopyDone, CommandComplete
        // and ReadyForQuery.
        loop {
            let (tag, range) = self.client.conn.read_frame().await?;
            match tag {
                b'Z' => return Ok(self.client),
                b'E' => {
                    let err = server_error(self.client.conn.body(range));
                    self.client.drain_to_ready().await?;
                    return Err(err);
                }
                _ => {}
            }
        }
    }
}
