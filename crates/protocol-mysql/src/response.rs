//! Generic response packets: OK, ERR and EOF.
//!
//! ```text
//! OK   0x00 (or 0xfe ending a result set with CLIENT_DEPRECATE_EOF)
//!      lenenc affected rows, lenenc last insert id,
//!      2 status flags + 2 warnings (CLIENT_PROTOCOL_41) | 2 status flags (CLIENT_TRANSACTIONS),
//!      CLIENT_SESSION_TRACK: lenenc info [+ lenenc session state if SERVER_SESSION_STATE_CHANGED]
//!      otherwise: info to the end of the packet
//! ERR  0xff, 2 error code, ['#' + 5-byte SQL state] (CLIENT_PROTOCOL_41), message to the end
//! EOF  0xfe, 2 warnings + 2 status flags (CLIENT_PROTOCOL_41); payload shorter than 9 bytes
//! ```
//!
//! Telling them apart: `0x00` is OK; `0xff` is ERR; `0xfe` with a payload shorter than 9
//! bytes is an EOF, or with `CLIENT_DEPRECATE_EOF` the OK that ends a result set (a row
//! whose first column is a length-encoded integer `0xfe ...` is always 9 bytes or more).
//! See [`ResponseKind::classify`].

use crate::error::Error;
use crate::flags::{CLIENT_PROTOCOL_41, CLIENT_SESSION_TRACK, CLIENT_TRANSACTIONS, SERVER_SESSION_STATE_CHANGED};
use crate::lenenc::{write_lenenc_int, write_lenenc_str};
use crate::reader::Reader;

/// Header byte of an OK packet.
pub const OK_HEADER: u8 = 0x00;
/// Header byte of an EOF packet (and of an OK replacing it with `CLIENT_DEPRECATE_EOF`).
pub const EOF_HEADER: u8 = 0xfe;
/// Header byte of an ERR packet.
pub const ERR_HEADER: u8 = 0xff;

/// What kind of generic response a payload is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResponseKind {
    /// An OK packet (header `0x00`).
    Ok,
    /// An ERR packet (header `0xff`).
    Err,
    /// An EOF packet: header `0xfe`, payload shorter than 9 bytes, without `CLIENT_DEPRECATE_EOF`.
    Eof,
    /// With `CLIENT_DEPRECATE_EOF`: the OK packet with header `0xfe` that ends a result set.
    OkAsEof,
    /// None of the above (for example a result set row or a column count).
    Other,
}

impl ResponseKind {
    /// Classifies a payload given the negotiated capabilities.
    pub fn classify(payload: &[u8], capabilities: u32) -> Self {
        match payload.first() {
            Some(&OK_HEADER) => ResponseKind::Ok,
            Some(&ERR_HEADER) => ResponseKind::Err,
            Some(&EOF_HEADER) if payload.len() < 9 => {
                if capabilities & crate::flags::CLIENT_DEPRECATE_EOF != 0 {
                    ResponseKind::OkAsEof
                } else {
                    ResponseKind::Eof
                }
            }
            _ => ResponseKind::Other,
        }
    }
}

/// Whether `payload` is an EOF packet (or, with `CLIENT_DEPRECATE_EOF`, the OK that ends a
/// result set): header `0xfe` and shorter than 9 bytes.
pub fn is_eof_packet(payload: &[u8]) -> bool {
    payload.first() == Some(&EOF_HEADER) && payload.len() < 9
}

/// Whether `payload` is an ERR packet.
pub fn is_err_packet(payload: &[u8]) -> bool {
    payload.first() == Some(&ERR_HEADER)
}

/// An OK packet, borrowed from the payload.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OkPacket<'a> {
    /// Affected (or found) rows.
    pub affected_rows: u64,
    /// Last `AUTO_INCREMENT` id.
    pub last_insert_id: u64,
    /// Server status flags.
    pub status: u16,
    /// Warning count (4.1 protocol only).
    pub warnings: u16,
    /// Human-readable information.
    pub info: &'a [u8],
    /// Raw session state information (with `CLIENT_SESSION_TRACK` and
    /// `SERVER_SESSION_STATE_CHANGED`); decode it with [`OkPacket::session_state_changes`].
    pub session_state: Option<&'a [u8]>,
}

