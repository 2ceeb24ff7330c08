//! A client's startup: the startup packets (SSLRequest answered `S` with the proxy's own
//! TLS or `N`, GSSENCRequest `N`, CancelRequest handed to [`crate::cancel`]), the backend
//! connection (TCP, then TLS as `--pg-backend-sslmode` says), the client's StartupMessage
//! passed on unchanged, and the authentication exchange relayed both ways until the
//! backend says AuthenticationOk or ErrorResponse: any method the server asks for (SCRAM,
//! md5, cleartext, trust) works and the proxy never reads a password. Then the backend's
//! ParameterStatus messages, its BackendKeyData (replaced by the proxy's, see
//! [`crate::cancel`]) and ReadyForQuery.
//!
//! SCRAM-SHA-256-PLUS is removed from AuthenticationSASL: channel binding ties the
//! exchange to the TLS certificate the client sees, which is the proxy's, not the
//! backend's. A client that supports binding and finds it not offered says so (`y` in its
//! first message, libpq's default `channel_binding=prefer` over TLS); a server that itself
//! runs TLS must then refuse the login as a downgrade, so with TLS on both links such a
//! login is refused by the proxy with a message saying how to connect (docs/pgproxy.md).

use std::io;
use std::sync::atomic::Ordering;

use protocol_postgres::backend::fields::{SEVERITY, SEVERITY_NONLOCALIZED};
use protocol_postgres::frontend::auth::SaslInitialResponse;
use protocol_postgres::scram::{ChannelBinding, ClientFirst};
use protocol_postgres::{
    backend_limit, frontend_limit, parse_frame_with, Authentication, BackendKeyData, ErrorFields, StartupPacket,
};
use tokio::net::TcpStream;

use crate::cancel::{BackendKey, Keys, Registered};
use crate::errors::{self, fatal};
use crate::link::Link;
use crate::session::Session;
use crate::Proxy;

/// What a logged-in client brings into its session.
pub struct Login {
    /// User, database, reported settings, transaction status.
    pub session: Session,
    /// The session's cancel key (dropped with the session).
    pub key: Option<Registered>,
}

/// How a connection's startup ended.
pub enum Outcome {
    /// Logged in: the session starts with this backend link.
    Ready(Box<Link>, Box<Login>),
    /// A cancel request, handled (forwarded or dropped): close.
    Cancel,
    /// The backend refused the login (wrong password, no such database, pg_hba); the client
    /// has the server's own ErrorResponse.
    Refused,
    /// The backend could not be reached or TLS to it failed; the client was told (08001).
    BackendDown(String),
    /// The client left, stalled or sent something the server would refuse (told when it
    /// could be).
    Aborted(String),
}

/// The first packets of a client, up to its StartupMessage.
pub enum Start {
    /// The StartupMessage's raw bytes (length word included), user and database.
    Startup(Vec<u8>, String, String),
    /// A CancelRequest's process id and secret.
    Cancel(u32, Vec<u8>),
}

/// Runs a client's startup and login; see the module doc.
pub async fn establish(client: &mut Link, proxy: &Proxy) -> io::Result<Outcome> {
    let (raw, user, database) = match startup(client, proxy).await? {
        Err(outcome) => return Ok(outcome),
        Ok(Start::Cancel(pid, secret)) => {
            forward_cancel(proxy, pid, &secret).await;
            return Ok(Outcome::Cancel);
        }
        Ok(Start::Startup(raw, user, database)) => (raw, user, database),
    };
    let mut server = match connect_backend(proxy).await {
        Ok(s) => s,
        Err(why) => {
            let msg = format!("sqlcached: cannot connect to PostgreSQL at {}: {why}", proxy.backend);
            let _ = client.write(&fatal(errors::CANNOT_CONNECT, &msg, None, None)).await;
            return Ok(Outcome::BackendDown(why));
        }
    };
    server.write(&raw).await?;
    let session = Session { user, database, ..Session::default() };
    authenticate(client, server, session, proxy).await
}

