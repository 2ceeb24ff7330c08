//! The startup phase: the first packet a client sends, which has no type byte.
//!
//! A client opens with one of four packets, told apart by the int32 after the length:
//! a protocol version (`3.0` is `196608`: a StartupMessage with `name\0value\0...\0`
//! parameters such as `user`, `database`, `replication`, `options`), or one of three
//! request codes in the reserved major version 1234: SSLRequest (`1234.5679`; the server
//! answers one byte, `S` or `N`), GSSENCRequest (`1234.5680`; `G` or `N`) and
//! CancelRequest (`1234.5678`, sent on a new connection with the BackendKeyData of the
//! session to cancel; the server answers nothing and closes).
//!
//! Bodies come from [`crate::parse_startup_frame`], which enforces the server's size bounds.

use crate::error::Error;
use crate::reader::Reader;
use crate::writer;

/// A protocol version or request code: major in the high 16 bits, minor in the low.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ProtocolVersion {
    /// Major version (3 for every current protocol; 1234 for the request codes).
    pub major: u16,
    /// Minor version (0 in PostgreSQL up to 17; 3.2 from PostgreSQL 18).
    pub minor: u16,
}

impl ProtocolVersion {
    /// Protocol 3.0, what PostgreSQL 7.4 to 17 speak.
    pub const V3_0: ProtocolVersion = ProtocolVersion { major: 3, minor: 0 };

    /// The int32 on the wire.
    pub fn code(self) -> u32 {
        (u32::from(self.major) << 16) | u32::from(self.minor)
    }

    /// From the int32 on the wire.
    pub fn from_code(code: u32) -> ProtocolVersion {
        ProtocolVersion { major: (code >> 16) as u16, minor: code as u16 }
    }
}

/// SSLRequest's code (1234.5679).
pub const SSL_REQUEST_CODE: u32 = 80_877_103;
/// GSSENCRequest's code (1234.5680).
pub const GSSENC_REQUEST_CODE: u32 = 80_877_104;
/// CancelRequest's code (1234.5678).
pub const CANCEL_REQUEST_CODE: u32 = 80_877_102;

/// A StartupMessage: the protocol version and the session parameters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StartupMessage<'a> {
    /// The protocol version asked for.
    pub version: ProtocolVersion,
    /// `(name, value)` pairs in the order sent: `user` (required), `database`, `options`,
    /// `replication` (`true` / `database` for a walsender), any GUC such as
    /// `client_encoding`, `_pq_.*` protocol extensions.
    pub params: Vec<(&'a [u8], &'a [u8])>,
}

impl<'a> StartupMessage<'a> {
    /// The value of parameter `name`, if sent (the last one wins, as in the server).
    pub fn param(&self, name: &[u8]) -> Option<&'a [u8]> {
        self.params.iter().rev().find(|(n, _)| *n == name).map(|(_, v)| *v)
    }

    /// The `user` parameter.
    pub fn user(&self) -> Option<&'a [u8]> {
        self.param(b"user")
    }

    /// The `database` parameter (the server defaults it to the user name).
    pub fn database(&self) -> Option<&'a [u8]> {
        self.param(b"database")
    }

    /// Appends the whole packet (length word included).
    pub fn write(&self, out: &mut Vec<u8>) {
        let at = writer::begin_untyped(out);
        out.extend_from_slice(&self.version.code().to_be_bytes());
        for (n, v) in &self.params {
            writer::cstr(out, n);
            writer::cstr(out, v);
        }
        out.push(0);
        writer::finish(out, at);
    }
}

/// A CancelRequest: which backend to interrupt, and the proof the client may.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CancelRequest<'a> {
    /// The backend's process id (BackendKeyData).
    pub process_id: u32,
    /// The secret key from BackendKeyData: 4 bytes up to protocol 3.0, up to 256 from 3.2.
    pub secret_key: &'a [u8],
}

impl CancelRequest<'_> {
    /// Appends the whole packet.
    pub fn write(&self, out: &mut Vec<u8>) {
        let at = writer::begin_untyped(out);
        out.extend_from_slice(&CANCEL_REQUEST_CODE.to_be_bytes());
        out.extend_from_slice(&self.process_id.to_be_bytes());
        out.extend_from_slice(self.secret_key);
        writer::finish(out, at);
    }
}

