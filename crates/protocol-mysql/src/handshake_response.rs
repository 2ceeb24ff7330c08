//! HandshakeResponse41 and SSLRequest (client → server, answering the handshake).
//!
//! ```text
//! 4   client capabilities
//! 4   max packet size
//! 1   character set
//! 23  reserved (MariaDB: last 4 bytes are extended capabilities when CLIENT_MYSQL is clear)
//! --- an SSLRequest stops here (32 bytes, CLIENT_SSL set); TLS starts after it
//! NUL user name
//! $   auth response: lenenc (CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA), else 1-byte length
//!     (CLIENT_SECURE_CONNECTION), else NUL-terminated
//! NUL database (if CLIENT_CONNECT_WITH_DB)
//! NUL auth plugin name (if CLIENT_PLUGIN_AUTH)
//! $   connect attributes: lenenc total length, then lenenc key/value pairs (if CLIENT_CONNECT_ATTRS)
//! 1   zstd compression level (if CLIENT_ZSTD_COMPRESSION_ALGORITHM)
//! ```

use crate::error::Error;
use crate::flags::*;
use crate::lenenc::{write_lenenc_int, write_lenenc_str};
use crate::reader::Reader;

/// Length of an SSLRequest payload (and of the fixed head of a HandshakeResponse41).
pub const SSL_REQUEST_LEN: usize = 32;

/// The fixed 32-byte head shared by SSLRequest and HandshakeResponse41.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SslRequest {
    /// Client capabilities (`CLIENT_SSL` is set).
    pub capabilities: u32,
    /// Largest packet the client wants to send.
    pub max_packet_size: u32,
    /// Client collation id.
    pub charset: u8,
    /// The 23 reserved bytes, verbatim.
    pub reserved: [u8; 23],
}

impl SslRequest {
    /// Appends the 32-byte payload.
    pub fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.capabilities.to_le_bytes());
        out.extend_from_slice(&self.max_packet_size.to_le_bytes());
        out.push(self.charset);
        out.extend_from_slice(&self.reserved);
    }
}

/// What a client sends after the server's handshake.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClientHandshake<'a> {
    /// The client asks for TLS; the real response follows inside TLS.
    SslRequest(SslRequest),
    /// The handshake response.
    Response(HandshakeResponse41<'a>),
}

/// Parses the client's answer to the handshake: an SSLRequest (exactly 32 bytes with
/// `CLIENT_SSL`) or a HandshakeResponse41. Pre-4.1 clients are rejected.
pub fn parse_client_handshake(payload: &[u8]) -> Result<ClientHandshake<'_>, Error> {
    if is_ssl_request(payload) {
        let mut r = Reader::new(payload);
        return Ok(ClientHandshake::SslRequest(head(&mut r)?));
    }
    HandshakeResponse41::parse(payload).map(ClientHandshake::Response)
}

/// Whether `payload` is an SSLRequest: 32 bytes with `CLIENT_SSL` and `CLIENT_PROTOCOL_41`.
pub fn is_ssl_request(payload: &[u8]) -> bool {
    let Some(&[a, b, c, d]) = payload.first_chunk::<4>() else { return false };
    let caps = u32::from_le_bytes([a, b, c, d]);
    payload.len() == SSL_REQUEST_LEN && caps & CLIENT_SSL != 0 && caps & CLIENT_PROTOCOL_41 != 0
}

fn head(r: &mut Reader<'_>) -> Result<SslRequest, Error> {
    let capabilities = r.u32("client capabilities")?;
    if capabilities & CLIENT_PROTOCOL_41 == 0 {
        return Err(Error::Invalid("client capabilities (pre-4.1 client)"));
    }
    Ok(SslRequest {
        capabilities,
        max_packet_size: r.u32("max packet size")?,
        charset: r.u8("character set")?,
        reserved: r.array("reserved")?,
    })
}

