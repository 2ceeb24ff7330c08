//! SCRAM-SHA-256 messages (RFC 5802 / 7677), as PostgreSQL carries them inside
//! SASLInitialResponse, AuthenticationSASLContinue, SASLResponse and AuthenticationSASLFinal:
//! the attribute syntax only (`n,,n=,r=...`), no cryptography. Base64 values stay base64;
//! the crypto belongs to whoever holds the keys (a client: postgres-protocol's
//! `ScramSha256`; a server or proxy: its verifier, [`StoredVerifier`]).
//!
//! The exchange: client-first (`gs2-header` then `n=user,r=client-nonce`), server-first
//! (`r=client-nonce+server-nonce,s=salt,i=iterations`), client-final (`c=base64(gs2-header
//! [+ binding data]),r=nonce,p=proof`), server-final (`v=signature` or `e=error`). The
//! "AuthMessage" both sides sign is client-first-bare + "," + server-first + "," +
//! client-final-without-proof, hence [`ClientFirst::bare`] and
//! [`ClientFinal::without_proof`]. PostgreSQL ignores the SCRAM user name (the startup
//! packet's `user` counts) and libpq sends it empty.

use crate::error::Error;

/// The GS2 channel-binding flag of a client-first-message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChannelBinding<'a> {
    /// `n`: the client does not support channel binding.
    NotSupported,
    /// `y`: the client supports it but thinks the server does not (a server that does
    /// must refuse: a downgrade).
    NotUsed,
    /// `p=name`: the client binds to the channel (`tls-server-end-point`).
    Required(&'a str),
}

/// client-first-message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientFirst<'a> {
    /// The GS2 channel-binding flag.
    pub channel_binding: ChannelBinding<'a>,
    /// `a=authzid`, if any (PostgreSQL refuses one).
    pub authzid: Option<&'a str>,
    /// `n=` user name (ignored by PostgreSQL, usually empty).
    pub user: &'a str,
    /// `r=` client nonce.
    pub nonce: &'a str,
    /// The whole message, for [`ClientFirst::bare`].
    raw: &'a str,
    /// Where client-first-message-bare starts in `raw`.
    bare_at: usize,
}

fn utf8<'a>(b: &'a [u8], what: &'static str) -> Result<&'a str, Error> {
    std::str::from_utf8(b).map_err(|_| Error::Invalid(what))
}

/// `key=value` with the expected key.
fn attr<'a>(field: Option<&'a str>, key: char, what: &'static str) -> Result<&'a str, Error> {
    let f = field.ok_or(Error::Truncated(what))?;
    let mut c = f.chars();
    if c.next() != Some(key) || c.next() != Some('=') {
        return Err(Error::Invalid(what));
    }
    Ok(&f[2..])
}

impl<'a> ClientFirst<'a> {
    /// Parses a client-first-message (a SASLInitialResponse's data).
    pub fn parse(msg: &'a [u8]) -> Result<ClientFirst<'a>, Error> {
        let raw = utf8(msg, "SCRAM client-first-message")?;
        let mut parts = raw.splitn(3, ',');
        let flag = parts.next().unwrap_or_default();
        let channel_binding = match flag {
            "n" => ChannelBinding::NotSupported,
            "y" => ChannelBinding::NotUsed,
            f => match f.strip_prefix("p=") {
                Some(name) if !name.is_empty() => ChannelBinding::Required(name),
                _ => return Err(Error::Invalid("SCRAM channel binding flag")),
            },
        };
        let authzid = match parts.next().ok_or(Error::Truncated("SCRAM gs2 header"))? {
            "" => None,
            a => Some(attr(Some(a), 'a', "SCRAM authzid")?),
        };
        let bare = parts.next().ok_or(Error::Truncated("SCRAM client-first-message-bare"))?;
        let bare_at = raw.len() - bare.len();
        let mut fields = bare.split(',');
        let user = attr(fields.next(), 'n', "SCRAM user name")?;
        let nonce = attr(fields.next(), 'r', "SCRAM client nonce")?;
        if nonce.is_empty() {
            return Err(Error::Invalid("SCRAM client nonce"));
        }
        Ok(ClientFirst { channel_binding, authzid, user, nonce, raw, bare_at })
    }

    /// client-first-message-bare (`n=...,r=...`): the first part of the AuthMessage.
    pub fn bare(&self) -> &'a str {
        &self.raw[self.bare_at..]
    }

