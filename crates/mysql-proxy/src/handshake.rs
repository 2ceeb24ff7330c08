//! Connection set-up: connect to the backend, forward its greeting with the capabilities
//! the proxy cannot inspect cleared, and relay the authentication exchange both ways until
//! the backend says OK or ERR (any auth plugin works; the proxy never reads a password).
//!
//! TLS is per link ([`crate::tls`]): a client's SSLRequest is answered with the proxy's own
//! TLS handshake (when it has a certificate), and the backend link is encrypted when
//! `--mysql-backend-tls` is set, the proxy sending the backend an SSLRequest of its own.
//! Each SSLRequest takes a sequence number on its link only, so the login packets relayed
//! between the links are renumbered by the difference.

use std::io;
use std::time::Duration;

use protocol_mysql::{
    is_ssl_request, rewrite_handshake_capabilities, rewrite_handshake_mariadb_capabilities,
    rewrite_response_capabilities, HandshakeResponse41, HandshakeV10, CLIENT_COMPRESS, CLIENT_MYSQL,
    CLIENT_OPTIONAL_RESULTSET_METADATA, CLIENT_QUERY_ATTRIBUTES, CLIENT_SSL, CLIENT_ZSTD_COMPRESSION_ALGORITHM,
    MARIADB_CLIENT_CACHE_METADATA, MARIADB_CLIENT_COM_MULTI, MARIADB_CLIENT_PROGRESS,
    MARIADB_CLIENT_STMT_BULK_OPERATIONS,
};
use tokio::net::TcpStream;

use std::sync::atomic::Ordering;

use crate::counters::Counters;
use crate::errors::{self, err_packet};
use crate::relay::RelayError;
use crate::tls::ProxyTls;
use crate::wire::{first_payload, Wire};
use protocol_mysql::reply::status_of;

/// Capabilities removed from the greeting and the client's response: TLS and compression
/// (the proxy must read every packet), query attributes and optional metadata (reply
/// shapes the cache does not handle).
pub const CLEARED: u32 = CLIENT_SSL
    | CLIENT_COMPRESS
    | CLIENT_ZSTD_COMPRESSION_ALGORITHM
    | CLIENT_QUERY_ATTRIBUTES
    | CLIENT_OPTIONAL_RESULTSET_METADATA;

/// MariaDB extended capabilities removed: progress reports (ERR packets in the middle of
/// a reply), COM_MULTI, bulk execution and the prepared-statement metadata cache.
pub const CLEARED_MARIADB: u32 = MARIADB_CLIENT_PROGRESS
    | MARIADB_CLIENT_COM_MULTI
    | MARIADB_CLIENT_STMT_BULK_OPERATIONS
    | MARIADB_CLIENT_CACHE_METADATA;

/// What the proxy learned from a successful login.
#[derive(Clone, Debug, Default)]
pub struct Login {
    /// The user name.
    pub user: Vec<u8>,
    /// The initial default database.
    pub db: Option<Vec<u8>>,
    /// The client's collation id.
    pub charset: u8,
    /// Negotiated capabilities (client ∩ server, after clearing [`CLEARED`]).
    pub caps: u32,
    /// Negotiated MariaDB extended capabilities (0 unless both sides are MariaDB).
    pub mariadb_caps: u32,
    /// Status flags of the login's OK packet.
    pub status: u16,
    /// The backend's version string from its greeting (executable comments depend on it).
    pub server_version: String,
}

/// How a connection attempt ended.
pub enum Outcome {
    /// Logged in: the command phase starts.
    Ready(Box<Wire>, Login),
    /// The client was told why (auth failed, TLS asked, backend refused): close.
    Closed,
    /// The backend could not be reached; the client was told: close.
    BackendDown,
}

/// The backend connection of a new client, greeted: its socket and the greeting packet.
pub struct Greeted {
    server: Wire,
    greeting: Vec<u8>,
}

/// Connects to `backend` for a new `client` and waits for its greeting, both within
/// `timeout` (`--mysql-backend-connect-timeout`). A backend that cannot be reached or does
/// not greet in time (stopped, or overloaded: a burst of connections past its listen
/// backlog is greeted seconds late) is told to the client as an ERR in place of the
/// greeting (`Err(outcome)`), as a direct client would have waited as long and failed.
pub async fn connect_backend(
    client: &mut Wire,
    backend: &str,
    timeout: Duration,
) -> Result<Result<Greeted, Outcome>, RelayError> {
    let secs = timeout.as_secs();
    let sock = match tokio::time::timeout(timeout, TcpStream::connect(backend)).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => return Ok(Err(refuse_before_greeting(client, backend, &e.to_string()).await)),
        Err(_) => {
            let why = format!("no connection within {secs} s: --mysql-backend-connect-timeout");
            return Ok(Err(refuse_before_greeting(client, backend, &why).await));
        }
    };
    let _ = sock.set_nodelay(true);
    let mut server = Wire::new(sock);
    // A hung backend (stopped, overloaded) accepts the TCP connection in the kernel but
    // does not greet: answer the client with an error instead of hanging with it.
    match tokio::time::timeout(timeout, server.read_raw()).await {
        Ok(g) => Ok(Ok(Greeted { server, greeting: g.map_err(RelayError::Backend)? })),
        Err(_) => {
            let why = format!("no greeting within {secs} s: the server hangs or is overloaded");
            Ok(Err(refuse_before_greeting(client, backend, &why).await))
        }
    }
}

