//! One connection to PostgreSQL speaking the frontend/backend protocol: TCP or a unix
//! socket, TLS as `sslmode` says, the startup packet, authentication, then simple queries.
//! The replication stream reads and writes raw frames through it.

use std::ops::Range;

use protocol_postgres::{
    parse_backend_frame, Authentication, BackendKeyData, ErrorFields, FrontendMessage, ParameterStatus,
    ProtocolVersion, RowDescription, StartupMessage, StartupPacket,
};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpStream, UnixStream};
use tokio_rustls::TlsConnector;

use crate::auth::Authenticator;
use crate::config::{Config, SslMode};
use crate::error::{DbError, Error};
use crate::tls::client_config;

/// A byte stream to the server: TCP, TLS over TCP, or a unix socket.
trait Stream: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Stream for T {}

/// What a simple query statement returned.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QueryResult {
    /// Column names (empty for statements without rows).
    pub columns: Vec<String>,
    /// Rows as text, `None` for NULL.
    pub rows: Vec<Vec<Option<String>>>,
    /// The command tag (`SELECT 2`, `CREATE_REPLICATION_SLOT`, ...).
    pub tag: String,
}

/// An authenticated session, ready for queries.
pub struct Connection {
    stream: Box<dyn Stream>,
    buf: Vec<u8>,
    start: usize,
    out: Vec<u8>,
    parameters: Vec<(String, String)>,
    backend_pid: u32,
    tls: bool,
}

impl Connection {
    /// Connects and authenticates, within `cfg.connect_timeout`. With `replication`, the
    /// session is a walsender for logical replication (`replication=database`), which
    /// takes replication commands and plain SQL through simple Query.
    pub async fn connect(cfg: &Config, replication: bool) -> Result<Connection, Error> {
        let secs = cfg.connect_timeout.as_secs();
        match tokio::time::timeout(cfg.connect_timeout, Connection::connect_inner(cfg, replication)).await {
            Ok(r) => r,
            Err(_) => {
                Err(Error::Connect(format!("{}:{}: no session within {secs} s (connect_timeout)", cfg.host, cfg.port)))
            }
        }
    }

    async fn connect_inner(cfg: &Config, replication: bool) -> Result<Connection, Error> {
        let (stream, tls) = open(cfg).await?;
        let mut conn = Connection {
            stream,
            buf: Vec::with_capacity(16 * 1024),
            start: 0,
            out: Vec::with_capacity(1024),
            parameters: Vec::new(),
            backend_pid: 0,
            tls,
        };
        let mut params: Vec<(&[u8], &[u8])> = vec![
            (b"user", cfg.user.as_bytes()),
            (b"database", cfg.dbname.as_bytes()),
            (b"application_name", cfg.application_name.as_bytes()),
            (b"client_encoding", b"UTF8"),
        ];
        if replication {
            params.push((b"replication", b"database"));
        }
        if let Some(o) = &cfg.options {
            params.push((b"options", o.as_bytes()));
        }
        StartupMessage { version: ProtocolVersion::V3_0, params }.write(&mut conn.out);
        conn.flush().await?;
        let mut auth = Authenticator::new(&cfg.user, cfg.password.as_deref());
        loop {
            let (tag, body) = conn.read_frame().await?;
            let body = &conn.buf[body];
            match tag {
                b'R' => {
                    let request = Authentication::parse(body)?;
                    let mut reply = Vec::new();
                    auth.respond(&request, &mut reply)?;
                    conn.out.extend_from_slice(&reply);
                    conn.flush().await?;
                }
                b'S' => {
                    let (name, value) = parameter(body)?;
                    conn.set_parameter(name, value);
                }
                b'K' => conn.backend_pid = BackendKeyData::parse(body)?.process_id,
                b'E' => return Err(server_error(body)),
                b'Z' => return Ok(conn),
                b'N' | b'v' => {}
                t => return Err(Error::Protocol(format!("unexpected message {:?} during startup", t as char))),
            }
        }
    }

