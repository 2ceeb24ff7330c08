//! Authentication phase packets (server → client after the handshake response).
//!
//! The server answers the handshake response (or COM_CHANGE_USER) with OK, ERR,
//! an AuthSwitchRequest (`0xfe` + plugin name + data), the old auth switch (a lone `0xfe`,
//! switch to `mysql_old_password`), or AuthMoreData (`0x01` + data). `caching_sha2_password`
//! uses AuthMoreData with one byte: `0x03` fast auth succeeded (an OK follows), `0x04`
//! full authentication needed (the client sends the password over TLS, or asks for the
//! RSA public key with `0x02`).

use crate::error::Error;
use crate::reader::Reader;
use crate::response::{ErrPacket, OkPacket, EOF_HEADER, ERR_HEADER, OK_HEADER};

/// Header byte of AuthMoreData.
pub const AUTH_MORE_DATA_HEADER: u8 = 0x01;
/// Header byte of AuthSwitchRequest (same as EOF).
pub const AUTH_SWITCH_HEADER: u8 = EOF_HEADER;
/// caching_sha2_password client request for the server's RSA public key.
pub const CACHING_SHA2_REQUEST_PUBLIC_KEY: u8 = 0x02;
/// caching_sha2_password AuthMoreData byte: fast authentication succeeded.
pub const CACHING_SHA2_FAST_AUTH_SUCCESS: u8 = 0x03;
/// caching_sha2_password AuthMoreData byte: perform full authentication.
pub const CACHING_SHA2_PERFORM_FULL_AUTH: u8 = 0x04;

/// A server packet of the authentication phase, borrowed from the payload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AuthPacket<'a> {
    /// Authentication succeeded.
    Ok(OkPacket<'a>),
    /// Authentication failed.
    Err(ErrPacket<'a>),
    /// Switch to another plugin.
    Switch(AuthSwitchRequest<'a>),
    /// A lone `0xfe`: switch to `mysql_old_password` (pre-4.1), with the original scramble.
    OldSwitch,
    /// Plugin-specific data (see [`AuthPacket::caching_sha2_status`]).
    MoreData(&'a [u8]),
}

/// What a one-byte caching_sha2_password AuthMoreData means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CachingSha2Status {
    /// `0x03`: the cached hash matched; an OK packet follows.
    FastAuthSuccess,
    /// `0x04`: full authentication is needed.
    PerformFullAuth,
}

impl<'a> AuthPacket<'a> {
    /// Parses a server packet of the authentication phase.
    pub fn parse(payload: &'a [u8], capabilities: u32) -> Result<Self, Error> {
        match payload.first() {
            Some(&OK_HEADER) => OkPacket::parse(payload, capabilities).map(AuthPacket::Ok),
            Some(&ERR_HEADER) => ErrPacket::parse(payload).map(AuthPacket::Err),
            Some(&AUTH_SWITCH_HEADER) if payload.len() == 1 => Ok(AuthPacket::OldSwitch),
            Some(&AUTH_SWITCH_HEADER) => AuthSwitchRequest::parse(payload).map(AuthPacket::Switch),
            Some(&AUTH_MORE_DATA_HEADER) => Ok(AuthPacket::MoreData(&payload[1..])),
            Some(&other) => Err(Error::UnexpectedHeader { expected: "authentication packet", found: other }),
            None => Err(Error::Truncated("authentication packet")),
        }
    }

    /// For AuthMoreData of one byte `0x03` / `0x04`, the caching_sha2_password status.
    pub fn caching_sha2_status(&self) -> Option<CachingSha2Status> {
        match self {
            AuthPacket::MoreData([CACHING_SHA2_FAST_AUTH_SUCCESS]) => Some(CachingSha2Status::FastAuthSuccess),
            AuthPacket::MoreData([CACHING_SHA2_PERFORM_FULL_AUTH]) => Some(CachingSha2Status::PerformFullAuth),
            _ => None,
        }
    }
}

/// Appends an AuthMoreData payload.
pub fn write_auth_more_data(out: &mut Vec<u8>, data: &[u8]) {
    out.push(AUTH_MORE_DATA_HEADER);
    out.extend_from_slice(data);
}

/// AuthSwitchRequest: the server asks the client to authenticate with another plugin.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AuthSwitchRequest<'a> {
    /// The plugin to switch to.
    pub plugin_name: &'a [u8],
    /// Plugin data (for the native and sha2 plugins, a new 20-byte scramble plus NUL).
    pub data: &'a [u8],
}

impl<'a> AuthSwitchRequest<'a> {
    /// Parses the payload (header `0xfe`, NUL-terminated plugin name, data).
    pub fn parse(payload: &'a [u8]) -> Result<Self, Error> {
        let mut r = Reader::new(payload);
        let header = r.u8("auth switch header")?;
        if header != AUTH_SWITCH_HEADER {
            return Err(Error::UnexpectedHeader { expected: "AuthSwitchRequest", found: header });
        }
        let plugin_name = r.nul_str_or_eof();
        Ok(AuthSwitchRequest { plugin_name, data: r.rest() })
    }

    /// Appends the payload.
    pub fn write(&self, out: &mut Vec<u8>) {
        out.push(AUTH_SWITCH_HEADER);
        crate::handshake_response::write_nul_str(out, self.plugin_name);
        out.extend_from_slice(self.data);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flags::CLIENT_PROTOCOL_41;

    #[test]
    fn auth_packets() {
        let caps = CLIENT_PROTOCOL_41;
        let sw = AuthSwitchRequest { plugin_name: b"mysql_native_password", data: b"01234567890123456789\0" };
        let mut out = Vec::new();
        sw.write(&mut out);
        assert_eq!(AuthPacket::parse(&out, caps), Ok(AuthPacket::Switch(sw)));
        assert_eq!(AuthPacket::parse(&[0xfe], caps), Ok(AuthPacket::OldSwitch));

        let mut more = Vec::new();
        write_auth_more_data(&mut more, &[CACHING_SHA2_FAST_AUTH_SUCCESS]);
        let p = AuthPacket::parse(&more, caps).unwrap();
        assert_eq!(p.caching_sha2_status(), Some(CachingSha2Status::FastAuthSuccess));
        let p = AuthPacket::parse(&[1, 4], caps).unwrap();
        assert_eq!(p.caching_sha2_status(), Some(CachingSha2Status::PerformFullAuth));
        let key = AuthPacket::parse(b"\x01-----BEGIN PUBLIC KEY-----", caps).unwrap();
        assert_eq!(key.caching_sha2_status(), None);

        assert!(matches!(AuthPacket::parse(&[0, 0, 0, 2, 0, 0, 0], caps), Ok(AuthPacket::Ok(_))));
        assert!(
            matches!(AuthPacket::parse(b"\xff\x15\x04#28000Access denied", caps), Ok(AuthPacket::Err(e)) if e.code == 1045)
        );
        assert!(AuthPacket::parse(&[], caps).is_err());
        assert!(AuthPacket::parse(&[7], caps).is_err());
    }
}