/// Runs the handshake and authentication for `client` on the greeted backend connection
/// `greeted`, with TLS on either link as `tls` says. An error says which side failed: a
/// client that goes away or sends garbage during its login is an aborted connect (as
/// MariaDB counts it), not a backend error.
pub async fn establish(
    client: &mut Wire,
    greeted: Greeted,
    backend: &str,
    tls: &ProxyTls,
    counters: &Counters,
) -> Result<Outcome, RelayError> {
    use RelayError::{Backend, Client};
    let Greeted { mut server, mut greeting } = greeted;
    let payload_at = 4;
    if greeting.get(payload_at) == Some(&0xff) {
        client.write(&greeting).await.map_err(Client)?; // e.g. too many connections, host blocked
        return Ok(Outcome::Closed);
    }
    let server_caps;
    let server_ext;
    let server_version;
    let backend_offers_tls;
    {
        let payload = &mut greeting[payload_at..];
        let bad = |e| Backend(invalid(e));
        backend_offers_tls = HandshakeV10::parse(payload).map_err(bad)?.capabilities & CLIENT_SSL != 0;
        // The client is offered the proxy's TLS, not the backend's.
        let offer = if tls.acceptor.is_some() { CLIENT_SSL } else { 0 };
        rewrite_handshake_capabilities(payload, CLEARED, offer).map_err(bad)?;
        rewrite_handshake_mariadb_capabilities(payload, CLEARED_MARIADB).map_err(bad)?;
        let hs = HandshakeV10::parse(payload).map_err(bad)?;
        server_caps = hs.capabilities;
        server_ext = hs.mariadb_capabilities();
        server_version = String::from_utf8_lossy(hs.server_version).into_owned();
    }
    client.write(&greeting).await.map_err(Client)?;

    let mut response = match client.read_raw().await {
        Ok(r) => r,
        Err(e) if e.kind() == io::ErrorKind::InvalidData => {
            // Larger than a login can be (client.set_limit): refused from its header.
            client.write(&errors::bad_handshake(2, "login packet too large")).await.map_err(Client)?;
            return Err(Client(e));
        }
        Err(e) => return Err(Client(e)),
    };
    let mut seq = response.get(3).copied().unwrap_or(1);
    // Sequence numbers the SSLRequests took on each link.
    let mut client_shift = 0u8;
    if is_ssl_request(first_payload(&response)) {
        let Some(acceptor) = &tls.acceptor else {
            let msg = "TLS between the client and sqlcached's MySQL proxy is not configured: connect without TLS, \
                       or start sqlcached with --mysql-tls-cert and --mysql-tls-key";
            return refuse(client, seq, errors::NOT_SUPPORTED, b"08004", msg, server_caps).await;
        };
        counters.ssl_accepts.fetch_add(1, Ordering::Relaxed);
        if let Err(e) = client.accept_tls(acceptor).await {
            // MariaDB counts a failed TLS handshake as an aborted connect.
            counters.aborted_connects.fetch_add(1, Ordering::Relaxed);
            log::debug!("mysql proxy: client TLS handshake failed: {e}");
            return Ok(Outcome::Closed);
        }
        counters.ssl_finished_accepts.fetch_add(1, Ordering::Relaxed);
        client_shift = 1;
        response = client.read_raw().await.map_err(Client)?;
        seq = response.get(3).copied().unwrap_or(2);
    }
    if response.len() < 4 + 32 {
        return Err(Client(invalid("short handshake response")));
    }
    rewrite_response_capabilities(&mut response[4..], CLEARED, CLEARED_MARIADB).map_err(|e| Client(invalid(e)))?;
    let mut login = {
        let r = HandshakeResponse41::parse(first_payload(&response)).map_err(|e| Client(invalid(e)))?;
        let client_ext = r.mariadb_capabilities();
        Login {
            user: r.user.to_vec(),
            db: r.database.filter(|d| !d.is_empty()).map(<[u8]>::to_vec),
            charset: r.charset,
            caps: r.capabilities & server_caps,
            mariadb_caps: match (client_ext, server_ext) {
                (Some(c), Some(s)) if r.capabilities & CLIENT_MYSQL == 0 => c & s,
                _ => 0,
            },
            status: 0,
            server_version,
        }
    };
    let mut backend_shift = 0u8;
    if let Some((connector, name)) = &tls.connector {
        // No fallback to clear text: the login is refused, counted and logged.
        let backend_refused = |logged: String, told: String| {
            counters.backend_ssl_errors.fetch_add(1, Ordering::Relaxed);
            log::warn!("mysql proxy: {logged}: login refused");
            format!("sqlcached: {told}")
        };
        if !backend_offers_tls {
            let msg = backend_refused(
                format!("backend {backend} does not offer TLS and --mysql-backend-tls is set"),
                format!("the MySQL backend {backend} does not offer TLS (--mysql-backend-tls is set)"),
            );
            return refuse(client, seq, errors::CONNECT_FAILED, b"08S01", &msg, server_caps).await;
        }
        // The SSLRequest: the first 32 bytes of the client's response, with CLIENT_SSL.
        let mut ssl_request = vec![32, 0, 0, 1];
        ssl_request.extend_from_slice(&response[4..36]);
        let caps = u32::from_le_bytes([ssl_request[4], ssl_request[5], ssl_request[6], ssl_request[7]]) | CLIENT_SSL;
        ssl_request[4..8].copy_from_slice(&caps.to_le_bytes());
        server.write(&ssl_request).await.map_err(Backend)?;
        if let Err(e) = server.connect_tls(connector, name.clone()).await {
            let msg = backend_refused(
                format!("TLS to backend {backend} failed: {e}"),
                format!("TLS to the MySQL backend {backend} failed: {e}"),
            );
            return refuse(client, seq, errors::CONNECT_FAILED, b"08S01", &msg, server_caps).await;
        }
        response[4..8].copy_from_slice(&caps.to_le_bytes());
        backend_shift = 1;
    }
    response[3] = 1 + backend_shift;
    server.write(&response).await.map_err(Backend)?;
    match relay_auth(client, &mut server, client_shift.wrapping_sub(backend_shift)).await? {
        Some(status) => {
            login.status = status;
            Ok(Outcome::Ready(Box::new(server), login))
        }
        None => Ok(Outcome::Closed),
    }
}

