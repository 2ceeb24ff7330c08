//! The client's side of authentication: the 'p' messages.
//!
//! One type byte carries four messages; which one depends on what the server asked for
//! (the client cannot be parsed without that context): PasswordMessage after
//! AuthenticationCleartextPassword or AuthenticationMD5Password (the password, or
//! `md5` + hex(md5(hex(md5(password + user)) + salt)), NUL-terminated);
//! SASLInitialResponse after AuthenticationSASL (the chosen mechanism, then the client's
//! first message with an int32 length, -1 for none); SASLResponse after
//! AuthenticationSASLContinue (the raw SASL message, the whole body); GSSResponse
//! (raw GSSAPI/SSPI data). [`crate::FrontendMessage::Password`] holds the raw body.

use crate::error::Error;
use crate::reader::Reader;
use crate::writer;

/// The password in a PasswordMessage body (cleartext, or the `md5...` digest).
pub fn parse_password(body: &[u8]) -> Result<&[u8], Error> {
    let mut r = Reader::new(body);
    let password = r.cstr("password")?;
    r.finish("PasswordMessage")?;
    Ok(password)
}

/// Appends a PasswordMessage.
pub fn write_password(out: &mut Vec<u8>, password: &[u8]) {
    let at = writer::begin(out, b'p');
    writer::cstr(out, password);
    writer::finish(out, at);
}

/// Appends a SASLResponse or GSSResponse (the body is the raw data).
pub fn write_sasl_response(out: &mut Vec<u8>, data: &[u8]) {
    crate::frame::write_frame(out, b'p', data);
}

/// SASLInitialResponse: the mechanism the client picked, and its first message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SaslInitialResponse<'a> {
    /// The mechanism name (`SCRAM-SHA-256`, `SCRAM-SHA-256-PLUS`).
    pub mechanism: &'a [u8],
    /// The client-first-message; `None` if the client sent none (length -1).
    pub data: Option<&'a [u8]>,
}

impl<'a> SaslInitialResponse<'a> {
    /// Parses a 'p' body as a SASLInitialResponse.
    pub fn parse(body: &'a [u8]) -> Result<SaslInitialResponse<'a>, Error> {
        let mut r = Reader::new(body);
        let mechanism = r.cstr("SASL mechanism")?;
        let data = r.nullable_bytes("SASL initial response")?;
        r.finish("SASLInitialResponse")?;
        Ok(SaslInitialResponse { mechanism, data })
    }

    /// Appends the whole message.
    pub fn write(&self, out: &mut Vec<u8>) {
        let at = writer::begin(out, b'p');
        writer::cstr(out, self.mechanism);
        writer::nullable_bytes(out, self.data);
        writer::finish(out, at);
    }
}
