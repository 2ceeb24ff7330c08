//! The small backend messages about the session: ReadyForQuery ('Z'), ParameterStatus
//! ('S'), BackendKeyData ('K'), CommandComplete ('C'), NotificationResponse ('A') and
//! NegotiateProtocolVersion ('v').

use crate::error::Error;
use crate::reader::Reader;
use crate::writer;

/// The transaction status ReadyForQuery reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TransactionStatus {
    /// `I`: not in a transaction block.
    Idle,
    /// `T`: in a transaction block.
    InTransaction,
    /// `E`: in a failed transaction block (queries are refused until it ends).
    Failed,
}

impl TransactionStatus {
    /// Parses the body of a 'Z' message.
    pub fn parse(body: &[u8]) -> Result<TransactionStatus, Error> {
        match body {
            [b'I'] => Ok(TransactionStatus::Idle),
            [b'T'] => Ok(TransactionStatus::InTransaction),
            [b'E'] => Ok(TransactionStatus::Failed),
            [_] => Err(Error::Invalid("ReadyForQuery transaction status")),
            [] => Err(Error::Truncated("ReadyForQuery")),
            _ => Err(Error::TrailingBytes("ReadyForQuery")),
        }
    }

    /// The byte on the wire.
    pub fn byte(self) -> u8 {
        match self {
            TransactionStatus::Idle => b'I',
            TransactionStatus::InTransaction => b'T',
            TransactionStatus::Failed => b'E',
        }
    }

    /// Appends a ReadyForQuery with this status.
    pub fn write(self, out: &mut Vec<u8>) {
        crate::frame::write_frame(out, b'Z', &[self.byte()]);
    }
}

/// ParameterStatus: a reported run-time parameter's current value (`TimeZone`,
/// `client_encoding`, `DateStyle`, `server_version`, ...), sent at startup and whenever it
/// changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParameterStatus<'a> {
    /// Parameter name.
    pub name: &'a [u8],
    /// Its value.
    pub value: &'a [u8],
}

impl<'a> ParameterStatus<'a> {
    /// Parses the body of an 'S' message.
    pub fn parse(body: &'a [u8]) -> Result<ParameterStatus<'a>, Error> {
        let mut r = Reader::new(body);
        let name = r.cstr("parameter name")?;
        let value = r.cstr("parameter value")?;
        r.finish("ParameterStatus")?;
        Ok(ParameterStatus { name, value })
    }

    /// Appends the whole message.
    pub fn write(&self, out: &mut Vec<u8>) {
        let at = writer::begin(out, b'S');
        writer::cstr(out, self.name);
        writer::cstr(out, self.value);
        writer::finish(out, at);
    }
}

/// BackendKeyData: what a CancelRequest for this session must quote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BackendKeyData<'a> {
    /// The backend's process id.
    pub process_id: u32,
    /// The secret key: 4 bytes up to protocol 3.0, 4 to 256 from 3.2.
    pub secret_key: &'a [u8],
}

impl<'a> BackendKeyData<'a> {
    /// Parses the body of a 'K' message.
    pub fn parse(body: &'a [u8]) -> Result<BackendKeyData<'a>, Error> {
        let mut r = Reader::new(body);
        let process_id = r.u32("BackendKeyData process id")?;
        let secret_key = r.rest();
        if secret_key.len() < 4 || secret_key.len() > 256 {
            return Err(Error::Invalid("BackendKeyData secret key length"));
        }
        Ok(BackendKeyData { process_id, secret_key })
    }

    /// Appends the whole message.
    pub fn write(&self, out: &mut Vec<u8>) {
        let at = writer::begin(out, b'K');
        out.extend_from_slice(&self.process_id.to_be_bytes());
        out.extend_from_slice(self.secret_key);
        writer::finish(out, at);
    }
}

/// The rows a CommandComplete tag reports (`INSERT 0 5` → 5, `SELECT 3`, `UPDATE 2`,
/// `DELETE 1`, `MERGE 4`, `FETCH 10`, `MOVE 10`, `COPY 7`); `None` for other commands.
pub fn command_rows(tag: &[u8]) -> Option<u64> {
    let mut words = tag.split(|&b| b == b' ');
    let verb = words.next()?;
    let counted: &[&[u8]] = &[b"INSERT", b"SELECT", b"UPDATE", b"DELETE", b"MERGE", b"FETCH", b"MOVE", b"COPY"];
    if !counted.contains(&verb) {
        return None;
    }
    let last = words.next_back()?;
    std::str::from_utf8(last).ok()?.parse().ok()
}

/// NotificationResponse: a NOTIFY delivered to a session that LISTENs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Notification<'a> {
    /// The notifying backend's process id.
    pub process_id: u32,
    /// The channel name.
    pub channel: &'a [u8],
    /// The payload (may be empty).
    pub payload: &'a [u8],
}

impl<'a> Notification<'a> {
    /// Parses the body of an 'A' message.
    pub fn parse(body: &'a [u8]) -> Result<Notification<'a>, Error> {
        let mut r = Reader::new(body);
        let process_id = r.u32("notification process id")?;
        let channel = r.cstr("notification channel")?;
        let payload = r.cstr("notification payload")?;
        r.finish("NotificationResponse")?;
        Ok(Notification { process_id, channel, payload })
    }

    /// Appends the whole message.
    pub fn write(&self, out: &mut Vec<u8>) {
        let at = writer::begin(out, b'A');
        out.extend_from_slice(&self.process_id.to_be_bytes());
        writer::cstr(out, self.channel);
        writer::cstr(out, self.payload);
        writer::finish(out, at);
    }
}

/// NegotiateProtocolVersion: the server speaks an older minor version, or does not know
/// some `_pq_.` options the client asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NegotiateProtocolVersion<'a> {
    /// The newest minor version the server supports for the major asked for.
    pub newest_minor: u32,
    /// The protocol options the server did not recognise.
    pub unrecognized: Vec<&'a [u8]>,
}

impl<'a> NegotiateProtocolVersion<'a> {
    /// Parses the body of a 'v' message.
    pub fn parse(body: &'a [u8]) -> Result<NegotiateProtocolVersion<'a>, Error> {
        let mut r = Reader::new(body);
        let newest_minor = r.u32("newest minor version")?;
        let n = r.u32("unrecognized option count")? as usize;
        if n > r.remaining() {
            return Err(Error::Truncated("unrecognized options"));
        }
        let unrecognized = (0..n).map(|_| r.cstr("unrecognized option")).collect::<Result<_, _>>()?;
        r.finish("NegotiateProtocolVersion")?;
        Ok(NegotiateProtocolVersion { newest_minor, unrecognized })
    }

    /// Appends the whole message.
    pub fn write(&self, out: &mut Vec<u8>) {
        let at = writer::begin(out, b'v');
        out.extend_from_slice(&self.newest_minor.to_be_bytes());
        out.extend_from_slice(&(self.unrecognized.len() as u32).to_be_bytes());
        for o in &self.unrecognized {
            writer::cstr(out, o);
        }
        writer::finish(out, at);
    }
}
