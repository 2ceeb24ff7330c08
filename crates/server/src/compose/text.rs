//! Text protocol replies from outcomes (memory or container alike). Under `noreply`
//! nothing is written, errors included, as memcached does for these commands (except the
//! server errors it always says: containers down, the disk refusing writes).

use engine::ops::{ArithOutcome, DeleteOutcome, StoreOutcome};
use protocol_memcache::text::reply;

use crate::outcome::{Outcome, Refusal, Reply};
use crate::pending::Fail;

/// The reply to one text command: a retrieval's `VALUE` line echoes `key` (with its CAS
/// for `gets`/`gats`); other commands answer one line unless `noreply`.
#[derive(Clone, Copy, Debug)]
pub struct Text<K> {
    /// The key as the client wrote it (retrievals).
    pub key: K,
    /// `noreply`.
    pub noreply: bool,
    /// `gets`/`gats`: show CAS uniques.
    pub cas: bool,
}

impl Text<&'static [u8]> {
    /// A command answering one line (store, delete, incr/decr, touch, flush_all).
    pub fn line(noreply: bool) -> Self {
        Text { key: b"", noreply, cas: false }
    }
}

impl<'a> Text<&'a [u8]> {
    /// One key of a retrieval.
    pub fn value(key: &'a [u8], cas: bool) -> Self {
        Text { key, noreply: false, cas }
    }
}

impl<K: AsRef<[u8]>> Reply for Text<K> {
    type Owned = Text<Vec<u8>>;

    fn owned(&self) -> Text<Vec<u8>> {
        Text { key: self.key.as_ref().to_vec(), noreply: self.noreply, cas: self.cas }
    }

    #[inline(always)]
    fn compose(&self, out: &mut Vec<u8>, r: Result<Outcome<'_>, &Fail>) {
        let line = match r {
            Ok(Outcome::Got(Some(h))) => {
                return reply::value(out, self.key.as_ref(), h.flags, h.value, self.cas.then_some(h.cas));
            }
            Ok(Outcome::Got(None)) | Ok(Outcome::Inspected(_)) => return,
            Ok(Outcome::Stored(o)) => match o {
                StoreOutcome::Stored(_) => reply::STORED,
                StoreOutcome::NotStored => reply::NOT_STORED,
                StoreOutcome::Exists => reply::EXISTS,
                StoreOutcome::NotFound => reply::NOT_FOUND,
                StoreOutcome::NoMemory => reply::NO_MEMORY,
            },
            // A CAS mismatch cannot happen in text: NOT_FOUND like a miss.
            Ok(Outcome::Deleted(DeleteOutcome::Deleted)) => reply::DELETED,
            Ok(Outcome::Deleted(_)) => reply::NOT_FOUND,
            Ok(Outcome::Touched(hit)) => {
                if hit {
                    reply::TOUCHED
                } else {
                    reply::NOT_FOUND
                }
            }
            Ok(Outcome::Flushed) => reply::OK,
            Ok(Outcome::Counted(o, _)) => match o {
                ArithOutcome::Done { value, .. } => {
                    if !self.noreply {
                        reply::number(out, value);
                    }
                    return;
                }
                ArithOutcome::NotFound => reply::NOT_FOUND,
                ArithOutcome::NonNumeric => reply::NON_NUMERIC,
                ArithOutcome::NoMemory => b"SERVER_ERROR out of memory\r\n",
                ArithOutcome::Exists => reply::EXISTS,
            },
            Err(f) if f.said_anyway() => return out.extend(f.line()),
            Err(f) => return say(out, self.noreply, &f.line()),
        };
        say(out, self.noreply, line);
    }
}

/// Write `bytes` unless the command asked for no reply.
pub fn say(out: &mut Vec<u8>, noreply: bool, bytes: &[u8]) {
    if !noreply {
        out.extend_from_slice(bytes);
    }
}

/// The end of a retrieval's reply.
pub fn end(out: &mut Vec<u8>) {
    out.extend_from_slice(reply::END);
}

/// A retrieval with a key over 250 bytes: memcached drops what it had for the command.
pub fn key_too_long(out: &mut Vec<u8>) {
    out.extend_from_slice(b"CLIENT_ERROR bad command line format\r\n");
}

/// A retrieval that failed as a whole: its error line alone.
pub fn failed(out: &mut Vec<u8>, f: &Fail) {
    out.extend(f.line());
}

