//! A fast single-pass lexer for MySQL statement text.
//!
//! It knows comments (`--`, `#`, `/* */`), executable comments (`/*! */`, `/*!NNNNN */`,
//! `/*M!NNNNN */`: code or comment by the backend's own rules, see [`Dialect`]), strings,
//! quoted identifiers, numbers, user and system variables and `?` placeholders.
//! [`digest`] replaces every literal and placeholder by `?` and records each one as a
//! [`Slot`]: statements differing only in literals share one digest, whose analysis is
//! memoized.
//!
//! The session's `sql_mode` changes the lexical rules: `NO_BACKSLASH_ESCAPES` (a
//! backslash is an ordinary character in strings) and `ANSI_QUOTES` (`"x"` is an
//! identifier); the digest writes every quoted identifier with backticks, so it always
//! re-lexes under the default rules.

/// The backend's lexical rules for executable comments and the session's `sql_mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dialect {
    /// The backend's version as MMmmpp (10.11.6 is 101106); 0: unknown (every versioned
    /// comment is treated as code).
    pub version: u32,
    /// The backend is MariaDB (`/*M!` is code; MySQL 5.7+ versions 50700..=99999 are not).
    pub mariadb: bool,
    /// `sql_mode` has NO_BACKSLASH_ESCAPES.
    pub no_backslash_escapes: bool,
    /// `sql_mode` has ANSI_QUOTES (or a combination mode that implies it).
    pub ansi_quotes: bool,
}

impl Default for Dialect {
    fn default() -> Self {
        Dialect { version: 0, mariadb: true, no_backslash_escapes: false, ansi_quotes: false }
    }
}

impl Dialect {
    /// The backend's rules from its greeting's version string (`5.5.5-10.11.6-MariaDB-log`,
    /// `8.0.36`).
    pub fn from_server_version(v: &str) -> Dialect {
        let mariadb = v.contains("MariaDB");
        let v = v.strip_prefix("5.5.5-").filter(|_| mariadb).unwrap_or(v);
        let mut parts = v.split(|c: char| !c.is_ascii_digit()).take(3).map(|p| p.parse::<u32>().unwrap_or(0));
        let (a, b, c) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0), parts.next().unwrap_or(0));
        Dialect { version: a * 10000 + b.min(99) * 100 + c.min(99), mariadb, ..Dialect::default() }
    }

    /// These rules with a session `sql_mode` value's lexical flags.
    pub fn with_sql_mode(self, mode: &[u8]) -> Dialect {
        let up: Vec<u8> = mode.iter().filter(|c| !matches!(c, b'\'' | b'"')).map(u8::to_ascii_uppercase).collect();
        let has = |w: &str| up.split(|c| *c == b',' || *c == b' ').any(|x| x == w.as_bytes());
        let ansi = ["ANSI", "ANSI_QUOTES", "ORACLE", "MSSQL", "DB2", "POSTGRESQL", "MAXDB"].iter().any(|w| has(w));
        Dialect { no_backslash_escapes: has("NO_BACKSLASH_ESCAPES"), ansi_quotes: ansi, ..self }
    }

    /// Whether the backend runs the content of a comment `/*!NNNNN` (`maria`: `/*M!`).
    fn runs(&self, version: u32, maria: bool) -> bool {
        if self.version == 0 {
            return true;
        }
        if maria && !self.mariadb {
            return false;
        }
        // MariaDB ignores MySQL 5.7+ versioned comments (sql_lex.cc), unless written /*M!.
        let mysql57 = self.mariadb && !maria && (50700..=99999).contains(&version);
        version <= self.version && !mysql57
    }
}

/// Token classes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tok {
    /// Unquoted identifier or keyword.
    Word,
    /// Backtick-quoted identifier.
    Quoted,
    /// String literal (also `N'..'`, `X'..'`, `B'..'`).
    Str,
    /// Numeric literal (also `0x..`, `0b..`).
    Num,
    /// `?` placeholder.
    Param,
    /// `@var`, `@@var`.
    Var,
    /// Operator or punctuation.
    Punct,
}

/// One token: class and byte span.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Token {
    pub kind: Tok,
    pub start: usize,
    pub end: usize,
}

/// The value behind one `?` of a digest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SlotValue {
    /// An integer literal that fits in i64.
    Int(i64),
    /// Any other literal (string, decimal, hex, too large).
    Other,
    /// The n-th `?` parameter of a prepared statement.
    Param(u16),
}

