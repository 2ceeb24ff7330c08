//! A fast single-pass lexer for MySQL statement text.
//!
//! It knows comments (`--`, `#`, `/* */`; executable `/*! */` and `/*M! */` comments are
//! lexed as code, as the server runs them), strings, quoted identifiers, numbers, user and
//! system variables and `?` placeholders. [`digest`] replaces every literal and
//! placeholder by `?` and records each one as a [`Slot`]: statements differing only in
//! literals share one digest, whose analysis is memoized.
//!
//! Assumes the server's default lexical rules: no `ANSI_QUOTES` (`"x"` is a string) and
//! backslash escapes in strings (no `NO_BACKSLASH_ESCAPES`); sessions that set either are
//! not cached (see `session.rs`).

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
    /// Set when something was not terminated.
    pub malformed: bool,
}

impl<'a> Lexer<'a> {
    /// A lexer at the start of `src`.
    pub fn new(src: &'a [u8]) -> Lexer<'a> {
        Lexer { src, pos: 0, in_exec_comment: false, malformed: false }
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
                let exec = s.get(self.pos + 2) == Some(&b'!')
                    || (s.get(self.pos + 2) == Some(&b'M') && s.get(self.pos + 3) == Some(&b'!'));
                if exec && !self.in_exec_comment {
                    self.pos += if s[self.pos + 2] == b'M' { 4 } else { 3 };
                    while self.pos < s.len() && s[self.pos].is_ascii_digit() {
                        self.pos += 1;
                    }
                    self.in_exec_comment = true;
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
            if b == b'\\' && q != b'`' {
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

/// Lex `src` into its digest (literals and placeholders as `?`, tokens separated by one
/// space, comments dropped) and its slots.
pub(crate) fn digest(src: &[u8]) -> Lexed {
    let mut out = Lexed { digest: Vec::with_capacity(src.len()), slots: Vec::new(), malformed: false };
    let mut lx = Lexer::new(src);
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
            None => out.digest.extend_from_slice(text),
        }
    }
    out.malformed = lx.malformed;
    out
}
