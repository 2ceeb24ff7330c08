//! The server's side of authentication: the 'R' messages.
//!
//! After the StartupMessage the server says which method it wants (int32 code then its
//! data) and, once satisfied, AuthenticationOk. SCRAM-SHA-256 (the default since
//! PostgreSQL 14) is AuthenticationSASL (the mechanisms offered), SASLContinue
//! (server-first-message), SASLFinal (server-final-message with the signature the client
//! must check), then Ok.

use crate::error::Error;
use crate::reader::Reader;
use crate::writer;

/// An authentication request or result ('R').
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Authentication<'a> {
    /// 0: authenticated.
    Ok,
    /// 2: Kerberos V5 (no longer supported by servers).
    KerberosV5,
    /// 3: send the password in clear text.
    CleartextPassword,
    /// 5: send `md5` + hex(md5(hex(md5(password + user)) + salt)).
    Md5Password {
        /// The 4-byte salt.
        salt: [u8; 4],
    },
    /// 7: start GSSAPI.
    Gss,
    /// 8: GSSAPI or SSPI data.
    GssContinue(&'a [u8]),
    /// 9: start SSPI.
    Sspi,
    /// 10: SASL, with the mechanisms offered in the server's order of preference.
    Sasl(Vec<&'a [u8]>),
    /// 11: a SASL challenge (SCRAM's server-first-message).
    SaslContinue(&'a [u8]),
    /// 12: SASL outcome data (SCRAM's server-final-message).
    SaslFinal(&'a [u8]),
}

impl<'a> Authentication<'a> {
    /// Parses the body of an 'R' message.
    pub fn parse(body: &'a [u8]) -> Result<Authentication<'a>, Error> {
        let mut r = Reader::new(body);
        let code = r.u32("authentication code")?;
        let m = match code {
            0 => Authentication::Ok,
            2 => Authentication::KerberosV5,
            3 => Authentication::CleartextPassword,
            5 => Authentication::Md5Password { salt: r.array("MD5 salt")? },
            7 => Authentication::Gss,
            8 => Authentication::GssContinue(r.rest()),
            9 => Authentication::Sspi,
            10 => {
                let mut mechanisms = Vec::new();
                loop {
                    let m = r.cstr("SASL mechanism")?;
                    if m.is_empty() {
                        break;
                    }
                    mechanisms.push(m);
                }
                Authentication::Sasl(mechanisms)
            }
            11 => Authentication::SaslContinue(r.rest()),
            12 => Authentication::SaslFinal(r.rest()),
            _ => return Err(Error::Invalid("authentication code")),
        };
        r.finish("Authentication")?;
        Ok(m)
    }

    /// The int32 code on the wire.
    pub fn code(&self) -> u32 {
        match self {
            Authentication::Ok => 0,
            Authentication::KerberosV5 => 2,
            Authentication::CleartextPassword => 3,
            Authentication::Md5Password { .. } => 5,
            Authentication::Gss => 7,
            Authentication::GssContinue(_) => 8,
            Authentication::Sspi => 9,
            Authentication::Sasl(_) => 10,
            Authentication::SaslContinue(_) => 11,
            Authentication::SaslFinal(_) => 12,
        }
    }

    /// Appends the whole message.
    pub fn write(&self, out: &mut Vec<u8>) {
        let at = writer::begin(out, b'R');
        out.extend_from_slice(&self.code().to_be_bytes());
        match self {
            Authentication::Md5Password { salt } => out.extend_from_slice(salt),
            Authentication::GssContinue(d) | Authentication::SaslContinue(d) | Authentication::SaslFinal(d) => {
                out.extend_from_slice(d)
            }
            Authentication::Sasl(mechanisms) => {
                for m in mechanisms {
                    writer::cstr(out, m);
                }
                out.push(0);
            }
            _ => {}
        }
        writer::finish(out, at);
    }
}
