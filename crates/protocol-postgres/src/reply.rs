//! Where a server's reply ends, message by message, plus the facts a query cache needs
//! (errors, notices, parameter changes, how many result sets and rows). Pure logic.
//!
//! In PostgreSQL every unit of work a client sends ends with exactly one ReadyForQuery
//! ('Z'), which carries the transaction status: a simple Query (however many statements it
//! holds, and COPY included), an extended-protocol batch up to its Sync (an error makes the
//! server skip to the Sync, which still answers ReadyForQuery), and a FunctionCall. So a
//! reply ends at ReadyForQuery, and a pipelining client has as many replies in flight as
//! it sent Query, Sync and FunctionCall messages ([`Pipeline`]).
//!
//! Messages that are not part of any reply (NotificationResponse, and NoticeResponse or
//! ParameterStatus sent between queries) can arrive at any time; [`Reply`] counts them,
//! and a cache must not store them as part of a result.

use crate::backend::TransactionStatus;
use crate::frontend::expects_ready_for_query;

/// What feeding one message means for the reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// More messages follow.
    More,
    /// CopyInResponse: the client's CopyData / CopyDone / CopyFail must be relayed to the
    /// server, then the reply goes on.
    CopyIn,
    /// CopyBothResponse: both sides stream CopyData (replication) until one ends it.
    CopyBoth,
    /// ReadyForQuery: the reply is complete.
    Done,
}

/// The state of one reply being read (to one Query, Sync or FunctionCall).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reply {
    done: bool,
    /// The transaction status ReadyForQuery reported (`None` until then).
    pub status: Option<TransactionStatus>,
    /// An ErrorResponse was part of the reply.
    pub error: bool,
    /// NoticeResponses seen (warnings and notices).
    pub notices: u32,
    /// NotificationResponses seen (asynchronous: relay, never cache).
    pub notifications: u32,
    /// A ParameterStatus reported a changed setting (`SET TimeZone`...): the session's
    /// rendering of values may have changed.
    pub parameters_changed: bool,
    /// RowDescriptions seen (result sets with columns).
    pub result_sets: u32,
    /// DataRows seen.
    pub rows: u64,
    /// CommandCompletes seen (statements completed).
    pub commands: u32,
    /// An EmptyQueryResponse was seen.
    pub empty_query: bool,
    /// A PortalSuspended was seen: the rows are not all there.
    pub suspended: bool,
    /// A COPY sub-protocol took place.
    pub copy: bool,
    /// A message that has no place in a reply (Authentication, BackendKeyData, an unknown
    /// type, or a malformed ReadyForQuery): the stream is suspect.
    pub unexpected: bool,
}

impl Reply {
    /// A reply not yet started.
    pub fn new() -> Reply {
        Reply::default()
    }

    /// Whether ReadyForQuery has been seen.
    pub fn done(&self) -> bool {
        self.done
    }

    /// Feeds the next backend message (its type byte and body). Messages after
    /// [`Step::Done`] belong to the next reply: do not feed them here.
    pub fn feed(&mut self, tag: u8, body: &[u8]) -> Step {
        match tag {
            b'Z' => {
                self.done = true;
                match TransactionStatus::parse(body) {
                    Ok(s) => self.status = Some(s),
                    Err(_) => self.unexpected = true,
                }
                return Step::Done;
            }
            b'E' => self.error = true,
            b'N' => self.notices += 1,
            b'A' => self.notifications += 1,
            b'S' => self.parameters_changed = true,
            b'T' => self.result_sets += 1,
            b'D' => self.rows += 1,
            b'C' => self.commands += 1,
            b'I' => self.empty_query = true,
            b's' => self.suspended = true,
            b'G' => {
                self.copy = true;
                return Step::CopyIn;
            }
            b'W' => {
                self.copy = true;
                return Step::CopyBoth;
            }
            b'H' => self.copy = true,
            b'd' | b'c' | b'1' | b'2' | b'3' | b'n' | b't' | b'V' => {}
            _ => self.unexpected = true,
        }
        Step::More
    }

    /// Whether this reply could be stored and replayed for the same request: complete,
    /// exactly one statement (completed, or its portal suspended at the Execute's row limit)
    /// with at most one result set description (none: an Execute of a statement the client
    /// described when it prepared it, as asyncpg sends), and nothing that makes it more than
    /// its rows (no error, notice, parameter change, COPY or oddity). The caller still
    /// decides by the transaction status and its own policy: a suspended portal is over only
    /// if the ReadyForQuery says idle (the Sync ended its implicit transaction, and the
    /// portal with it).
    pub fn storable(&self) -> bool {
        self.done
            && !self.error
            && self.notices == 0
            && !self.parameters_changed
            && !self.copy
            && !self.unexpected
            && !self.empty_query
            && self.commands + u32::from(self.suspended) == 1
            && self.result_sets <= 1
    }
}

