//! Listening sockets (`-l`, `-p`, `-s`, `-U`) and the accept loops that enforce `-c`.

use std::io::Write;
use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::os::unix::net::UnixListener;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use socket2::{Domain, Socket, Type};

use crate::shared::{Peer, Shared};
use crate::workers::{Incoming, Workers};

/// The addresses to listen on for TCP or UDP: each `-l` entry (`host`, `host:port`,
/// `[v6]:port`, any of them after memcached's `notls:` prefix), or all interfaces; with
/// whether TLS applies (`-Z` and no `notls:`).
pub fn addresses(listen: &[String], port: u16, tls: bool) -> std::io::Result<Vec<(SocketAddr, bool)>> {
    let mut out = Vec::new();
    let specs: Vec<String> = if listen.is_empty() { vec!["0.0.0.0".into()] } else { listen.to_vec() };
    for spec in specs {
        if !tls && spec.starts_with(config::tls::NOTLS_PREFIX) {
            // memcached's words (and, through main, its exit status 71).
            return Err(std::io::Error::other(format!(
                "'notls' option is valid only when SSL is enabled\nfailed to listen on one of interface(s) {spec}"
            )));
        }
        let (spec, tls) = config::tls::listener_tls(&spec, tls);
        let spec = spec.to_string();
        let with_port = if spec.starts_with('[') {
            if spec.contains("]:") {
                spec.clone()
            } else {
                format!("{spec}:{port}")
            }
        } else if spec.matches(':').count() == 1 {
            spec.clone()
        } else if spec.contains(':') {
            format!("[{spec}]:{port}")
        } else {
            format!("{spec}:{port}")
        };
        let resolved = with_port.to_socket_addrs().map_err(|e| {
            std::io::Error::new(
                e.kind(),
                format!("failed to listen on {with_port} (-l {spec}): cannot resolve it: {e}"),
            )
        })?;
        out.extend(resolved.map(|a| (a, tls)));
    }
    Ok(out)
}

/// Binds `host:port` (the first address it resolves to), as [`bind_tcp`]: `--mysql-listen`.
pub fn bind_addr(addr: &str, backlog: i32) -> std::io::Result<TcpListener> {
    use std::net::ToSocketAddrs;
    let sa = addr
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("no address for {addr}")))?;
    bind_tcp(sa, backlog)
}

/// Bind a TCP listener with SO_REUSEADDR and the `-b` backlog.
pub fn bind_tcp(addr: SocketAddr, backlog: i32) -> std::io::Result<TcpListener> {
    let s = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
    s.set_reuse_address(true)?;
    if addr.is_ipv6() {
        s.set_only_v6(true)?;
    }
    s.bind(&addr.into())?;
    s.listen(backlog)?;
    Ok(s.into())
}

/// Bind the Unix socket (`-s`) with the `-a` permissions.
pub fn bind_unix(path: &str, mask: u32) -> std::io::Result<UnixListener> {
    let _ = std::fs::remove_file(path);
    let l = UnixListener::bind(path)?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mask))?;
    Ok(l)
}

/// Refuse a connection over `-c` the way memcached does (`maxconns_fast`).
fn over_limit(shared: &Shared) -> bool {
    if shared.curr_connections.load(Ordering::Relaxed) >= shared.cfg.max_connections {
        shared.rejected_connections.fetch_add(1, Ordering::Relaxed);
        return true;
    }
    shared.curr_connections.fetch_add(1, Ordering::Relaxed);
    shared.total_connections.fetch_add(1, Ordering::Relaxed);
    false
}

const TOO_MANY: &[u8] = b"ERROR Too many open connections\r\n";

/// Accept TCP connections forever on this thread; `tls`: they start with a TLS handshake.
pub fn accept_tcp(l: TcpListener, tls: bool, shared: Arc<Shared>, workers: Arc<Workers>) {
    let local: Arc<str> = l.local_addr().map(|a| format!("tcp:{a}")).unwrap_or_default().into();
    shared.listeners.lock().push(std::os::fd::AsRawFd::as_raw_fd(&l));
    loop {
        match l.accept() {
            Ok((mut s, peer)) => {
                if shared.drained.load(Ordering::SeqCst) {
                    continue; // the stop is over: closed unanswered
                }
                if over_limit(&shared) {
                    let _ = s.write_all(TOO_MANY);
                    continue;
                }
                let sock = if tls { Incoming::Tls(s) } else { Incoming::Tcp(s) };
                workers.dispatch(&shared, sock, Peer::Tcp(peer), local.clone());
            }
            Err(e) => {
                log::debug!("accept(): {e}");
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        }
    }
}

/// Accept Unix-socket connections forever on this thread.
pub fn accept_unix(l: UnixListener, path: String, shared: Arc<Shared>, workers: Arc<Workers>) {
    shared.listeners.lock().push(std::os::fd::AsRawFd::as_raw_fd(&l));
    let name: Arc<str> = format!("unix:{path}").into();
    loop {
        match l.accept() {
            Ok((mut s, _)) => {
                if shared.drained.load(Ordering::SeqCst) {
                    continue; // the stop is over: closed unanswered
                }
                if over_limit(&shared) {
                    let _ = s.write_all(TOO_MANY);
                    continue;
                }
                workers.dispatch(&shared, Incoming::Unix(s), Peer::Named(name.clone()), name.clone());
            }
            Err(_) => std::thread::sleep(std::time::Duration::from_millis(10)),
        }
    }
}
