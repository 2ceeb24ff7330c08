//! The authentication gate of a text connection with `-Y`: until a `set` carrying a
//! valid `<user> <password>` arrives, nothing else runs (memcached 1.6.18's
//! `try_read_command_asciiauth`, reply for reply; the bytes are parsed by
//! `protocol_memcache::text::auth`, the file is `crate::auth`).

use protocol_memcache::text::auth::{auth_line, auth_token, FAILURE, MAX_LINE, STORED, UNAUTHENTICATED};

use crate::auth::AuthFile;
use crate::ctx::Flow;

/// Largest data block read before authentication: a user and a password fit in far less;
/// a larger claim closes the connection instead of being buffered (memory held by
/// unauthenticated connections stays bounded).
pub const MAX_BLOCK: usize = 64 * 1024;

/// Where a connection is in the exchange.
#[derive(Default)]
pub struct Gate {
    /// Authenticated: the gate is open for good.
    pub done: bool,
    /// The length (with `\r\n`) of the data block of an authentication `set` being read.
    pending: Option<usize>,
}

impl Gate {
    /// Read as much of the exchange as `buf` holds; returns the bytes consumed. When
    /// [`Gate::done`] becomes true the rest of `buf` holds ordinary commands.
    ///
    /// As memcached 1.6.18, the replies of one pass share one response: each replaces the
    /// one before, so of several pipelined unauthenticated commands read together only the
    /// last one's reply is sent (`get a\r\nget b\r\n` gets one `CLIENT_ERROR`).
    pub fn run(&mut self, buf: &[u8], file: &AuthFile, out: &mut Vec<u8>) -> (usize, Flow) {
        let mut pos = 0;
        let base = out.len();
        let say = |out: &mut Vec<u8>, line: &[u8]| crate::compose::text::replace(out, base, line);
        loop {
            let rest = &buf[pos..];
            match self.pending {
                None => {
                    if rest.len() < 2 {
                        break;
                    }
                    let Some(nl) = rest.iter().position(|&b| b == b'\n') else {
                        // memcached closes a first line this long without a newline.
                        if rest.len() > MAX_LINE {
                            return (pos, Flow::Close);
                        }
                        break;
                    };
                    pos += nl + 1;
                    match auth_line(&rest[..nl]) {
                        Some(size) if size as usize + 2 > MAX_BLOCK => return (pos, Flow::Close),
                        Some(size) => self.pending = Some(size as usize + 2),
                        None => say(out, UNAUTHENTICATED),
                    }
                }
                Some(need) => {
                    if rest.len() < need {
                        break;
                    }
                    self.pending = None;
                    pos += need;
                    match auth_token(&rest[..need]) {
                        Err(e) => say(out, e.reply()),
                        Ok((user, pass)) if file.check(user, pass) => {
                            say(out, STORED);
                            self.done = true;
                            return (pos, Flow::Continue);
                        }
                        Ok(_) => say(out, FAILURE),
                    }
                }
            }
        }
        (pos, Flow::Continue)
    }
}
