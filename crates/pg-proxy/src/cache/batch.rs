//! An extended-protocol batch held back from the server until its Sync, so that it can be
//! answered from memory: `[Parse] Bind [Describe] Execute Sync` of one statement into the
//! unnamed portal (what drivers send for one parameterized query: psycopg, asyncpg, JDBC,
//! pgbench -M extended/prepared). Anything else in the batch (Close, Flush, a second
//! Execute, a named portal) releases it to the server as it is.
//!
//! An Execute's row limit is part of the batch's bytes, so of its key: asyncpg's
//! `fetchrow`/`fetchval` send `Execute` for 1 row, answered by the row then
//! `PortalSuspended`. Outside a transaction block the Sync ends the portal with its implicit
//! transaction, so that reply is the whole answer and is kept; inside one the portal stays
//! open for more Executes, and such a reply is never answered from memory there
//! (`relay.rs`, `hit_in_tx`).

use protocol_postgres::frontend::{Bind, Execute, Named, Parse, Target, FORMAT_TEXT};

/// The batch so far.
#[derive(Default)]
pub struct Held {
    /// Messages are being held.
    pub holding: bool,
    /// Their bytes, in order.
    pub bytes: Vec<u8>,
    /// Still of the answerable shape.
    ok: bool,
    /// A Parse in the batch: (statement name, text).
    pub parse: Option<(String, String)>,
    /// The statement the Bind names.
    pub statement: Option<String>,
    /// The Bind's parameters as text (None: NULL or a binary value that is not an integer).
    pub params: Vec<Option<String>>,
    executes: u32,
}

impl Held {
    /// Starts holding a batch.
    pub fn start(&mut self) {
        *self = Held { holding: true, ok: true, ..Held::default() };
    }

    /// Holds one message (`tag`, `body`), noting whether the batch keeps its shape.
    pub fn push(&mut self, tag: u8, body: &[u8]) {
        self.bytes.push(tag);
        self.bytes.extend_from_slice(&(body.len() as u32 + 4).to_be_bytes());
        self.bytes.extend_from_slice(body);
        let fits = match tag {
            b'P' => match Parse::parse(body) {
                Ok(p) if self.statement.is_none() && self.parse.is_none() => {
                    let (name, text) = (String::from_utf8_lossy(p.name), String::from_utf8_lossy(p.query));
                    self.parse = Some((name.into_owned(), text.into_owned()));
                    true
                }
                _ => false,
            },
            b'B' => match Bind::parse(body) {
                Ok(b) if b.portal.is_empty() && self.statement.is_none() => {
                    self.statement = Some(String::from_utf8_lossy(b.statement).into_owned());
                    self.params = (0..b.params.len()).map(|i| param(&b, i)).collect();
                    true
                }
                _ => false,
            },
            b'D' => matches!(Named::parse(body, "Describe"), Ok(n) if n.name.is_empty() && n.target == Target::Portal),
            b'E' => {
                self.executes += 1;
                matches!(Execute::parse(body), Ok(e) if e.portal.is_empty()) && self.executes == 1
            }
            _ => false,
        };
        self.ok &= fits;
    }

    /// Whether the batch, complete at its Sync, can be answered from memory.
    pub fn answerable(&self) -> bool {
        self.ok && self.executes == 1 && self.statement.is_some()
    }

    /// Ends the batch, giving back its bytes.
    pub fn release(&mut self) -> Vec<u8> {
        self.holding = false;
        std::mem::take(&mut self.bytes)
    }
}

/// Parameter `i` as text: text values as they are, binary int2/int4/int8 decoded.
fn param(b: &Bind<'_>, i: usize) -> Option<String> {
    let v = b.params.get(i).copied().flatten()?;
    if b.param_format(i) == FORMAT_TEXT {
        return std::str::from_utf8(v).ok().map(str::to_string);
    }
    match v.len() {
        2 => Some(i16::from_be_bytes(v.try_into().ok()?).to_string()),
        4 => Some(i32::from_be_bytes(v.try_into().ok()?).to_string()),
        8 => Some(i64::from_be_bytes(v.try_into().ok()?).to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(m: impl Fn(&mut Vec<u8>)) -> Vec<u8> {
        let mut out = Vec::new();
        m(&mut out);
        out[5..].to_vec()
    }

    #[test]
    fn shapes() {
        let p = body(|o| Parse { name: b"s1", query: b"SELECT v FROM t WHERE id = $1", param_types: vec![] }.write(o));
        let bind = |portal: &'static [u8], v: &'static [u8]| {
            body(move |o| {
                Bind { portal, statement: b"s1", param_formats: vec![], params: vec![Some(v)], result_formats: vec![] }
                    .write(o)
            })
        };
        let d = body(|o| {
            protocol_postgres::FrontendMessage::Describe(Named { target: Target::Portal, name: b"" }).write(o)
        });
        let e = |rows| body(move |o| Execute { portal: b"", max_rows: rows }.write(o));
        let mut h = Held::default();
        h.start();
        for (t, b) in [(b'P', &p), (b'B', &bind(b"", b"42")), (b'D', &d), (b'E', &e(0))] {
            h.push(t, b);
        }
        assert!(h.answerable());
        assert_eq!(h.params, [Some("42".to_string())]);
        assert_eq!(h.parse.as_ref().map(|p| p.0.as_str()), Some("s1"));
        h.start();
        for (t, b) in [(b'B', &bind(b"", b"1")), (b'E', &e(1))] {
            h.push(t, b);
        }
        assert!(h.answerable(), "a row limit (asyncpg's fetchrow): in the key with the rest");
        h.start();
        for (t, b) in [(b'B', &bind(b"p", b"1")), (b'E', &e(0))] {
            h.push(t, b);
        }
        assert!(!h.answerable(), "a named portal");
        h.start();
        for (t, b) in [(b'B', &bind(b"", b"1")), (b'E', &e(0)), (b'E', &e(0))] {
            h.push(t, b);
        }
        assert!(!h.answerable(), "two executes");
    }
}
