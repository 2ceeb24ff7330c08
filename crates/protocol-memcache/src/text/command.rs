//! Parsing a tokenized command line into a [`Command`], with memcached's exact checks
//! and error strings (`process_command_ascii` and the `process_*_command` functions).

use crate::ascii::{ParseError, Tokens, KEY_MAX_LENGTH};
use crate::meta::{self, MetaRequest};
use crate::number::{parse_i32, parse_u32, parse_u64};

/// The storage commands that take a data block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreCmd {
    /// `set`
    Set,
    /// `add`
    Add,
    /// `replace`
    Replace,
    /// `append`
    Append,
    /// `prepend`
    Prepend,
    /// `cas`
    Cas,
}

/// A parsed text or meta command.
#[derive(Debug)]
pub enum Command<'a> {
    /// `get`/`gets`/`bget`: `keys` is the rest of the line (see [`super::split_keys`]).
    Get {
        /// Return CAS uniques (`gets`).
        cas: bool,
        /// The keys, space separated.
        keys: &'a [u8],
    },
    /// `gat`/`gats`.
    Gat {
        /// Return CAS uniques (`gats`).
        cas: bool,
        /// New TTL.
        exptime: i32,
        /// The keys, space separated.
        keys: &'a [u8],
    },
    /// `set`/`add`/`replace`/`append`/`prepend`/`cas`, followed by a data block.
    Store {
        /// Which command.
        cmd: StoreCmd,
        /// The key.
        key: &'a [u8],
        /// Client flags.
        flags: u32,
        /// Exptime.
        exptime: i32,
        /// Length of the data block (without its `\r\n`).
        bytes: usize,
        /// CAS unique (`cas` only).
        cas: u64,
        /// Suppress the reply.
        noreply: bool,
    },
    /// `delete <key> [0] [noreply]`.
    Delete {
        /// The key.
        key: &'a [u8],
        /// Suppress the reply.
        noreply: bool,
    },
    /// `incr`/`decr`.
    Arith {
        /// `true` for incr.
        incr: bool,
        /// The key.
        key: &'a [u8],
        /// The amount.
        delta: u64,
        /// Suppress the reply.
        noreply: bool,
    },
    /// `touch <key> <exptime> [noreply]`.
    Touch {
        /// The key.
        key: &'a [u8],
        /// New TTL.
        exptime: i32,
        /// Suppress the reply.
        noreply: bool,
    },
    /// `flush_all [delay] [noreply]`.
    FlushAll {
        /// Delay in seconds (or a unix time); 0 for now.
        delay: i32,
        /// Suppress the reply.
        noreply: bool,
    },
    /// `version`.
    Version,
    /// `verbosity <level> [noreply]`.
    Verbosity {
        /// The new level.
        level: u32,
        /// Suppress the reply.
        noreply: bool,
    },
    /// `quit`.
    Quit,
    /// `shutdown [graceful]`.
    Shutdown {
        /// `Some(graceful)`, or `None` for an unknown mode (refused once shutdown is
        /// known to be enabled).
        mode: Option<bool>,
    },
    /// `stats [args...]`.
    Stats {
        /// Tokens after `stats`.
        args: Tokens<'a>,
    },
    /// `cache_memlimit <megabytes> [noreply]`.
    CacheMemlimit {
        /// New limit in megabytes.
        megabytes: u32,
        /// Suppress the reply.
        noreply: bool,
    },
    /// A meta command (`mg`, `ms`, `md`, `ma`, `mn`, `me`).
    Meta(MetaRequest<'a>),
    /// `refresh_certs [...] [noreply]`: reload the TLS certificate and key (any tokens).
    RefreshCerts {
        /// Suppress the `OK` (an error is still sent, as memcached does).
        noreply: bool,
    },
}

/// `ERROR`: unknown command or wrong number of tokens.
pub const ERROR: ParseError = ParseError::reply("ERROR");
const BAD_FORMAT: &str = "CLIENT_ERROR bad command line format";

/// Offset of a token inside its line.
fn offset(line: &[u8], tok: &[u8]) -> usize {
    tok.as_ptr() as usize - line.as_ptr() as usize
}

