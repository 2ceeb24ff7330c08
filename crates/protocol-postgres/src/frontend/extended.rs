//! The extended query protocol's messages, and FunctionCall.
//!
//! A client prepares with Parse (a statement: SQL with `$1..$n`, and parameter type OIDs,
//! 0 for "let the server infer"), binds values with Bind (a portal: a statement plus
//! parameter values and the formats of the results), asks what a statement or portal
//! produces with Describe, runs a portal with Execute (a row limit of 0 means all), frees
//! statements and portals with Close, and ends the batch with Sync, after which the server
//! sends ReadyForQuery. Empty names mean the unnamed statement or portal.
//!
//! Formats are int16 codes, 0 text and 1 binary. A Bind with no codes means all text, one
//! code applies to every value, otherwise one code per value.

use crate::error::Error;
use crate::reader::Reader;
use crate::writer;

/// Text format code.
pub const FORMAT_TEXT: i16 = 0;
/// Binary format code.
pub const FORMAT_BINARY: i16 = 1;

/// Parse: prepare a statement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Parse<'a> {
    /// The statement's name; empty for the unnamed statement.
    pub name: &'a [u8],
    /// The SQL text (one statement).
    pub query: &'a [u8],
    /// Parameter type OIDs the client fixes (0: unspecified); may be fewer than `$n`s.
    pub param_types: Vec<u32>,
}

impl<'a> Parse<'a> {
    /// Parses the body of a 'P' message.
    #[allow(clippy::self_named_constructors)]
    pub fn parse(body: &'a [u8]) -> Result<Parse<'a>, Error> {
        let mut r = Reader::new(body);
        let name = r.cstr("Parse statement name")?;
        let query = r.cstr("Parse query")?;
        let n = r.count16("Parse parameter count")?;
        let param_types = r.u32s(n, "Parse parameter types")?;
        r.finish("Parse")?;
        Ok(Parse { name, query, param_types })
    }

    /// Appends the whole message.
    pub fn write(&self, out: &mut Vec<u8>) {
        let at = writer::begin(out, b'P');
        writer::cstr(out, self.name);
        writer::cstr(out, self.query);
        writer::count16(out, self.param_types.len());
        for t in &self.param_types {
            out.extend_from_slice(&t.to_be_bytes());
        }
        writer::finish(out, at);
    }
}

/// Bind: make a portal from a statement and parameter values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bind<'a> {
    /// The portal's name; empty for the unnamed portal.
    pub portal: &'a [u8],
    /// The prepared statement's name; empty for the unnamed statement.
    pub statement: &'a [u8],
    /// Parameter format codes (none: all text; one: for all; else one per value).
    pub param_formats: Vec<i16>,
    /// Parameter values, `None` for NULL.
    pub params: Vec<Option<&'a [u8]>>,
    /// Result column format codes, with the same convention.
    pub result_formats: Vec<i16>,
}

impl<'a> Bind<'a> {
    /// Parses the body of a 'B' message.
    pub fn parse(body: &'a [u8]) -> Result<Bind<'a>, Error> {
        let mut r = Reader::new(body);
        let portal = r.cstr("Bind portal name")?;
        let statement = r.cstr("Bind statement name")?;
        let n = r.count16("Bind parameter format count")?;
        let param_formats = r.i16s(n, "Bind parameter formats")?;
        let n = r.count16("Bind parameter count")?;
        if n.saturating_mul(4) > r.remaining() {
            return Err(Error::Truncated("Bind parameters"));
        }
        let params = (0..n).map(|_| r.nullable_bytes("Bind parameter")).collect::<Result<_, _>>()?;
        let n = r.count16("Bind result format count")?;
        let result_formats = r.i16s(n, "Bind result formats")?;
        r.finish("Bind")?;
        Ok(Bind { portal, statement, param_formats, params, result_formats })
    }

    /// The format code of parameter `i` by the protocol's convention.
    pub fn param_format(&self, i: usize) -> i16 {
        match self.param_formats.len() {
            0 => FORMAT_TEXT,
            1 => self.param_formats[0],
            _ => self.param_formats.get(i).copied().unwrap_or(FORMAT_TEXT),
        }
    }

    /// Appends the whole message.
    pub fn write(&self, out: &mut Vec<u8>) {
        let at = writer::begin(out, b'B');
        writer::cstr(out, self.portal);
        writer::cstr(out, self.statement);
        writer::i16s(out, &self.param_formats);
        writer::count16(out, self.params.len());
        for p in &self.params {
            writer::nullable_bytes(out, *p);
        }
        writer::i16s(out, &self.result_formats);
        writer::finish(out, at);
    }
}

/// What Describe and Close name: a prepared statement or a portal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    /// `'S'`: a prepared statement.
    Statement,
    /// `'P'`: a portal.
    Portal,
}

