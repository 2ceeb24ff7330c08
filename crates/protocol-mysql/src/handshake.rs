//! Initial Handshake Packet, protocol version 10 (server → client, the first packet).
//!
//! ```text
//! 1   protocol version (10)
//! NUL server version
//! 4   connection id
//! 8   auth plugin data part 1
//! 1   filler (0)
//! 2   capability flags (low 16 bits)
//! --- the rest is optional in very old servers
//! 1   character set
//! 2   status flags
//! 2   capability flags (high 16 bits)
//! 1   auth plugin data length (if CLIENT_PLUGIN_AUTH, else 0)
//! 10  reserved (MariaDB: last 4 bytes are extended capabilities when CLIENT_MYSQL is clear)
//! $   auth plugin data part 2, max(13, length - 8) bytes (if CLIENT_SECURE_CONNECTION)
//! NUL auth plugin name (if CLIENT_PLUGIN_AUTH; some servers omit the NUL)
//! ```

use crate::error::Error;
use crate::flags::{CLIENT_MYSQL, CLIENT_PLUGIN_AUTH, CLIENT_SECURE_CONNECTION};
use crate::reader::Reader;

/// The protocol version byte of [`HandshakeV10`].
pub const PROTOCOL_VERSION_10: u8 = 10;

/// The server's Initial Handshake v10, borrowed from the payload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HandshakeV10<'a> {
    /// Human-readable server version (for example `8.0.36` or `5.5.5-10.11.6-MariaDB`).
    pub server_version: &'a [u8],
    /// The connection (thread) id.
    pub connection_id: u32,
    /// The first 8 bytes of the scramble.
    pub auth_plugin_data_1: [u8; 8],
    /// The rest of the scramble as on the wire, usually 12 bytes plus a trailing NUL.
    pub auth_plugin_data_2: &'a [u8],
    /// Server capabilities (low and high 16 bits joined).
    pub capabilities: u32,
    /// Server default collation id (only its low byte travels).
    pub charset: u8,
    /// Server status flags (`SERVER_*`).
    pub status: u16,
    /// The 10 reserved bytes, kept verbatim (see [`HandshakeV10::mariadb_capabilities`]).
    pub reserved: [u8; 10],
    /// The default authentication plugin, present with `CLIENT_PLUGIN_AUTH`.
    pub auth_plugin_name: Option<&'a [u8]>,
}

impl<'a> HandshakeV10<'a> {
    /// Parses an Initial Handshake v10 payload.
    ///
    /// A payload that ends right after the low capability flags (pre-4.1 servers) is
    /// accepted, with the later fields zero or empty.
    pub fn parse(payload: &'a [u8]) -> Result<Self, Error> {
        let mut r = Reader::new(payload);
        let version = r.u8("protocol version")?;
        if version != PROTOCOL_VERSION_10 {
            return Err(Error::UnexpectedHeader { expected: "handshake v10", found: version });
        }
        let server_version = r.nul_str("server version")?;
        let connection_id = r.u32("connection id")?;
        let auth_plugin_data_1 = r.array("auth plugin data part 1")?;
        r.u8("filler")?;
        let mut hs = HandshakeV10 {
            server_version,
            connection_id,
            auth_plugin_data_1,
            auth_plugin_data_2: &[],
            capabilities: u32::from(r.u16("capability flags")?),
            charset: 0,
            status: 0,
            reserved: [0; 10],
            auth_plugin_name: None,
        };
        if r.is_empty() {
            return Ok(hs);
        }
        hs.charset = r.u8("character set")?;
        hs.status = r.u16("status flags")?;
        hs.capabilities |= u32::from(r.u16("capability flags")?) << 16;
        let data_len = r.u8("auth plugin data length")?;
        hs.reserved = r.array("reserved")?;
        if hs.capabilities & CLIENT_SECURE_CONNECTION != 0 {
            let n = usize::from(data_len).saturating_sub(8).max(13);
            // Some servers send fewer bytes than announced: take what is there.
            hs.auth_plugin_data_2 = r.bytes(n.min(r.remaining()), "auth plugin data part 2")?;
        }
        if hs.capabilities & CLIENT_PLUGIN_AUTH != 0 {
            hs.auth_plugin_name = Some(r.nul_str_or_eof());
        }
        Ok(hs)
    }

    /// The scramble (parts 1 and 2, without part 2's trailing NUL): 20 bytes usually.
    pub fn scramble(&self) -> Vec<u8> {
        let part2 = self.auth_plugin_data_2.strip_suffix(&[0]).unwrap_or(self.auth_plugin_data_2);
        [&self.auth_plugin_data_1[..], part2].concat()
    }

