//! Worker threads, as memcached's: each runs its own single-threaded event loop and owns
//! the connections handed to it, so a request never hops between threads.
//!
//! Two kinds: the epoll workers (a tokio current-thread runtime each: TLS connections, the
//! MySQL proxy's clients, and every memcached connection with `--io-uring off`) and, with
//! io_uring, as many ring workers (`crate::uring`) for the memcached connections in clear.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::mpsc::{unbounded_channel, UnboundedSender};

use crate::conn;
use crate::shared::{ConnInfo, Peer, Shared, WorkerStats};
use crate::uring::{self, Bell, NewConn};

/// An accepted client socket on its way to a worker.
pub enum Incoming {
    /// A TCP connection.
    Tcp(std::net::TcpStream),
    /// A TCP connection on a `-Z` listener: TLS handshake first.
    Tls(std::net::TcpStream),
    /// A Unix-domain connection.
    Unix(std::os::unix::net::UnixStream),
}

/// Something to start on a worker's runtime, called there (so it may `tokio::spawn`): a
/// MySQL proxy client, whose serving the proxy decides.
pub type Task = Box<dyn FnOnce() + Send>;

/// Work handed to a worker thread.
enum Work {
    /// A memcached connection with its `stats conns` entry and id.
    Memcache(Incoming, Arc<ConnInfo>, u64),
    /// Any other task.
    Task(Task),
}

/// Handles to the worker threads.
pub struct Workers {
    senders: Vec<UnboundedSender<Work>>,
    /// The epoll workers' runtimes.
    handles: Vec<tokio::runtime::Handle>,
    /// The ring workers' doorbells (none on epoll).
    rings: Vec<Arc<Bell>>,
    next: AtomicUsize,
}

impl Workers {
    /// Start `shared.cfg.threads` epoll workers.
    pub fn start(shared: &Arc<Shared>) -> std::io::Result<Workers> {
        let mut senders = Vec::new();
        let mut handles = Vec::new();
        for (i, stats) in shared.workers.iter().enumerate() {
            let (tx, mut rx) = unbounded_channel::<Work>();
            let shared = shared.clone();
            let stats = stats.clone();
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            handles.push(rt.handle().clone());
            std::thread::Builder::new().name(format!("worker-{i}")).spawn(move || {
                rt.block_on(async move {
                    while let Some(work) = rx.recv().await {
                        let (sock, info, id) = match work {
                            Work::Memcache(sock, info, id) => (sock, info, id),
                            Work::Task(task) => {
                                task();
                                continue;
                            }
                        };
                        start(sock, shared.clone(), stats.clone(), info, id);
                    }
                });
            })?;
            senders.push(tx);
        }
        Ok(Workers { senders, handles, rings: Vec::new(), next: AtomicUsize::new(0) })
    }

    /// Start as many ring workers (`crate::uring`), each polling its connections' futures
    /// in the context of the epoll worker of the same number; from then on memcached
    /// connections in clear go to them. On an error none is used.
    pub fn start_rings(&mut self, shared: &Arc<Shared>) -> std::io::Result<()> {
        let mut rings = Vec::new();
        for (i, (stats, rt)) in shared.workers.iter().zip(&self.handles).enumerate() {
            rings.push(uring::spawn(i, shared.clone(), stats.clone(), rt.clone())?);
        }
        self.rings = rings;
        Ok(())
    }

