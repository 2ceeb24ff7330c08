//! A connection with a read buffer, read message by message: [`Link`] while a client logs
//! in (one task reads and writes it in turn), then split into a [`Reader`] and a
//! [`Writer`] for the session, whose two directions are relayed at once.

use std::io;

use protocol_postgres::frame::{frame_len, HEADER_LEN, MAX_STARTUP_PACKET_LENGTH};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::stream::{split, ReadHalf, Rewind, Stream, WriteHalf};

/// A buffer of bytes read and not consumed yet.
#[derive(Default)]
struct Buf {
    buf: Vec<u8>,
    start: usize,
}

impl Buf {
    fn buffered(&self) -> &[u8] {
        &self.buf[self.start..]
    }

    /// Marks `n` bytes consumed; an emptied lent buffer goes back to the worker's pool.
    fn consume(&mut self, n: usize, lent: bool) {
        self.start += n;
        if self.start == self.buf.len() {
            if lent {
                engine::bufpool::give(std::mem::take(&mut self.buf));
            } else {
                self.buf.clear();
            }
            self.start = 0;
        }
    }

    /// Room to read at least 4 KiB more, the consumed prefix dropped first.
    fn make_room(&mut self) {
        if self.start > 0 && (self.start == self.buf.len() || self.buf.capacity() - self.buf.len() < 4096) {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        if self.buf.capacity() == 0 {
            self.buf = engine::bufpool::take();
        }
        if self.buf.capacity() - self.buf.len() < 4096 {
            self.buf.reserve(self.buf.capacity().max(engine::bufpool::LENT));
        }
    }

    async fn read_from(&mut self, s: &mut (impl AsyncRead + Unpin)) -> io::Result<usize> {
        self.make_room();
        match s.read_buf(&mut self.buf).await? {
            0 => Err(io::ErrorKind::UnexpectedEof.into()),
            n => Ok(n),
        }
    }

    /// The total length of the typed message at the front once its header is in; an
    /// `InvalidData` error for a length the peer would refuse.
    fn frame_len(&self, limit: fn(u8) -> u32) -> io::Result<Option<usize>> {
        frame_len(self.buffered(), limit).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))
    }
}

/// A connection during login: a transport and its read buffer.
pub struct Link {
    /// The transport.
    pub sock: Stream,
    buf: Buf,
}

impl Link {
    /// Wraps a connected socket.
    pub fn new(sock: TcpStream) -> Link {
        Link { sock: Stream::Plain(sock), buf: Buf::default() }
    }

    /// The server side of a client's TLS handshake after its SSLRequest was answered `S`;
    /// bytes of the handshake already buffered are replayed into it.
    pub async fn accept_tls(&mut self, acceptor: &tokio_rustls::TlsAcceptor) -> io::Result<()> {
        let Stream::Plain(tcp) = std::mem::replace(&mut self.sock, Stream::Gone) else {
            return Err(io::Error::other("TLS asked for twice"));
        };
        let early = self.buffered().to_vec();
        self.buf = Buf::default();
        let tls = acceptor.accept(Rewind::new(early, tcp)).await?;
        self.sock = Stream::FromClient(Box::new(tls));
        Ok(())
    }

    /// The client side of a TLS handshake with the backend, after its `S`.
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

    /// Whether the transport is TLS.
    pub fn is_tls(&self) -> bool {
        matches!(self.sock, Stream::FromClient(_) | Stream::ToBackend(_))
    }

    /// The unconsumed bytes.
    pub fn buffered(&self) -> &[u8] {
        self.buf.buffered()
    }

    /// Marks `n` buffered bytes consumed.
    pub fn consume(&mut self, n: usize) {
        self.buf.consume(n, false);
    }

    /// Reads more bytes; `UnexpectedEof` when the peer closed.
    pub async fn fill(&mut self) -> io::Result<usize> {
        self.buf.read_from(&mut self.sock).await
    }

    /// Reads one byte (the answer to an SSLRequest), with nothing else buffered before it.
    pub async fn read_byte(&mut self) -> io::Result<u8> {
        while self.buffered().is_empty() {
            self.fill().await?;
        }
        let b = self.buffered()[0];
        self.consume(1);
        Ok(b)
    }

    /// Waits until a whole startup packet (no type byte) is buffered; its length. A length
    /// word the server refuses (below 8, above 10,004) is `InvalidData` at once, before the
    /// bytes arrive.
    pub async fn startup_len(&mut self) -> io::Result<usize> {
        loop {
            match protocol_postgres::parse_startup_frame(self.buffered()) {
                Ok(Some((_, used))) => return Ok(used),
                Ok(None) => {
                    self.fill().await?;
                }
                Err(e) => return Err(io::Error::new(io::ErrorKind::InvalidData, e.to_string())),
            }
        }
    }

