//! The client side of a connection: plain TCP, or TLS (`--tls-ca FILE`) with rustls driven by
//! hand on the non-blocking socket, so `bench/run.sh --tls` measures both servers' `-Z`.

use std::io::{self, Read, Write};
use std::net::TcpStream as StdTcpStream;
use std::sync::{Arc, OnceLock};

use mio::net::TcpStream;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore};

use crate::args::die;

static TLS: OnceLock<Arc<ClientConfig>> = OnceLock::new();

/// Turn TLS on for every connection made from now on, trusting the CA in `ca_file`.
pub(crate) fn enable_tls(ca_file: &str) {
    let mut roots = RootCertStore::empty();
    for c in CertificateDer::pem_file_iter(ca_file).unwrap_or_else(|e| die(&format!("--tls-ca {ca_file}: {e}"))) {
        roots
            .add(c.unwrap_or_else(|e| die(&format!("--tls-ca {ca_file}: {e}"))))
            .unwrap_or_else(|e| die(&e.to_string()));
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let cfg = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap_or_else(|e| die(&e.to_string()))
        .with_root_certificates(roots)
        .with_no_client_auth();
    let _ = TLS.set(Arc::new(cfg));
}

/// A connected stream: TLS connections finish their handshake here, blocking.
pub(crate) enum Handshaken {
    Plain(StdTcpStream),
    Tls(StdTcpStream, Box<ClientConnection>),
}

/// Wrap a freshly connected blocking socket (handshake done when TLS is on).
pub(crate) fn handshake(mut s: StdTcpStream) -> Handshaken {
    let Some(cfg) = TLS.get() else { return Handshaken::Plain(s) };
    let name = ServerName::try_from("localhost").expect("name");
    let mut c = ClientConnection::new(cfg.clone(), name).unwrap_or_else(|e| die(&format!("tls: {e}")));
    while c.is_handshaking() {
        c.complete_io(&mut s).unwrap_or_else(|e| die(&format!("tls handshake: {e}")));
    }
    Handshaken::Tls(s, Box::new(c))
}

/// The stream a `Conn` reads and writes, with non-blocking socket semantics either way.
pub(crate) enum Transport {
    Plain(TcpStream),
    Tls(TcpStream, Box<ClientConnection>),
}

impl Transport {
    pub(crate) fn socket(&mut self) -> &mut TcpStream {
        match self {
            Transport::Plain(s) | Transport::Tls(s, _) => s,
        }
    }

    /// TLS reads must go on until WouldBlock: a short read says nothing about the socket.
    pub(crate) fn is_tls(&self) -> bool {
        matches!(self, Transport::Tls(..))
    }

    /// Encrypted bytes wait to be sent.
    pub(crate) fn wants_write(&self) -> bool {
        matches!(self, Transport::Tls(_, c) if c.wants_write())
    }

    /// Send pending TLS records until done or WouldBlock.
    pub(crate) fn flush_tls(&mut self) -> io::Result<()> {
        if let Transport::Tls(s, c) = self {
            while c.wants_write() {
                match c.write_tls(s) {
                    Ok(_) => {}
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(())
    }
}

impl Read for Transport {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let (s, c) = match self {
            Transport::Plain(s) => return s.read(buf),
            Transport::Tls(s, c) => (s, c),
        };
        loop {
            match c.reader().read(buf) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
            if c.read_tls(s)? == 0 {
                return Ok(0);
            }
            c.process_new_packets().map_err(io::Error::other)?;
        }
    }
}

impl Write for Transport {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = match self {
            Transport::Plain(s) => return s.write(buf),
            Transport::Tls(_, c) => c.writer().write(buf)?,
        };
        self.flush_tls()?;
        if n == 0 && !buf.is_empty() {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.flush_tls()
    }
}