/// Reads startup packets until a StartupMessage or a CancelRequest, answering SSLRequest
/// and GSSENCRequest on the way; `Err(outcome)` if the client is to be closed.
pub async fn startup(client: &mut Link, proxy: &Proxy) -> io::Result<Result<Start, Outcome>> {
    let (mut ssl_done, mut gss_done) = (false, false);
    loop {
        let len = match client.startup_len().await {
            Ok(len) => len,
            Err(e) if e.kind() == io::ErrorKind::InvalidData => {
                // PostgreSQL's words for a length below 8 or above 10,000.
                let _ = client
                    .write(&fatal(errors::PROTOCOL_VIOLATION, "invalid length of startup packet", None, None))
                    .await;
                return Ok(Err(Outcome::Aborted(format!("startup packet refused: {e}"))));
            }
            Err(e) => return Ok(Err(Outcome::Aborted(format!("client left before its startup packet: {e}")))),
        };
        let parsed = match StartupPacket::parse(&client.buffered()[4..len]) {
            Ok(StartupPacket::SslRequest) => None,
            Ok(StartupPacket::GssEncRequest) => Some(None),
            Ok(StartupPacket::Cancel(c)) => Some(Some(Start::Cancel(c.process_id, c.secret_key.to_vec()))),
            Ok(StartupPacket::Startup(m)) => {
                if let Some(r) = m.param(b"replication").filter(|v| !matches!(*v, b"false" | b"off" | b"no" | b"0")) {
                    let msg = format!(
                        "sqlcached's PostgreSQL front does not relay replication connections (replication={})",
                        String::from_utf8_lossy(r)
                    );
                    let hint = "Connect replication clients (pg_basebackup, pg_receivewal, logical subscribers) \
                                to the PostgreSQL server directly.";
                    let _ = client.write(&fatal(errors::FEATURE_NOT_SUPPORTED, &msg, None, Some(hint))).await;
                    return Ok(Err(Outcome::Aborted("a replication connection".into())));
                }
                let user = String::from_utf8_lossy(m.user().unwrap_or_default()).into_owned();
                let database = m.database().map_or_else(|| user.clone(), |d| String::from_utf8_lossy(d).into_owned());
                Some(Some(Start::Startup(client.buffered()[..len].to_vec(), user, database)))
            }
            Err(e) => {
                let msg = match e {
                    protocol_postgres::Error::Unsupported(_) => "unsupported frontend protocol: only 3.x is spoken",
                    _ => "invalid startup packet layout",
                };
                let _ = client.write(&fatal(errors::PROTOCOL_VIOLATION, msg, None, None)).await;
                return Ok(Err(Outcome::Aborted(format!("bad startup packet: {e}"))));
            }
        };
        client.consume(len);
        match parsed {
            Some(Some(start)) => return Ok(Ok(start)),
            Some(None) => {
                // GSSENCRequest: no GSSAPI encryption here (as a server built without it).
                if gss_done || ssl_done {
                    return Ok(Err(Outcome::Aborted("GSSENCRequest repeated or after TLS".into())));
                }
                gss_done = true;
                client.write(b"N").await?;
            }
            None => {
                if ssl_done {
                    let _ =
                        client.write(&fatal(errors::PROTOCOL_VIOLATION, "SSL negotiation repeated", None, None)).await;
                    return Ok(Err(Outcome::Aborted("SSLRequest repeated".into())));
                }
                ssl_done = true;
                let Some(acceptor) = &proxy.tls.acceptor else {
                    client.write(b"N").await?;
                    continue;
                };
                client.write(b"S").await?;
                proxy.counters.ssl_accepts.fetch_add(1, Ordering::Relaxed);
                if let Err(e) = client.accept_tls(acceptor).await {
                    proxy.counters.ssl_handshake_errors.fetch_add(1, Ordering::Relaxed);
                    return Ok(Err(Outcome::Aborted(format!("client TLS handshake failed: {e}"))));
                }
            }
        }
    }
}

