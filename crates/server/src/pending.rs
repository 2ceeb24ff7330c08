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

/// Several outcomes awaited together (one command over several keys): polled at once, so
/// a backend that merges the reads queued meanwhile (sql-containers' `SELECT ... IN`) sees
/// them all; the answers in the order given.
pub async fn all<T>(laters: Vec<Later<T>>) -> Vec<Result<T, Fail>> {
    futures_util::future::join_all(laters).await
}

/// Why a command has no outcome: the error a client is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fail {
    /// The request was wrong (`CLIENT_ERROR ...`; binary: invalid arguments).
    Client(String),
    /// The server or its backend failed (`SERVER_ERROR ...`; binary: out of memory, as
    /// memcached answers a failed allocation).
    Server(String),
    /// The key named a container and nothing in it (`@@name`): the connection is now bound
    /// to it. Text and meta gets answer a miss; anything else this `CLIENT_ERROR`.
    Bound(String),
    /// The containers are not loaded (their backend unreachable): `SERVER_ERROR ...`, said
    /// even under `noreply` like memcached's other server errors.
    Down(String),
    /// The disk tier refuses writes (full, failing): this `SERVER_ERROR` line, said even
    /// under `noreply`; binary: out of memory.
    Disk(&'static [u8]),
}

impl Fail {
    /// The text reply line, `\r\n` included (CR/LF in the message become spaces).
    pub fn line(&self) -> Vec<u8> {
        let (p, s) = match self {
            Fail::Client(s) | Fail::Bound(s) => ("CLIENT_ERROR ", s),
            Fail::Server(s) | Fail::Down(s) => ("SERVER_ERROR ", s),
            Fail::Disk(line) => return line.to_vec(),
        };
        let mut v = p.as_bytes().to_vec();
        v.extend(s.bytes().map(|b| if b == b'\r' || b == b'\n' { b' ' } else { b }));
        v.extend_from_slice(b"\r\n");
        v
    }

    /// The message alone (binary replies carry it as their value).
    pub fn text(&self) -> &str {
        match self {
            Fail::Client(s) | Fail::Server(s) | Fail::Bound(s) | Fail::Down(s) => s,
            Fail::Disk(line) => std::str::from_utf8(line).unwrap_or_default().trim_end(),
        }
    }

    /// Is it said even when the command asked for no reply (`noreply`)?
    pub fn said_anyway(&self) -> bool {
        matches!(self, Fail::Down(_) | Fail::Disk(_))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fail_lines_never_break_the_protocol() {
        assert_eq!(Fail::Client("bad\r\nkey".into()).line(), b"CLIENT_ERROR bad  key\r\n");
        assert_eq!(Fail::Server("down".into()).line(), b"SERVER_ERROR down\r\n");
        assert_eq!(Fail::Disk(b"SERVER_ERROR persistence failed\r\n").line(), b"SERVER_ERROR persistence failed\r\n");
        assert_eq!(Fail::Disk(b"SERVER_ERROR persistence failed\r\n").text(), "SERVER_ERROR persistence failed");
    }

    #[test]
    fn a_job_composes_what_arrives_later() {
        let later: Later<u32> = Box::pin(async { Ok(7) });
        let j = job(later, |r, v| v.extend_from_slice(format!("{}", r.unwrap()).as_bytes()));
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        assert_eq!(rt.block_on(j), b"7");
    }

    #[test]
    fn all_keeps_the_order_given() {
        let a: Later<u32> = Box::pin(async {
            tokio::task::yield_now().await;
            Ok(1)
        });
        let b: Later<u32> = Box::pin(async { Err(Fail::Server("x".into())) });
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        assert_eq!(rt.block_on(all(vec![a, b])), vec![Ok(1), Err(Fail::Server("x".into()))]);
    }
}
