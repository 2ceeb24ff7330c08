//! Text protocol replies from engine outcomes.

use engine::ops::ArithOutcome;
use protocol_memcache::text::reply;

/// The reply to `incr`/`decr` (nothing under `noreply`).
pub fn arith(outcome: ArithOutcome, noreply: bool, out: &mut Vec<u8>) {
    if noreply {
        return;
    }
    match outcome {
        ArithOutcome::Done { value, .. } => reply::number(out, value),
        ArithOutcome::NotFound => out.extend_from_slice(reply::NOT_FOUND),
        ArithOutcome::NonNumeric => out.extend_from_slice(reply::NON_NUMERIC),
        ArithOutcome::NoMemory => out.extend_from_slice(b"SERVER_ERROR out of memory\r\n"),
        ArithOutcome::Exists => out.extend_from_slice(reply::EXISTS),
    }
}
