//! COPY's sub-protocol: CopyInResponse ('G'), CopyOutResponse ('H') and CopyBothResponse
//! ('W') start it; CopyData ('d'), CopyDone ('c') and CopyFail ('f', client only) carry it.
//!
//! `COPY ... FROM STDIN` answers CopyInResponse and the client streams CopyData; `COPY ...
//! TO STDOUT` answers CopyOutResponse and the server streams CopyData then CopyDone;
//! `START_REPLICATION` on a walsender answers CopyBothResponse and both sides stream
//! CopyData (see [`crate::replication`] for what those carry).

use crate::error::Error;
use crate::reader::Reader;
use crate::writer;

/// The body of CopyInResponse, CopyOutResponse and CopyBothResponse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CopyResponse {
    /// 0: textual (rows separated by newlines), 1: binary.
    pub format: u8,
    /// One format code per column (all 0 when `format` is 0).
    pub column_formats: Vec<i16>,
}

impl CopyResponse {
    /// Parses the body of a 'G', 'H' or 'W' message.
    pub fn parse(body: &[u8]) -> Result<CopyResponse, Error> {
        let mut r = Reader::new(body);
        let format = r.u8("COPY format")?;
        if format > 1 {
            return Err(Error::Invalid("COPY format"));
        }
        let n = r.count16("COPY column count")?;
        let column_formats = r.i16s(n, "COPY column formats")?;
        r.finish("CopyResponse")?;
        Ok(CopyResponse { format, column_formats })
    }

    /// Appends the whole message with type byte `tag` (`b'G'`, `b'H'` or `b'W'`).
    pub fn write(&self, out: &mut Vec<u8>, tag: u8) {
        let at = writer::begin(out, tag);
        out.push(self.format);
        writer::i16s(out, &self.column_formats);
        writer::finish(out, at);
    }
}