    /// The GS2 header (`n,,`): the client-final's `c=` is its base64 (plus binding data).
    pub fn gs2_header(&self) -> &'a str {
        &self.raw[..self.bare_at]
    }

    /// Composes a client-first-message.
    pub fn write(out: &mut Vec<u8>, channel_binding: ChannelBinding<'_>, user: &str, nonce: &str) {
        match channel_binding {
            ChannelBinding::NotSupported => out.extend_from_slice(b"n,,"),
            ChannelBinding::NotUsed => out.extend_from_slice(b"y,,"),
            ChannelBinding::Required(name) => {
                out.extend_from_slice(b"p=");
                out.extend_from_slice(name.as_bytes());
                out.extend_from_slice(b",,");
            }
        }
        out.extend_from_slice(format!("n={user},r={nonce}").as_bytes());
    }
}

/// server-first-message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServerFirst<'a> {
    /// `r=`: the client's nonce followed by the server's.
    pub nonce: &'a str,
    /// `s=`: the salt, base64.
    pub salt: &'a str,
    /// `i=`: the PBKDF2 iteration count.
    pub iterations: u32,
}

impl<'a> ServerFirst<'a> {
    /// Parses a server-first-message (an AuthenticationSASLContinue's data).
    pub fn parse(msg: &'a [u8]) -> Result<ServerFirst<'a>, Error> {
        let raw = utf8(msg, "SCRAM server-first-message")?;
        let mut fields = raw.split(',');
        let nonce = attr(fields.next(), 'r', "SCRAM server nonce")?;
        let salt = attr(fields.next(), 's', "SCRAM salt")?;
        let iterations = attr(fields.next(), 'i', "SCRAM iteration count")?;
        let iterations = iterations.parse().ok().filter(|&i| i > 0).ok_or(Error::Invalid("SCRAM iteration count"))?;
        Ok(ServerFirst { nonce, salt, iterations })
    }

    /// Appends the message.
    pub fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(format!("r={},s={},i={}", self.nonce, self.salt, self.iterations).as_bytes());
    }
}

/// client-final-message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientFinal<'a> {
    /// `c=`: base64 of the GS2 header (and channel-binding data).
    pub channel_binding: &'a str,
    /// `r=`: the combined nonce (must equal the server-first's).
    pub nonce: &'a str,
    /// `p=`: the client proof, base64.
    pub proof: &'a str,
    raw: &'a str,
}

impl<'a> ClientFinal<'a> {
    /// Parses a client-final-message (a SASLResponse's body).
    pub fn parse(msg: &'a [u8]) -> Result<ClientFinal<'a>, Error> {
        let raw = utf8(msg, "SCRAM client-final-message")?;
        let mut fields = raw.split(',');
        let channel_binding = attr(fields.next(), 'c', "SCRAM channel binding")?;
        let nonce = attr(fields.next(), 'r', "SCRAM nonce")?;
        let proof = attr(fields.next_back(), 'p', "SCRAM client proof")?;
        Ok(ClientFinal { channel_binding, nonce, proof, raw })
    }

    /// client-final-message-without-proof: the last part of the AuthMessage.
    pub fn without_proof(&self) -> &'a str {
        &self.raw[..self.raw.len() - self.proof.len() - 3]
    }

    /// Composes a client-final-message.
    pub fn write(out: &mut Vec<u8>, channel_binding: &str, nonce: &str, proof: &str) {
        out.extend_from_slice(format!("c={channel_binding},r={nonce},p={proof}").as_bytes());
    }
}