/// A store refused before its data was read (said under `noreply` only when it is a
/// server error other than the size).
pub fn refused(out: &mut Vec<u8>, noreply: bool, r: &Refusal) {
    match r {
        Refusal::TooLarge => say(out, noreply, reply::TOO_LARGE),
        Refusal::Failed(f) => out.extend(f.line()),
    }
}

/// A storage command whose data block does not end with `\r\n`.
pub fn bad_chunk(out: &mut Vec<u8>, noreply: bool) {
    say(out, noreply, reply::BAD_CHUNK);
}

/// `bind <name>`: `OK`, or why not.
pub fn bound(out: &mut Vec<u8>, r: Result<(), Fail>) {
    match r {
        Ok(()) => out.extend_from_slice(reply::OK),
        Err(f) => out.extend(f.line()),
    }
}

/// `OK` (verbosity, cache_memlimit, refresh_certs), unless `noreply`.
pub fn ok(out: &mut Vec<u8>, noreply: bool) {
    say(out, noreply, reply::OK);
}

/// Any other line an administrative command answers (`VERSION ...`, errors).
pub fn line(out: &mut Vec<u8>, noreply: bool, line: &[u8]) {
    say(out, noreply, line);
}

/// `VERSION <v>`.
pub fn version(out: &mut Vec<u8>, v: &str) {
    out.extend_from_slice(b"VERSION ");
    out.extend_from_slice(v.as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// A command line memcached refuses: its error (`ERROR`, `CLIENT_ERROR ...`).
pub fn error_line(out: &mut Vec<u8>, msg: &str) {
    out.extend_from_slice(msg.as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// The reply written since `base` replaced by `line` (the `-Y` exchange answers only the
/// last of the commands read together, as memcached 1.6.18).
pub fn replace(out: &mut Vec<u8>, base: usize, line: &[u8]) {
    out.truncate(base);
    out.extend_from_slice(line);
}

/// `ERROR`: an unknown command.
pub fn unknown(out: &mut Vec<u8>) {
    out.extend_from_slice(reply::ERROR);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(noreply: bool, r: Result<Outcome<'_>, &Fail>) -> String {
        let mut v = Vec::new();
        Text::line(noreply).compose(&mut v, r);
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn outcomes_become_memcached_lines() {
        assert_eq!(text(false, Ok(Outcome::Stored(StoreOutcome::Stored(3)))), "STORED\r\n");
        assert_eq!(
            text(false, Ok(Outcome::Stored(StoreOutcome::NoMemory))),
            "SERVER_ERROR out of memory storing object\r\n"
        );
        assert_eq!(text(false, Ok(Outcome::Deleted(DeleteOutcome::Exists))), "NOT_FOUND\r\n");
        assert_eq!(text(false, Ok(Outcome::Touched(true))), "TOUCHED\r\n");
        let done = ArithOutcome::Done { value: 42, cas: 1, created: false };
        assert_eq!(text(false, Ok(Outcome::Counted(done, crate::outcome::Ttls::UNKNOWN))), "42\r\n");
        assert_eq!(text(false, Err(&Fail::Server("x".into()))), "SERVER_ERROR x\r\n");
        assert_eq!(text(false, Ok(Outcome::Flushed)), "OK\r\n");
    }

    #[test]
    fn noreply_silences_all_but_server_trouble() {
        assert_eq!(text(true, Err(&Fail::Client("bad".into()))), "");
        assert_eq!(text(true, Ok(Outcome::Counted(ArithOutcome::NonNumeric, crate::outcome::Ttls::UNKNOWN))), "");
        assert_eq!(
            text(true, Err(&Fail::Down("containers unavailable: x".into()))),
            "SERVER_ERROR containers unavailable: x\r\n"
        );
        assert_eq!(
            text(true, Err(&Fail::Disk(b"SERVER_ERROR persistence failed\r\n"))),
            "SERVER_ERROR persistence failed\r\n"
        );
    }

    #[test]
    fn a_hit_echoes_the_key_and_cas_when_asked() {
        let hit =
            crate::outcome::Hit { value: b"v", flags: 3, cas: 9, ttls: crate::outcome::Ttls::UNKNOWN, item: None };
        let mut v = Vec::new();
        Text::value(b"k", true).compose(&mut v, Ok(Outcome::Got(Some(hit))));
        Text::value(b"k", false).owned().compose(&mut v, Ok(Outcome::Got(Some(hit))));
        assert_eq!(v, b"VALUE k 3 1 9\r\nv\r\nVALUE k 3 1\r\nv\r\n");
    }
}
