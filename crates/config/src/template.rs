//! Key templates: the memcached keys an application builds from a row, written as text
//! with `{column}` placeholders, so that a row change seen in the binlog names the keys
//! to drop.
//!
//! ```text
//! user:{id}                    -> user:42
//! user_by_email:{email|lower}  -> user_by_email:ann@example.com
//! md5(SELECT firstname,lastname FROM test.customers where id={id})
//!                              -> 32 hex digits, the MD5 of the text (seed 000's keys)
//! ```
//!
//! `{{` and `}}` are literal braces. A placeholder takes the column's value as the
//! change feed gives it (`binlog::render_key` for MariaDB/MySQL row images): integers in decimal, strings and DECIMALs as their bytes, other types
//! (dates, floats, JSON) in a text form that may differ from what the application printed.
//! `|lower` / `|upper` change ASCII case. A row whose value is NULL for a placeholder, or
//! whose rendered key is not a valid memcached key (empty, over 250 bytes, spaces or
//! control characters), names no key.

use std::borrow::Cow;
use std::fmt;

/// memcached's longest key.
pub const KEY_MAX: usize = 250;

/// What a placeholder does to the value's case.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Case {
    /// As stored.
    Keep,
    /// ASCII lower case (`|lower`).
    Lower,
    /// ASCII upper case (`|upper`).
    Upper,
}

/// One piece of a template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Part {
    /// Literal bytes.
    Text(String),
    /// A column's value.
    Column {
        /// Column name (matched case-insensitively, as MySQL does).
        name: String,
        /// Case change.
        case: Case,
    },
}

/// A parsed key template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyTemplate {
    parts: Vec<Part>,
    md5: bool,
}

impl KeyTemplate {
    /// Parses a template (see the module documentation); the error says what is wrong.
    pub fn parse(text: &str) -> Result<KeyTemplate, String> {
        let (body, md5) = match text.strip_prefix("md5(").and_then(|t| t.strip_suffix(')')) {
            Some(inner) => (inner, true),
            None => (text, false),
        };
        if body.is_empty() {
            return Err("empty key template".into());
        }
        let mut parts = Vec::new();
        let mut lit = String::new();
        let mut chars = body.char_indices().peekable();
        while let Some((at, c)) = chars.next() {
            match c {
                '{' if chars.peek().map(|p| p.1) == Some('{') => {
                    chars.next();
                    lit.push('{');
                }
                '}' if chars.peek().map(|p| p.1) == Some('}') => {
                    chars.next();
                    lit.push('}');
                }
                '}' => return Err(format!("'}}' at byte {at} closes nothing (write '}}}}' for a literal brace)")),
                '{' => {
                    let rest = &body[at + 1..];
                    let end = rest.find('}').ok_or_else(|| format!("'{{' at byte {at} is not closed"))?;
                    let inner = &rest[..end];
                    let (name, filter) = match inner.split_once('|') {
                        Some((n, f)) => (n.trim(), Some(f.trim())),
                        None => (inner.trim(), None),
                    };
                    if name.is_empty() || name.contains(['{', '`']) {
                        return Err(format!("'{{{inner}}}': not a column name"));
                    }
                    let case = match filter {
                        None => Case::Keep,
                        Some("lower") => Case::Lower,
                        Some("upper") => Case::Upper,
                        Some(f) => return Err(format!("'{{{inner}}}': unknown filter '{f}' (lower, upper)")),
                    };
                    if !lit.is_empty() {
                        parts.push(Part::Text(std::mem::take(&mut lit)));
                    }
                    parts.push(Part::Column { name: name.to_string(), case });
                    for _ in 0..inner.chars().count() + 1 {
                        chars.next();
                    }
                }
                c => lit.push(c),
            }
        }
        if !lit.is_empty() {
            parts.push(Part::Text(lit));
        }
        if !md5 {
            let fixed: usize = parts.iter().map(|p| if let Part::Text(t) = p { t.len() } else { 0 }).sum();
            if fixed > KEY_MAX {
                return Err(format!(
                    "the template's text alone is {fixed} bytes: memcached keys are at most {KEY_MAX}"
                ));
            }
            if parts.iter().any(|p| matches!(p, Part::Text(t) if t.bytes().any(|b| b <= b' ' || b == 0x7f))) {
                return Err("a memcached key cannot contain spaces or control characters (md5(...) can)".into());
            }
        }
        Ok(KeyTemplate { parts, md5 })
    }

    /// The columns the template reads, in order.
    pub fn columns(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|p| match p {
            Part::Column { name, .. } => Some(name.as_str()),
            Part::Text(_) => None,
        })
    }

    /// Whether the key is the MD5 of the rendered text.
    pub fn is_md5(&self) -> bool {
        self.md5
    }

    /// The key this template names for one row, whose column values `value` gives by
    /// name (matched case-insensitively by the caller, as MySQL matches column names);
    /// None if a placeholder's column is missing or NULL (`value` answers None), or the
    /// result is not a valid memcached key.
    pub fn render<'a>(&self, mut value: impl FnMut(&str) -> Option<Cow<'a, [u8]>>) -> Option<Vec<u8>> {
        let mut key = Vec::with_capacity(64);
        for p in &self.parts {
            match p {
                Part::Text(t) => key.extend_from_slice(t.as_bytes()),
                Part::Column { name, case } => {
                    let start = key.len();
                    key.extend_from_slice(&value(name)?);
                    match case {
                        Case::Keep => {}
                        Case::Lower => key[start..].make_ascii_lowercase(),
                        Case::Upper => key[start..].make_ascii_uppercase(),
                    }
                }
            }
        }
        if self.md5 {
            use md5::Digest;
            let digest = md5::Md5::digest(&key);
            return Some(digest.iter().flat_map(|b| [hex(b >> 4), hex(b & 15)]).collect());
        }
        let valid = !key.is_empty() && key.len() <= KEY_MAX && key.iter().all(|&b| b > b' ' && b != 0x7f);
        valid.then_some(key)
    }
}