/// HandshakeResponse41, borrowed from the payload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HandshakeResponse41<'a> {
    /// Client capabilities; they also decide which fields follow.
    pub capabilities: u32,
    /// Largest packet the client wants to send.
    pub max_packet_size: u32,
    /// Client collation id.
    pub charset: u8,
    /// The 23 reserved bytes, verbatim (see [`HandshakeResponse41::mariadb_capabilities`]).
    pub reserved: [u8; 23],
    /// The user name.
    pub user: &'a [u8],
    /// The auth response (for example a scrambled password).
    pub auth_response: &'a [u8],
    /// The initial database, with `CLIENT_CONNECT_WITH_DB`.
    pub database: Option<&'a [u8]>,
    /// The auth plugin that produced `auth_response`, with `CLIENT_PLUGIN_AUTH`.
    pub auth_plugin_name: Option<&'a [u8]>,
    /// Connection attributes (key, value), with `CLIENT_CONNECT_ATTRS`.
    pub connect_attrs: Vec<(&'a [u8], &'a [u8])>,
    /// zstd compression level, with `CLIENT_ZSTD_COMPRESSION_ALGORITHM`.
    pub zstd_compression_level: Option<u8>,
}

impl<'a> HandshakeResponse41<'a> {
    /// Parses a HandshakeResponse41 payload.
    ///
    /// Optional trailing fields announced by a capability but missing at the end of the
    /// payload are accepted as absent (as servers do for old clients).
    pub fn parse(payload: &'a [u8]) -> Result<Self, Error> {
        let mut r = Reader::new(payload);
        let h = head(&mut r)?;
        let caps = h.capabilities;
        let user = r.nul_str("user name")?;
        let auth_response = if caps & CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA != 0 {
            r.lenenc_str("auth response")?
        } else if caps & CLIENT_SECURE_CONNECTION != 0 {
            let n = r.u8("auth response length")?;
            r.bytes(usize::from(n), "auth response")?
        } else {
            r.nul_str("auth response")?
        };
        let mut resp = HandshakeResponse41 {
            capabilities: caps,
            max_packet_size: h.max_packet_size,
            charset: h.charset,
            reserved: h.reserved,
            user,
            auth_response,
            database: None,
            auth_plugin_name: None,
            connect_attrs: Vec::new(),
            zstd_compression_level: None,
        };
        if caps & CLIENT_CONNECT_WITH_DB != 0 && !r.is_empty() {
            resp.database = Some(r.nul_str_or_eof());
        }
        if caps & CLIENT_PLUGIN_AUTH != 0 && !r.is_empty() {
            resp.auth_plugin_name = Some(r.nul_str_or_eof());
        }
        if caps & CLIENT_CONNECT_ATTRS != 0 && !r.is_empty() {
            let block = r.lenenc_str("connect attributes")?;
            let mut a = Reader::new(block);
            while !a.is_empty() {
                let k = a.lenenc_str("connect attribute key")?;
                let v = a.lenenc_str("connect attribute value")?;
                resp.connect_attrs.push((k, v));
            }
        }
        if caps & CLIENT_ZSTD_COMPRESSION_ALGORITHM != 0 && !r.is_empty() {
            resp.zstd_compression_level = Some(r.u8("zstd compression level")?);
        }
        Ok(resp)
    }

    /// MariaDB's extended capabilities, present when `CLIENT_MYSQL` (bit 0) is clear.
    pub fn mariadb_capabilities(&self) -> Option<u32> {
        if self.capabilities & CLIENT_MYSQL != 0 {
            return None;
        }
        let [.., a, b, c, d] = self.reserved;
        Some(u32::from_le_bytes([a, b, c, d]))
    }

