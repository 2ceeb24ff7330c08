//! ErrorResponse ('E') and NoticeResponse ('N'): typed fields, each a code byte and a
//! NUL-terminated string, ended by a zero byte.
//!
//! Every error has at least `S` (severity, localized), `V` (severity, never localized;
//! PostgreSQL 9.6+), `C` (SQLSTATE code) and `M` (message). A client branches on `C`:
//! `42P01` undefined table, `28P01` wrong password, `55000` object not in prerequisite
//! state (wal_level), `42704` undefined object (a replication slot), ... The proxy relays
//! them unchanged.

use crate::error::Error;
use crate::reader::Reader;
use crate::writer;

/// Field code: severity (localized).
pub const SEVERITY: u8 = b'S';
/// Field code: severity (never localized: `ERROR`, `FATAL`, `PANIC`, `WARNING`, `NOTICE`, ...).
pub const SEVERITY_NONLOCALIZED: u8 = b'V';
/// Field code: SQLSTATE.
pub const CODE: u8 = b'C';
/// Field code: primary message.
pub const MESSAGE: u8 = b'M';
/// Field code: detail.
pub const DETAIL: u8 = b'D';
/// Field code: hint.
pub const HINT: u8 = b'H';
/// Field code: cursor position in the query (1-based characters).
pub const POSITION: u8 = b'P';
/// Field code: the context (call stack).
pub const WHERE: u8 = b'W';
/// Field code: schema name.
pub const SCHEMA: u8 = b's';
/// Field code: table name.
pub const TABLE: u8 = b't';
/// Field code: column name.
pub const COLUMN: u8 = b'c';
/// Field code: constraint name.
pub const CONSTRAINT: u8 = b'n';

/// The fields of an ErrorResponse or NoticeResponse, in the order sent.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ErrorFields<'a> {
    /// `(code byte, value)` pairs.
    pub fields: Vec<(u8, &'a [u8])>,
}

impl<'a> ErrorFields<'a> {
    /// Parses the body of an 'E' or 'N' message.
    pub fn parse(body: &'a [u8]) -> Result<ErrorFields<'a>, Error> {
        let mut r = Reader::new(body);
        let mut fields = Vec::new();
        loop {
            let code = r.u8("error field code")?;
            if code == 0 {
                break;
            }
            fields.push((code, r.cstr("error field value")?));
        }
        r.finish("ErrorResponse")?;
        Ok(ErrorFields { fields })
    }

    /// The value of field `code` (the first one if repeated).
    pub fn get(&self, code: u8) -> Option<&'a [u8]> {
        self.fields.iter().find(|(c, _)| *c == code).map(|(_, v)| *v)
    }

    /// The SQLSTATE code (`C`), empty if missing.
    pub fn code(&self) -> &'a [u8] {
        self.get(CODE).unwrap_or_default()
    }

    /// The primary message (`M`), empty if missing.
    pub fn message(&self) -> &'a [u8] {
        self.get(MESSAGE).unwrap_or_default()
    }

    /// The unlocalized severity (`V`), else the localized one (`S`), empty if neither.
    pub fn severity(&self) -> &'a [u8] {
        self.get(SEVERITY_NONLOCALIZED).or_else(|| self.get(SEVERITY)).unwrap_or_default()
    }

    /// Appends the whole message with type byte `tag` (`b'E'` or `b'N'`).
    pub fn write(&self, out: &mut Vec<u8>, tag: u8) {
        let at = writer::begin(out, tag);
        for (code, value) in &self.fields {
            out.push(*code);
            writer::cstr(out, value);
        }
        out.push(0);
        writer::finish(out, at);
    }

    /// Appends an ErrorResponse the way the server composes one: severity (both forms),
    /// SQLSTATE and message.
    pub fn write_error(out: &mut Vec<u8>, severity: &str, code: &str, message: &str) {
        ErrorFields {
            fields: vec![
                (SEVERITY, severity.as_bytes()),
                (SEVERITY_NONLOCALIZED, severity.as_bytes()),
                (CODE, code.as_bytes()),
                (MESSAGE, message.as_bytes()),
            ],
        }
        .write(out, b'E');
    }
}

impl std::fmt::Display for ErrorFields<'_> {
    /// `SEVERITY: message (SQLSTATE code)`, as psql shows it, plus the detail if any.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        write!(f, "{}: {} (SQLSTATE {})", s(self.severity()), s(self.message()), s(self.code()))?;
        if let Some(d) = self.get(DETAIL) {
            write!(f, "; {}", s(d))?;
        }
        Ok(())
    }
}
