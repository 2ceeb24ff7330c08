//! The one asynchronous-response mechanism (memcached's `io_pending`): a command whose
//! tier cannot answer at once (a SQL container today; any slow tier can use it) returns a
//! [`Later`] outcome, and the front end turns it into a [`Job`] with the same composer it
//! uses for an outcome that is there now. The connection awaits jobs in request order
//! (`conn.rs`), so replies never overtake each other and workers never block.

use std::future::Future;
use std::pin::Pin;

/// A reply that is not ready yet: an owned future resolving to the command's reply bytes.
pub type Job = Pin<Box<dyn Future<Output = Vec<u8>> + Send>>;

/// An outcome that a slow tier delivers later, or the reason it could not.
pub type Later<T> = Pin<Box<dyn Future<Output = Result<T, Fail>> + Send>>;

/// The job that waits for `later` and composes its reply with `compose` (the same
/// composer the front end calls with `Ok(outcome)` when the outcome is there now).
pub fn job<T, F>(later: Later<T>, compose: F) -> Job
where
    T: Send + 'static,
    F: FnOnce(Result<T, Fail>, &mut Vec<u8>) + Send + 'static,
{
    Box::pin(async move {
        let mut v = Vec::new();
        compose(later.await, &mut v);
        v
    })
}

/// Why a slow tier produced no outcome: the error a client is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fail {
    /// The request was wrong (`CLIENT_ERROR ...`; binary: invalid arguments).
    Client(String),
    /// The server or its backend failed (`SERVER_ERROR ...`; binary: out of memory, as
    /// memcached answers a failed allocation).
    Server(String),
}

impl Fail {
    /// The text reply line, `\r\n` included (CR/LF in the message become spaces).
    pub fn line(&self) -> Vec<u8> {
        let (p, s) = match self {
            Fail::Client(s) => ("CLIENT_ERROR ", s),
            Fail::Server(s) => ("SERVER_ERROR ", s),
        };
        let mut v = p.as_bytes().to_vec();
        v.extend(s.bytes().map(|b| if b == b'\r' || b == b'\n' { b' ' } else { b }));
        v.extend_from_slice(b"\r\n");
        v
    }

    /// The message alone (binary replies carry it as their value).
    pub fn text(&self) -> &str {
        match self {
            Fail::Client(s) | Fail::Server(s) => s,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fail_lines_never_break_the_protocol() {
        assert_eq!(Fail::Client("bad\r\nkey".into()).line(), b"CLIENT_ERROR bad  key\r\n");
        assert_eq!(Fail::Server("down".into()).line(), b"SERVER_ERROR down\r\n");
    }

    #[test]
    fn a_job_composes_what_arrives_later() {
        let later: Later<u32> = Box::pin(async { Ok(7) });
        let j = job(later, |r, v| v.extend_from_slice(format!("{}", r.unwrap()).as_bytes()));
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        assert_eq!(rt.block_on(j), b"7");
    }
}