/// Relays packets both ways until the backend sends OK (`Some(status)`) or ERR (`None`),
/// both forwarded to the client. Used at login and for COM_CHANGE_USER. `shift` is added
/// to the sequence number of each packet toward the client (and taken from those toward
/// the backend): the client's SSLRequest minus the proxy's, at login; 0 otherwise.
pub async fn relay_auth(client: &mut Wire, server: &mut Wire, shift: u8) -> Result<Option<u16>, RelayError> {
    use RelayError::{Backend, Client};
    loop {
        if client.buffered().len() > crate::wire::MAX_LOGIN_MESSAGE {
            client.write(&errors::bad_handshake(0, "authentication data too large")).await.map_err(Client)?;
            return Err(Client(invalid("authentication data too large")));
        }
        while let Some(len) = complete_packet(client.buffered()) {
            let mut bytes = client.buffered()[..len].to_vec();
            client.consume(len);
            bytes[3] = bytes[3].wrapping_sub(shift);
            server.write(&bytes).await.map_err(Backend)?;
        }
        while let Some(len) = complete_packet(server.buffered()) {
            let mut bytes = server.buffered()[..len].to_vec();
            server.consume(len);
            bytes[3] = bytes[3].wrapping_add(shift);
            client.write(&bytes).await.map_err(Client)?;
            let payload = first_payload(&bytes);
            match payload.first() {
                Some(0x00) => return Ok(Some(status_of(payload, false).0)),
                Some(0xff) => return Ok(None),
                _ => {} // auth switch (0xfe), more data (0x01): the client answers or the server goes on
            }
        }
        tokio::select! {
            r = client.fill() => r.map_err(Client)?,
            r = server.fill() => r.map_err(Backend)?,
        }
    }
}

/// Answers the client's login packet (sequence `seq`) with an ERR and ends the connection.
async fn refuse(
    client: &mut Wire,
    seq: u8,
    code: u16,
    state: &[u8; 5],
    msg: &str,
    caps: u32,
) -> Result<Outcome, RelayError> {
    let mut out = Vec::new();
    err_packet(&mut out, seq.wrapping_add(1), code, state, msg, caps);
    client.write(&out).await.map_err(RelayError::Client)?;
    Ok(Outcome::Closed)
}

/// The byte length of the first packet in `buf` when it is complete.
fn complete_packet(buf: &[u8]) -> Option<usize> {
    match protocol_mysql::parse_packet(buf) {
        Ok(Some((_, used))) => Some(used),
        _ => None,
    }
}

/// Tells a client that just connected that the backend is unreachable (an ERR packet in
/// place of the greeting, as servers do for "too many connections").
/// The backend is down either way: a client that cannot be told changes nothing.
async fn refuse_before_greeting(client: &mut Wire, backend: &str, why: &str) -> Outcome {
    let msg = format!("Can't connect to MySQL backend {backend} ({why})");
    let mut out = Vec::new();
    err_packet(&mut out, 0, errors::CONNECT_FAILED, b"HY000", &msg, 0);
    let _ = client.write(&out).await;
    Outcome::BackendDown
}

fn invalid(e: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e.to_string())
}
