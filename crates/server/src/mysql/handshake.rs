//! Connection set-up: connect to the backend, forward its greeting with the capabilities
//! the proxy cannot inspect cleared, and relay the authentication exchange both ways until
//! the backend says OK or ERR (any auth plugin works; the proxy never sees a password).

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

use super::errors::{self, err_packet};
use super::reply::status_of;
use super::wire::{first_payload, Wire};

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

/// How long connecting to the backend may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

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

/// Connects to `backend` and runs the handshake and authentication for `client`.
pub async fn establish(client: &mut Wire, backend: &str) -> io::Result<Outcome> {
    let sock = match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(backend)).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => return refuse_before_greeting(client, backend, &e.to_string()).await,
        Err(_) => return refuse_before_greeting(client, backend, "timed out").await,
    };
    let _ = sock.set_nodelay(true);
    let mut server = Wire::new(sock);
    // A hung backend (stopped, overloaded) accepts the TCP connection in the kernel but
    // never greets: answer the client with an error instead of hanging with it.
    let mut greeting = match tokio::time::timeout(CONNECT_TIMEOUT, server.read_raw()).await {
        Ok(g) => g?,
        Err(_) => return refuse_before_greeting(client, backend, "no greeting within 5 s: the server hangs").await,
    };
    let payload_at = 4;
    if greeting.get(payload_at) == Some(&0xff) {
        client.write(&greeting).await?; // e.g. too many connections, host blocked
        return Ok(Outcome::Closed);
    }
    let server_caps;
    let server_ext;
    let server_version;
    {
        let payload = &mut greeting[payload_at..];
        rewrite_handshake_capabilities(payload, CLEARED, 0).map_err(invalid)?;
        rewrite_handshake_mariadb_capabilities(payload, CLEARED_MARIADB).map_err(invalid)?;
        let hs = HandshakeV10::parse(payload).map_err(invalid)?;
        server_caps = hs.capabilities;
        server_ext = hs.mariadb_capabilities();
        server_version = String::from_utf8_lossy(hs.server_version).into_owned();
    }
    client.write(&greeting).await?;

    let mut response = match client.read_raw().await {
        Ok(r) => r,
        Err(e) if e.kind() == io::ErrorKind::InvalidData => {
            // Larger than a login can be (client.set_limit): refused from its header.
            client.write(&errors::bad_handshake(2, "login packet too large")).await?;
            return Err(e);
        }
        Err(e) => return Err(e),
    };
    let seq = response.get(3).copied().unwrap_or(1);
    if is_ssl_request(first_payload(&response)) {
        let msg = "TLS between the client and sqlcached's MySQL proxy is not supported: connect without TLS \
                   (the proxy must read every packet to cache results)";
        let mut out = Vec::new();
        err_packet(&mut out, seq.wrapping_add(1), errors::NOT_SUPPORTED, b"08004", msg, server_caps);
        client.write(&out).await?;
        return Ok(Outcome::Closed);
    }
    if response.len() < 4 + 32 {
        return Err(invalid("short handshake response"));
    }
    rewrite_response_capabilities(&mut response[4..], CLEARED, CLEARED_MARIADB).map_err(invalid)?;
    let mut login = {
        let r = HandshakeResponse41::parse(first_payload(&response)).map_err(invalid)?;
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
    server.write(&response).await?;
    match relay_auth(client, &mut server).await? {
        Some(status) => {
            login.status = status;
            Ok(Outcome::Ready(Box::new(server), login))
        }
        None => Ok(Outcome::Closed),
    }
}

/// Relays packets both ways until the backend sends OK (`Some(status)`) or ERR (`None`),
/// both forwarded to the client. Used at login and for COM_CHANGE_USER.
pub async fn relay_auth(client: &mut Wire, server: &mut Wire) -> io::Result<Option<u16>> {
    loop {
        if client.buffered().len() > super::wire::MAX_LOGIN_MESSAGE {
            client.write(&errors::bad_handshake(0, "authentication data too large")).await?;
            return Err(invalid("authentication data too large"));
        }
        while let Some(len) = complete_packet(client.buffered()) {
            let bytes = client.buffered()[..len].to_vec();
            client.consume(len);
            server.write(&bytes).await?;
        }
        while let Some(len) = complete_packet(server.buffered()) {
            let bytes = server.buffered()[..len].to_vec();
            server.consume(len);
            client.write(&bytes).await?;
            let payload = first_payload(&bytes);
            match payload.first() {
                Some(0x00) => return Ok(Some(status_of(payload, false).0)),
                Some(0xff) => return Ok(None),
                _ => {} // auth switch (0xfe), more data (0x01): the client answers or the server goes on
            }
        }
        tokio::select! {
            r = client.fill() => r?,
            r = server.fill() => r?,
        }
    }
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
async fn refuse_before_greeting(client: &mut Wire, backend: &str, why: &str) -> io::Result<Outcome> {
    let msg = format!("Can't connect to MySQL backend {backend} ({why})");
    let mut out = Vec::new();
    err_packet(&mut out, 0, errors::CONNECT_FAILED, b"HY000", &msg, 0);
    client.write(&out).await?;
    Ok(Outcome::BackendDown)
}

fn invalid(e: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e.to_string())
}
