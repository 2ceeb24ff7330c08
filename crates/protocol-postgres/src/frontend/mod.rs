//! Messages a client sends after the startup packet (one type byte each).
//!
//! [`FrontendMessage::parse`] turns a [`crate::Frame`] into a typed message borrowing from
//! the frame's body; [`FrontendMessage::write`] appends the whole message (type byte and
//! length included). Parsing then composing gives back the same bytes.
//!
//! The simple query protocol is one Query ('Q', SQL text, possibly several statements);
//! the extended protocol is Parse / Bind / Describe / Execute / Close, then Sync ('S'),
//! with Flush ('H') asking the server to send what it has buffered. COPY FROM STDIN sends
//! CopyData ('d') then CopyDone ('c') or CopyFail ('f'). Terminate ('X') says goodbye.

pub mod auth;
pub mod extended;

use crate::error::Error;
use crate::frame::{write_frame, Frame};
use crate::reader::Reader;
use crate::writer;

pub use auth::SaslInitialResponse;
pub use extended::{Bind, Execute, FunctionCall, Named, Parse, Target, FORMAT_BINARY, FORMAT_TEXT};

/// A message from a client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FrontendMessage<'a> {
    /// 'Q' Query: SQL text (without the terminating NUL).
    Query(&'a [u8]),
    /// 'P' Parse.
    Parse(Parse<'a>),
    /// 'B' Bind.
    Bind(Bind<'a>),
    /// 'D' Describe.
    Describe(Named<'a>),
    /// 'E' Execute.
    Execute(Execute<'a>),
    /// 'C' Close.
    Close(Named<'a>),
    /// 'S' Sync.
    Sync,
    /// 'H' Flush.
    Flush,
    /// 'd' CopyData (COPY FROM STDIN data, or a replication client's status messages).
    CopyData(&'a [u8]),
    /// 'c' CopyDone.
    CopyDone,
    /// 'f' CopyFail: the error message (without NUL).
    CopyFail(&'a [u8]),
    /// 'F' FunctionCall.
    FunctionCall(FunctionCall<'a>),
    /// 'X' Terminate.
    Terminate,
    /// 'p': PasswordMessage, SASLInitialResponse, SASLResponse or GSSResponse, depending on
    /// what the server asked for; the raw body (see [`auth`]).
    Password(&'a [u8]),
}

impl<'a> FrontendMessage<'a> {
    /// Parses one frame from a client.
    pub fn parse(frame: Frame<'a>) -> Result<FrontendMessage<'a>, Error> {
        let body = frame.body;
        Ok(match frame.tag {
            b'Q' => FrontendMessage::Query(one_cstr(body, "Query")?),
            b'P' => FrontendMessage::Parse(Parse::parse(body)?),
            b'B' => FrontendMessage::Bind(Bind::parse(body)?),
            b'D' => FrontendMessage::Describe(Named::parse(body, "Describe")?),
            b'E' => FrontendMessage::Execute(Execute::parse(body)?),
            b'C' => FrontendMessage::Close(Named::parse(body, "Close")?),
            b'S' => empty(body, "Sync", FrontendMessage::Sync)?,
            b'H' => empty(body, "Flush", FrontendMessage::Flush)?,
            b'd' => FrontendMessage::CopyData(body),
            b'c' => empty(body, "CopyDone", FrontendMessage::CopyDone)?,
            b'f' => FrontendMessage::CopyFail(one_cstr(body, "CopyFail")?),
            b'F' => FrontendMessage::FunctionCall(FunctionCall::parse(body)?),
            b'X' => empty(body, "Terminate", FrontendMessage::Terminate)?,
            b'p' => FrontendMessage::Password(body),
            tag => return Err(Error::UnknownTag { side: "frontend", tag }),
        })
    }

    /// The message's type byte.
    pub fn tag(&self) -> u8 {
        match self {
            FrontendMessage::Query(_) => b'Q',
            FrontendMessage::Parse(_) => b'P',
            FrontendMessage::Bind(_) => b'B',
            FrontendMessage::Describe(_) => b'D',
            FrontendMessage::Execute(_) => b'E',
            FrontendMessage::Close(_) => b'C',
            FrontendMessage::Sync => b'S',
            FrontendMessage::Flush => b'H',
            FrontendMessage::CopyData(_) => b'd',
            FrontendMessage::CopyDone => b'c',
            FrontendMessage::CopyFail(_) => b'f',
            FrontendMessage::FunctionCall(_) => b'F',
            FrontendMessage::Terminate => b'X',
            FrontendMessage::Password(_) => b'p',
        }
    }

    /// Appends the whole message.
    pub fn write(&self, out: &mut Vec<u8>) {
        match self {
            FrontendMessage::Query(sql) => write_cstr_message(out, b'Q', sql),
            FrontendMessage::Parse(m) => m.write(out),
            FrontendMessage::Bind(m) => m.write(out),
            FrontendMessage::Describe(m) => m.write(out, b'D'),
            FrontendMessage::Execute(m) => m.write(out),
            FrontendMessage::Close(m) => m.write(out, b'C'),
            FrontendMessage::CopyFail(msg) => write_cstr_message(out, b'f', msg),
            FrontendMessage::FunctionCall(m) => m.write(out),
            FrontendMessage::CopyData(data) | FrontendMessage::Password(data) => write_frame(out, self.tag(), data),
            FrontendMessage::Sync | FrontendMessage::Flush | FrontendMessage::CopyDone | FrontendMessage::Terminate => {
                write_frame(out, self.tag(), b"")
            }
        }
    }
}

/// Whether the server answers a client message of type `tag` with exactly one
/// ReadyForQuery (Query, Sync and FunctionCall do; a proxy counts them to know how many
/// replies are in flight in a pipeline).
pub fn expects_ready_for_query(tag: u8) -> bool {
    matches!(tag, b'Q' | b'S' | b'F')
}

/// A body that is exactly one NUL-terminated string.
fn one_cstr<'a>(body: &'a [u8], what: &'static str) -> Result<&'a [u8], Error> {
    let mut r = Reader::new(body);
    let s = r.cstr(what)?;
    r.finish(what)?;
    Ok(s)
}

fn empty<'a>(body: &[u8], what: &'static str, m: FrontendMessage<'a>) -> Result<FrontendMessage<'a>, Error> {
    if body.is_empty() {
        Ok(m)
    } else {
        Err(Error::TrailingBytes(what))
    }
}

fn write_cstr_message(out: &mut Vec<u8>, tag: u8, s: &[u8]) {
    let at = writer::begin(out, tag);
    writer::cstr(out, s);
    writer::finish(out, at);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_frontend_frame;

    fn round_trip(m: FrontendMessage<'_>) {
        let mut wire = Vec::new();
        m.write(&mut wire);
        let (frame, used) = parse_frontend_frame(&wire).unwrap().unwrap();
        assert_eq!(used, wire.len());
        assert_eq!(FrontendMessage::parse(frame).unwrap(), m);
    }

    #[test]
    fn every_message_round_trips() {
        round_trip(FrontendMessage::Query(b"SELECT 1; SELECT 2"));
        round_trip(FrontendMessage::Parse(Parse { name: b"s1", query: b"SELECT $1::int", param_types: vec![23] }));
        round_trip(FrontendMessage::Bind(Bind {
            portal: b"",
            statement: b"s1",
            param_formats: vec![1],
            params: vec![Some(&[0, 0, 0, 7]), None, Some(b"")],
            result_formats: vec![0, 1],
        }));
        round_trip(FrontendMessage::Describe(Named { target: Target::Portal, name: b"" }));
        round_trip(FrontendMessage::Execute(Execute { portal: b"p", max_rows: 100 }));
        round_trip(FrontendMessage::Close(Named { target: Target::Statement, name: b"s1" }));
        for m in [FrontendMessage::Sync, FrontendMessage::Flush, FrontendMessage::CopyDone, FrontendMessage::Terminate]
        {
            round_trip(m);
        }
        round_trip(FrontendMessage::CopyData(b"1\tone\n"));
        round_trip(FrontendMessage::CopyFail(b"client gave up"));
        round_trip(FrontendMessage::FunctionCall(FunctionCall {
            function: 1598,
            arg_formats: vec![],
            args: vec![None],
            result_format: 0,
        }));
        round_trip(FrontendMessage::Password(b"secret\0"));
    }

    #[test]
    fn bad_bodies_are_errors() {
        let parse = |tag, body| FrontendMessage::parse(Frame { tag, body });
        assert_eq!(parse(b'Q', b"SELECT 1"), Err(Error::Truncated("Query")));
        assert_eq!(parse(b'S', b"x"), Err(Error::TrailingBytes("Sync")));
        assert_eq!(parse(b'D', b"X\0"), Err(Error::Invalid("Describe")));
        // A Bind claiming 30,000 parameters in a short body is refused without allocating.
        assert_eq!(parse(b'B', b"\0\0\0\0\x75\x30"), Err(Error::Truncated("Bind parameters")));
        assert_eq!(parse(b'B', b"\0\0\0\0\0\x01\xff\xff\xff\xfe\0\0"), Err(Error::Invalid("Bind parameter")));
        assert_eq!(parse(b'P', b"\0q\0\xff\xff"), Err(Error::Truncated("Parse parameter types")));
        assert_eq!(parse(b'Z', b""), Err(Error::UnknownTag { side: "frontend", tag: b'Z' }));
    }

    #[test]
    fn sasl_messages() {
        let m = SaslInitialResponse { mechanism: b"SCRAM-SHA-256", data: Some(b"n,,n=,r=abc") };
        let mut wire = Vec::new();
        m.write(&mut wire);
        let (f, _) = parse_frontend_frame(&wire).unwrap().unwrap();
        let FrontendMessage::Password(body) = FrontendMessage::parse(f).unwrap() else { panic!() };
        assert_eq!(SaslInitialResponse::parse(body).unwrap(), m);
        wire.clear();
        auth::write_password(&mut wire, b"md5abc");
        assert_eq!(auth::parse_password(&wire[5..]).unwrap(), b"md5abc");
        assert!(expects_ready_for_query(b'S') && !expects_ready_for_query(b'H'));
    }
}
