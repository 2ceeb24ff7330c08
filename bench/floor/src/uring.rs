//! The io_uring loop: every receive and send of every connection goes through one ring, so
//! one `io_uring_enter` per loop turn submits all of them and collects their completions
//! (SINGLE_ISSUER + DEFER_TASKRUN: completions are run in that same call). Two receive
//! styles: one `Recv` into the connection's buffer, re-armed after each completion, or
//! multishot (`RecvMulti`) from a ring of provided buffers, armed once per connection.

use std::net::TcpListener;
use std::os::fd::IntoRawFd;
use std::sync::atomic::{AtomicU16, Ordering};

use io_uring::{cqueue, opcode, squeue, types, IoUring};

use crate::conn::Conn;
use crate::store::Store;

const ACCEPT: u64 = 1 << 40;
const RECV: u64 = 2 << 40;
const SEND: u64 = 3 << 40;
const KIND: u64 = 0xff << 40;

/// Provided buffers for multishot receive: how many, their size, their group.
const NBUF: u16 = 1024;
const BSZ: usize = 4096;
const BGID: u16 = 7;

/// The provided-buffer ring: entries shared with the kernel, and the memory they point at.
struct BufRing {
    entries: *mut types::BufRingEntry,
    pool: Vec<u8>,
    tail: u16,
}

impl BufRing {
    /// Map the entries and register them with `ring` as group `BGID`, all buffers given.
    fn register(ring: &IoUring) -> std::io::Result<BufRing> {
        // SAFETY: an anonymous private mapping, page aligned as the kernel requires.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                NBUF as usize * std::mem::size_of::<types::BufRingEntry>(),
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_ANONYMOUS | libc::MAP_PRIVATE,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        let mut br = BufRing { entries: p.cast(), pool: vec![0; NBUF as usize * BSZ], tail: 0 };
        // SAFETY: the mapping lives as long as the process (the loop never returns).
        unsafe { ring.submitter().register_buf_ring_with_flags(p as u64, NBUF, BGID, 0)? };
        for bid in 0..NBUF {
            br.give(bid);
        }
        br.publish();
        Ok(br)
    }

    /// Buffer `bid`'s bytes.
    fn data(&self, bid: u16, len: usize) -> &[u8] {
        &self.pool[bid as usize * BSZ..bid as usize * BSZ + len]
    }

    /// Hand buffer `bid` back (seen by the kernel at the next `publish`).
    fn give(&mut self, bid: u16) {
        // SAFETY: the index is masked into the mapped entries; the pool outlives the ring.
        unsafe {
            let e = &mut *self.entries.add((self.tail & (NBUF - 1)) as usize);
            e.set_addr(self.pool.as_mut_ptr().add(bid as usize * BSZ) as u64);
            e.set_len(BSZ as u32);
            e.set_bid(bid);
        }
        self.tail = self.tail.wrapping_add(1);
    }

    /// Make the buffers given back visible to the kernel.
    fn publish(&self) {
        // SAFETY: the tail field of the first entry, written with release ordering as liburing does.
        unsafe {
            let t = types::BufRingEntry::tail(self.entries) as *const AtomicU16;
            (*t).store(self.tail, Ordering::Release);
        }
    }
}