/// The first packet of a connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StartupPacket<'a> {
    /// A StartupMessage (protocol version 3.x; other majors are [`Error::Unsupported`]).
    Startup(StartupMessage<'a>),
    /// SSLRequest: answer `S` and start TLS, or `N`.
    SslRequest,
    /// GSSENCRequest: answer `G` and start GSSAPI encryption, or `N`.
    GssEncRequest,
    /// CancelRequest.
    Cancel(CancelRequest<'a>),
}

impl<'a> StartupPacket<'a> {
    /// Parses a startup packet body (after the length word, from
    /// [`crate::parse_startup_frame`]).
    pub fn parse(body: &'a [u8]) -> Result<StartupPacket<'a>, Error> {
        let mut r = Reader::new(body);
        let code = r.u32("protocol version")?;
        match code {
            SSL_REQUEST_CODE => r.finish("SSLRequest").map(|_| StartupPacket::SslRequest),
            GSSENC_REQUEST_CODE => r.finish("GSSENCRequest").map(|_| StartupPacket::GssEncRequest),
            CANCEL_REQUEST_CODE => {
                let process_id = r.u32("CancelRequest process id")?;
                let secret_key = r.rest();
                if secret_key.len() < 4 || secret_key.len() > 256 {
                    return Err(Error::Invalid("CancelRequest secret key length"));
                }
                Ok(StartupPacket::Cancel(CancelRequest { process_id, secret_key }))
            }
            _ => {
                let version = ProtocolVersion::from_code(code);
                if version.major != 3 {
                    return Err(Error::Unsupported("protocol major version (only 3 is spoken)"));
                }
                let mut params = Vec::new();
                loop {
                    let name = r.cstr("startup parameter name")?;
                    if name.is_empty() {
                        break;
                    }
                    let value = r.cstr("startup parameter value")?;
                    params.push((name, value));
                }
                r.finish("StartupMessage")?;
                Ok(StartupPacket::Startup(StartupMessage { version, params }))
            }
        }
    }

    /// Appends the whole packet (length word included).
    pub fn write(&self, out: &mut Vec<u8>) {
        let code = match self {
            StartupPacket::Startup(m) => return m.write(out),
            StartupPacket::Cancel(c) => return c.write(out),
            StartupPacket::SslRequest => SSL_REQUEST_CODE,
            StartupPacket::GssEncRequest => GSSENC_REQUEST_CODE,
        };
        out.extend_from_slice(&8u32.to_be_bytes());
        out.extend_from_slice(&code.to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_startup_frame;

    #[test]
    fn startup_message_round_trip() {
        let m = StartupMessage {
            version: ProtocolVersion::V3_0,
            params: vec![(&b"user"[..], &b"app"[..]), (b"database", b"shop"), (b"replication", b"database")],
        };
        let mut wire = Vec::new();
        m.write(&mut wire);
        let (body, used) = parse_startup_frame(&wire).unwrap().unwrap();
        assert_eq!(used, wire.len());
        let StartupPacket::Startup(back) = StartupPacket::parse(body).unwrap() else { panic!() };
        assert_eq!(back, m);
        assert_eq!(back.user(), Some(&b"app"[..]));
        assert_eq!(back.param(b"replication"), Some(&b"database"[..]));
    }

    #[test]
    fn requests() {
        for (p, code) in [(StartupPacket::SslRequest, 80877103u32), (StartupPacket::GssEncRequest, 80877104)] {
            let mut wire = Vec::new();
            p.write(&mut wire);
            assert_eq!(wire, [&8u32.to_be_bytes()[..], &code.to_be_bytes()].concat());
            assert_eq!(StartupPacket::parse(&wire[4..]).unwrap(), p);
        }
        let c = StartupPacket::Cancel(CancelRequest { process_id: 42, secret_key: &[1, 2, 3, 4] });
        let mut wire = Vec::new();
        c.write(&mut wire);
        assert_eq!(wire.len(), 16);
        assert_eq!(StartupPacket::parse(&wire[4..]).unwrap(), c);
        // A 3-byte key, an unterminated parameter list, protocol 2.0: refused.
        assert!(StartupPacket::parse(&[0x04, 0xd2, 0x16, 0x2e, 0, 0, 0, 1, 1, 2, 3]).is_err());
        assert!(StartupPacket::parse(b"\0\x03\0\0user\0x\0").is_err());
        assert_eq!(
            StartupPacket::parse(b"\0\x02\0\0\0"),
            Err(Error::Unsupported("protocol major version (only 3 is spoken)"))
        );
    }
}