    /// MariaDB's extended capabilities (`MARIADB_CLIENT_*`), present when `CLIENT_MYSQL`
    /// (bit 0) is clear.
    pub fn mariadb_capabilities(&self) -> Option<u32> {
        if self.capabilities & CLIENT_MYSQL != 0 {
            return None;
        }
        let [.., a, b, c, d] = self.reserved;
        Some(u32::from_le_bytes([a, b, c, d]))
    }

    /// Clears the capability bits in `clear` (for example `CLIENT_SSL | CLIENT_COMPRESS`,
    /// which a proxy cannot inspect) and sets those in `set`.
    pub fn rewrite_capabilities(&mut self, clear: u32, set: u32) {
        self.capabilities = (self.capabilities & !clear) | set;
    }

    /// Appends the payload (no packet header).
    ///
    /// Part 2 of the auth plugin data is written as given, zero-padded to the 13 bytes
    /// parsers expect; the auth plugin data length is `8 + part 2` with
    /// `CLIENT_PLUGIN_AUTH`, else 0 (and part 2 is then cut to 13 bytes).
    pub fn write(&self, out: &mut Vec<u8>) {
        out.push(PROTOCOL_VERSION_10);
        out.extend_from_slice(self.server_version);
        out.push(0);
        out.extend_from_slice(&self.connection_id.to_le_bytes());
        out.extend_from_slice(&self.auth_plugin_data_1);
        out.push(0);
        let caps = self.capabilities.to_le_bytes();
        out.extend_from_slice(&caps[..2]);
        out.push(self.charset);
        out.extend_from_slice(&self.status.to_le_bytes());
        out.extend_from_slice(&caps[2..]);
        let part2_len =
            if self.capabilities & CLIENT_SECURE_CONNECTION != 0 { self.auth_plugin_data_2.len().max(13) } else { 0 };
        let data_len = if self.capabilities & CLIENT_PLUGIN_AUTH != 0 { (8 + part2_len).min(255) as u8 } else { 0 };
        out.push(data_len);
        out.extend_from_slice(&self.reserved);
        if self.capabilities & CLIENT_SECURE_CONNECTION != 0 {
            // With CLIENT_PLUGIN_AUTH the parser reads exactly data_len - 8 bytes: keep them in step.
            let n = if data_len != 0 { usize::from(data_len) - 8 } else { 13 };
            let data = &self.auth_plugin_data_2[..self.auth_plugin_data_2.len().min(n)];
            out.extend_from_slice(data);
            out.resize(out.len() + (n - data.len()), 0);
        }
        if self.capabilities & CLIENT_PLUGIN_AUTH != 0 {
            out.extend_from_slice(self.auth_plugin_name.unwrap_or_default());
            out.push(0);
        }
    }
}

/// Rewrites the capability flags of an Initial Handshake v10 payload in place: clears
/// `clear`, sets `set`. Only the flag bytes change, so the rest is forwarded verbatim.
pub fn rewrite_handshake_capabilities(payload: &mut [u8], clear: u32, set: u32) -> Result<(), Error> {
    let hs = HandshakeV10::parse(payload)?;
    let low_at = 1 + hs.server_version.len() + 1 + 4 + 8 + 1;
    let has_high = payload.len() > low_at + 2;
    let caps = (hs.capabilities & !clear) | set;
    let b = caps.to_le_bytes();
    let low = payload.get_mut(low_at..low_at + 2).ok_or(Error::Truncated("capability flags"))?;
    low.copy_from_slice(&b[..2]);
    if has_high {
        let high_at = low_at + 2 + 1 + 2;
        let high = payload.get_mut(high_at..high_at + 2).ok_or(Error::Truncated("capability flags"))?;
        high.copy_from_slice(&b[2..]);
    }
    Ok(())
}