impl<'a> OkPacket<'a> {
    /// Parses an OK packet; the header may be `0x00` or `0xfe` (OK ending a result set).
    pub fn parse(payload: &'a [u8], capabilities: u32) -> Result<Self, Error> {
        let mut r = Reader::new(payload);
        let header = r.u8("OK header")?;
        if header != OK_HEADER && header != EOF_HEADER {
            return Err(Error::UnexpectedHeader { expected: "OK packet", found: header });
        }
        let mut ok = OkPacket {
            affected_rows: r.lenenc_int("affected rows")?,
            last_insert_id: r.lenenc_int("last insert id")?,
            ..OkPacket::default()
        };
        if capabilities & CLIENT_PROTOCOL_41 != 0 {
            ok.status = r.u16("status flags")?;
            ok.warnings = r.u16("warnings")?;
        } else if capabilities & CLIENT_TRANSACTIONS != 0 {
            ok.status = r.u16("status flags")?;
        }
        if capabilities & CLIENT_SESSION_TRACK != 0 {
            // Servers may stop right after the status when there is nothing more to say.
            if !r.is_empty() {
                ok.info = r.lenenc_str("info")?;
            }
            if ok.status & SERVER_SESSION_STATE_CHANGED != 0 && !r.is_empty() {
                ok.session_state = Some(r.lenenc_str("session state info")?);
            }
        } else {
            ok.info = r.rest();
        }
        Ok(ok)
    }

    /// Decodes the session state information into its entries (none when absent).
    pub fn session_state_changes(&self) -> Result<Vec<SessionStateChange<'a>>, Error> {
        let mut out = Vec::new();
        let mut r = Reader::new(self.session_state.unwrap_or_default());
        while !r.is_empty() {
            let kind = r.u8("session state type")?;
            let data = r.lenenc_str("session state data")?;
            out.push(SessionStateChange { kind, data });
        }
        Ok(out)
    }

    /// Appends the payload with header `0x00`.
    pub fn write(&self, out: &mut Vec<u8>, capabilities: u32) {
        self.write_with_header(out, capabilities, OK_HEADER);
    }

    /// Appends the payload with header `0xfe`: the OK that ends a result set with
    /// `CLIENT_DEPRECATE_EOF`.
    pub fn write_as_eof(&self, out: &mut Vec<u8>, capabilities: u32) {
        self.write_with_header(out, capabilities, EOF_HEADER);
    }

    fn write_with_header(&self, out: &mut Vec<u8>, capabilities: u32, header: u8) {
        out.push(header);
        write_lenenc_int(out, self.affected_rows);
        write_lenenc_int(out, self.last_insert_id);
        if capabilities & CLIENT_PROTOCOL_41 != 0 {
            out.extend_from_slice(&self.status.to_le_bytes());
            out.extend_from_slice(&self.warnings.to_le_bytes());
        } else if capabilities & CLIENT_TRANSACTIONS != 0 {
            out.extend_from_slice(&self.status.to_le_bytes());
        }
        if capabilities & CLIENT_SESSION_TRACK != 0 {
            let state = self.session_state.filter(|_| self.status & SERVER_SESSION_STATE_CHANGED != 0);
            if !self.info.is_empty() || state.is_some() {
                write_lenenc_str(out, self.info);
            }
            if let Some(state) = state {
                write_lenenc_str(out, state);
            }
        } else {
            out.extend_from_slice(self.info);
        }
    }
}

/// Session state change type: a system variable changed (data: lenenc name, lenenc value).
pub const SESSION_TRACK_SYSTEM_VARIABLES: u8 = 0;
/// Session state change type: the current schema changed (data: lenenc name).
pub const SESSION_TRACK_SCHEMA: u8 = 1;
/// Session state change type: some state changed (data: lenenc `"1"`).
pub const SESSION_TRACK_STATE_CHANGE: u8 = 2;
/// Session state change type: GTIDs (data: 1-byte encoding, lenenc GTID set).
pub const SESSION_TRACK_GTIDS: u8 = 3;
/// Session state change type: transaction characteristics (data: lenenc SQL).
pub const SESSION_TRACK_TRANSACTION_CHARACTERISTICS: u8 = 4;
/// Session state change type: transaction state (data: lenenc 8-character state).
pub const SESSION_TRACK_TRANSACTION_STATE: u8 = 5;

/// One entry of the session state information of an OK packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SessionStateChange<'a> {
    /// The type (`SESSION_TRACK_*`).
    pub kind: u8,
    /// The type-specific data (itself made of length-encoded strings for known types).
    pub data: &'a [u8],
}