    /// Appends the payload; the capabilities pick the auth response encoding and which
    /// optional fields are written (absent ones are written empty).
    ///
    /// Without `CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA`, an auth response longer than 255
    /// bytes is cut to 255 (1-byte length); without `CLIENT_SECURE_CONNECTION` either it
    /// is written NUL-terminated and cut at its first NUL.
    pub fn write(&self, out: &mut Vec<u8>) {
        let caps = self.capabilities;
        SslRequest {
            capabilities: caps,
            max_packet_size: self.max_packet_size,
            charset: self.charset,
            reserved: self.reserved,
        }
        .write(out);
        write_nul_str(out, self.user);
        if caps & CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA != 0 {
            write_lenenc_str(out, self.auth_response);
        } else if caps & CLIENT_SECURE_CONNECTION != 0 {
            let n = self.auth_response.len().min(255);
            out.push(n as u8);
            out.extend_from_slice(&self.auth_response[..n]);
        } else {
            write_nul_str(out, self.auth_response);
        }
        if caps & CLIENT_CONNECT_WITH_DB != 0 {
            write_nul_str(out, self.database.unwrap_or_default());
        }
        if caps & CLIENT_PLUGIN_AUTH != 0 {
            write_nul_str(out, self.auth_plugin_name.unwrap_or_default());
        }
        if caps & CLIENT_CONNECT_ATTRS != 0 {
            write_connect_attrs(out, &self.connect_attrs);
        }
        if caps & CLIENT_ZSTD_COMPRESSION_ALGORITHM != 0 {
            out.push(self.zstd_compression_level.unwrap_or(3));
        }
    }
}

/// Appends `s` and a NUL terminator, cutting `s` at its first NUL (which would end it early).
pub(crate) fn write_nul_str(out: &mut Vec<u8>, s: &[u8]) {
    let end = s.iter().position(|&b| b == 0).unwrap_or(s.len());
    out.extend_from_slice(&s[..end]);
    out.push(0);
}

/// Appends a connect-attributes block: lenenc total length, then lenenc key/value pairs.
pub(crate) fn write_connect_attrs(out: &mut Vec<u8>, attrs: &[(&[u8], &[u8])]) {
    let mut block = Vec::new();
    for (k, v) in attrs {
        write_lenenc_str(&mut block, k);
        write_lenenc_str(&mut block, v);
    }
    write_lenenc_int(out, block.len() as u64);
    out.extend_from_slice(&block);
}