/// A literal or placeholder replaced by `?` in the digest.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Slot {
    pub value: SlotValue,
    /// Span of the literal in the original text.
    pub start: u32,
    pub end: u32,
}

/// A statement's digest and its literals.
#[derive(Debug, Default)]
pub(crate) struct Lexed {
    pub digest: Vec<u8>,
    pub slots: Vec<Slot>,
    /// An unterminated string, quoted identifier or comment.
    pub malformed: bool,
}

#[inline]
fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b >= 0x80
}

/// Iterator over the tokens of `src`.
pub(crate) struct Lexer<'a> {
    src: &'a [u8],
    pos: usize,
    in_exec_comment: bool,
    dialect: Dialect,
    /// Set when something was not terminated.
    pub malformed: bool,
}

impl<'a> Lexer<'a> {
    /// A lexer at the start of `src`, default rules (digests re-lex under these).
    pub fn new(src: &'a [u8]) -> Lexer<'a> {
        Lexer::with(src, Dialect::default())
    }

    /// A lexer at the start of `src` under `dialect`.
    pub fn with(src: &'a [u8], dialect: Dialect) -> Lexer<'a> {
        Lexer { src, pos: 0, in_exec_comment: false, dialect, malformed: false }
    }

    /// At `/*!` or `/*M!` (not inside another executable comment): enter it if the
    /// backend runs its content, else skip it as a comment (one nested `/* */` allowed, as
    /// MariaDB's lexer does). Returns false if it is not an executable comment.
    fn exec_comment(&mut self) -> bool {
        let s = self.src;
        let maria = s.get(self.pos + 2) == Some(&b'M') && s.get(self.pos + 3) == Some(&b'!');
        if !(maria || s.get(self.pos + 2) == Some(&b'!')) || self.in_exec_comment {
            return false;
        }
        let start = self.pos + if maria { 4 } else { 3 };
        let digits = s[start.min(s.len())..].iter().take(6).take_while(|c| c.is_ascii_digit()).count();
        let (len, version) = match digits {
            5 | 6 => {
                let v = std::str::from_utf8(&s[start..start + digits]).ok().and_then(|t| t.parse::<u32>().ok());
                (digits, v.unwrap_or(0))
            }
            // Not a versioned comment: always code (digits that follow are code too).
            _ => (0, 0),
        };
        if len == 0 || self.dialect.runs(version, maria) {
            self.pos = start + len;
            self.in_exec_comment = true;
            return true;
        }
        // A comment: skip to its end, allowing one nested /* */.
        let mut i = start + len;
        let mut depth = 0;
        while i + 1 < s.len() {
            if s[i] == b'/' && s[i + 1] == b'*' && depth == 0 {
                depth = 1;
                i += 2;
            } else if s[i] == b'*' && s[i + 1] == b'/' {
                i += 2;
                if depth == 0 {
                    self.pos = i;
                    return true;
                }
                depth = 0;
            } else {
                i += 1;
            }
        }
        self.malformed = true;
        self.pos = s.len();
        true
    }

    /// Skip whitespace and comments.
    fn skip_trivia(&mut self) {
        let s = self.src;
        while self.pos < s.len() {
            let b = s[self.pos];
            let next = s.get(self.pos + 1).copied();
            if b.is_ascii_whitespace() {
                self.pos += 1;
            } else if b == b'#'
                || (b == b'-' && next == Some(b'-') && !matches!(s.get(self.pos + 2), Some(c) if *c > b' '))
            {
                while self.pos < s.len() && s[self.pos] != b'\n' {
                    self.pos += 1;
                }
            } else if b == b'/' && next == Some(b'*') {
                if self.exec_comment() {
                    continue;
                }
                match find(&s[self.pos + 2..], b"*/") {
                    Some(i) => self.pos += 2 + i + 2,
                    None => {
                        self.malformed = true;
                        self.pos = s.len();
                    }
                }
            } else if b == b'*' && next == Some(b'/') && self.in_exec_comment {
                self.in_exec_comment = false;
                self.pos += 2;
            } else {
                return;
            }
        }
    }

    /// Skip a quoted run starting at the opening quote; returns false if unterminated.
    fn skip_quoted(&mut self, q: u8) -> bool {
        let s = self.src;
        let mut i = self.pos + 1;
        while i < s.len() {
            let b = s[i];
            if b == b'\\' && q != b'`' && !self.dialect.no_backslash_escapes {
                i += 2;
            } else if b == q {
                if s.get(i + 1) == Some(&q) {
                    i += 2;
                } else {
                    self.pos = i + 1;
                    return true;
                }
            } else {
                i += 1;
            }
        }
        self.pos = s.len();
        self.malformed = true;
        false
    }

    fn number_or_word(&mut self) -> Tok {
        let s = self.src;
        let start = self.pos;
        if s[start] == b'0' && matches!(s.get(start + 1), Some(b'x' | b'X' | b'b' | b'B')) {
            let mut i = start + 2;
            while i < s.len() && s[i].is_ascii_alphanumeric() {
                i += 1;
            }
            if i < s.len() && is_ident(s[i]) {
                return self.word();
            }
            self.pos = i;
            return Tok::Num;
        }
        let mut i = start;
        while i < s.len() && s[i].is_ascii_digit() {
            i += 1;
        }
        if i < s.len() && s[i] == b'.' {
            i += 1;
            while i < s.len() && s[i].is_ascii_digit() {
                i += 1;
            }
        }
        if i < s.len() && (s[i] == b'e' || s[i] == b'E') {
            let mut j = i + 1;
            if j < s.len() && (s[j] == b'+' || s[j] == b'-') {
                j += 1;
            }
            if j < s.len() && s[j].is_ascii_digit() {
                while j < s.len() && s[j].is_ascii_digit() {
                    j += 1;
                }
                i = j;
            }
        }
        if i < s.len() && is_ident(s[i]) && s[start].is_ascii_digit() {
            return self.word();
        }
        self.pos = i;
        Tok::Num
    }

    fn word(&mut self) -> Tok {
        let s = self.src;
        while self.pos < s.len() && is_ident(s[self.pos]) {
            self.pos += 1;
        }
        Tok::Word
    }

    fn punct(&mut self) -> Tok {
        const OPS: [&[u8]; 12] = [b"<=>", b"->>", b"<=", b">=", b"<>", b"!=", b":=", b"||", b"&&", b"<<", b">>", b"->"];
        let rest = &self.src[self.pos..];
        for op in OPS {
            if rest.starts_with(op) {
                self.pos += op.len();
                return Tok::Punct;
            }
        }
        self.pos += 1;
        Tok::Punct
    }
}

impl Iterator for Lexer<'_> {
    type Item = Token;

    fn next(&mut self) -> Option<Token> {
        self.skip_trivia();
        let s = self.src;
        let start = self.pos;
        let b = *s.get(start)?;
        let next = s.get(start + 1).copied();
        let kind = match b {
            b'"' if self.dialect.ansi_quotes => {
                self.skip_quoted(b);
                Tok::Quoted
            }
            b'\'' | b'"' => {
                self.skip_quoted(b);
                Tok::Str
            }
            b'`' => {
                self.skip_quoted(b);
                Tok::Quoted
            }
            b'?' => {
                self.pos += 1;
                Tok::Param
            }
            b'@' => {
                self.pos += 1;
                if s.get(self.pos) == Some(&b'@') {
                    self.pos += 1;
                }
                match s.get(self.pos) {
                    Some(&q @ (b'\'' | b'"' | b'`')) => {
                        self.skip_quoted(q);
                    }
                    _ => {
                        while self.pos < s.len() && (is_ident(s[self.pos]) || s[self.pos] == b'.') {
                            self.pos += 1;
                        }
                    }
                }
                Tok::Var
            }
            b'0'..=b'9' => self.number_or_word(),
            b'.' if next.is_some_and(|c| c.is_ascii_digit())
                && !(start > 0 && (is_ident(s[start - 1]) || s[start - 1] == b'`')) =>
            {
                self.number_or_word()
            }
            b'n' | b'N' | b'x' | b'X' | b'b' | b'B' if next == Some(b'\'') => {
                self.pos += 1;
                self.skip_quoted(b'\'');
                Tok::Str
            }
            c if is_ident(c) => self.word(),
            _ => self.punct(),
        };
        Some(Token { kind, start, end: self.pos })
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Parse an unsigned decimal literal into i64 (None if not plain digits or too large).
pub(crate) fn parse_int(t: &[u8]) -> Option<i64> {
    if t.is_empty() || t.len() > 19 || !t.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(t).ok()?.parse().ok()
}

/// Lex `src` under `dialect` into its digest (literals and placeholders as `?`, tokens
/// separated by one space, comments dropped, quoted identifiers in backticks) and its slots.
pub(crate) fn digest(src: &[u8], dialect: Dialect) -> Lexed {
    let mut out = Lexed { digest: Vec::with_capacity(src.len()), slots: Vec::new(), malformed: false };
    let mut lx = Lexer::with(src, dialect);
    let mut params = 0u16;
    for t in lx.by_ref() {
        if !out.digest.is_empty() {
            out.digest.push(b' ');
        }
        let text = &src[t.start..t.end];
        let value = match t.kind {
            Tok::Num => Some(parse_int(text).map_or(SlotValue::Other, SlotValue::Int)),
            Tok::Str => Some(SlotValue::Other),
            Tok::Param => {
                params = params.saturating_add(1);
                Some(SlotValue::Param(params - 1))
            }
            _ => None,
        };
        match value {
            Some(v) => {
                out.digest.push(b'?');
                out.slots.push(Slot { value: v, start: t.start as u32, end: t.end as u32 });
            }
            None if t.kind == Tok::Quoted && text.first() == Some(&b'"') && text.len() >= 2 => {
                // An ANSI_QUOTES identifier: backticks, so the digest lexes the same by default.
                let name = String::from_utf8_lossy(&text[1..text.len() - 1]).replace("\"\"", "\"");
                out.digest.push(b'`');
                out.digest.extend_from_slice(name.replace('`', "``").as_bytes());
                out.digest.push(b'`');
            }
            None => out.digest.extend_from_slice(text),
        }
    }
    out.malformed = lx.malformed;
    out
}

/// An identifier token's name (backticks removed, doubled backticks undone).
pub(crate) fn ident(digest: &[u8], t: &Token) -> String {
    let s = String::from_utf8_lossy(&digest[t.start..t.end]);
    if t.kind == Tok::Quoted && s.len() >= 2 {
        s[1..s.len() - 1].replace("``", "`")
    } else {
        s.into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pieces that stress the lexer: quotes, escapes, every comment kind, versions.
    const PIECES: &[&str] = &[
        "SELECT",
        " ",
        "a",
        "`b``c`",
        "\"d\"",
        "'e\\'",
        "'f''g'",
        "\\",
        "'",
        "\"",
        "`",
        "/*",
        "*/",
        "/*!",
        "/*M!",
        "/*!50700",
        "/*!100000",
        "/*!999999",
        "/*M!999999",
        "12345",
        "--",
        "-- ",
        "#",
        "\n",
        ";",
        "?",
        "@x",
        "@@y",
        "0x1f",
        "1.5e3",
        "(",
        ")",
        ",",
        "=",
        "WHERE",
        "id",
        "FROM",
        "t",
        "UPDATE",
        "SET",
        "x'41'",
        "N'n'",
    ];

    fn soup(seed: &mut u64) -> String {
        let mut s = String::new();
        for _ in 0..(*seed % 24) {
            *seed ^= *seed << 13;
            *seed ^= *seed >> 7;
            *seed ^= *seed << 17;
            s.push_str(PIECES[(*seed % PIECES.len() as u64) as usize]);
        }
        s
    }

    /// Property: for any text and any dialect, lexing and analysis never panic, and a
    /// digest lexes to itself under the default rules (the memo's analysis relies on it).
    #[test]
    fn digests_relex_to_themselves_under_default_rules() {
        let dialects = [
            Dialect::default(),
            Dialect::from_server_version("5.5.5-10.11.6-MariaDB"),
            Dialect::from_server_version("8.0.36"),
            Dialect::from_server_version("10.6.1-MariaDB").with_sql_mode(b"NO_BACKSLASH_ESCAPES,ANSI_QUOTES"),
        ];
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..20_000 {
            let text = soup(&mut seed);
            for d in dialects {
                let lx = digest(text.as_bytes(), d);
                let again = digest(&lx.digest, Dialect::default());
                if !lx.malformed {
                    assert_eq!(again.digest, lx.digest, "{text:?} under {d:?}");
                }
                let _ = crate::analyze::analyze(&lx.digest);
            }
        }
    }

    #[test]
    fn versions() {
        let m = Dialect::from_server_version("5.5.5-10.11.6-MariaDB-0+deb12u1");
        assert_eq!((m.version, m.mariadb), (101106, true));
        let my = Dialect::from_server_version("8.0.36");
        assert_eq!((my.version, my.mariadb), (80036, false));
        assert!(m.runs(100000, false) && !m.runs(999999, false) && !m.runs(50700, false) && m.runs(50700, true));
        assert!(m.runs(50699, false) && my.runs(50700, false) && !my.runs(50700, true));
    }
}