impl<'a> SessionStateChange<'a> {
    /// The length-encoded strings the data is made of (name and value for system
    /// variables, the schema name, ...). GTIDs start with a 1-byte encoding instead, so
    /// for them the first byte is skipped.
    pub fn strings(&self) -> Result<Vec<&'a [u8]>, Error> {
        let mut r = Reader::new(self.data);
        if self.kind == SESSION_TRACK_GTIDS {
            r.u8("GTID encoding")?;
        }
        let mut out = Vec::new();
        while !r.is_empty() {
            out.push(r.lenenc_str("session state string")?);
        }
        Ok(out)
    }

    /// Appends the entry (type byte, lenenc data) to a session state block.
    pub fn write(&self, out: &mut Vec<u8>) {
        out.push(self.kind);
        write_lenenc_str(out, self.data);
    }
}

/// An ERR packet, borrowed from the payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ErrPacket<'a> {
    /// The error code (MariaDB uses `0xffff` for progress reports).
    pub code: u16,
    /// The 5-character SQL state, when the `#` marker is present.
    pub sql_state: Option<[u8; 5]>,
    /// The message.
    pub message: &'a [u8],
}

impl<'a> ErrPacket<'a> {
    /// Parses an ERR packet. The SQL state is read whenever the `#` marker is present,
    /// whatever the capabilities (errors sent before the handshake completes have none).
    pub fn parse(payload: &'a [u8]) -> Result<Self, Error> {
        let mut r = Reader::new(payload);
        let header = r.u8("ERR header")?;
        if header != ERR_HEADER {
            return Err(Error::UnexpectedHeader { expected: "ERR packet", found: header });
        }
        let code = r.u16("error code")?;
        let sql_state = if r.peek() == Some(b'#') && r.remaining() >= 6 {
            r.u8("SQL state marker")?;
            Some(r.array("SQL state")?)
        } else {
            None
        };
        Ok(ErrPacket { code, sql_state, message: r.rest() })
    }

    /// Appends the payload; the SQL state is written with `CLIENT_PROTOCOL_41`
    /// (`HY000` when `None`).
    pub fn write(&self, out: &mut Vec<u8>, capabilities: u32) {
        out.push(ERR_HEADER);
        out.extend_from_slice(&self.code.to_le_bytes());
        if capabilities & CLIENT_PROTOCOL_41 != 0 {
            out.push(b'#');
            out.extend_from_slice(&self.sql_state.unwrap_or(*b"HY000"));
        }
        out.extend_from_slice(self.message);
    }
}

/// An EOF packet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EofPacket {
    /// Warning count (4.1 protocol only).
    pub warnings: u16,
    /// Server status flags (4.1 protocol only).
    pub status: u16,
}

impl EofPacket {
    /// Parses an EOF packet (header `0xfe`, shorter than 9 bytes).
    pub fn parse(payload: &[u8], capabilities: u32) -> Result<Self, Error> {
        let mut r = Reader::new(payload);
        let header = r.u8("EOF header")?;
        if header != EOF_HEADER || payload.len() >= 9 {
            return Err(Error::UnexpectedHeader { expected: "EOF packet", found: header });
        }
        if capabilities & CLIENT_PROTOCOL_41 == 0 {
            return Ok(EofPacket::default());
        }
        Ok(EofPacket { warnings: r.u16("warnings")?, status: r.u16("status flags")? })
    }

