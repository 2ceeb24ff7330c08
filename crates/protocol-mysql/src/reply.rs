//! Where a backend reply ends: a packet-by-packet state machine over the reply to one
//! command (result sets, multi-results, LOCAL INFILE, COM_STMT_PREPARE_OK, ...), plus the
//! facts the query cache needs (final status flags, warnings, errors). Pure logic.

use crate::{
    parse_lenenc_int, CLIENT_DEPRECATE_EOF, MAX_PACKET_PAYLOAD, SERVER_MORE_RESULTS_EXISTS,
    SERVER_SESSION_STATE_CHANGED, SERVER_STATUS_CURSOR_EXISTS,
};

/// What kind of reply a command gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    /// COM_QUERY / COM_STMT_EXECUTE / COM_PROCESS_INFO: OK, ERR, LOCAL INFILE or result sets.
    Results,
    /// COM_STMT_PREPARE: ERR or PREPARE_OK with parameter and column definitions.
    Prepare,
    /// COM_FIELD_LIST: column definitions up to an EOF, or ERR.
    FieldList,
    /// COM_STMT_FETCH: rows up to an EOF, or ERR.
    Rows,
    /// Everything else that answers: one packet (OK, ERR, EOF or a string).
    Single,
}

/// Result of feeding one packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// More packets follow.
    More,
    /// The backend asks for a LOCAL INFILE: the client's file packets must be relayed,
    /// then the reply goes on.
    Infile,
    /// The reply is complete.
    Done,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    First,
    Columns(u64),
    MetaEof,
    Rows,
    PrepareOk,
    /// Definitions left before an EOF (if any), then the columns phase (column count).
    PrepareParams(u16, u16),
    PrepareColumns(u16),
    /// The EOF after parameter (`Some(columns)`) or column (`None`) definitions.
    PrepareEof(Option<u16>),
    FieldList,
    Single,
    Done,
}

/// The state of one reply being read.
#[derive(Clone, Debug)]
pub struct Reply {
    state: State,
    deprecate_eof: bool,
    continuation: bool,
    /// Status flags of the last OK/EOF seen (the session's state after the command).
    pub status: Option<u16>,
    /// Warnings reported by any OK/EOF of the reply.
    pub warnings: u32,
    /// The reply (or one of its results) was an ERR packet.
    pub error: bool,
    /// Several results (SERVER_MORE_RESULTS_EXISTS was seen).
    pub multi: bool,
    /// Intermediate results ended so far (OK/EOF with SERVER_MORE_RESULTS_EXISTS).
    pub results_ended: u32,
    /// An OK/EOF carried session state changes.
    pub session_changed: bool,
    /// A cursor was opened (rows come with COM_STMT_FETCH).
    pub cursor: bool,
    /// A LOCAL INFILE exchange happened.
    pub infile: bool,
    /// The statement id of a COM_STMT_PREPARE_OK, with its parameter count.
    pub prepared: Option<(u32, u16)>,
}

impl Reply {
    /// A reply of kind `expect` under the negotiated capabilities `caps`.
    pub fn new(expect: Expect, caps: u32) -> Reply {
        let state = match expect {
            Expect::Results => State::First,
            Expect::Prepare => State::PrepareOk,
            Expect::FieldList => State::FieldList,
            Expect::Rows => State::Rows,
            Expect::Single => State::Single,
        };
        Reply {
            state,
            deprecate_eof: caps & CLIENT_DEPRECATE_EOF != 0,
            continuation: false,
            status: None,
            warnings: 0,
            error: false,
            multi: false,
            results_ended: 0,
            session_changed: false,
            cursor: false,
            infile: false,
            prepared: None,
        }
    }

    /// Whether the reply is complete.
    pub fn done(&self) -> bool {
        self.state == State::Done
    }

    /// Whether this reply may be stored in the query cache: one result set or OK, no
    /// error, warning, session change, cursor or LOCAL INFILE.
    pub fn storable(&self) -> bool {
        self.done()
            && !self.error
            && !self.multi
            && self.warnings == 0
            && !self.session_changed
            && !self.cursor
            && !self.infile
    }