/// server-final-message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerFinal<'a> {
    /// `v=`: the server signature, base64 (the client must check it).
    Verifier(&'a str),
    /// `e=`: why the server refused.
    Error(&'a str),
}

impl<'a> ServerFinal<'a> {
    /// Parses a server-final-message (an AuthenticationSASLFinal's data).
    pub fn parse(msg: &'a [u8]) -> Result<ServerFinal<'a>, Error> {
        let raw = utf8(msg, "SCRAM server-final-message")?;
        let first = raw.split(',').next();
        match first.map(|f| f.as_bytes().first()) {
            Some(Some(b'v')) => Ok(ServerFinal::Verifier(attr(first, 'v', "SCRAM verifier")?)),
            Some(Some(b'e')) => Ok(ServerFinal::Error(attr(first, 'e', "SCRAM server error")?)),
            _ => Err(Error::Invalid("SCRAM server-final-message")),
        }
    }

    /// Appends the message.
    pub fn write(&self, out: &mut Vec<u8>) {
        let (k, v) = match self {
            ServerFinal::Verifier(v) => ('v', v),
            ServerFinal::Error(e) => ('e', e),
        };
        out.extend_from_slice(format!("{k}={v}").as_bytes());
    }
}

/// A SCRAM-SHA-256 verifier as `pg_authid.rolpassword` stores it:
/// `SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>` (base64 parts).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StoredVerifier<'a> {
    /// PBKDF2 iterations.
    pub iterations: u32,
    /// The salt, base64.
    pub salt: &'a str,
    /// StoredKey = H(HMAC(SaltedPassword, "Client Key")), base64.
    pub stored_key: &'a str,
    /// ServerKey = HMAC(SaltedPassword, "Server Key"), base64.
    pub server_key: &'a str,
}

impl<'a> StoredVerifier<'a> {
    /// Parses a stored verifier.
    pub fn parse(s: &'a str) -> Result<StoredVerifier<'a>, Error> {
        let rest = s.strip_prefix("SCRAM-SHA-256$").ok_or(Error::Invalid("SCRAM verifier prefix"))?;
        let (params, keys) = rest.split_once('$').ok_or(Error::Truncated("SCRAM verifier keys"))?;
        let (iterations, salt) = params.split_once(':').ok_or(Error::Truncated("SCRAM verifier salt"))?;
        let (stored_key, server_key) = keys.split_once(':').ok_or(Error::Truncated("SCRAM verifier server key"))?;
        let iterations =
            iterations.parse().ok().filter(|&i| i > 0).ok_or(Error::Invalid("SCRAM verifier iterations"))?;
        if salt.is_empty() || stored_key.is_empty() || server_key.is_empty() {
            return Err(Error::Invalid("SCRAM verifier"));
        }
        Ok(StoredVerifier { iterations, salt, stored_key, server_key })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // RFC 7677's SCRAM-SHA-256 example exchange.
    const CLIENT_FIRST: &str = "n,,n=user,r=rOprNGfwEbeRWgbNEkqO";
    const SERVER_FIRST: &str = "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
    const CLIENT_FINAL: &str =
        "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=";
    const SERVER_FINAL: &str = "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=";

    #[test]
    fn rfc7677_exchange() {
        let cf = ClientFirst::parse(CLIENT_FIRST.as_bytes()).unwrap();
        assert_eq!((cf.channel_binding, cf.authzid, cf.user), (ChannelBinding::NotSupported, None, "user"));
        assert_eq!(
            (cf.nonce, cf.bare(), cf.gs2_header()),
            ("rOprNGfwEbeRWgbNEkqO", "n=user,r=rOprNGfwEbeRWgbNEkqO", "n,,")
        );
        let mut out = Vec::new();
        ClientFirst::write(&mut out, cf.channel_binding, cf.user, cf.nonce);
        assert_eq!(out, CLIENT_FIRST.as_bytes());

        let sf = ServerFirst::parse(SERVER_FIRST.as_bytes()).unwrap();
        assert_eq!((sf.salt, sf.iterations), ("W22ZaJ0SNY7soEsUEjb6gQ==", 4096));
        assert!(sf.nonce.starts_with(cf.nonce));
        out.clear();
        sf.write(&mut out);
        assert_eq!(out, SERVER_FIRST.as_bytes());

        let fin = ClientFinal::parse(CLIENT_FINAL.as_bytes()).unwrap();
        assert_eq!((fin.channel_binding, fin.nonce), ("biws", sf.nonce));
        assert_eq!(fin.without_proof(), "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0");
        out.clear();
        ClientFinal::write(&mut out, fin.channel_binding, fin.nonce, fin.proof);
        assert_eq!(out, CLIENT_FINAL.as_bytes());

        let sfin = ServerFinal::parse(SERVER_FINAL.as_bytes()).unwrap();
        assert_eq!(sfin, ServerFinal::Verifier("6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="));
        assert_eq!(ServerFinal::parse(b"e=invalid-proof").unwrap(), ServerFinal::Error("invalid-proof"));
    }

    #[test]
    fn malformed_and_stored() {
        for bad in ["", "n", "n,,", "x,,n=,r=a", "n,,r=a", "n,,n=,r=", "p=,,n=,r=a", "n,b=x,n=,r=a"] {
            assert!(ClientFirst::parse(bad.as_bytes()).is_err(), "{bad}");
        }
        assert!(matches!(
            ClientFirst::parse(b"p=tls-server-end-point,,n=,r=x").unwrap().channel_binding,
            ChannelBinding::Required("tls-server-end-point")
        ));
        assert!(ServerFirst::parse(b"r=a,s=b,i=0").is_err());
        assert!(ServerFirst::parse(b"r=a,s=b").is_err());
        assert!(ClientFinal::parse(b"c=biws,r=a").is_err());
        assert!(ServerFinal::parse(b"x=1").is_err());
        let v = StoredVerifier::parse("SCRAM-SHA-256$4096:c2FsdA==$c3RvcmVk:c2VydmVy").unwrap();
        assert_eq!((v.iterations, v.salt, v.stored_key, v.server_key), (4096, "c2FsdA==", "c3RvcmVk", "c2VydmVy"));
        assert!(StoredVerifier::parse("md5abc").is_err());
        assert!(StoredVerifier::parse("SCRAM-SHA-256$x:s$a:b").is_err());
    }
}
