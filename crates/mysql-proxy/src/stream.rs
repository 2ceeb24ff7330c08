//! The byte stream under a [`crate::wire::Wire`]: plain TCP, or TLS on either side of the
//! proxy. Reads and writes go through one enum so the packet code never cares which.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
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

impl AsyncRead for Stream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::FromClient(s) => Pin::new(s).poll_read(cx, buf),
            Stream::ToBackend(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Gone => Poll::Ready(Err(gone())),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::FromClient(s) => Pin::new(s).poll_write(cx, buf),
            Stream::ToBackend(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Gone => Poll::Ready(Err(gone())),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::FromClient(s) => Pin::new(s).poll_flush(cx),
            Stream::ToBackend(s) => Pin::new(s).poll_flush(cx),
            Stream::Gone => Poll::Ready(Err(gone())),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::FromClient(s) => Pin::new(s).poll_shutdown(cx),
            Stream::ToBackend(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Gone => Poll::Ready(Ok(())),
        }
    }
}

/// A socket with bytes already read from it put back in front: a client may send its TLS
/// ClientHello right behind the SSLRequest packet, into the proxy's packet buffer.
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