fn hex(n: u8) -> u8 {
    b"0123456789abcdef"[n as usize]
}

impl fmt::Display for KeyTemplate {
    /// The template as it would be written (parses back to the same template).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.md5 {
            f.write_str("md5(")?;
        }
        for p in &self.parts {
            match p {
                Part::Text(t) => f.write_str(&t.replace('{', "{{").replace('}', "}}"))?,
                Part::Column { name, case: Case::Keep } => write!(f, "{{{name}}}")?,
                Part::Column { name, case: Case::Lower } => write!(f, "{{{name}|lower}}")?,
                Part::Column { name, case: Case::Upper } => write!(f, "{{{name}|upper}}")?,
            }
        }
        if self.md5 {
            f.write_str(")")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A row of columns id, email, note: None is NULL.
    fn lookup<'a>(row: &'a [Option<&'a [u8]>]) -> impl FnMut(&str) -> Option<Cow<'a, [u8]>> {
        |name| {
            let i = ["id", "email", "note"].iter().position(|c| c.eq_ignore_ascii_case(name))?;
            row.get(i).copied().flatten().map(Cow::Borrowed)
        }
    }

    fn render(t: &str, row: &[Option<&[u8]>]) -> Option<String> {
        KeyTemplate::parse(t).unwrap().render(lookup(row)).map(|k| String::from_utf8(k).unwrap())
    }

    /// xorshift64*, seeded, so a failure names its case.
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: usize) -> usize {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n as u64) as usize
        }
    }

    #[test]
    fn renders_rows() {
        let row: [Option<&[u8]>; 3] = [Some(b"42"), Some(b"Ann@Example.com"), None];
        assert_eq!(render("user:{id}", &row).as_deref(), Some("user:42"));
        assert_eq!(render("user_by_email:{EMAIL|lower}", &row).as_deref(), Some("user_by_email:ann@example.com"));
        assert_eq!(render("{email|upper}", &row).as_deref(), Some("ANN@EXAMPLE.COM"));
        assert_eq!(render("{{x}}:{id}", &row).as_deref(), Some("{x}:42"));
        assert_eq!(render("n:{note}", &row), None, "NULL names no key");
        assert_eq!(render("n:{missing}", &row), None);
        // Seed 000's key: the MD5 of the query text.
        assert_eq!(
            render("md5(SELECT firstname,lastname FROM test.customers where id={id})", &row).as_deref(),
            Some("1c1b3fe53b6d9aa2481f393df7a16190"),
            "md5 of 'SELECT firstname,lastname FROM test.customers where id=42' (Python's hashlib)"
        );
        let spaced: [Option<&[u8]>; 3] = [Some(b"1"), Some(b"a b"), None];
        assert_eq!(render("e:{email}", &spaced), None, "not a valid memcached key");
        let x300 = [b'x'; 300];
        let long: [Option<&[u8]>; 3] = [Some(b"1"), Some(&x300), None];
        assert_eq!(render("e:{email}", &long), None);
        assert_eq!(render("md5(e:{email})", &long).map(|k| k.len()), Some(32));
    }

    #[test]
    fn rejects_bad_templates() {
        for (t, why) in [
            ("", "empty"),
            ("user:{id", "not closed"),
            ("user:id}", "closes nothing"),
            ("user:{}", "not a column"),
            ("user:{id|title}", "unknown filter"),
            ("user {id}", "spaces"),
        ] {
            let e = KeyTemplate::parse(t).unwrap_err();
            assert!(e.contains(why), "{t}: {e}");
        }
        assert!(KeyTemplate::parse("md5(user {id})").is_ok(), "md5 keys may hold spaces before hashing");
    }

    /// Property: any text either fails to parse or parses to a template whose written form
    /// parses back to the same template; rendering never panics.
    #[test]
    fn arbitrary_templates_round_trip() {
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        let alphabet: Vec<char> = "ab{}|:_ lowerupperid()md5é\u{1}".chars().collect();
        let row: [Option<&[u8]>; 3] = [Some(b"7"), Some(b"x"), Some(b"2026-11-26")];
        for _ in 0..50_000 {
            let len = rng.below(24);
            let s: String = (0..len).map(|_| alphabet[rng.below(alphabet.len())]).collect();
            if let Ok(t) = KeyTemplate::parse(&s) {
                let again = KeyTemplate::parse(&t.to_string()).unwrap_or_else(|e| panic!("{s:?} -> {t} -> {e}"));
                assert_eq!(again, t, "{s:?}");
                if let Some(k) = t.render(lookup(&row)) {
                    assert!(k.len() <= KEY_MAX && !k.is_empty());
                }
            }
        }
    }
}
