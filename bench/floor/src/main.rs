//! `floor`: a minimal memcached get/set server, to measure how little CPU per request the
//! kernel allows on this machine with each I/O style (issue 11, item 2). No engine, no
//! eviction, one thread: what a real server spends above these figures is its own.
//!
//!   floor epoll PORT          epoll_wait, then one read and one write per ready connection
//!   floor uring PORT          io_uring: one Recv per read, sends batched per loop turn
//!   floor uring-multi PORT    io_uring: multishot receive from provided buffers
//!
//! Listens on 127.0.0.1 only. `bench/floor.sh` runs all three beside memcached and sqlcached.

mod conn;
mod epoll;
mod store;
mod uring;

use std::net::TcpListener;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(mode), Some(port)) = (args.first(), args.get(1)) else {
        eprintln!("usage: floor <epoll|uring|uring-multi> PORT");
        std::process::exit(2);
    };
    let l = match TcpListener::bind(format!("127.0.0.1:{port}")) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("floor: cannot listen on 127.0.0.1:{port}: {e}");
            std::process::exit(1);
        }
    };
    let r = match mode.as_str() {
        "epoll" => epoll::run(l),
        "uring" => uring::run(l, false),
        "uring-multi" => uring::run(l, true),
        m => {
            eprintln!("floor: unknown mode {m:?} (epoll, uring, uring-multi)");
            std::process::exit(2);
        }
    };
    if let Err(e) = r {
        eprintln!("floor: {mode}: {e}");
        std::process::exit(1);
    }
}

/// TCP_NODELAY, as memcached sets on its client sockets.
fn nodelay(fd: i32) {
    let one: i32 = 1;
    // SAFETY: a valid socket and a 4-byte option value.
    unsafe { libc::setsockopt(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY, (&one as *const i32).cast(), 4) };
}
