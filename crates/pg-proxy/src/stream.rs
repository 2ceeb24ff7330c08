//! The byte streams under a [`crate::link::Link`]: plain TCP, or TLS on either side of
//! the proxy, and once a session runs, their read and write halves (each direction is
//! relayed on its own, so a pipelining client and a streaming server never wait for each
//! other).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;

/// A connection's transport.
pub enum Stream {
    /// Plain TCP.
    Plain(TcpStream),
    /// A client's TLS session, terminated by the proxy.
    FromClient(Box<tokio_rustls::server::TlsStream<Rewind>>),
    /// The proxy's TLS session to the backend.
    ToBackend(Box<tokio_rustls::client::TlsStream<TcpStream>>),
    /// Moved out while a TLS handshake runs (a failed handshake leaves it so).
    Gone,
}

fn gone() -> io::Error {
    io::Error::new(io::ErrorKind::NotConnected, "connection closed after a failed TLS handshake")
}

/// Forwards a poll to whichever transport `$s` is.
macro_rules! each {
    ($s:expr, $x:ident => $e:expr, $gone:expr) => {
        match $s {
            Stream::Plain($x) => $e,
            Stream::FromClient($x) => $e,
            Stream::ToBackend($x) => $e,
            Stream::Gone => $gone,
        }
    };
}

impl AsyncRead for Stream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        each!(self.get_mut(), s => Pin::new(s).poll_read(cx, buf), Poll::Ready(Err(gone())))
    }
}

impl AsyncWrite for Stream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        each!(self.get_mut(), s => Pin::new(s).poll_write(cx, buf), Poll::Ready(Err(gone())))
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        each!(self.get_mut(), s => Pin::new(s).poll_flush(cx), Poll::Ready(Err(gone())))
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        each!(self.get_mut(), s => Pin::new(s).poll_shutdown(cx), Poll::Ready(Ok(())))
    }
}

/// The reading half of a session's transport: a plain socket's own half (no lock, and it
/// can wait for input without a buffer), or a TLS stream's shared half.
pub enum ReadHalf {
    /// Plain TCP.
    Plain(OwnedReadHalf),
    /// TLS (either side).
    Tls(tokio::io::ReadHalf<Stream>),
}

/// The writing half, as [`ReadHalf`].
pub enum WriteHalf {
    /// Plain TCP.
    Plain(OwnedWriteHalf),
    /// TLS (either side).
    Tls(tokio::io::WriteHalf<Stream>),
}

/// Splits a transport into its halves.
pub fn split(s: Stream) -> (ReadHalf, WriteHalf) {
    match s {
        Stream::Plain(tcp) => {
            let (r, w) = tcp.into_split();
            (ReadHalf::Plain(r), WriteHalf::Plain(w))
        }
        tls => {
            let (r, w) = tokio::io::split(tls);
            (ReadHalf::Tls(r), WriteHalf::Tls(w))
        }
    }
}

impl AsyncRead for ReadHalf {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ReadHalf::Plain(s) => Pin::new(s).poll_read(cx, buf),
            ReadHalf::Tls(s) => Pin::new(s).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for WriteHalf {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            WriteHalf::Plain(s) => Pin::new(s).poll_write(cx, buf),
            WriteHalf::Tls(s) => Pin::new(s).poll_write(cx, buf),
        }
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            WriteHalf::Plain(s) => Pin::new(s).poll_flush(cx),
            WriteHalf::Tls(s) => Pin::new(s).poll_flush(cx),
        }
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            WriteHalf::Plain(s) => Pin::new(s).poll_shutdown(cx),
            WriteHalf::Tls(s) => Pin::new(s).poll_shutdown(cx),
        }
    }
}

/// A socket with bytes already read from it put back in front: a client may send its TLS
/// ClientHello right behind the SSLRequest, into the proxy's buffer.
pub struct Rewind {
    prefix: Vec<u8>,
    at: usize,
    inner: TcpStream,
}

impl Rewind {
    /// `inner`, whose next bytes are `prefix`.
    pub fn new(prefix: Vec<u8>, inner: TcpStream) -> Rewind {
        Rewind { prefix, at: 0, inner }
    }
}

impl AsyncRead for Rewind {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let me = self.get_mut();
        if me.at < me.prefix.len() {
            let n = (me.prefix.len() - me.at).min(buf.remaining());
            buf.put_slice(&me.prefix[me.at..me.at + n]);
            me.at += n;
            if me.at == me.prefix.len() {
                me.prefix = Vec::new();
                me.at = 0;
            }
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut me.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for Rewind {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}