impl Target {
    fn parse(b: u8, what: &'static str) -> Result<Target, Error> {
        match b {
            b'S' => Ok(Target::Statement),
            b'P' => Ok(Target::Portal),
            _ => Err(Error::Invalid(what)),
        }
    }

    /// The byte on the wire.
    pub fn byte(self) -> u8 {
        match self {
            Target::Statement => b'S',
            Target::Portal => b'P',
        }
    }
}

/// Describe ('D') or Close ('C'): a target and its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Named<'a> {
    /// Statement or portal.
    pub target: Target,
    /// Its name; empty for the unnamed one.
    pub name: &'a [u8],
}

impl<'a> Named<'a> {
    /// Parses the body of a Describe or Close message (`what` names which, for errors).
    pub fn parse(body: &'a [u8], what: &'static str) -> Result<Named<'a>, Error> {
        let mut r = Reader::new(body);
        let target = Target::parse(r.u8(what)?, what)?;
        let name = r.cstr(what)?;
        r.finish(what)?;
        Ok(Named { target, name })
    }

    /// Appends the whole message with type byte `tag` (`b'D'` or `b'C'`).
    pub fn write(&self, out: &mut Vec<u8>, tag: u8) {
        let at = writer::begin(out, tag);
        out.push(self.target.byte());
        writer::cstr(out, self.name);
        writer::finish(out, at);
    }
}

/// Execute: run a portal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Execute<'a> {
    /// The portal's name; empty for the unnamed portal.
    pub portal: &'a [u8],
    /// At most this many rows (then PortalSuspended); 0 for all.
    pub max_rows: i32,
}

impl<'a> Execute<'a> {
    /// Parses the body of an 'E' message.
    pub fn parse(body: &'a [u8]) -> Result<Execute<'a>, Error> {
        let mut r = Reader::new(body);
        let portal = r.cstr("Execute portal name")?;
        let max_rows = r.i32("Execute row limit")?;
        r.finish("Execute")?;
        Ok(Execute { portal, max_rows })
    }

    /// Appends the whole message.
    pub fn write(&self, out: &mut Vec<u8>) {
        let at = writer::begin(out, b'E');
        writer::cstr(out, self.portal);
        out.extend_from_slice(&self.max_rows.to_be_bytes());
        writer::finish(out, at);
    }
}

/// FunctionCall ('F'): the legacy fast-path call of a function by OID.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionCall<'a> {
    /// The function's OID.
    pub function: u32,
    /// Argument format codes (same convention as Bind).
    pub arg_formats: Vec<i16>,
    /// Argument values, `None` for NULL.
    pub args: Vec<Option<&'a [u8]>>,
    /// The result's format code.
    pub result_format: i16,
}

impl<'a> FunctionCall<'a> {
    /// Parses the body of an 'F' message.
    pub fn parse(body: &'a [u8]) -> Result<FunctionCall<'a>, Error> {
        let mut r = Reader::new(body);
        let function = r.u32("FunctionCall function OID")?;
        let n = r.count16("FunctionCall argument format count")?;
        let arg_formats = r.i16s(n, "FunctionCall argument formats")?;
        let n = r.count16("FunctionCall argument count")?;
        if n.saturating_mul(4) > r.remaining() {
            return Err(Error::Truncated("FunctionCall arguments"));
        }
        let args = (0..n).map(|_| r.nullable_bytes("FunctionCall argument")).collect::<Result<_, _>>()?;
        let result_format = r.i16("FunctionCall result format")?;
        r.finish("FunctionCall")?;
        Ok(FunctionCall { function, arg_formats, args, result_format })
    }

    /// Appends the whole message.
    pub fn write(&self, out: &mut Vec<u8>) {
        let at = writer::begin(out, b'F');
        out.extend_from_slice(&self.function.to_be_bytes());
        writer::i16s(out, &self.arg_formats);
        writer::count16(out, self.args.len());
        for a in &self.args {
            writer::nullable_bytes(out, *a);
        }
        out.extend_from_slice(&self.result_format.to_be_bytes());
        writer::finish(out, at);
    }
}