    /// Waits until a whole typed message is buffered; its total length (type byte
    /// included). `limit` gives the largest length word per type.
    pub async fn frame_len(&mut self, limit: fn(u8) -> u32) -> io::Result<usize> {
        loop {
            if let Some(len) = self.buf.frame_len(limit)? {
                if self.buffered().len() >= len {
                    return Ok(len);
                }
            }
            self.fill().await?;
        }
    }

    /// Writes all of `bytes`.
    pub async fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.sock.write_all(bytes).await?;
        self.sock.flush().await
    }

    /// The session's halves, the bytes already buffered kept in the reader.
    pub fn into_halves(self) -> (Reader, Writer) {
        let lent = matches!(self.sock, Stream::Plain(_));
        let (r, w) = split(self.sock);
        (Reader { sock: r, buf: self.buf, lent, passing: 0 }, Writer { sock: w })
    }
}

/// The largest startup packet a client may send (body plus length word).
pub const MAX_STARTUP: usize = MAX_STARTUP_PACKET_LENGTH as usize + 4;

/// The reading half of a session's link with its buffer.
///
/// A plain TCP reader holds no buffer while nothing is buffered: it waits for input
/// without one, borrows one from its worker thread when bytes arrive and gives it back
/// once they are relayed (`engine::bufpool`, as the MySQL proxy's connections).
pub struct Reader {
    sock: ReadHalf,
    buf: Buf,
    lent: bool,
    /// Bytes of a long message still to relay unparsed.
    passing: usize,
}

impl Reader {
    /// The unconsumed bytes.
    #[inline]
    pub fn buffered(&self) -> &[u8] {
        self.buf.buffered()
    }

    /// Marks `n` buffered bytes consumed.
    #[inline]
    pub fn consume(&mut self, n: usize) {
        self.buf.consume(n, self.lent);
    }

    /// Reads more bytes (at least one); how many. `UnexpectedEof` when the peer closed.
    pub async fn fill(&mut self) -> io::Result<usize> {
        if self.buf.buf.capacity() == 0 {
            if let ReadHalf::Plain(tcp) = &self.sock {
                tcp.readable().await?;
            }
        }
        self.buf.read_from(&mut self.sock).await
    }

    /// How many buffered bytes can be relayed now: whole messages, each passed to `each`
    /// (type byte, body) first, and of a message longer than [`STREAM_AT`] its header and
    /// what of its body is in (`each` gets no body; the rest of it is relayed as it comes,
    /// never buffered whole). Stops after the first message for which `each` returns
    /// false. An `InvalidData` error for a length word above `limit(type)`.
    pub fn scan(&mut self, limit: fn(u8) -> u32, mut each: impl FnMut(u8, Option<&[u8]>) -> bool) -> io::Result<usize> {
        let buf = self.buf.buffered();
        let mut at = 0;
        if self.passing > 0 {
            at = self.passing.min(buf.len());
            self.passing -= at;
            if self.passing > 0 {
                return Ok(at);
            }
        }
        while let Some(head) = buf.get(at..at + HEADER_LEN) {
            let len = frame_len(head, limit)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?
                .unwrap_or(usize::MAX);
            match buf.get(at + HEADER_LEN..at.saturating_add(len)) {
                Some(body) => {
                    at += len;
                    if !each(head[0], Some(body)) {
                        break;
                    }
                }
                None if len > STREAM_AT => {
                    self.passing = len - (buf.len() - at);
                    at = buf.len();
                    each(head[0], None);
                    break;
                }
                None => break,
            }
        }
        Ok(at)
    }

    /// Whether the reader is in the middle of relaying a long message (see [`Reader::scan`]).
    pub fn mid_message(&self) -> bool {
        self.passing > 0
    }

    /// How many bytes of a long message are still to be relayed as they come (the next
    /// [`Reader::scan`] passes them first, without showing them).
    pub fn passing(&self) -> usize {
        self.passing
    }
}

/// Messages longer than this are relayed as their bytes arrive rather than buffered whole
/// (COPY data, wide rows, long statements): a session's buffers stay this small.
pub const STREAM_AT: usize = 64 * 1024;

/// The writing half of a session's link.
pub struct Writer {
    sock: WriteHalf,
}

impl Writer {
    /// Writes all of `bytes`.
    pub async fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.sock.write_all(bytes).await?;
        // TLS sends its records here (a no-op for plain TCP).
        self.sock.flush().await
    }

    /// Closes the write side (a FIN after what was written).
    pub async fn shutdown(&mut self) {
        let _ = self.sock.shutdown().await;
    }
}
