//! One client connection: the connection cap, the login (bounded: at most
//! [`crate::LOGIN_SLOTS`] at once, each within `--pg-login-timeout`, startup packets of at
//! most 10,004 bytes), then the session ([`crate::relay`]) on its own backend connection.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use tokio::net::TcpStream;

use crate::errors::{self, fatal};
use crate::handshake::{self, Outcome};
use crate::link::Link;
use crate::relay::{self, End};
use crate::Proxy;

/// Decrements the connection gauge however the connection ends.
struct Open<'a>(&'a Proxy);

impl Drop for Open<'_> {
    fn drop(&mut self) {
        self.0.counters.connections.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Serves one accepted client socket until it quits or either side goes away.
pub async fn serve(sock: TcpStream, proxy: Arc<Proxy>) {
    let _ = sock.set_nodelay(true);
    let c = &proxy.counters;
    c.connections_total.fetch_add(1, Ordering::Relaxed);
    let open = c.connections.fetch_add(1, Ordering::Relaxed) + 1;
    let _open = Open(&proxy);
    let mut client = Link::new(sock);
    if open > proxy.max_connections as u64 {
        c.connections_refused.fetch_add(1, Ordering::Relaxed);
        refuse_full(&mut client, &proxy).await;
        return;
    }
    let deadline = tokio::time::Instant::now() + proxy.login_timeout;
    let login = tokio::time::timeout_at(deadline, async {
        // Logins in progress are bounded; the others wait their turn (within the timeout).
        let _slot = proxy.login_slots.acquire().await;
        handshake::establish(&mut client, &proxy).await
    })
    .await;
    let outcome = match login {
        Ok(Ok(o)) => o,
        Ok(Err(e)) => Outcome::Aborted(format!("connection failed during the login: {e}")),
        Err(_) => {
            // PostgreSQL's own words and code for authentication_timeout.
            let err = fatal(errors::QUERY_CANCELED, "canceling authentication due to timeout", None, None);
            let _ = tokio::time::timeout(std::time::Duration::from_secs(1), client.write(&err)).await;
            Outcome::Aborted(format!("login not complete within {} s", proxy.login_timeout.as_secs()))
        }
    };
    match outcome {
        Outcome::Ready(server, login) => {
            c.logins_ok.fetch_add(1, Ordering::Relaxed);
            proxy.backend_reached(true, "");
            match relay::run(client, server, login, &proxy).await {
                End::BackendGone(e) | End::BackendGarbage(e) => {
                    c.backend_errors.fetch_add(1, Ordering::Relaxed);
                    log::debug!("postgres proxy: backend connection ended: {e}");
                }
                End::ClientGarbage(e) => log::debug!("postgres proxy: client closed: {e}"),
                _ => {}
            }
        }
        Outcome::Cancel => {}
        Outcome::Refused => {
            c.logins_failed.fetch_add(1, Ordering::Relaxed);
            proxy.backend_reached(true, "");
        }
        Outcome::BackendDown(why) => {
            c.backend_errors.fetch_add(1, Ordering::Relaxed);
            proxy.backend_reached(false, &why);
        }
        Outcome::Aborted(why) => {
            c.logins_aborted.fetch_add(1, Ordering::Relaxed);
            log::debug!("postgres proxy: login not completed: {why}");
        }
    }
}

/// `--pg-max-connections` reached: the client's startup is read as usual (TLS answered as
/// always, so a client that requires it is told the real reason) and answered with
/// PostgreSQL's FATAL 53300, within 5 s; a cancel request still goes through, as in
/// PostgreSQL.
async fn refuse_full(client: &mut Link, proxy: &Proxy) {
    let start = tokio::time::timeout(std::time::Duration::from_secs(5), handshake::startup(client, proxy)).await;
    match start {
        Ok(Ok(Ok(handshake::Start::Cancel(pid, secret)))) => handshake::forward_cancel(proxy, pid, &secret).await,
        Ok(Ok(Ok(handshake::Start::Startup(..)))) => {
            let hint = format!(
                "sqlcached's PostgreSQL front serves at most {} clients (--pg-max-connections)",
                proxy.max_connections
            );
            let err = fatal(errors::TOO_MANY_CONNECTIONS, "sorry, too many clients already", None, Some(&hint));
            let _ = client.write(&err).await;
        }
        _ => {}
    }
}