/// Rewrites the capabilities of a HandshakeResponse41 (or SSLRequest) payload in place:
/// clears `clear` in the capability flags and, when `CLIENT_MYSQL` is clear (a MariaDB
/// client), `clear_mariadb` in the extended capabilities. Nothing else changes, so the
/// auth data is forwarded intact.
pub fn rewrite_response_capabilities(payload: &mut [u8], clear: u32, clear_mariadb: u32) -> Result<(), Error> {
    if payload.len() < SSL_REQUEST_LEN {
        return Err(Error::Truncated("handshake response"));
    }
    let caps = u32::from_le_bytes([payload[0], payload[1], payload[2], payload[3]]);
    payload[..4].copy_from_slice(&(caps & !clear).to_le_bytes());
    if caps & CLIENT_MYSQL == 0 {
        let ext = &mut payload[28..32];
        let v = u32::from_le_bytes([ext[0], ext[1], ext[2], ext[3]]) & !clear_mariadb;
        ext.copy_from_slice(&v.to_le_bytes());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: u32 = CLIENT_PROTOCOL_41 | CLIENT_LONG_PASSWORD | CLIENT_TRANSACTIONS;

    fn sample(caps: u32) -> HandshakeResponse41<'static> {
        HandshakeResponse41 {
            capabilities: caps,
            max_packet_size: 16 << 20,
            charset: CHARSET_UTF8MB4_GENERAL_CI,
            reserved: [0; 23],
            user: b"app",
            auth_response: b"\x01\x02\x03scrambled-20-bytes!",
            database: (caps & CLIENT_CONNECT_WITH_DB != 0).then_some(&b"shop"[..]),
            auth_plugin_name: (caps & CLIENT_PLUGIN_AUTH != 0).then_some(&b"mysql_native_password"[..]),
            connect_attrs: if caps & CLIENT_CONNECT_ATTRS != 0 {
                vec![(&b"_client_name"[..], &b"libmysql"[..]), (&b"_pid"[..], &b"1234"[..])]
            } else {
                Vec::new()
            },
            zstd_compression_level: (caps & CLIENT_ZSTD_COMPRESSION_ALGORITHM != 0).then_some(7),
        }
    }

    #[test]
    fn rewrites_capabilities_in_place() {
        let caps = BASE | CLIENT_SECURE_CONNECTION | CLIENT_PLUGIN_AUTH | CLIENT_QUERY_ATTRIBUTES;
        let mut resp = sample(caps & !CLIENT_LONG_PASSWORD); // a MariaDB client
        resp.reserved[19..].copy_from_slice(&0x1fu32.to_le_bytes());
        let mut out = Vec::new();
        resp.write(&mut out);
        rewrite_response_capabilities(&mut out, CLIENT_QUERY_ATTRIBUTES, MARIADB_CLIENT_PROGRESS).unwrap();
        let back = HandshakeResponse41::parse(&out).unwrap();
        assert_eq!(back.capabilities, resp.capabilities & !CLIENT_QUERY_ATTRIBUTES);
        assert_eq!(back.mariadb_capabilities(), Some(0x1e));
        assert_eq!((back.user, back.auth_response), (resp.user, resp.auth_response));
        assert!(rewrite_response_capabilities(&mut [0; 10], 0, 0).is_err());
    }

    #[test]
    fn round_trips_all_encodings() {
        let opts = [
            CLIENT_SECURE_CONNECTION,
            CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA,
            CLIENT_CONNECT_WITH_DB,
            CLIENT_PLUGIN_AUTH,
            CLIENT_CONNECT_ATTRS,
            CLIENT_ZSTD_COMPRESSION_ALGORITHM,
        ];
        for mask in 0..(1u32 << opts.len()) {
            let caps = opts.iter().enumerate().filter(|(i, _)| mask & (1 << i) != 0).fold(BASE, |c, (_, f)| c | f);
            let mut resp = sample(caps);
            if caps & (CLIENT_SECURE_CONNECTION | CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA) == 0 {
                resp.auth_response = b"oldpass"; // NUL-terminated form
            }
            let mut out = Vec::new();
            resp.write(&mut out);
            match parse_client_handshake(&out).unwrap() {
                ClientHandshake::Response(back) => assert_eq!(back, resp, "caps {caps:#x}"),
                other => panic!("{other:?}"),
            }
            for cut in 0..out.len() {
                let _ = HandshakeResponse41::parse(&out[..cut]);
            }
        }
    }

    #[test]
    fn long_lenenc_auth_response() {
        let mut resp = sample(BASE | CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA | CLIENT_SECURE_CONNECTION);
        let long = vec![7u8; 600];
        resp.auth_response = &long;
        let mut out = Vec::new();
        resp.write(&mut out);
        assert_eq!(HandshakeResponse41::parse(&out).unwrap().auth_response.len(), 600);
    }

    #[test]
    fn ssl_request() {
        let req =
            SslRequest { capabilities: BASE | CLIENT_SSL, max_packet_size: 1 << 24, charset: 45, reserved: [0; 23] };
        let mut out = Vec::new();
        req.write(&mut out);
        assert_eq!(out.len(), SSL_REQUEST_LEN);
        assert!(is_ssl_request(&out));
        assert_eq!(parse_client_handshake(&out), Ok(ClientHandshake::SslRequest(req)));
        // The full response after TLS also carries CLIENT_SSL but is longer.
        let mut full = Vec::new();
        sample(BASE | CLIENT_SSL | CLIENT_SECURE_CONNECTION).write(&mut full);
        assert!(!is_ssl_request(&full));
        assert!(matches!(parse_client_handshake(&full), Ok(ClientHandshake::Response(_))));
    }

    #[test]
    fn rejects_pre_41() {
        let mut out = Vec::new();
        sample(CLIENT_SECURE_CONNECTION).write(&mut out);
        assert!(matches!(HandshakeResponse41::parse(&out), Err(Error::Invalid(_))));
    }
}
