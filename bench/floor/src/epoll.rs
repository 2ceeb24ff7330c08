//! The classic loop (memcached's, via libevent): `epoll_wait`, then per ready connection one
//! `read` and one `write`.

use std::net::TcpListener;
use std::os::fd::AsRawFd;

use crate::conn::Conn;
use crate::store::Store;

const LISTENER: u64 = u64::MAX;

/// Serve forever on `l`.
pub fn run(l: TcpListener) -> std::io::Result<()> {
    l.set_nonblocking(true)?;
    let lfd = l.as_raw_fd();
    // SAFETY: plain epoll calls on descriptors this function owns; buffers outlive the calls.
    unsafe {
        let ep = libc::epoll_create1(libc::EPOLL_CLOEXEC);
        if ep < 0 {
            return Err(std::io::Error::last_os_error());
        }
        ctl(ep, libc::EPOLL_CTL_ADD, lfd, libc::EPOLLIN as u32, LISTENER);
        let mut conns: Vec<Option<Conn>> = Vec::new();
        let mut store = Store::default();
        let mut evs = vec![libc::epoll_event { events: 0, u64: 0 }; 256];
        loop {
            let n = libc::epoll_wait(ep, evs.as_mut_ptr(), evs.len() as i32, -1);
            for ev in &evs[..n.max(0) as usize] {
                let id = ev.u64;
                if id == LISTENER {
                    loop {
                        let fd = libc::accept4(lfd, std::ptr::null_mut(), std::ptr::null_mut(), libc::SOCK_NONBLOCK);
                        if fd < 0 {
                            break;
                        }
                        let slot = Conn::accept(&mut conns, fd);
                        ctl(ep, libc::EPOLL_CTL_ADD, fd, libc::EPOLLIN as u32, slot as u64);
                    }
                    continue;
                }
                let Some(c) = conns[id as usize].as_mut() else { continue };
                if ev.events & libc::EPOLLIN as u32 != 0 {
                    let fd = c.fd;
                    let room = c.spare();
                    let r = libc::read(fd, room.as_mut_ptr().cast(), room.len());
                    if r == 0 || (r < 0 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::WouldBlock) {
                        c.closed = true;
                    } else if r > 0 {
                        c.rlen += r as usize;
                        c.run(&mut store);
                    }
                }
                if !c.closed && !c.out.is_empty() {
                    let w = libc::write(c.fd, c.out.as_ptr().cast(), c.out.len());
                    if w > 0 {
                        c.out.drain(..w as usize);
                        c.promote();
                    } else if std::io::Error::last_os_error().kind() != std::io::ErrorKind::WouldBlock {
                        c.closed = true;
                    }
                    // Unsent bytes: wait for room as well as for input (a change of interest
                    // only; the common case costs no `epoll_ctl`).
                    if c.out.is_empty() == c.wants_out {
                        c.wants_out = !c.out.is_empty();
                        let out = if c.wants_out { libc::EPOLLOUT as u32 } else { 0 };
                        ctl(ep, libc::EPOLL_CTL_MOD, c.fd, libc::EPOLLIN as u32 | out, id);
                    }
                }
                if c.closed {
                    libc::close(c.fd);
                    conns[id as usize] = None;
                }
            }
        }
    }
}

/// `epoll_ctl` with one event mask and the connection's slot as data.
unsafe fn ctl(ep: i32, op: i32, fd: i32, events: u32, data: u64) {
    let mut ev = libc::epoll_event { events, u64: data };
    libc::epoll_ctl(ep, op, fd, &mut ev);
}
