//! One client connection's buffers, shared by both event loops.

use crate::store::Store;

/// A connection: what was read and not yet run, the reply being sent, the replies after it.
pub struct Conn {
    /// The socket.
    pub fd: i32,
    /// Bytes read, `rbuf[..rlen]` not yet run.
    pub rbuf: Vec<u8>,
    /// How much of `rbuf` holds input.
    pub rlen: usize,
    /// The reply being written (io_uring: owned by the kernel while `sending`).
    pub out: Vec<u8>,
    /// Replies produced while `out` was being written.
    pub next: Vec<u8>,
    /// A send is in flight.
    pub sending: bool,
    /// The client is gone; close once nothing is in flight.
    pub closed: bool,
    /// epoll only: `EPOLLOUT` is in the interest set (a reply did not fit the socket).
    pub wants_out: bool,
}

impl Conn {
    /// A new client socket `fd` (TCP_NODELAY set, as memcached does) in the first free slot
    /// of `conns`; returns the slot.
    pub fn accept(conns: &mut Vec<Option<Conn>>, fd: i32) -> usize {
        crate::nodelay(fd);
        let slot = conns.iter().position(Option::is_none).unwrap_or_else(|| {
            conns.push(None);
            conns.len() - 1
        });
        conns[slot] = Some(Conn::new(fd));
        slot
    }

    /// A connection on `fd` with a 16 KiB read buffer.
    pub fn new(fd: i32) -> Conn {
        Conn {
            fd,
            rbuf: vec![0; 16384],
            rlen: 0,
            out: Vec::new(),
            next: Vec::new(),
            sending: false,
            closed: false,
            wants_out: false,
        }
    }

    /// Room to read into (the buffer doubles when full).
    pub fn spare(&mut self) -> &mut [u8] {
        if self.rlen == self.rbuf.len() {
            self.rbuf.resize(self.rbuf.len() * 2, 0);
        }
        &mut self.rbuf[self.rlen..]
    }

    /// Append bytes received elsewhere (a provided buffer).
    pub fn push(&mut self, data: &[u8]) {
        if self.rlen + data.len() > self.rbuf.len() {
            self.rbuf.resize((self.rlen + data.len()) * 2, 0);
        }
        self.rbuf[self.rlen..self.rlen + data.len()].copy_from_slice(data);
        self.rlen += data.len();
    }

    /// Run what is buffered; the replies go to `out` unless a send of `out` is in flight.
    pub fn run(&mut self, store: &mut Store) {
        let used = store.process(&self.rbuf[..self.rlen], &mut self.next);
        self.rbuf.copy_within(used..self.rlen, 0);
        self.rlen -= used;
        self.promote();
    }

    /// With nothing in flight and `out` written, the queued replies become `out`.
    pub fn promote(&mut self) {
        if !self.sending && self.out.is_empty() {
            std::mem::swap(&mut self.out, &mut self.next);
        }
    }
}