    /// Hand a new connection to the next worker, round robin.
    pub fn dispatch(&self, shared: &Shared, sock: Incoming, addr: Peer, listen_addr: Arc<str>) {
        let id = shared.next_conn.fetch_add(1, Ordering::Relaxed);
        use std::os::fd::AsRawFd;
        let fd = match &sock {
            Incoming::Tcp(s) | Incoming::Tls(s) => s.as_raw_fd(),
            Incoming::Unix(s) => s.as_raw_fd(),
        };
        let info = Arc::new(ConnInfo {
            addr,
            listen_addr,
            last_cmd: std::sync::atomic::AtomicU32::new(shared.engine.clock().now()),
            fd: std::sync::atomic::AtomicI32::new(fd),
        });
        shared.conns.lock().insert(id, info.clone());
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let fd = match sock {
            Incoming::Tcp(s) if !self.rings.is_empty() => {
                let _ = s.set_nodelay(true);
                std::os::fd::OwnedFd::from(s)
            }
            Incoming::Unix(s) if !self.rings.is_empty() => std::os::fd::OwnedFd::from(s),
            sock => {
                let _ = self.senders[n % self.senders.len()].send(Work::Memcache(sock, info, id));
                return;
            }
        };
        self.rings[n % self.rings.len()].deliver(NewConn { fd, info, id });
    }

    /// Hand a task (a MySQL proxy client) to the next worker, round robin.
    pub fn dispatch_task(&self, task: Task) {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.senders.len();
        let _ = self.senders[i].send(Work::Task(task));
    }
}

/// Spawns the task serving one connection. Each kind is its own task: a task is as large
/// as its future, and one future for the three kinds would make every plain connection
/// carry the room of a TLS one (issue 11: idle connections' memory).
fn start(sock: Incoming, shared: Arc<Shared>, stats: Arc<WorkerStats>, info: Arc<ConnInfo>, id: u64) {
    let gone = Gone(shared.clone(), id);
    match sock {
        Incoming::Tcp(s) => {
            tokio::spawn(async move {
                let _ = s.set_nodelay(true);
                if s.set_nonblocking(true).is_ok() {
                    if let Ok(s) = tokio::net::TcpStream::from_std(s) {
                        conn::serve(s, gone.0.clone(), stats, info).await;
                    }
                }
            });
        }
        Incoming::Tls(s) => {
            tokio::spawn(async move {
                let _ = s.set_nodelay(true);
                if let Some(s) = tls_handshake(s, &gone.0).await {
                    conn::serve(s, gone.0.clone(), stats, info).await;
                }
            });
        }
        Incoming::Unix(s) => {
            tokio::spawn(async move {
                if s.set_nonblocking(true).is_ok() {
                    if let Ok(s) = tokio::net::UnixStream::from_std(s) {
                        conn::serve(s, gone.0.clone(), stats, info).await;
                    }
                }
            });
        }
    }
}

/// Takes a connection out of the server's table when its task ends, by any path.
struct Gone(Arc<Shared>, u64);

impl Drop for Gone {
    fn drop(&mut self) {
        self.0.conn_gone(self.1);
    }
}

/// The TLS handshake of a `-Z` connection, within `-o idle_timeout` when one is set. A
/// client that fails it is reset (SO_LINGER 0), as memcached's close of a socket with
/// unread bytes resets it.
async fn tls_handshake(
    s: std::net::TcpStream,
    shared: &Shared,
) -> Option<tokio_rustls::server::TlsStream<tokio::net::TcpStream>> {
    let tls = shared.tls.as_ref()?;
    s.set_nonblocking(true).ok()?;
    let s = tokio::net::TcpStream::from_std(s).ok()?;
    // Until the handshake succeeds, dropping the socket resets it.
    let _ = socket2::SockRef::from(&s).set_linger(Some(std::time::Duration::ZERO));
    let handshake = async {
        // A client speaking plain memcached on a TLS port (its first byte is not a TLS
        // handshake record) is reset without a TLS alert, as OpenSSL does in memcached.
        let mut first = [0u8; 1];
        if s.peek(&mut first).await.ok()? == 1 && first[0] != crate::tls::HANDSHAKE_RECORD {
            tls.handshake_errors.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        tls.accept(s).await
    };
    let stream = match shared.cfg.idle_timeout {
        0 => handshake.await,
        secs => tokio::time::timeout(std::time::Duration::from_secs(secs), handshake).await.ok().flatten(),
    }?;
    let _ = socket2::SockRef::from(stream.get_ref().0).set_linger(None);
    Some(stream)
}
