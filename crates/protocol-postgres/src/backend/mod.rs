//! Messages a server sends (one type byte each).
//!
//! [`BackendMessage::parse`] turns a [`crate::Frame`] into a typed message borrowing from
//! the frame's body; [`BackendMessage::write`] appends the whole message. Parsing then
//! composing gives back the same bytes.
//!
//! A session starts with Authentication ('R') messages, then ParameterStatus ('S') for
//! each reported setting, BackendKeyData ('K') and ReadyForQuery ('Z'). Each query then
//! gets RowDescription / DataRow* / CommandComplete, or EmptyQueryResponse, or
//! ErrorResponse, and finally ReadyForQuery with the transaction status. NoticeResponse
//! ('N'), NotificationResponse ('A') and ParameterStatus may arrive at any time.

pub mod auth;
pub mod fields;
pub mod rows;
pub mod status;

use crate::copy::CopyResponse;
use crate::error::Error;
use crate::frame::{write_frame, Frame};
use crate::reader::Reader;
use crate::writer;

pub use auth::Authentication;
pub use fields::ErrorFields;
pub use rows::{DataRow, DataRowIter, FieldDescription, ParameterDescription, RowDescription};
pub use status::{
    command_rows, BackendKeyData, NegotiateProtocolVersion, Notification, ParameterStatus, TransactionStatus,
};