    /// Feeds the payload of the next packet.
    pub fn feed(&mut self, payload: &[u8]) -> Step {
        let continued = self.continuation;
        self.continuation = payload.len() == MAX_PACKET_PAYLOAD;
        if continued {
            return Step::More; // the rest of a split message: nothing to classify
        }
        let head = payload.first().copied();
        self.state = match self.state {
            State::Done => State::Done,
            State::Single => {
                if let Some(0xff) = head {
                    self.error = true;
                } else if let Some(0x00 | 0xfe) = head {
                    self.terminator(payload);
                }
                State::Done
            }
            State::First => match head {
                Some(0x00) => {
                    let status = self.terminator(payload);
                    self.next_after(status)
                }
                Some(0xff) => self.err(),
                Some(0xfb) => {
                    self.infile = true;
                    self.state = State::First;
                    return Step::Infile;
                }
                _ => match parse_lenenc_int(payload) {
                    Ok((Some(n), _)) if n > 0 => State::Columns(n),
                    _ => State::Done, // not a valid reply: stop here, forward as is
                },
            },
            State::Columns(n) => {
                if n > 1 {
                    State::Columns(n - 1)
                } else if self.deprecate_eof {
                    State::Rows
                } else {
                    State::MetaEof
                }
            }
            State::MetaEof => match head {
                Some(0xff) => self.err(),
                _ => {
                    let status = self.terminator(payload);
                    if status & SERVER_STATUS_CURSOR_EXISTS != 0 {
                        self.cursor = true;
                        State::Done
                    } else {
                        State::Rows
                    }
                }
            },
            State::Rows => match head {
                Some(0xff) => self.err(),
                Some(0xfe) if self.is_end(payload) => {
                    let status = self.terminator(payload);
                    if status & SERVER_STATUS_CURSOR_EXISTS != 0 && status & SERVER_MORE_RESULTS_EXISTS == 0 {
                        self.cursor = true;
                    }
                    self.next_after(status)
                }
                _ => State::Rows,
            },
            State::FieldList => match head {
                Some(0xff) => self.err(),
                Some(0xfe) if self.is_end(payload) => {
                    self.terminator(payload);
                    State::Done
                }
                _ => State::FieldList,
            },
            State::PrepareOk => match head {
                Some(0x00) if payload.len() >= 12 => {
                    let id = u32::from_le_bytes([payload[1], payload[2], payload[3], payload[4]]);
                    let cols = u16::from_le_bytes([payload[5], payload[6]]);
                    let params = u16::from_le_bytes([payload[7], payload[8]]);
                    self.warnings += u32::from(u16::from_le_bytes([payload[10], payload[11]]));
                    self.prepared = Some((id, params));
                    self.prepare_params(params, cols)
                }
                Some(0xff) => self.err(),
                _ => State::Done,
            },
            State::PrepareParams(n, cols) => match n {
                1 if self.deprecate_eof => self.prepare_columns(cols),
                1 => State::PrepareEof(Some(cols)),
                n => State::PrepareParams(n - 1, cols),
            },
            State::PrepareEof(Some(cols)) => self.prepare_columns(cols),
            State::PrepareColumns(n) => match n {
                1 if self.deprecate_eof => State::Done,
                1 => State::PrepareEof(None),
                n => State::PrepareColumns(n - 1),
            },
            State::PrepareEof(None) => State::Done,
        };
        if self.state == State::Done {
            Step::Done
        } else {
            Step::More
        }
    }

    fn prepare_params(&self, params: u16, cols: u16) -> State {
        if params == 0 {
            self.prepare_columns(cols)
        } else {
            State::PrepareParams(params, cols)
        }
    }

    fn prepare_columns(&self, cols: u16) -> State {
        if cols == 0 {
            State::Done
        } else {
            State::PrepareColumns(cols)
        }
    }

    fn err(&mut self) -> State {
        self.error = true;
        State::Done
    }

    /// Whether a `0xfe` packet in a row stream is its end (not a row starting with 0xfe).
    fn is_end(&self, payload: &[u8]) -> bool {
        if self.deprecate_eof {
            payload.len() < MAX_PACKET_PAYLOAD
        } else {
            payload.len() < 9
        }
    }

    fn next_after(&mut self, status: u16) -> State {
        if status & SERVER_MORE_RESULTS_EXISTS != 0 {
            self.multi = true;
            self.results_ended += 1;
            State::First
        } else {
            State::Done
        }
    }

    /// Records the status and warnings of an OK or EOF packet; returns the status.
    fn terminator(&mut self, payload: &[u8]) -> u16 {
        let (status, warnings) = status_of(payload, self.deprecate_eof);
        self.status = Some(status);
        self.warnings += u32::from(warnings);
        if status & SERVER_SESSION_STATE_CHANGED != 0 {
            self.session_changed = true;
        }
        status
    }
}

/// Status flags and warning count of an OK packet (`0x00`, or `0xfe` with
/// `CLIENT_DEPRECATE_EOF`) or an EOF packet (`0xfe` otherwise); zeros when unreadable.
pub fn status_of(payload: &[u8], deprecate_eof: bool) -> (u16, u16) {
    read_status(payload, deprecate_eof).unwrap_or((0, 0))
}

/// Like [`status_of`], `None` when the packet is too short to hold them (a caller that
/// must not trust an unreadable reply, such as the query cache deciding what to store).
pub fn read_status(payload: &[u8], deprecate_eof: bool) -> Option<(u16, u16)> {
    let u16_at = |i: usize| payload.get(i..i + 2).map(|b| u16::from_le_bytes([b[0], b[1]]));
    let at = status_offset(payload, deprecate_eof)?;
    let warnings = if payload.first() == Some(&0xfe) && !deprecate_eof { u16_at(1)? } else { u16_at(at + 2)? };
    Some((u16_at(at)?, warnings))
}

/// Where the status flags (2 bytes, little-endian) of an OK or EOF payload start.
pub fn status_offset(payload: &[u8], deprecate_eof: bool) -> Option<usize> {
    if payload.first() == Some(&0xfe) && !deprecate_eof {
        // EOF: header, warnings, status.
        return (payload.len() >= 5).then_some(3);
    }
    let mut at = 1;
    for _ in 0..2 {
        match payload.get(at..).map(parse_lenenc_int) {
            Some(Ok((_, used))) => at += used,
            _ => return None,
        }
    }
    (payload.len() >= at + 2).then_some(at)
}

#[cfg(test)]
#[path = "reply_tests.rs"]
mod tests;