/// Clears the MariaDB extended capability bits in `clear` (`MARIADB_CLIENT_*`) of an
/// Initial Handshake v10 payload in place. Servers that are not MariaDB (`CLIENT_MYSQL`
/// set) or payloads without the reserved bytes are left alone.
pub fn rewrite_handshake_mariadb_capabilities(payload: &mut [u8], clear: u32) -> Result<(), Error> {
    let hs = HandshakeV10::parse(payload)?;
    let Some(ext) = hs.mariadb_capabilities() else { return Ok(()) };
    // low caps, charset, status, high caps, data length, then 6 reserved bytes.
    let at = 1 + hs.server_version.len() + 1 + 4 + 8 + 1 + 2 + 1 + 2 + 2 + 1 + 6;
    if let Some(b) = payload.get_mut(at..at + 4) {
        b.copy_from_slice(&(ext & !clear).to_le_bytes());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flags::*;

    /// A MySQL 8.0 greeting as captured on the wire (payload only).
    fn mysql8() -> Vec<u8> {
        let mut p = vec![10];
        p.extend_from_slice(b"8.0.36\0");
        p.extend_from_slice(&42u32.to_le_bytes());
        p.extend_from_slice(b"abcdefgh\0");
        p.extend_from_slice(&[0xff, 0xff, 0xff, 0x02, 0x00, 0xff, 0xdf, 21]);
        p.extend_from_slice(&[0; 10]);
        p.extend_from_slice(b"ijklmnopqrst\0");
        p.extend_from_slice(b"caching_sha2_password\0");
        p
    }

    #[test]
    fn parse_mysql8() {
        let p = mysql8();
        let hs = HandshakeV10::parse(&p).unwrap();
        assert_eq!(hs.server_version, b"8.0.36");
        assert_eq!(hs.connection_id, 42);
        assert_eq!(hs.capabilities, 0xdfff_ffff);
        assert_eq!((hs.charset, hs.status), (255, SERVER_STATUS_AUTOCOMMIT));
        assert_eq!(hs.scramble(), b"abcdefghijklmnopqrst");
        assert_eq!(hs.auth_plugin_name, Some(&b"caching_sha2_password"[..]));
        assert_eq!(hs.mariadb_capabilities(), None);
        let mut out = Vec::new();
        hs.write(&mut out);
        assert_eq!(out, p);
        for cut in 1..p.len() - 30 {
            let _ = HandshakeV10::parse(&p[..cut]); // no panic
        }
    }

    #[test]
    fn rewrite_ssl_and_compress() {
        let p = mysql8();
        let mut hs = HandshakeV10::parse(&p).unwrap();
        hs.rewrite_capabilities(CLIENT_SSL | CLIENT_COMPRESS, 0);
        let mut out = Vec::new();
        hs.write(&mut out);
        let back = HandshakeV10::parse(&out).unwrap();
        assert_eq!(back.capabilities & (CLIENT_SSL | CLIENT_COMPRESS), 0);
        assert_eq!(back.capabilities | CLIENT_SSL | CLIENT_COMPRESS, 0xdfff_ffff);

        let mut inplace = p.clone();
        rewrite_handshake_capabilities(&mut inplace, CLIENT_SSL | CLIENT_COMPRESS, 0).unwrap();
        assert_eq!(inplace, out);
        rewrite_handshake_capabilities(&mut inplace, CLIENT_QUERY_ATTRIBUTES, 0).unwrap();
        let before = inplace.clone();
        rewrite_handshake_mariadb_capabilities(&mut inplace, u32::MAX).unwrap(); // MySQL: no-op
        assert_eq!(inplace, before);
        assert_eq!(HandshakeV10::parse(&inplace).unwrap().capabilities & CLIENT_QUERY_ATTRIBUTES, 0);
    }

    #[test]
    fn mariadb_and_missing_nul() {
        let mut p = mysql8();
        let caps_at = 1 + 7 + 4 + 8 + 1;
        p[caps_at] &= !1; // clear CLIENT_MYSQL
        let reserved_at = caps_at + 2 + 1 + 2 + 2 + 1;
        p[reserved_at + 6..reserved_at + 10].copy_from_slice(&0x1du32.to_le_bytes());
        p.pop(); // plugin name without NUL (MySQL bug #59453)
        let hs = HandshakeV10::parse(&p).unwrap();
        assert_eq!(hs.mariadb_capabilities(), Some(0x1d));
        let mut q = p.clone();
        rewrite_handshake_mariadb_capabilities(&mut q, MARIADB_CLIENT_PROGRESS | MARIADB_CLIENT_CACHE_METADATA)
            .unwrap();
        assert_eq!(HandshakeV10::parse(&q).unwrap().mariadb_capabilities(), Some(0x0c));
        assert_eq!(HandshakeV10::parse(&q).unwrap().auth_plugin_name, hs.auth_plugin_name);
        assert_eq!(hs.auth_plugin_name, Some(&b"caching_sha2_password"[..]));
    }

    #[test]
    fn rejects_other_versions() {
        assert!(matches!(HandshakeV10::parse(&[9, 0]), Err(Error::UnexpectedHeader { .. })));
        assert!(matches!(HandshakeV10::parse(&[0xff, 0x15, 0x04]), Err(Error::UnexpectedHeader { found: 0xff, .. })));
        assert!(HandshakeV10::parse(&[]).is_err());
    }
}
