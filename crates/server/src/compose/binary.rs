//! Binary protocol replies from outcomes (memory or container alike). Quiet opcodes stay
//! silent where memcached's `proto_bin.c` is silent.

use engine::ops::{ArithOutcome, DeleteOutcome, StoreOutcome};
use protocol_memcache::binary::{
    write_counter, write_error, write_error_message, write_get_hit, write_get_miss, write_ok, write_stat,
    write_stat_end, write_version, Opcode, ParseError, Status, OUT_OF_MEMORY_STORE_MESSAGE,
};

use crate::outcome::{Outcome, Refusal, Reply};
use crate::pending::Fail;

/// Which request a reply answers.
#[derive(Clone, Copy, Debug)]
pub struct To {
    /// The request's opcode (quiet variants included).
    pub op: Opcode,
    /// The request's opaque, echoed.
    pub opaque: u32,
}

/// The reply to one binary request (`key`: echoed by getk/gatk hits and misses).
#[derive(Clone, Copy, Debug)]
pub struct Binary<K> {
    /// Which request.
    pub to: To,
    /// Its key.
    pub key: K,
}

impl<K: AsRef<[u8]>> Reply for Binary<K> {
    type Owned = Binary<Vec<u8>>;

    fn owned(&self) -> Binary<Vec<u8>> {
        Binary { to: self.to, key: self.key.as_ref().to_vec() }
    }

    #[inline(always)]
    fn compose(&self, out: &mut Vec<u8>, r: Result<Outcome<'_>, &Fail>) {
        let to = self.to;
        match r {
            Ok(Outcome::Got(hit)) => get(out, to, self.key.as_ref(), hit.map(|h| (h.cas, h.flags, h.value))),
            Ok(Outcome::Stored(o)) => store(out, to, o),
            Ok(Outcome::Deleted(o)) => match o {
                DeleteOutcome::Deleted => ok(out, to, 0),
                DeleteOutcome::NotFound => status(out, to, Status::KeyNotFound),
                DeleteOutcome::Exists => status(out, to, Status::KeyExists),
            },
            Ok(Outcome::Counted(o, _)) => arith(out, to, o),
            Ok(Outcome::Flushed) => ok(out, to, 0),
            Ok(Outcome::Touched(_) | Outcome::Inspected(_)) => {}
            // The disk tier refusing writes: refused like a store that finds no memory.
            Err(Fail::Disk(_)) => write_error(out, to.op, Status::OutOfMemory, to.opaque),
            Err(f) => fail(out, to, f),
        }
    }
}

/// An error status, unless this quiet opcode suppresses it.
pub fn status(out: &mut Vec<u8>, to: To, st: Status) {
    if !to.op.suppresses_reply(st) {
        write_error(out, to.op, st, to.opaque);
    }
}

/// Success with `cas`, unless this quiet opcode suppresses it.
pub fn ok(out: &mut Vec<u8>, to: To, cas: u64) {
    if !to.op.suppresses_reply(Status::NoError) {
        write_ok(out, to.op, to.opaque, cas);
    }
}

/// An error status even for a quiet opcode (refusals before running: value too large,
/// flush disabled, malformed extras, unknown commands).
pub fn error(out: &mut Vec<u8>, to: To, st: Status) {
    write_error(out, to.op, st, to.opaque);
}

/// A store refused from its header: the value is too large, or the disk tier refuses
/// writes (out of memory, as a store that finds none).
pub fn refused(out: &mut Vec<u8>, to: To, r: &Refusal) {
    let st = match r {
        Refusal::TooLarge => Status::ValueTooLarge,
        Refusal::Failed(_) => Status::OutOfMemory,
    };
    write_error(out, to.op, st, to.opaque);
}

/// With `-S`, a request before authentication: refused (`too_large`: a value larger than
/// `-I` is refused as out of memory, as memcached does; else an authentication error).
pub fn unauthenticated(out: &mut Vec<u8>, opcode: u8, opaque: u32, too_large: bool) {
    let st = if too_large { Status::OutOfMemory } else { Status::AuthError };
    write_error(out, opcode, st, opaque);
}

/// A request the parser refused: memcached's error reply, if it sends one.
pub fn invalid(out: &mut Vec<u8>, e: &ParseError) {
    e.write_reply(out);
}

/// One `Stat` reply (`name`, `value`).
pub fn stat(out: &mut Vec<u8>, opaque: u32, name: &[u8], value: &[u8]) {
    write_stat(out, opaque, name, value);
}

