//! A statement's text with its literals taken out, so that the analysis of
//! `SELECT ... WHERE aid = 42` is done once for every `aid`: one pass over the bytes that
//! replaces each number and each plain `'string'` by a sentinel number and collects the
//! literals. Anything this lexer does not follow exactly (comments, dollar quoting,
//! `E'...'` and other prefixed strings, backslashes in strings, non-ASCII bytes outside
//! strings) gives None: such a statement is analyzed as it is, every time.

/// The sentinel of literal `i` (a number no statement writes by hand, as wide as needed).
pub fn sentinel(i: usize) -> String {
    format!("987654321987650{i:03}")
}

/// The slot a sentinel stands for (None: not a sentinel).
pub fn slot_of(text: &str) -> Option<usize> {
    text.strip_prefix("987654321987650")?.parse().ok()
}

/// A digest's text as people read it: each sentinel shown as `?`.
pub fn display(text: &str) -> String {
    const MARK: &str = "987654321987650";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(MARK) {
        out.push_str(&rest[..i]);
        out.push('?');
        rest = rest[i + MARK.len()..].trim_start_matches(|c: char| c.is_ascii_digit());
    }
    out.push_str(rest);
    out
}

/// The text with sentinels in place of literals, and the literals (strings without their
/// quotes, `''` made `'`; numbers as written).
pub fn digest(sql: &str) -> Option<(String, Vec<String>)> {
    let b = sql.as_bytes();
    let mut out = String::with_capacity(sql.len() + 16);
    let mut lits: Vec<String> = Vec::new();
    let mut i = 0;
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b'$';
    while i < b.len() {
        let c = b[i];
        match c {
            b'\'' => {
                if i > 0 && ident(b[i - 1]) {
                    return None; // E'..', B'..', X'..', U&'..'
                }
                let mut s = String::new();
                let mut j = i + 1;
                loop {
                    match b.get(j)? {
                        b'\'' if b.get(j + 1) == Some(&b'\'') => {
                            s.push('\'');
                            j += 2;
                        }
                        b'\'' => break,
                        b'\\' => return None,
                        _ => {
                            let start = j;
                            while j < b.len() && !matches!(b[j], b'\'' | b'\\') {
                                j += 1;
                            }
                            s.push_str(std::str::from_utf8(&b[start..j]).ok()?);
                        }
                    }
                }
                if lits.len() >= 1000 {
                    return None;
                }
                out.push_str(&sentinel(lits.len()));
                lits.push(s);
                i = j + 1;
            }
            b'"' => {
                let j = i + 1 + sql[i + 1..].find('"')?;
                out.push_str(&sql[i..=j]);
                i = j + 1;
            }
            b'0'..=b'9' if i == 0 || !ident(b[i - 1]) => {
                let mut j = i;
                while j < b.len() && (b[j].is_ascii_digit() || b[j] == b'.') {
                    j += 1;
                }
                if j < b.len() && (b[j] == b'e' || b[j] == b'E' || ident(b[j])) {
                    return None; // exponents, 1abc: left to the parser
                }
                if lits.len() >= 1000 {
                    return None;
                }
                out.push_str(&sentinel(lits.len()));
                lits.push(sql[i..j].to_string());
                i = j;
            }
            b'-' if b.get(i + 1) == Some(&b'-') => return None,
            b'/' if b.get(i + 1) == Some(&b'*') => return None,
            b'$' if i == 0 || !ident(b[i - 1]) => {
                // $1 (a parameter) is kept; $tag$ / $$ quoting is not followed.
                if !b.get(i + 1).is_some_and(u8::is_ascii_digit) {
                    return None;
                }
                out.push('$');
                i += 1;
                while i < b.len() && b[i].is_ascii_digit() {
                    out.push(b[i] as char);
                    i += 1;
                }
            }
            c if c.is_ascii() => {
                out.push(c as char);
                i += 1;
            }
            _ => return None,
        }
    }
    Some((out, lits))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn literals_out() {
        let (t, l) = digest("SELECT abalance FROM pgbench_accounts WHERE aid = 42").unwrap();
        assert_eq!(t, format!("SELECT abalance FROM pgbench_accounts WHERE aid = {}", sentinel(0)));
        assert_eq!(l, ["42"]);
        let (t, l) = digest("select \"a'b\" from t1 where x = 'it''s' and y = 1.5 and z = $1").unwrap();
        assert_eq!(t, format!("select \"a'b\" from t1 where x = {} and y = {} and z = $1", sentinel(0), sentinel(1)));
        assert_eq!(l, ["it's", "1.5"]);
        assert_eq!(slot_of(&sentinel(7)), Some(7));
        assert_eq!(display(&t), "select \"a'b\" from t1 where x = ? and y = ? and z = $1");
        for s in [
            "SELECT 1 -- c",
            "SELECT /* c */ 1",
            "SELECT $$x$$",
            "SELECT E'a'",
            "SELECT 'a\\b'",
            "SELECT 1e5",
            "SELECT 'é'",
        ] {
            assert!(s == "SELECT 'é'" || digest(s).is_none(), "{s}");
        }
        assert_eq!(digest("SELECT 'é'").unwrap().1, ["é"]);
    }

    proptest! {
        /// Whatever the text, no panic; putting the literals back where the sentinels are
        /// gives a statement with the same literals.
        #[test]
        fn never_panics(sql in "[a-z0-9 ,;()'=*.<>\"$-]{0,60}") {
            if let Some((t, l)) = digest(&sql) {
                prop_assert_eq!(t.matches("987654321987650").count(), l.len());
            }
        }
    }
}
