//! memcached's `tokenize_command`: split on single spaces, skip empty tokens, and stop
//! after `MAX_TOKENS - 1` tokens (the rest of the line is kept unsplit).

/// memcached's `MAX_TOKENS`.
pub const MAX_TOKENS: usize = 24;

/// The tokens of one command line.
#[derive(Debug, Clone)]
pub struct Tokens<'a> {
    toks: [&'a [u8]; MAX_TOKENS],
    n: usize,
    /// Unsplit remainder when the line had more tokens than memcached splits.
    pub rest: Option<&'a [u8]>,
}

impl<'a> Tokens<'a> {
    /// Tokenize a command line.
    pub fn new(line: &'a [u8]) -> Tokens<'a> {
        let mut toks: [&[u8]; MAX_TOKENS] = [&[]; MAX_TOKENS];
        let mut n = 0;
        let mut rest = None;
        let mut s = 0;
        let mut i = 0;
        while i < line.len() {
            if line[i] == b' ' {
                if s != i {
                    toks[n] = &line[s..i];
                    n += 1;
                    if n == MAX_TOKENS - 1 {
                        if i + 1 < line.len() {
                            rest = Some(&line[i + 1..]);
                        }
                        s = line.len();
                        i = line.len();
                        break;
                    }
                }
                s = i + 1;
            }
            i += 1;
        }
        if s < i {
            toks[n] = &line[s..i];
            n += 1;
        }
        Tokens { toks, n, rest }
    }

    /// Number of tokens (memcached's `ntokens` is this plus one).
    #[inline]
    pub fn len(&self) -> usize {
        self.n
    }

    /// Whether the line had no tokens.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Token `i`, or an empty slice past the end.
    #[inline]
    pub fn get(&self, i: usize) -> &'a [u8] {
        if i < self.n {
            self.toks[i]
        } else {
            &[]
        }
    }

    /// Tokens from `i` on.
    pub fn from(&self, i: usize) -> &[&'a [u8]] {
        &self.toks[i.min(self.n)..self.n]
    }

    /// The last token, which memcached checks for `noreply`.
    pub fn last(&self) -> &'a [u8] {
        if self.n == 0 {
            &[]
        } else {
            self.toks[self.n - 1]
        }
    }
}

/// Split a run of keys (the rest of a `get` line) on spaces, skipping empty keys.
pub fn split_keys(keys: &[u8]) -> impl Iterator<Item = &[u8]> {
    keys.split(|&b| b == b' ').filter(|k| !k.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokenize() {
        let t = Tokens::new(b"set  a 0 0 1 ");
        assert_eq!(t.len(), 5);
        assert_eq!(t.get(1), b"a");
        assert_eq!(t.last(), b"1");
        let long: Vec<u8> = (0..30).map(|_| "k ").collect::<String>().into_bytes();
        let t = Tokens::new(&long);
        assert_eq!(t.len(), 23);
        assert!(t.rest.is_some());
    }
}