/// The empty reply that ends `Stat`'s.
pub fn stat_end(out: &mut Vec<u8>, opaque: u32) {
    write_stat_end(out, opaque);
}

/// `Stat` with a group this server does not have.
pub fn stat_unknown(out: &mut Vec<u8>, opaque: u32) {
    write_error(out, Opcode::Stat, Status::KeyNotFound, opaque);
}

/// `Version`.
pub fn version(out: &mut Vec<u8>, to: To, v: &str) {
    write_version(out, to.opaque, v.as_bytes());
}

/// A failed command: invalid arguments for the client's fault, out of memory for the
/// server's (what memcached answers when it cannot serve), the message as the value.
pub fn fail(out: &mut Vec<u8>, to: To, f: &Fail) {
    let st = match f {
        Fail::Client(_) | Fail::Bound(_) => Status::InvalidArguments,
        Fail::Server(_) | Fail::Down(_) | Fail::Disk(_) => Status::OutOfMemory,
    };
    write_error_message(out, to.op, st, to.opaque, f.text().as_bytes());
}

/// The hit or miss of get/getk/gat/gatk/touch (`hit`: cas, flags, value).
#[inline]
fn get(out: &mut Vec<u8>, to: To, key: &[u8], hit: Option<(u64, u32, &[u8])>) {
    match hit {
        Some((cas, flags, value)) => write_get_hit(out, to.op, to.opaque, cas, flags, key, value),
        None if to.op.suppresses_reply(Status::KeyNotFound) => {}
        None => write_get_miss(out, to.op, to.opaque, key),
    }
}

/// The reply to set/add/replace/append/prepend (and their quiet forms).
fn store(out: &mut Vec<u8>, to: To, o: StoreOutcome) {
    match o {
        StoreOutcome::Stored(cas) => ok(out, to, cas),
        StoreOutcome::Exists => status(out, to, Status::KeyExists),
        StoreOutcome::NotFound => status(out, to, Status::KeyNotFound),
        StoreOutcome::NotStored => {
            let st = match to.op.base() {
                Opcode::Add => Status::KeyExists,
                Opcode::Replace => Status::KeyNotFound,
                _ => Status::ItemNotStored,
            };
            status(out, to, st)
        }
        StoreOutcome::NoMemory => {
            write_error_message(out, to.op, Status::OutOfMemory, to.opaque, OUT_OF_MEMORY_STORE_MESSAGE.as_bytes())
        }
    }
}

/// The reply to increment/decrement.
fn arith(out: &mut Vec<u8>, to: To, o: ArithOutcome) {
    match o {
        ArithOutcome::Done { value, cas, .. } => {
            if !to.op.suppresses_reply(Status::NoError) {
                write_counter(out, to.op, to.opaque, cas, value);
            }
        }
        ArithOutcome::NotFound => status(out, to, Status::KeyNotFound),
        ArithOutcome::NonNumeric => status(out, to, Status::NonNumeric),
        ArithOutcome::Exists => status(out, to, Status::KeyExists),
        ArithOutcome::NoMemory => status(out, to, Status::OutOfMemory),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(op: Opcode) -> Binary<&'static [u8]> {
        Binary { to: To { op, opaque: 9 }, key: b"k" }
    }

    #[test]
    fn quiet_success_is_silent_and_errors_are_not() {
        let mut v = Vec::new();
        reply(Opcode::SetQ).compose(&mut v, Ok(Outcome::Stored(StoreOutcome::Stored(1))));
        assert!(v.is_empty());
        reply(Opcode::SetQ).compose(&mut v, Ok(Outcome::Stored(StoreOutcome::NotStored)));
        assert_eq!(v[0], 0x81);
        assert_eq!(u16::from_be_bytes([v[6], v[7]]), Status::ItemNotStored as u16);
    }

    #[test]
    fn add_that_finds_the_key_says_exists() {
        let mut v = Vec::new();
        reply(Opcode::Add).owned().compose(&mut v, Ok(Outcome::Stored(StoreOutcome::NotStored)));
        assert_eq!(u16::from_be_bytes([v[6], v[7]]), Status::KeyExists as u16);
    }

    #[test]
    fn a_refusing_disk_is_out_of_memory() {
        let mut v = Vec::new();
        reply(Opcode::Delete).compose(&mut v, Err(&Fail::Disk(b"SERVER_ERROR persistence failed\r\n")));
        assert_eq!(u16::from_be_bytes([v[6], v[7]]), Status::OutOfMemory as u16);
    }
}