    /// A reported server parameter (`server_version`, `TimeZone`, `integer_datetimes`...).
    pub fn parameter(&self, name: &str) -> Option<&str> {
        self.parameters.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    /// The server process serving this session (`pg_backend_pid()`).
    pub fn backend_pid(&self) -> u32 {
        self.backend_pid
    }

    /// Whether the session runs over TLS.
    pub fn is_tls(&self) -> bool {
        self.tls
    }

    fn set_parameter(&mut self, name: String, value: String) {
        match self.parameters.iter_mut().find(|(n, _)| *n == name) {
            Some(slot) => slot.1 = value,
            None => self.parameters.push((name, value)),
        }
    }

    /// Runs `sql` (one or more statements) with the simple query protocol; the results in
    /// order, or the first error.
    pub async fn simple_query(&mut self, sql: &str) -> Result<Vec<QueryResult>, Error> {
        FrontendMessage::Query(sql.as_bytes()).write(&mut self.out);
        self.flush().await?;
        let mut results = Vec::new();
        let mut current = QueryResult::default();
        let mut error = None;
        loop {
            let (tag, range) = self.read_frame().await?;
            let body = &self.buf[range];
            match tag {
                b'T' => {
                    let desc = RowDescription::parse(body)?;
                    current.columns =
                        desc.fields.iter().map(|f| String::from_utf8_lossy(f.name).into_owned()).collect();
                }
                b'D' => {
                    let row = protocol_postgres::DataRow::parse(body)?;
                    current.rows.push(row.iter().map(|v| v.map(|b| String::from_utf8_lossy(b).into_owned())).collect());
                }
                b'C' => {
                    current.tag = String::from_utf8_lossy(body.strip_suffix(b"\0").unwrap_or(body)).into_owned();
                    results.push(std::mem::take(&mut current));
                }
                b'I' => results.push(std::mem::take(&mut current)),
                b'E' => error = error.or(Some(server_error(body))),
                b'S' => {
                    let (name, value) = parameter(body)?;
                    self.set_parameter(name, value);
                }
                b'G' => {
                    FrontendMessage::CopyFail(b"COPY FROM STDIN is not supported by this client").write(&mut self.out);
                    self.flush().await?;
                }
                b'Z' => return error.map_or(Ok(results), Err),
                b'N' | b'A' | b'H' | b'd' | b'c' => {}
                b'W' => return Err(Error::Protocol("the query started a replication stream".into())),
                t => return Err(Error::Protocol(format!("unexpected message {:?} in a query reply", t as char))),
            }
        }
    }

    /// Reads the next whole message; returns its type byte and where its body is in
    /// [`Connection::body`]'s buffer (valid until the next read).
    pub(crate) async fn read_frame(&mut self) -> Result<(u8, Range<usize>), Error> {
        loop {
            if let Some((frame, used)) = parse_backend_frame(&self.buf[self.start..])? {
                let body_start = self.start + 5;
                let range = body_start..body_start + frame.body.len();
                let tag = frame.tag;
                self.start += used;
                return Ok((tag, range));
            }
            self.fill().await?;
        }
    }

    /// The bytes of a body [`Connection::read_frame`] returned.
    pub(crate) fn body(&self, range: Range<usize>) -> &[u8] {
        &self.buf[range]
    }

    async fn fill(&mut self) -> Result<(), Error> {
        if self.start > 0 {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        self.buf.reserve(16 * 1024);
        match self.stream.read_buf(&mut self.buf).await {
            Ok(0) => Err(Error::ConnectionLost("the server closed the connection".into())),
            Ok(_) => Ok(()),
            Err(e) => Err(Error::io(e)),
        }
    }

    /// The buffer of messages to send; [`Connection::flush`] sends it.
    pub(crate) fn out(&mut self) -> &mut Vec<u8> {
        &mut self.out
    }

    /// Sends everything buffered.
    pub(crate) async fn flush(&mut self) -> Result<(), Error> {
        if !self.out.is_empty() {
            self.stream.write_all(&self.out).await.map_err(Error::io)?;
            self.out.clear();
        }
        self.stream.flush().await.map_err(Error::io)
    }

    /// Says goodbye (Terminate) and closes.
    pub async fn close(mut self) {
        FrontendMessage::Terminate.write(&mut self.out);
        let _ = self.flush().await;
        let _ = self.stream.shutdown().await;
    }
}

/// A ParameterStatus body as owned strings.
fn parameter(body: &[u8]) -> Result<(String, String), Error> {
    let p = ParameterStatus::parse(body)?;
    Ok((String::from_utf8_lossy(p.name).into_owned(), String::from_utf8_lossy(p.value).into_owned()))
}

/// An ErrorResponse body as a classified error.
pub(crate) fn server_error(body: &[u8]) -> Error {
    match ErrorFields::parse(body) {
        Ok(f) => Error::from_db(DbError::from_fields(&f)),
        Err(e) => Error::Protocol(format!("malformed ErrorResponse: {e}")),
    }
}

/// Opens the byte stream: socket, then TLS if `sslmode` asks and the server agrees.
async fn open(cfg: &Config) -> Result<(Box<dyn Stream>, bool), Error> {
    if cfg.is_unix_socket() {
        let path = format!("{}/.s.PGSQL.{}", cfg.host, cfg.port);
        let s = UnixStream::connect(&path).await.map_err(|e| Error::Connect(format!("{path}: {e}")))?;
        return Ok((Box::new(s), false));
    }
    let addr = (cfg.host.as_str(), cfg.port);
    let mut tcp =
        TcpStream::connect(addr).await.map_err(|e| Error::Connect(format!("{}:{}: {e}", cfg.host, cfg.port)))?;
    let _ = tcp.set_nodelay(true);
    let Some((tls, name)) = client_config(cfg)? else { return Ok((Box::new(tcp), false)) };
    let mut req = Vec::new();
    StartupPacket::SslRequest.write(&mut req);
    tcp.write_all(&req).await.map_err(Error::io)?;
    let mut answer = [0u8; 1];
    tcp.read_exact(&mut answer).await.map_err(Error::io)?;
    match answer[0] {
        b'S' => {
            let s = TlsConnector::from(tls).connect(name, tcp).await.map_err(|e| Error::Tls(e.to_string()))?;
            Ok((Box::new(s), true))
        }
        b'N' if cfg.sslmode == SslMode::Prefer => Ok((Box::new(tcp), false)),
        b'N' => Err(Error::Tls(format!(
            "the server at {}:{} does not accept TLS (sslmode requires it)",
            cfg.host, cfg.port
        ))),
        b => Err(Error::Protocol(format!("unexpected answer {b:#04x} to SSLRequest"))),
    }
}
