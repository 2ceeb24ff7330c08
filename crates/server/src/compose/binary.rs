//! Binary protocol replies from outcomes (memory or container alike). Quiet opcodes stay
//! silent where memcached's `proto_bin.c` is silent.

use engine::ops::{ArithOutcome, DeleteOutcome, StoreOutcome};
use protocol_memcache::binary::{
    write_counter, write_error, write_error_message, write_get_hit, write_get_miss, write_ok, Opcode, Status,
    OUT_OF_MEMORY_STORE_MESSAGE,
};

use crate::pending::Fail;

/// Which request a reply answers.
#[derive(Clone, Copy, Debug)]
pub struct To {
    /// The request's opcode (quiet variants included).
    pub op: Opcode,
    /// The request's opaque, echoed.
    pub opaque: u32,
}

/// An error status, unless this quiet opcode suppresses it.
pub fn status(out: &mut Vec<u8>, to: To, st: Status) {
    if !to.op.suppresses_reply(st) {
        write_error(out, to.op, st, to.opaque);
    }
}

/// Success with `cas`, unless this quiet opcode suppresses it.
fn ok(out: &mut Vec<u8>, to: To, cas: u64) {
    if !to.op.suppresses_reply(Status::NoError) {
        write_ok(out, to.op, to.opaque, cas);
    }
}

/// A failed command: invalid arguments for the client's fault, out of memory for the
/// server's (what memcached answers when it cannot serve), the message as the value.
pub fn fail(out: &mut Vec<u8>, to: To, f: &Fail) {
    let st = match f {
        Fail::Client(_) => Status::InvalidArguments,
        Fail::Server(_) => Status::OutOfMemory,
    };
    write_error_message(out, to.op, st, to.opaque, f.text().as_bytes());
}

/// The hit or miss of get/getk/gat/gatk/touch (`hit`: cas, flags, value).
pub fn get(out: &mut Vec<u8>, to: To, key: &[u8], hit: Option<(u64, u32, &[u8])>) {
    match hit {
        Some((cas, flags, value)) => write_get_hit(out, to.op, to.opaque, cas, flags, key, value),
        None if to.op.suppresses_reply(Status::KeyNotFound) => {}
        None => write_get_miss(out, to.op, to.opaque, key),
    }
}

/// The reply to set/add/replace/append/prepend (and their quiet forms).
pub fn store(out: &mut Vec<u8>, to: To, r: Result<StoreOutcome, Fail>) {
    match r {
        Ok(StoreOutcome::Stored(cas)) => ok(out, to, cas),
        Ok(StoreOutcome::Exists) => status(out, to, Status::KeyExists),
        Ok(StoreOutcome::NotFound) => status(out, to, Status::KeyNotFound),
        Ok(StoreOutcome::NotStored) => {
            let st = match to.op.base() {
                Opcode::Add => Status::KeyExists,
                Opcode::Replace => Status::KeyNotFound,
                _ => Status::ItemNotStored,
            };
            status(out, to, st)
        }
        Ok(StoreOutcome::NoMemory) => {
            write_error_message(out, to.op, Status::OutOfMemory, to.opaque, OUT_OF_MEMORY_STORE_MESSAGE.as_bytes())
        }
        Err(f) => fail(out, to, &f),
    }
}

/// The reply to delete.
pub fn delete(out: &mut Vec<u8>, to: To, r: Result<DeleteOutcome, Fail>) {
    match r {
        Ok(DeleteOutcome::Deleted) => ok(out, to, 0),
        Ok(DeleteOutcome::NotFound) => status(out, to, Status::KeyNotFound),
        Ok(DeleteOutcome::Exists) => status(out, to, Status::KeyExists),
        Err(f) => fail(out, to, &f),
    }
}

/// The reply to increment/decrement.
pub fn arith(out: &mut Vec<u8>, to: To, r: Result<ArithOutcome, Fail>) {
    match r {
        Ok(ArithOutcome::Done { value, cas, .. }) => {
            if !to.op.suppresses_reply(Status::NoError) {
                write_counter(out, to.op, to.opaque, cas, value);
            }
        }
        Ok(ArithOutcome::NotFound) => status(out, to, Status::KeyNotFound),
        Ok(ArithOutcome::NonNumeric) => status(out, to, Status::NonNumeric),
        Ok(ArithOutcome::Exists) => status(out, to, Status::KeyExists),
        Ok(ArithOutcome::NoMemory) => status(out, to, Status::OutOfMemory),
        Err(f) => fail(out, to, &f),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quiet_success_is_silent_and_errors_are_not() {
        let to = To { op: Opcode::SetQ, opaque: 9 };
        let mut v = Vec::new();
        store(&mut v, to, Ok(StoreOutcome::Stored(1)));
        assert!(v.is_empty());
        store(&mut v, to, Ok(StoreOutcome::NotStored));
        assert_eq!(v[0], 0x81);
        assert_eq!(u16::from_be_bytes([v[6], v[7]]), Status::ItemNotStored as u16);
    }

    #[test]
    fn add_that_finds_the_key_says_exists() {
        let mut v = Vec::new();
        store(&mut v, To { op: Opcode::Add, opaque: 0 }, Ok(StoreOutcome::NotStored));
        assert_eq!(u16::from_be_bytes([v[6], v[7]]), Status::KeyExists as u16);
    }
}
