//! One client connection: read, run every complete request, write the replies in one
//! go, repeat. The first byte picks the protocol (0x80 = binary), as in memcached.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::rbuf::{self, Idle};
use crate::session::{self, Session, Step};
use crate::shared::{ConnInfo, Shared, WorkerStats};

/// Read buffer growth step once a connection is busy.
const READ_CHUNK: usize = crate::rbuf::LENT;
/// What a TLS connection's own read buffer starts at and is given back down to while it
/// has nothing buffered (plain connections borrow theirs, see `crate::rbuf`).
const IDLE_BUF: usize = 2 * 1024;

/// Serve one connection until the client leaves, asks to quit, or breaks the protocol.
///
/// Buffers: a plain connection waits for input holding none, and borrows its read and
/// output buffers from its worker (`crate::rbuf`) for as long as it has bytes to answer;
/// a TLS one keeps a small read buffer of its own.
pub async fn serve<S: AsyncRead + AsyncWrite + Unpin + Idle>(
    mut sock: S,
    shared: Arc<Shared>,
    worker: Arc<WorkerStats>,
    info: Arc<ConnInfo>,
) {
    let _closing = Closing(&shared, &info);
    let mut session = Session::new(&shared, info.clone());
    let mut rbuf: Vec<u8> = if S::LENDS { Vec::new() } else { Vec::with_capacity(IDLE_BUF) };
    let mut out: Vec<u8> = Vec::new();
    let idle = shared.cfg.idle_timeout;
    loop {
        // Stopping: the socket's reading side is shut down (by Shared::drain, or here for
        // one accepted meanwhile), so a read gets what reached it before (noreply writes
        // included) and then the end of the stream: a client that keeps the socket busy
        // stops at the first request boundary where nothing more is waiting.
        let stopping = shared.shutting_down.load(Ordering::Relaxed);
        if stopping {
            // SAFETY: the connection's own socket, open while it is served.
            unsafe { libc::shutdown(info.fd.load(Ordering::SeqCst), libc::SHUT_RD) };
            if S::LENDS && rbuf.capacity() == 0 {
                rbuf = rbuf::take();
            }
        }
        if S::LENDS && rbuf.capacity() == 0 {
            // Nothing buffered: wait for input without a buffer, then borrow one.
            let ready = sock.ready();
            if idle > 0 {
                if tokio::time::timeout(Duration::from_secs(idle), ready).await.is_err() {
                    break;
                }
            } else {
                ready.await;
            }
            rbuf = rbuf::take();
        }
        if rbuf.capacity() - rbuf.len() < IDLE_BUF / 2 {
            // Busy (a partial request, or a full buffer): grow by chunks.
            rbuf.reserve(READ_CHUNK.max(rbuf.capacity()));
        }
        let read = sock.read_buf(&mut rbuf);
        let n = if idle > 0 && !stopping {
            match tokio::time::timeout(Duration::from_secs(idle), read).await {
                Ok(r) => r,
                Err(_) => break,
            }
        } else {
            read.await
        };
        let n = match n {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        session.received(&shared, &worker, n);
        if out.capacity() == 0 {
            out = rbuf::take();
        }
        // Run what is buffered, yielding every `-R` requests like memcached does.
        let mut start = 0;
        let close = loop {
            let (used, step) = session.run(&shared, &worker, &rbuf[start..], &mut out);
            start += used;
            match step {
                Step::Read => break false,
                Step::Close => break true,
                Step::Pending(job) => {
                    // A reply from a slow tier: earlier writes are acknowledged first (their
                    // replies come before it, and it may take a while), then it is awaited.
                    acknowledge(&shared, &mut session, &mut out).await;
                    let reply = job.await;
                    out.extend_from_slice(&reply);
                }
                Step::Yield => {
                    worker.conn_yields.fetch_add(1, Ordering::Relaxed);
                    acknowledge(&shared, &mut session, &mut out).await;
                    if !out.is_empty() && write(&mut sock, &mut out, &worker).await.is_err() {
                        return;
                    }
                    tokio::task::yield_now().await;
                }
            }
        };
        rbuf.drain(..start);
        if S::LENDS && rbuf.is_empty() {
            // Everything read is answered: the buffer goes back before the reply is written
            // (a slow reader does not hold it).
            rbuf::give(std::mem::take(&mut rbuf));
        }
        acknowledge(&shared, &mut session, &mut out).await;
        if !out.is_empty() && write(&mut sock, &mut out, &worker).await.is_err() {
            break;
        }
        if close {
            break;
        }
        if !S::LENDS && rbuf.is_empty() && rbuf.capacity() > IDLE_BUF {
            // Everything read was answered: give the grown buffer back before waiting.
            rbuf = Vec::with_capacity(IDLE_BUF);
        } else if rbuf.capacity() > 4 * READ_CHUNK && rbuf.len() < READ_CHUNK {
            rbuf.shrink_to(READ_CHUNK);
        }
        // Written: the output buffer goes back too (a grown one to the allocator).
        rbuf::give(std::mem::take(&mut out));
    }
    let _ = sock.shutdown().await;
}

/// With a persistent tier, wait until the writes behind the replies in `out` may be
/// acknowledged, then settle their replies (errors for writes the disk failed to keep).
/// (`&mut`: a shared reference to the session, which holds a RefCell, would make the
/// connection's future not `Send`.)
async fn acknowledge(shared: &Shared, session: &mut Session, out: &mut Vec<u8>) {
    let seq = session.ack_seq();
    let failed = match &shared.disk {
        Some(disk) if seq > 0 => session::durable(disk.clone(), seq).await,
        _ => None,
    };
    session.settle(shared, failed, out);
}

/// Forgets the connection's descriptor when `serve` returns by any path: a local, so it
/// is dropped before the socket (a parameter) closes the descriptor.
struct Closing<'a>(&'a Shared, &'a ConnInfo);

impl Drop for Closing<'_> {
    fn drop(&mut self) {
        self.0.closing(self.1);
    }
}

async fn write<S: AsyncWrite + Unpin>(sock: &mut S, out: &mut Vec<u8>, worker: &WorkerStats) -> std::io::Result<()> {
    sock.write_all(out).await?;
    // A TLS stream sends its records here (a no-op for plain sockets).
    sock.flush().await?;
    worker.bytes_written.fetch_add(out.len() as u64, Ordering::Relaxed);
    out.clear();
    Ok(())
}