/// Opens a backend connection: TCP, then TLS per `--pg-backend-sslmode`, within
/// `--pg-backend-connect-timeout`; the error says why, for the client and the log.
pub async fn connect_backend(proxy: &Proxy) -> Result<Link, String> {
    let t = proxy.backend_connect_timeout;
    match tokio::time::timeout(t, connect_backend_inner(proxy)).await {
        Ok(r) => r,
        Err(_) => Err(format!("no connection within {} s (--pg-backend-connect-timeout)", t.as_secs())),
    }
}

async fn connect_backend_inner(proxy: &Proxy) -> Result<Link, String> {
    let tcp = TcpStream::connect((proxy.host.as_str(), proxy.port)).await.map_err(|e| e.to_string())?;
    let _ = tcp.set_nodelay(true);
    let mut link = Link::new(tcp);
    let Some((connector, name)) = &proxy.tls.connector else { return Ok(link) };
    let mut req = Vec::with_capacity(8);
    StartupPacket::SslRequest.write(&mut req);
    link.write(&req).await.map_err(|e| e.to_string())?;
    let tls_refused = |why: String| {
        proxy.counters.backend_ssl_errors.fetch_add(1, Ordering::Relaxed);
        why
    };
    match link.read_byte().await.map_err(|e| e.to_string())? {
        b'S' => {
            link.connect_tls(connector, name.clone()).await.map_err(|e| tls_refused(format!("TLS: {e}")))?;
            Ok(link)
        }
        b'N' if proxy.tls.sslmode == config::postgres::SslMode::Prefer => Ok(link),
        b'N' => Err(tls_refused(format!(
            "the server does not support SSL, but --pg-backend-sslmode {} requires it",
            proxy.tls.sslmode.name()
        ))),
        b => Err(format!("unexpected answer {b:#04x} to SSLRequest")),
    }
}

