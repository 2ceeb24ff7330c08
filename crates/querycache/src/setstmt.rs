//! `SET` statements: which session variables change, and whether the cache can follow.

use std::sync::Arc;

use crate::ast::SlotRef;
use crate::kind::{write_all, Kind, SetItem, SetValue};
use crate::lexer::ident;
use crate::lexer::{Tok, Token};

fn text<'a>(digest: &'a [u8], t: &Token) -> &'a [u8] {
    &digest[t.start..t.end]
}

fn word(digest: &[u8], t: Option<&Token>, w: &str) -> bool {
    t.is_some_and(|t| t.kind == Tok::Word && text(digest, t).eq_ignore_ascii_case(w.as_bytes()))
}

/// Split at commas outside parentheses.
fn items<'a>(digest: &[u8], toks: &'a [Token]) -> Vec<&'a [Token]> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, t) in toks.iter().enumerate() {
        match text(digest, t) {
            b"(" => depth += 1,
            b")" => depth -= 1,
            b"," if depth == 0 => {
                out.push(&toks[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&toks[start..]);
    out
}

/// A value made of one literal, placeholder or word (a sign allowed before a literal).
fn simple_value(digest: &[u8], v: &[Token], slot_base: &mut u16) -> Option<Vec<SetValue>> {
    let (neg, rest) = match v.first().map(|t| text(digest, t)) {
        Some(b"-") => (true, &v[1..]),
        Some(b"+") => (false, &v[1..]),
        _ => (false, v),
    };
    match rest {
        [t] if t.kind == Tok::Param => {
            let s = SlotRef { slot: *slot_base, neg };
            *slot_base += 1;
            Some(vec![SetValue::Slot(s)])
        }
        [t] if !neg && matches!(t.kind, Tok::Word | Tok::Quoted) => {
            Some(vec![SetValue::Word(ident(digest, t).to_ascii_lowercase().into())])
        }
        _ => None,
    }
}

/// Count the placeholders in tokens (to keep slot numbers right across items).
fn params(toks: &[Token]) -> u16 {
    toks.iter().filter(|t| t.kind == Tok::Param).count() as u16
}

/// Analyse the tokens after `SET`.
pub(crate) fn analyze_set(digest: &[u8], toks: &[Token]) -> Kind {
    let mut out = Vec::new();
    let mut slot = 0u16;
    for item in items(digest, toks) {
        let base = slot;
        slot += params(item);
        let mut slot_here = base;
        let mut i = 0;
        let mut global = false;
        if word(digest, item.first(), "SESSION") || word(digest, item.first(), "LOCAL") {
            i = 1;
        } else if word(digest, item.first(), "GLOBAL") {
            global = true;
            i = 1;
        }
        let first = item.get(i);
        if word(digest, first, "TRANSACTION") {
            if item.iter().any(|t| word(digest, Some(t), "UNCOMMITTED")) {
                return Kind::Untrackable("READ UNCOMMITTED");
            }
            continue;
        }
        if global {
            continue;
        }
        if word(digest, first, "ROLE") {
            return Kind::Untrackable("SET ROLE");
        }
        if word(digest, first, "DEFAULT") && word(digest, item.get(i + 1), "ROLE") {
            // Another login of that user may now run without the role: what was cached
            // with it must go before the OK (the binlog would only say so later).
            return write_all();
        }
        if word(digest, first, "PASSWORD") {
            continue; // sessions keep their privileges; logins are never cached
        }
        let charset_item = if word(digest, first, "NAMES") {
            Some(("names", i + 1))
        } else if word(digest, first, "CHARSET") {
            Some(("charset", i + 1))
        } else if word(digest, first, "CHARACTER") && word(digest, item.get(i + 1), "SET") {
            Some(("charset", i + 2))
        } else {
            None
        };
        if let Some((name, j)) = charset_item {
            // NAMES x [COLLATE y]: words or string literals.
            let mut value = Vec::new();
            for t in &item[j.min(item.len())..] {
                match t.kind {
                    Tok::Param => {
                        value.push(SetValue::Slot(SlotRef { slot: slot_here, neg: false }));
                        slot_here += 1;
                    }
                    Tok::Word | Tok::Quoted => value.push(SetValue::Word(ident(digest, t).to_ascii_lowercase().into())),
                    _ => return Kind::Untrackable("SET NAMES with an expression"),
                }
            }
            out.push(SetItem { name: name.into(), value });
            continue;
        }
        // [@@[session.|local.|global.]]name = value
        let Some(t) = first else { return Kind::Untrackable("SET") };
        let name: String = match t.kind {
            Tok::Var => {
                let v = String::from_utf8_lossy(text(digest, t)).to_ascii_lowercase();
                let Some(v) = v.strip_prefix("@@") else { continue }; // @user variable
                if let Some(g) = v.strip_prefix("global.") {
                    let _ = g;
                    continue;
                }
                v.strip_prefix("session.").or_else(|| v.strip_prefix("local.")).unwrap_or(v).to_string()
            }
            Tok::Word | Tok::Quoted => ident(digest, t).to_ascii_lowercase(),
            _ => return Kind::Untrackable("SET"),
        };
        let eq = item.get(i + 1).map(|t| text(digest, t));
        if !matches!(eq, Some(b"=") | Some(b":=")) {
            return Kind::Untrackable("SET");
        }
        match simple_value(digest, &item[i + 2..], &mut slot_here) {
            Some(value) => out.push(SetItem { name: Arc::from(name), value }),
            None => return Kind::Untrackable("SET with an expression"),
        }
    }
    Kind::Set(out)
}