/// How many replies a connection has in flight: one per Query, Sync and FunctionCall sent,
/// one fewer per ReadyForQuery received.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pipeline {
    pending: u64,
}

impl Pipeline {
    /// No reply in flight.
    pub fn new() -> Pipeline {
        Pipeline::default()
    }

    /// Notes a frontend message of type `tag` sent to the server.
    pub fn sent(&mut self, tag: u8) {
        if expects_ready_for_query(tag) {
            self.pending += 1;
        }
    }

    /// Notes a backend message of type `tag` received; true if it ended a reply. A
    /// ReadyForQuery that nothing asked for (the one after authentication) ends none.
    pub fn received(&mut self, tag: u8) -> bool {
        if tag == b'Z' && self.pending > 0 {
            self.pending -= 1;
            return true;
        }
        false
    }

    /// Replies still to come.
    pub fn pending(&self) -> u64 {
        self.pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{parse_backend_frame, BackendMessage, DataRow, ErrorFields, FieldDescription, RowDescription};

    fn feed_all(wire: &[u8]) -> (Reply, Vec<Step>) {
        let mut reply = Reply::new();
        let mut steps = Vec::new();
        let mut rest = wire;
        while let Some((f, used)) = parse_backend_frame(rest).unwrap() {
            steps.push(reply.feed(f.tag, f.body));
            rest = &rest[used..];
        }
        (reply, steps)
    }

    fn select_one(out: &mut Vec<u8>) {
        let field = FieldDescription {
            name: b"x",
            table_oid: 0,
            column: 0,
            type_oid: 23,
            type_size: 4,
            type_modifier: -1,
            format: 0,
        };
        RowDescription { fields: vec![field] }.write(out);
        DataRow::write(out, &[Some(b"1")]);
        BackendMessage::CommandComplete(b"SELECT 1").write(out);
    }

    #[test]
    fn simple_select_is_storable() {
        let mut wire = Vec::new();
        select_one(&mut wire);
        TransactionStatus::Idle.write(&mut wire);
        let (r, steps) = feed_all(&wire);
        assert_eq!(steps.last(), Some(&Step::Done));
        assert!(r.storable());
        assert_eq!((r.rows, r.status), (1, Some(TransactionStatus::Idle)));
    }

    #[test]
    fn extended_error_skips_to_sync() {
        let mut wire = Vec::new();
        BackendMessage::ParseComplete.write(&mut wire);
        ErrorFields::write_error(&mut wire, "ERROR", "42P01", "relation \"nope\" does not exist");
        TransactionStatus::Failed.write(&mut wire);
        let (r, _) = feed_all(&wire);
        assert!(r.done() && r.error && !r.storable());
        assert_eq!(r.status, Some(TransactionStatus::Failed));
    }

    #[test]
    fn multi_statement_copy_and_notice_are_not_storable() {
        let mut two = Vec::new();
        select_one(&mut two);
        select_one(&mut two);
        TransactionStatus::Idle.write(&mut two);
        assert!(!feed_all(&two).0.storable());

        let mut copy = Vec::new();
        crate::CopyResponse { format: 0, column_formats: vec![0] }.write(&mut copy, b'G');
        let (r, steps) = feed_all(&copy);
        assert_eq!(steps, [Step::CopyIn]);
        assert!(r.copy && !r.done());

        let mut notice = Vec::new();
        ErrorFields { fields: vec![(b'S', b"WARNING"), (b'M', b"careful")] }.write(&mut notice, b'N');
        select_one(&mut notice);
        TransactionStatus::Idle.write(&mut notice);
        assert!(!feed_all(&notice).0.storable());
    }

    #[test]
    fn a_suspended_portal_is_one_statement() {
        // asyncpg's fetchrow: Bind, Execute (1 row), Sync: the row, then PortalSuspended.
        let mut wire = Vec::new();
        BackendMessage::BindComplete.write(&mut wire);
        DataRow::write(&mut wire, &[Some(b"1")]);
        BackendMessage::PortalSuspended.write(&mut wire);
        TransactionStatus::Idle.write(&mut wire);
        let (r, _) = feed_all(&wire);
        assert!(r.suspended && r.storable());
        let mut both = Vec::new();
        select_one(&mut both);
        BackendMessage::PortalSuspended.write(&mut both);
        TransactionStatus::Idle.write(&mut both);
        assert!(!feed_all(&both).0.storable(), "a completed statement and a suspended one are two");
    }

    #[test]
    fn pipeline_counts_replies() {
        let mut p = Pipeline::new();
        assert!(!p.received(b'Z')); // after authentication
        for tag in [b'P', b'B', b'E', b'S', b'Q', b'H'] {
            p.sent(tag);
        }
        assert_eq!(p.pending(), 2);
        assert!(p.received(b'Z') && p.received(b'Z') && !p.received(b'Z'));
    }
}