/// Relays the authentication exchange, then the session's opening messages.
async fn authenticate(client: &mut Link, mut server: Link, mut session: Session, proxy: &Proxy) -> io::Result<Outcome> {
    let mut out = Vec::new();
    let mut authenticated = false;
    // AuthenticationSASL was passed on: the client's next message is its SASLInitialResponse.
    let mut sasl_initial_due = false;
    let mut key = None;
    loop {
        // Every complete backend message, in one write to the client.
        loop {
            let (tag, used) = match parse_frame_with(server.buffered(), backend_limit) {
                Ok(Some((f, used))) => (f.tag, used),
                Ok(None) => break,
                Err(e) => return Ok(backend_garbage(client, proxy, &format!("{e}")).await),
            };
            let raw = &server.buffered()[..used];
            let body = &raw[5..];
            match tag {
                b'R' => match Authentication::parse(body) {
                    Ok(Authentication::Sasl(mechanisms)) => {
                        let kept = mechanisms.into_iter().filter(|m| !m.ends_with(b"-PLUS")).collect();
                        Authentication::Sasl(kept).write(&mut out);
                        sasl_initial_due = true;
                    }
                    Ok(Authentication::Ok) => {
                        authenticated = true;
                        out.extend_from_slice(raw);
                    }
                    Ok(_) if !authenticated => out.extend_from_slice(raw),
                    Ok(_) | Err(_) => return Ok(backend_garbage(client, proxy, "bad Authentication message").await),
                },
                b'E' => {
                    out.extend_from_slice(raw);
                    client.write(&out).await?;
                    return Ok(Outcome::Refused);
                }
                b'S' if authenticated => {
                    session.parameter_status(body);
                    out.extend_from_slice(raw);
                }
                b'K' if authenticated => {
                    let Ok(k) = BackendKeyData::parse(body) else {
                        return Ok(backend_garbage(client, proxy, "bad BackendKeyData").await);
                    };
                    let backend = BackendKey { pid: k.process_id, secret: k.secret_key.to_vec() };
                    match Keys::register(&proxy.keys, backend) {
                        Some(reg) => {
                            BackendKeyData { process_id: k.process_id, secret_key: reg.secret() }.write(&mut out);
                            key = Some(reg);
                        }
                        // No randomness for a secret: the client gets no key (it cannot cancel).
                        None => log::warn!(
                            "postgres proxy: no random secret for a cancel key; cancels disabled for a session"
                        ),
                    }
                }
                b'Z' if authenticated => {
                    session.ready(body);
                    out.extend_from_slice(raw);
                    server.consume(used);
                    client.write(&out).await?;
                    return Ok(Outcome::Ready(Box::new(server), Box::new(Login { session, key })));
                }
                b'N' | b'v' => out.extend_from_slice(raw),
                t => {
                    return Ok(backend_garbage(
                        client,
                        proxy,
                        &format!("unexpected message {:?} during login", t as char),
                    )
                    .await)
                }
            }
            server.consume(used);
        }
        if !out.is_empty() {
            client.write(&out).await?;
            out.clear();
        }
        if !authenticated {
            // The client's answers ('p' messages), each passed on as it is.
            loop {
                let (tag, used) = match parse_frame_with(client.buffered(), frontend_limit) {
                    Ok(Some((f, used))) => (f.tag, used),
                    Ok(None) => break,
                    Err(e) => {
                        let msg = format!("invalid message during authentication: {e}");
                        let _ = client.write(&fatal(errors::PROTOCOL_VIOLATION, &msg, None, None)).await;
                        return Ok(Outcome::Aborted(msg));
                    }
                };
                match tag {
                    b'p' => {}
                    b'X' => return Ok(Outcome::Aborted("the client quit during authentication".into())),
                    t => {
                        let msg = format!("expected password response, got message type {t}");
                        let _ = client.write(&fatal(errors::PROTOCOL_VIOLATION, &msg, None, None)).await;
                        return Ok(Outcome::Aborted(msg));
                    }
                }
                if std::mem::take(&mut sasl_initial_due) {
                    if let Some(refusal) = channel_binding_refusal(&client.buffered()[5..used], server.is_tls()) {
                        let _ = client.write(&refusal).await;
                        return Ok(Outcome::Aborted("SCRAM channel binding cannot pass through the proxy".into()));
                    }
                }
                server.write(&client.buffered()[..used]).await?;
                client.consume(used);
            }
        }
        tokio::select! {
            r = client.fill(), if !authenticated => {
                if let Err(e) = r {
                    return Ok(Outcome::Aborted(format!("the client left during authentication: {e}")));
                }
            }
            r = server.fill() => {
                if let Err(e) = r {
                    let why = format!("the server closed the connection during the login: {e}");
                    let msg = format!("sqlcached: the connection to PostgreSQL at {} was lost during the login", proxy.backend);
                    let _ = client.write(&fatal(errors::CONNECTION_FAILURE, &msg, Some(&why), None)).await;
                    return Ok(Outcome::BackendDown(why));
                }
            }
        }
    }
}

/// The FATAL for a SASLInitialResponse that cannot work through the proxy, if it is one:
/// SCRAM-SHA-256-PLUS (never offered), or `y` (binding supported, thought unavailable)
/// while the proxy's own link to the server is TLS (the server refuses it as a downgrade).
fn channel_binding_refusal(body: &[u8], backend_tls: bool) -> Option<Vec<u8>> {
    let init = SaslInitialResponse::parse(body).ok()?;
    let hint = "Connect with channel_binding=disable (libpq, psycopg: channel_binding=disable in the connection \
                string or PGCHANNELBINDING=disable; JDBC: channelBinding=disable), or run the proxy's link to the \
                server without TLS (--pg-backend-sslmode disable) on a trusted network.";
    if init.mechanism.ends_with(b"-PLUS") {
        let msg = "SCRAM channel binding is not available through sqlcached: the client's TLS ends at the proxy";
        return Some(fatal(errors::FEATURE_NOT_SUPPORTED, msg, None, Some(hint)));
    }
    let first = ClientFirst::parse(init.data?).ok()?;
    if first.channel_binding == ChannelBinding::NotUsed && backend_tls {
        let msg = "SCRAM channel binding negotiation cannot pass through sqlcached";
        let detail = "The client supports channel binding and connected to sqlcached over TLS; the PostgreSQL \
                      server, reached over TLS too, supports it as well and would refuse this login as a downgrade. \
                      Binding cannot pass through a proxy that terminates TLS.";
        return Some(fatal(errors::FEATURE_NOT_SUPPORTED, msg, Some(detail), Some(hint)));
    }
    None
}

