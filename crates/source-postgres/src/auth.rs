//! Answering the server's authentication requests: trust (nothing to answer), cleartext
//! password, md5, and SCRAM-SHA-256 (postgres-protocol's client exchange). Pure logic:
//! each request in, the message to send out.
//!
//! Channel binding (`SCRAM-SHA-256-PLUS`, which ties the exchange to the TLS session) is
//! not spoken: the client says so (`n` in the GS2 header, libpq's `channel_binding=disable`),
//! which the server accepts whether or not it offers binding. Over TLS the server is then
//! authenticated by its certificate (`sslmode=verify-full`), not by the exchange.

use postgres_protocol::authentication::md5_hash;
use postgres_protocol::authentication::sasl::{ChannelBinding, ScramSha256, SCRAM_SHA_256};
use protocol_postgres::frontend::auth::{write_password, write_sasl_response};
use protocol_postgres::scram::{ServerFinal, ServerFirst};
use protocol_postgres::{Authentication, SaslInitialResponse};

use crate::error::Error;

/// The client's side of one authentication exchange.
pub(crate) struct Authenticator {
    user: String,
    password: Option<String>,
    scram: Option<ScramSha256>,
    /// SCRAM's SASLFinal (the server's proof) was received and checked.
    scram_verified: bool,
}

impl Authenticator {
    pub(crate) fn new(user: &str, password: Option<&str>) -> Authenticator {
        Authenticator {
            user: user.to_string(),
            password: password.map(str::to_string),
            scram: None,
            scram_verified: false,
        }
    }

    fn password(&self, method: &str) -> Result<&str, Error> {
        self.password
            .as_deref()
            .ok_or_else(|| Error::Auth(format!("the server asks for a password ({method}) and none was given")))
    }

    /// Appends the answer to `request` to `out`; `Ok(true)` once authentication succeeded.
    pub(crate) fn respond(&mut self, request: &Authentication<'_>, out: &mut Vec<u8>) -> Result<bool, Error> {
        match request {
            Authentication::Ok => {
                // An Ok in the middle of SCRAM would skip checking that the server knows
                // the password: refuse it, as libpq does.
                if self.scram.is_some() && !self.scram_verified {
                    return Err(Error::Auth("the server ended SCRAM without proving it knows the password".into()));
                }
                return Ok(true);
            }
            Authentication::CleartextPassword => write_password(out, self.password("cleartext")?.as_bytes()),
            Authentication::Md5Password { salt } => {
                let hash = md5_hash(self.user.as_bytes(), self.password("md5")?.as_bytes(), *salt);
                write_password(out, hash.as_bytes());
            }
            Authentication::Sasl(mechanisms) => {
                if !mechanisms.iter().any(|m| *m == SCRAM_SHA_256.as_bytes()) {
                    let offered: Vec<_> = mechanisms.iter().map(|m| String::from_utf8_lossy(m)).collect();
                    return Err(Error::Auth(format!("no supported SASL mechanism offered ({})", offered.join(", "))));
                }
                let scram = ScramSha256::new(self.password("SCRAM-SHA-256")?.as_bytes(), ChannelBinding::unsupported());
                SaslInitialResponse { mechanism: SCRAM_SHA_256.as_bytes(), data: Some(scram.message()) }.write(out);
                self.scram = Some(scram);
            }
            Authentication::SaslContinue(data) => {
                let scram = self.scram.as_mut().ok_or_else(|| Error::Protocol("SASLContinue before SASL".into()))?;
                ServerFirst::parse(data).map_err(|e| Error::Protocol(format!("SCRAM server-first-message: {e}")))?;
                scram.update(data).map_err(|e| Error::Auth(format!("SCRAM: {e}")))?;
                write_sasl_response(out, scram.message());
            }
            Authentication::SaslFinal(data) => {
                let scram = self.scram.as_mut().ok_or_else(|| Error::Protocol("SASLFinal before SASL".into()))?;
                match ServerFinal::parse(data) {
                    Ok(ServerFinal::Error(why)) => return Err(Error::Auth(format!("the server refused SCRAM: {why}"))),
                    Ok(ServerFinal::Verifier(_)) => {}
                    Err(e) => return Err(Error::Protocol(format!("SCRAM server-final-message: {e}"))),
                }
                scram.finish(data).map_err(|e| Error::Auth(format!("SCRAM: the server's signature is wrong: {e}")))?;
                self.scram_verified = true;
            }
            other => {
                return Err(Error::Auth(format!(
                    "the server asks for an authentication method this client does not speak (code {})",
                    other.code()
                )))
            }
        }
        Ok(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol_postgres::scram::{ChannelBinding, ClientFirst};
    use protocol_postgres::{parse_frontend_frame, FrontendMessage};

    #[test]
    fn scram_first_message_is_what_protocol_postgres_reads() {
        let mut a = Authenticator::new("app", Some("secret"));
        let mut out = Vec::new();
        assert!(!a.respond(&Authentication::Sasl(vec![b"SCRAM-SHA-256-PLUS", b"SCRAM-SHA-256"]), &mut out).unwrap());
        let (f, _) = parse_frontend_frame(&out).unwrap().unwrap();
        let FrontendMessage::Password(body) = FrontendMessage::parse(f).unwrap() else { panic!() };
        let init = SaslInitialResponse::parse(body).unwrap();
        assert_eq!(init.mechanism, b"SCRAM-SHA-256");
        let first = ClientFirst::parse(init.data.unwrap()).unwrap();
        assert_eq!((first.channel_binding, first.gs2_header()), (ChannelBinding::NotSupported, "n,,"));
        // An Ok before the server proved itself is refused.
        assert!(matches!(a.respond(&Authentication::Ok, &mut out), Err(Error::Auth(_))));
        let err = a.respond(&Authentication::SaslFinal(b"e=invalid-proof"), &mut out).unwrap_err();
        assert!(err.to_string().contains("invalid-proof"), "{err}");
        let mut none = Authenticator::new("app", None);
        assert!(matches!(none.respond(&Authentication::CleartextPassword, &mut out), Err(Error::Auth(_))));
        assert!(matches!(none.respond(&Authentication::Gss, &mut out), Err(Error::Auth(_))));
    }
}