/// A message from a server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BackendMessage<'a> {
    /// 'R' Authentication*.
    Authentication(Authentication<'a>),
    /// 'K' BackendKeyData.
    BackendKeyData(BackendKeyData<'a>),
    /// 'S' ParameterStatus.
    ParameterStatus(ParameterStatus<'a>),
    /// 'Z' ReadyForQuery.
    ReadyForQuery(TransactionStatus),
    /// 'T' RowDescription.
    RowDescription(RowDescription<'a>),
    /// 'D' DataRow.
    DataRow(DataRow<'a>),
    /// 'C' CommandComplete: the command tag (`SELECT 3`, `INSERT 0 1`, `CREATE TABLE`).
    CommandComplete(&'a [u8]),
    /// 'I' EmptyQueryResponse: the query string was empty.
    EmptyQueryResponse,
    /// 'E' ErrorResponse.
    ErrorResponse(ErrorFields<'a>),
    /// 'N' NoticeResponse.
    NoticeResponse(ErrorFields<'a>),
    /// '1' ParseComplete.
    ParseComplete,
    /// '2' BindComplete.
    BindComplete,
    /// '3' CloseComplete.
    CloseComplete,
    /// 'n' NoData: the statement or portal returns no rows.
    NoData,
    /// 't' ParameterDescription.
    ParameterDescription(ParameterDescription),
    /// 's' PortalSuspended: Execute's row limit was reached.
    PortalSuspended,
    /// 'G' CopyInResponse.
    CopyInResponse(CopyResponse),
    /// 'H' CopyOutResponse.
    CopyOutResponse(CopyResponse),
    /// 'W' CopyBothResponse (streaming replication).
    CopyBothResponse(CopyResponse),
    /// 'd' CopyData.
    CopyData(&'a [u8]),
    /// 'c' CopyDone.
    CopyDone,
    /// 'A' NotificationResponse.
    NotificationResponse(Notification<'a>),
    /// 'v' NegotiateProtocolVersion.
    NegotiateProtocolVersion(NegotiateProtocolVersion<'a>),
    /// 'V' FunctionCallResponse: the result, `None` for NULL.
    FunctionCallResponse(Option<&'a [u8]>),
}

impl<'a> BackendMessage<'a> {
    /// Parses one frame from a server.
    pub fn parse(frame: Frame<'a>) -> Result<BackendMessage<'a>, Error> {
        let body = frame.body;
        Ok(match frame.tag {
            b'R' => BackendMessage::Authentication(Authentication::parse(body)?),
            b'K' => BackendMessage::BackendKeyData(BackendKeyData::parse(body)?),
            b'S' => BackendMessage::ParameterStatus(ParameterStatus::parse(body)?),
            b'Z' => BackendMessage::ReadyForQuery(TransactionStatus::parse(body)?),
            b'T' => BackendMessage::RowDescription(RowDescription::parse(body)?),
            b'D' => BackendMessage::DataRow(DataRow::parse(body)?),
            b'C' => {
                let mut r = Reader::new(body);
                let tag = r.cstr("command tag")?;
                r.finish("CommandComplete")?;
                BackendMessage::CommandComplete(tag)
            }
            b'I' => empty(body, "EmptyQueryResponse", BackendMessage::EmptyQueryResponse)?,
            b'E' => BackendMessage::ErrorResponse(ErrorFields::parse(body)?),
            b'N' => BackendMessage::NoticeResponse(ErrorFields::parse(body)?),
            b'1' => empty(body, "ParseComplete", BackendMessage::ParseComplete)?,
            b'2' => empty(body, "BindComplete", BackendMessage::BindComplete)?,
            b'3' => empty(body, "CloseComplete", BackendMessage::CloseComplete)?,
            b'n' => empty(body, "NoData", BackendMessage::NoData)?,
            b't' => BackendMessage::ParameterDescription(ParameterDescription::parse(body)?),
            b's' => empty(body, "PortalSuspended", BackendMessage::PortalSuspended)?,
            b'G' => BackendMessage::CopyInResponse(CopyResponse::parse(body)?),
            b'H' => BackendMessage::CopyOutResponse(CopyResponse::parse(body)?),
            b'W' => BackendMessage::CopyBothResponse(CopyResponse::parse(body)?),
            b'd' => BackendMessage::CopyData(body),
            b'c' => empty(body, "CopyDone", BackendMessage::CopyDone)?,
            b'A' => BackendMessage::NotificationResponse(Notification::parse(body)?),
            b'v' => BackendMessage::NegotiateProtocolVersion(NegotiateProtocolVersion::parse(body)?),
            b'V' => {
                let mut r = Reader::new(body);
                let v = r.nullable_bytes("function result")?;
                r.finish("FunctionCallResponse")?;
                BackendMessage::FunctionCallResponse(v)
            }
            tag => return Err(Error::UnknownTag { side: "backend", tag }),
        })
    }

    /// The message's type byte.
    pub fn tag(&self) -> u8 {
        match self {
            BackendMessage::Authentication(_) => b'R',
            BackendMessage::BackendKeyData(_) => b'K',
            BackendMessage::ParameterStatus(_) => b'S',
            BackendMessage::ReadyForQuery(_) => b'Z',
            BackendMessage::RowDescription(_) => b'T',
            BackendMessage::DataRow(_) => b'D',
            BackendMessage::CommandComplete(_) => b'C',
            BackendMessage::EmptyQueryResponse => b'I',
            BackendMessage::ErrorResponse(_) => b'E',
            BackendMessage::NoticeResponse(_) => b'N',
            BackendMessage::ParseComplete => b'1',
            BackendMessage::BindComplete => b'2',
            BackendMessage::CloseComplete => b'3',
            BackendMessage::NoData => b'n',
            BackendMessage::ParameterDescription(_) => b't',
            BackendMessage::PortalSuspended => b's',
            BackendMessage::CopyInResponse(_) => b'G',
            BackendMessage::CopyOutResponse(_) => b'H',
            BackendMessage::CopyBothResponse(_) => b'W',
            BackendMessage::CopyData(_) => b'd',
            BackendMessage::CopyDone => b'c',
            BackendMessage::NotificationResponse(_) => b'A',
            BackendMessage::NegotiateProtocolVersion(_) => b'v',
            BackendMessage::FunctionCallResponse(_) => b'V',
        }
    }

    /// Appends the whole message.
    pub fn write(&self, out: &mut Vec<u8>) {
        let tag = self.tag();
        match self {
            BackendMessage::Authentication(m) => m.write(out),
            BackendMessage::BackendKeyData(m) => m.write(out),
            BackendMessage::ParameterStatus(m) => m.write(out),
            BackendMessage::ReadyForQuery(s) => s.write(out),
            BackendMessage::RowDescription(m) => m.write(out),
            BackendMessage::DataRow(row) => row.write_to(out),
            BackendMessage::CommandComplete(t) => {
                let at = writer::begin(out, tag);
                writer::cstr(out, t);
                writer::finish(out, at);
            }
            BackendMessage::ErrorResponse(f) | BackendMessage::NoticeResponse(f) => f.write(out, tag),
            BackendMessage::ParameterDescription(m) => m.write(out),
            BackendMessage::CopyInResponse(m)
            | BackendMessage::CopyOutResponse(m)
            | BackendMessage::CopyBothResponse(m) => m.write(out, tag),
            BackendMessage::CopyData(d) => write_frame(out, tag, d),
            BackendMessage::NotificationResponse(m) => m.write(out),
            BackendMessage::NegotiateProtocolVersion(m) => m.write(out),
            BackendMessage::FunctionCallResponse(v) => {
                let at = writer::begin(out, tag);
                writer::nullable_bytes(out, *v);
                writer::finish(out, at);
            }
            BackendMessage::EmptyQueryResponse
            | BackendMessage::ParseComplete
            | BackendMessage::BindComplete
            | BackendMessage::CloseComplete
            | BackendMessage::NoData
            | BackendMessage::PortalSuspended
            | BackendMessage::CopyDone => write_frame(out, tag, b""),
        }
    }
}

fn empty<'a>(body: &[u8], what: &'static str, m: BackendMessage<'a>) -> Result<BackendMessage<'a>, Error> {
    if body.is_empty() {
        Ok(m)
    } else {
        Err(Error::TrailingBytes(what))
    }
}