/// The backend sent something no server sends during a login: tell the client, count it.
async fn backend_garbage(client: &mut Link, proxy: &Proxy, what: &str) -> Outcome {
    let msg = format!("sqlcached: PostgreSQL at {} sent an invalid message during the login", proxy.backend);
    let _ = client.write(&fatal(errors::CONNECTION_FAILURE, &msg, Some(what), None)).await;
    Outcome::BackendDown(format!("protocol error during the login: {what}"))
}

/// Forwards a client's cancel request to the backend when its key is a live session's.
pub async fn forward_cancel(proxy: &Proxy, pid: u32, secret: &[u8]) {
    let c = &proxy.counters;
    c.cancel_requests.fetch_add(1, Ordering::Relaxed);
    let Some(key) = proxy.keys.lookup(pid, secret) else {
        log::debug!("postgres proxy: a cancel request with an unknown key (pid {pid}): dropped");
        return;
    };
    let mut link = match connect_backend(proxy).await {
        Ok(l) => l,
        Err(e) => {
            log::debug!("postgres proxy: cancel request for pid {pid} not sent: {e}");
            return;
        }
    };
    let mut packet = Vec::with_capacity(16 + key.secret.len());
    protocol_postgres::CancelRequest { process_id: key.pid, secret_key: &key.secret }.write(&mut packet);
    if link.write(&packet).await.is_ok() {
        c.cancels_forwarded.fetch_add(1, Ordering::Relaxed);
        // The server answers nothing and closes; wait for that (briefly) so the cancel is
        // processed before the client's next step.
        let _ = tokio::time::timeout(std::time::Duration::from_secs(2), link.fill()).await;
    }
}

/// Whether an ErrorResponse body is FATAL or PANIC (the server ends the session after it).
pub fn is_fatal(body: &[u8]) -> bool {
    ErrorFields::parse(body).is_ok_and(|f| {
        let s = f.get(SEVERITY_NONLOCALIZED).or_else(|| f.get(SEVERITY)).unwrap_or_default();
        s == b"FATAL" || s == b"PANIC"
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn initial(mechanism: &[u8], data: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        SaslInitialResponse { mechanism, data: Some(data) }.write(&mut out);
        out[5..].to_vec()
    }

    #[test]
    fn channel_binding_through_the_proxy() {
        let n = initial(b"SCRAM-SHA-256", b"n,,n=,r=abc");
        let y = initial(b"SCRAM-SHA-256", b"y,,n=,r=abc");
        let p = initial(b"SCRAM-SHA-256-PLUS", b"p=tls-server-end-point,,n=,r=abc");
        assert!(channel_binding_refusal(&n, true).is_none());
        assert!(channel_binding_refusal(&y, false).is_none(), "a plain server link accepts 'y'");
        assert!(channel_binding_refusal(&y, true).is_some());
        assert!(channel_binding_refusal(&p, false).is_some());
        // Not a SASLInitialResponse (a password message): not ours to judge.
        assert!(channel_binding_refusal(b"secret\0", true).is_none());
    }

    #[test]
    fn fatal_severity() {
        let mut e = Vec::new();
        ErrorFields::write_error(&mut e, "FATAL", "57P01", "terminating connection due to administrator command");
        assert!(is_fatal(&e[5..]));
        e.clear();
        ErrorFields::write_error(&mut e, "ERROR", "42P01", "no");
        assert!(!is_fatal(&e[5..]));
    }
}