/// Serve forever on `l`; `multishot` picks the receive style.
pub fn run(l: TcpListener, multishot: bool) -> std::io::Result<()> {
    let mut ring: IoUring =
        IoUring::builder().setup_single_issuer().setup_defer_taskrun().setup_cqsize(8192).build(4096)?;
    let lfd = l.into_raw_fd();
    let mut bufs = if multishot { Some(BufRing::register(&ring)?) } else { None };
    let mut conns: Vec<Option<Conn>> = Vec::new();
    let mut store = Store::default();
    let mut pending: Vec<squeue::Entry> = vec![opcode::AcceptMulti::new(types::Fd(lfd)).build().user_data(ACCEPT)];
    loop {
        {
            let mut sq = ring.submission();
            for e in pending.drain(..) {
                // SAFETY: every buffer an entry points at lives in `conns`/`bufs` until its
                // completion (a connection is dropped only with nothing in flight).
                if unsafe { sq.push(&e) }.is_err() {
                    return Err(std::io::Error::other("submission queue full"));
                }
            }
        }
        ring.submit_and_wait(1)?;
        let cqes: Vec<cqueue::Entry> = ring.completion().collect();
        let mut gave = false;
        for cqe in cqes {
            let id = (cqe.user_data() & !KIND) as usize;
            let res = cqe.result();
            match cqe.user_data() & KIND {
                ACCEPT => {
                    if !cqueue::more(cqe.flags()) {
                        pending.push(opcode::AcceptMulti::new(types::Fd(lfd)).build().user_data(ACCEPT));
                    }
                    if res < 0 {
                        continue;
                    }
                    let slot = Conn::accept(&mut conns, res);
                    let c = conns[slot].as_mut().expect("just accepted");
                    pending.push(recv(c, slot, multishot));
                }
                RECV => {
                    let Some(c) = conns[id].as_mut() else { continue };
                    if res == -libc::ENOBUFS && multishot {
                        // Out of provided buffers: re-arm (they come back as replies go out).
                        pending.push(recv(c, id, true));
                        continue;
                    }
                    if res <= 0 {
                        c.closed = true;
                    } else if let Some(b) = bufs.as_mut() {
                        let bid = cqueue::buffer_select(cqe.flags()).expect("a provided buffer");
                        c.push(b.data(bid, res as usize));
                        b.give(bid);
                        gave = true;
                        if !cqueue::more(cqe.flags()) {
                            pending.push(recv(c, id, true));
                        }
                    } else {
                        c.rlen += res as usize;
                    }
                    if !c.closed {
                        c.run(&mut store);
                        send(c, id, &mut pending);
                        if !multishot {
                            // Re-armed after `run`, which moves what is left to the front.
                            pending.push(recv(c, id, false));
                        }
                    }
                }
                SEND => {
                    let Some(c) = conns[id].as_mut() else { continue };
                    c.sending = false;
                    if res < 0 {
                        c.closed = true;
                    } else {
                        c.out.drain(..res as usize);
                        c.promote();
                        send(c, id, &mut pending);
                    }
                }
                _ => {}
            }
            if let Some(c) = conns.get(id).and_then(Option::as_ref) {
                // A closed connection goes once its send is done (its receive ended with the
                // completion that closed it; a multishot one reports that without MORE).
                if c.closed && !c.sending && cqe.user_data() & KIND != ACCEPT {
                    // SAFETY: nothing of this connection is in flight.
                    unsafe { libc::close(c.fd) };
                    conns[id] = None;
                }
            }
        }
        if gave {
            if let Some(b) = bufs.as_ref() {
                b.publish();
            }
        }
    }
}

/// The receive to arm for connection `id`.
fn recv(c: &mut Conn, id: usize, multishot: bool) -> squeue::Entry {
    if multishot {
        return opcode::RecvMulti::new(types::Fd(c.fd), BGID).build().user_data(RECV | id as u64);
    }
    let fd = c.fd;
    let room = c.spare();
    opcode::Recv::new(types::Fd(fd), room.as_mut_ptr(), room.len() as u32).build().user_data(RECV | id as u64)
}

/// Queue a send of `c.out` unless one is in flight or there is nothing to say.
fn send(c: &mut Conn, id: usize, pending: &mut Vec<squeue::Entry>) {
    if c.sending || c.out.is_empty() {
        return;
    }
    c.sending = true;
    pending.push(
        opcode::Send::new(types::Fd(c.fd), c.out.as_ptr(), c.out.len() as u32).build().user_data(SEND | id as u64),
    );
}
