//! A socket with a read buffer, read packet by packet (no copies of forwarded bytes beyond
//! the buffer itself).

use std::io;

use protocol_mysql::packet::PACKET_HEADER_LEN;
use protocol_mysql::{parse_message, Message};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::stream::{Rewind, Stream};

/// Largest message accepted from a client or a backend (MySQL's `max_allowed_packet` maximum).
pub const MAX_MESSAGE: usize = 1 << 30;

/// Largest message accepted from a client before it has logged in: a handshake response
/// holds a user name, at most 255 bytes of auth data, a database, a plugin name and at
/// most 64 KiB of connection attributes. A larger claim is refused from its header, before
/// anything is buffered.
pub const MAX_LOGIN_MESSAGE: usize = 128 * 1024;

/// A connection (TCP, or TLS over it) and the bytes read from it but not consumed yet.
///
/// A plain TCP connection holds no buffer while it has nothing buffered: it waits for
/// input without one, borrows one from its worker thread when bytes arrive and gives it
/// back once they are consumed (`engine::bufpool`; issue 11: an idle proxied client and its
/// backend connection held ~11 KiB). A TLS one keeps its buffer (rustls reads the socket).
pub struct Wire {
    /// The transport.
    pub sock: Stream,
    buf: Vec<u8>,
    start: usize,
    /// Largest message [`Wire::message_len`] accepts.
    limit: usize,
    /// Once part of a message is buffered, the longest wait for more of it.
    read_timeout: Option<std::time::Duration>,
}

impl Wire {
    /// Wraps a connected socket.
    pub fn new(sock: TcpStream) -> Wire {
        Wire { sock: Stream::Plain(sock), buf: Vec::new(), start: 0, limit: MAX_MESSAGE, read_timeout: None }
    }

    /// The server side of a client's TLS handshake, after its SSLRequest; bytes of the
    /// handshake already buffered are replayed into it.
    pub async fn accept_tls(&mut self, acceptor: &tokio_rustls::TlsAcceptor) -> io::Result<()> {
        let Stream::Plain(tcp) = std::mem::replace(&mut self.sock, Stream::Gone) else {
            return Err(io::Error::other("TLS asked for twice"));
        };
        let early = self.buffered().to_vec();
        self.buf.clear();
        self.start = 0;
        let tls = acceptor.accept(Rewind::new(early, tcp)).await?;
        self.sock = Stream::FromClient(Box::new(tls));
        Ok(())
    }

    /// The client side of a TLS handshake with the backend, after sending it an SSLRequest.
    pub async fn connect_tls(
        &mut self,
        connector: &tokio_rustls::TlsConnector,
        name: rustls::pki_types::ServerName<'static>,
    ) -> io::Result<()> {
        let Stream::Plain(tcp) = std::mem::replace(&mut self.sock, Stream::Gone) else {
            return Err(io::Error::other("TLS asked for twice"));
        };
        let tls = connector.connect(name, tcp).await?;
        self.sock = Stream::ToBackend(Box::new(tls));
        Ok(())
    }

    /// Accept messages of at most `limit` bytes (larger ones are `InvalidData` errors).
    pub fn set_limit(&mut self, limit: usize) {
        self.limit = limit;
    }

    /// Give up on a half-received message (`TimedOut`) when no more of it arrives within
    /// `t`. Waiting for the first byte of a message is not bounded by it.
    pub fn set_read_timeout(&mut self, t: std::time::Duration) {
        self.read_timeout = Some(t);
    }

    /// The unconsumed bytes.
    #[inline]
    pub fn buffered(&self) -> &[u8] {
        &self.buf[self.start..]
    }

    /// Marks `n` buffered bytes as consumed.
    #[inline]
    pub fn consume(&mut self, n: usize) {
        self.start += n;
        if self.start == self.buf.len() {
            if matches!(self.sock, Stream::Plain(_)) {
                engine::bufpool::give(std::mem::take(&mut self.buf));
            } else {
                self.buf.clear();
            }
            self.start = 0;
        }
    }

    /// Reads more bytes; `UnexpectedEof` when the peer closed.
    pub async fn fill(&mut self) -> io::Result<()> {
        if self.start > 0 && (self.start == self.buf.len() || self.buf.capacity() - self.buf.len() < 4096) {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        if self.buf.capacity() == 0 {
            if let Stream::Plain(tcp) = &self.sock {
                // Nothing buffered: wait for input without a buffer, then borrow one.
                tcp.readable().await?;
            }
            self.buf = engine::bufpool::take();
        }
        if self.buf.capacity() - self.buf.len() < 4096 {
            self.buf.reserve(self.buf.capacity().max(engine::bufpool::LENT));
        }
        if self.sock.read_buf(&mut self.buf).await? == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        Ok(())
    }

    /// Waits until one whole message (all its split parts) is buffered and returns the
    /// byte length of its packets; the caller parses them from [`Wire::buffered`] and then
    /// [`Wire::consume`]s that length.
    pub async fn message_len(&mut self) -> io::Result<usize> {
        loop {
            match parse_message(self.buffered(), self.limit) {
                Ok(Some((_, used))) => return Ok(used),
                Ok(None) => match self.read_timeout {
                    Some(t) if !self.buffered().is_empty() => tokio::time::timeout(t, self.fill())
                        .await
                        .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "a half-sent message stalled"))??,
                    _ => self.fill().await?,
                },
                Err(e) => return Err(io::Error::new(io::ErrorKind::InvalidData, e.to_string())),
            }
        }
    }

    /// The whole buffered message of `len` bytes (see [`Wire::message_len`]), parsed.
    pub fn message(&self, len: usize) -> Message<'_> {
        match parse_message(&self.buffered()[..len], self.limit) {
            Ok(Some((m, _))) => m,
            // message_len checked these bytes already.
            _ => Message { first_seq: 0, last_seq: 0, payload: std::borrow::Cow::Borrowed(&[]) },
        }
    }

    /// Reads one message and returns its raw packets (headers included), consumed.
    pub async fn read_raw(&mut self) -> io::Result<Vec<u8>> {
        let len = self.message_len().await?;
        let raw = self.buffered()[..len].to_vec();
        self.consume(len);
        Ok(raw)
    }

    /// Writes all of `bytes`.
    pub async fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.sock.write_all(bytes).await?;
        // TLS sends its records here (a no-op for plain TCP).
        self.sock.flush().await
    }
}

/// The payload of the first packet of `raw` (packets with headers).
pub fn first_payload(raw: &[u8]) -> &[u8] {
    match raw.first_chunk::<3>() {
        Some(&[a, b, c]) => {
            let len = u32::from_le_bytes([a, b, c, 0]) as usize;
            raw.get(PACKET_HEADER_LEN..PACKET_HEADER_LEN + len).unwrap_or(&[])
        }
        None => &[],
    }
}