    /// Appends the payload.
    pub fn write(&self, out: &mut Vec<u8>, capabilities: u32) {
        out.push(EOF_HEADER);
        if capabilities & CLIENT_PROTOCOL_41 != 0 {
            out.extend_from_slice(&self.warnings.to_le_bytes());
            out.extend_from_slice(&self.status.to_le_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flags::*;

    const CAPS: u32 = CLIENT_PROTOCOL_41 | CLIENT_TRANSACTIONS;

    #[test]
    fn ok_round_trip() {
        let ok = OkPacket {
            affected_rows: 300,
            last_insert_id: 1 << 40,
            status: SERVER_STATUS_AUTOCOMMIT | SERVER_STATUS_IN_TRANS,
            warnings: 2,
            info: b"Rows matched: 1  Changed: 1  Warnings: 0",
            session_state: None,
        };
        let mut out = Vec::new();
        ok.write(&mut out, CAPS);
        assert_eq!(ResponseKind::classify(&out, CAPS), ResponseKind::Ok);
        assert_eq!(OkPacket::parse(&out, CAPS).unwrap(), ok);
        // A minimal server OK: 00 00 00 02 00 00 00
        let min = [0, 0, 0, 2, 0, 0, 0];
        let p = OkPacket::parse(&min, CAPS | CLIENT_SESSION_TRACK).unwrap();
        assert_eq!((p.status, p.info), (SERVER_STATUS_AUTOCOMMIT, &b""[..]));
        for cut in 0..out.len() {
            let _ = OkPacket::parse(&out[..cut], CAPS);
        }
    }

    #[test]
    fn ok_with_session_track() {
        let caps = CAPS | CLIENT_SESSION_TRACK;
        let mut state = Vec::new();
        let mut var = Vec::new();
        write_lenenc_str(&mut var, b"autocommit");
        write_lenenc_str(&mut var, b"OFF");
        SessionStateChange { kind: SESSION_TRACK_SYSTEM_VARIABLES, data: &var }.write(&mut state);
        let mut schema = Vec::new();
        write_lenenc_str(&mut schema, b"shop");
        SessionStateChange { kind: SESSION_TRACK_SCHEMA, data: &schema }.write(&mut state);
        let ok = OkPacket { status: SERVER_SESSION_STATE_CHANGED, session_state: Some(&state), ..OkPacket::default() };
        let mut out = Vec::new();
        ok.write(&mut out, caps);
        let back = OkPacket::parse(&out, caps).unwrap();
        assert_eq!(back, ok);
        let changes = back.session_state_changes().unwrap();
        assert_eq!(changes.len(), 2);
        assert_eq!(changes[0].strings().unwrap(), [&b"autocommit"[..], b"OFF"]);
        assert_eq!((changes[1].kind, changes[1].strings().unwrap()), (SESSION_TRACK_SCHEMA, vec![&b"shop"[..]]));
    }

    #[test]
    fn ok_as_eof_vs_eof() {
        let caps = CAPS | CLIENT_DEPRECATE_EOF;
        let mut out = Vec::new();
        OkPacket { status: SERVER_MORE_RESULTS_EXISTS, warnings: 1, ..OkPacket::default() }
            .write_as_eof(&mut out, caps);
        assert_eq!(out, [0xfe, 0, 0, 8, 0, 1, 0]);
        assert!(is_eof_packet(&out));
        assert_eq!(ResponseKind::classify(&out, caps), ResponseKind::OkAsEof);
        assert_eq!(OkPacket::parse(&out, caps).unwrap().status, SERVER_MORE_RESULTS_EXISTS);

        let mut eof = Vec::new();
        EofPacket { warnings: 3, status: SERVER_STATUS_AUTOCOMMIT }.write(&mut eof, CAPS);
        assert_eq!(eof, [0xfe, 3, 0, 2, 0]);
        assert_eq!(ResponseKind::classify(&eof, CAPS), ResponseKind::Eof);
        assert_eq!(EofPacket::parse(&eof, CAPS).unwrap(), EofPacket { warnings: 3, status: SERVER_STATUS_AUTOCOMMIT });
        // A row whose first column is 0xfe-prefixed is 9+ bytes: not an EOF.
        let row = [0xfe, 1, 0, 0, 0, 0, 0, 0, 0, b'x'];
        assert_eq!(ResponseKind::classify(&row, caps), ResponseKind::Other);
        assert!(EofPacket::parse(&row, CAPS).is_err());
    }

    #[test]
    fn err_packets() {
        let e = ErrPacket { code: 1146, sql_state: Some(*b"42S02"), message: b"Table 'x.y' doesn't exist" };
        let mut out = Vec::new();
        e.write(&mut out, CAPS);
        assert_eq!(&out[..9], b"\xff\x7a\x04#42S02");
        assert_eq!(ErrPacket::parse(&out).unwrap(), e);
        assert_eq!(ResponseKind::classify(&out, CAPS), ResponseKind::Err);
        // Pre-handshake error: no state marker.
        let early = b"\xff\x69\x04Too many connections";
        let p = ErrPacket::parse(early).unwrap();
        assert_eq!((p.code, p.sql_state, p.message), (1129, None, &b"Too many connections"[..]));
        assert!(ErrPacket::parse(&[0xff, 1]).is_err());
        assert!(ErrPacket::parse(&[0x00]).is_err());
    }
}