/// Parse one command line (as returned by [`super::next_line`]).
pub fn parse(line: &[u8]) -> Result<Command<'_>, ParseError> {
    let t = Tokens::new(line);
    let ntokens = t.len() + 1;
    let cmd = t.get(0);
    if t.is_empty() || cmd.len() < 2 {
        return Err(ERROR);
    }
    let noreply = t.last() == b"noreply";
    if cmd.len() == 2 && cmd[0] == b'm' {
        return meta::parse(cmd[1], &t).map(Command::Meta);
    }
    let store = |c| parse_store(&t, c, noreply);
    match cmd {
        b"get" | b"bget" | b"gets" => {
            if ntokens < 3 {
                return Err(ERROR);
            }
            let keys = &line[offset(line, t.get(1))..];
            Ok(Command::Get { cas: cmd == b"gets", keys })
        }
        b"gat" | b"gats" => {
            if ntokens < 3 {
                return Err(ERROR);
            }
            let Some(exptime) = parse_i32(t.get(1)) else {
                return Err(ParseError::reply("CLIENT_ERROR invalid exptime argument"));
            };
            let keys = match t.len() {
                2 => &[][..],
                _ => &line[offset(line, t.get(2))..],
            };
            Ok(Command::Gat { cas: cmd == b"gats", exptime, keys })
        }
        b"set" => store(StoreCmd::Set),
        b"add" => store(StoreCmd::Add),
        b"replace" => store(StoreCmd::Replace),
        b"append" => store(StoreCmd::Append),
        b"prepend" => store(StoreCmd::Prepend),
        b"cas" => store(StoreCmd::Cas),
        b"incr" | b"decr" => {
            if ntokens != 4 && ntokens != 5 {
                return Err(ERROR);
            }
            let key = t.get(1);
            if key.len() > KEY_MAX_LENGTH {
                return Err(ParseError::maybe_silent(BAD_FORMAT, noreply));
            }
            let Some(delta) = parse_u64(t.get(2)) else {
                return Err(ParseError::maybe_silent("CLIENT_ERROR invalid numeric delta argument", noreply));
            };
            Ok(Command::Arith { incr: cmd == b"incr", key, delta, noreply })
        }
        b"delete" => {
            if !(3..=5).contains(&ntokens) {
                return Err(ERROR);
            }
            if ntokens > 3 {
                let hold_is_zero = t.get(2) == b"0";
                let valid = (ntokens == 4 && (hold_is_zero || noreply)) || (ntokens == 5 && hold_is_zero && noreply);
                if !valid {
                    return Err(ParseError::maybe_silent(
                        "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]",
                        noreply,
                    ));
                }
            }
            let key = t.get(1);
            if key.len() > KEY_MAX_LENGTH {
                return Err(ParseError::maybe_silent(BAD_FORMAT, noreply));
            }
            Ok(Command::Delete { key, noreply })
        }
        b"touch" => {
            if ntokens != 4 && ntokens != 5 {
                return Err(ERROR);
            }
            let key = t.get(1);
            if key.len() > KEY_MAX_LENGTH {
                return Err(ParseError::maybe_silent(BAD_FORMAT, noreply));
            }
            let Some(exptime) = parse_i32(t.get(2)) else {
                return Err(ParseError::maybe_silent("CLIENT_ERROR invalid exptime argument", noreply));
            };
            Ok(Command::Touch { key, exptime, noreply })
        }
        b"flush_all" => {
            if !(2..=4).contains(&ntokens) {
                return Err(ERROR);
            }
            let mut delay = 0;
            if ntokens != if noreply { 3 } else { 2 } {
                match parse_i32(t.get(1)) {
                    Some(d) => delay = d,
                    None => {
                        return Err(ParseError::maybe_silent("CLIENT_ERROR invalid exptime argument", noreply));
                    }
                }
            }
            Ok(Command::FlushAll { delay, noreply })
        }
        b"version" => Ok(Command::Version),
        b"refresh_certs" => Ok(Command::RefreshCerts { noreply }),
        b"quit" => Ok(Command::Quit),
        b"shutdown" => Ok(Command::Shutdown {
            mode: match (t.len(), t.get(1)) {
                (1, _) => Some(false),
                (2, b"graceful") => Some(true),
                _ => None,
            },
        }),
        b"stats" => {
            let args = Tokens::new(&line[offset(line, cmd) + cmd.len()..]);
            Ok(Command::Stats { args })
        }
        b"verbosity" => {
            if ntokens != 3 && ntokens != 4 {
                return Err(ERROR);
            }
            match parse_u32(t.get(1)) {
                Some(level) => Ok(Command::Verbosity { level, noreply }),
                None => Err(ParseError::maybe_silent(BAD_FORMAT, noreply)),
            }
        }
        b"cache_memlimit" => {
            if ntokens != 3 && ntokens != 4 {
                return Err(ERROR);
            }
            match parse_u32(t.get(1)) {
                Some(megabytes) => Ok(Command::CacheMemlimit { megabytes, noreply }),
                None => Err(ParseError::maybe_silent(BAD_FORMAT, noreply)),
            }
        }
        _ => {
            // memcached hangs up on what looks like an HTTP request.
            if t.last().starts_with(b"HTTP/") {
                return Err(ParseError { close: true, ..ERROR });
            }
            Err(ERROR)
        }
    }
}

/// `process_update_command`.
fn parse_store<'a>(t: &Tokens<'a>, cmd: StoreCmd, noreply: bool) -> Result<Command<'a>, ParseError> {
    let ntokens = t.len() + 1;
    let ok = if cmd == StoreCmd::Cas { ntokens == 7 || ntokens == 8 } else { ntokens == 6 || ntokens == 7 };
    if !ok {
        return Err(ERROR);
    }
    let bad = ParseError::maybe_silent(BAD_FORMAT, noreply);
    let key = t.get(1);
    if key.len() > KEY_MAX_LENGTH {
        return Err(bad);
    }
    let (Some(flags), Some(exptime), Some(vlen)) = (parse_u32(t.get(2)), parse_i32(t.get(3)), parse_i32(t.get(4)))
    else {
        return Err(bad);
    };
    let mut cas = 0;
    if cmd == StoreCmd::Cas {
        cas = parse_u64(t.get(5)).ok_or(bad)?;
    }
    if !(0..=i32::MAX - 2).contains(&vlen) {
        return Err(bad);
    }
    Ok(Command::Store { cmd, key, flags, exptime, bytes: vlen as usize, cas, noreply })
}
