//! One MySQL client connection: handshake, then the command loop. Every command goes to
//! the client's own backend connection (1:1); cacheable reads may be answered from the
//! query cache instead (see [`crate::cache`]).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use protocol_mysql::command::*;
use tokio::net::TcpStream;

use crate::cache::{CacheConn, Decision, Local};
use crate::counters::Served;
use crate::errors;
use crate::handshake::{self, Login, Outcome};
use crate::relay::{drain_reply, relay_reply, RelayError, Sink};
use crate::wire::{Wire, MAX_LOGIN_MESSAGE, MAX_MESSAGE};
use crate::Proxy;
use protocol_mysql::reply::{Expect, Reply};

/// Serves one accepted client socket until it quits or either side goes away.
pub async fn serve(sock: TcpStream, proxy: Arc<Proxy>) {
    let _ = sock.set_nodelay(true);
    proxy.counters.connections.fetch_add(1, Ordering::Relaxed);
    let mut client = Wire::new(sock);
    // Until the login is done: small packets only. The backend has its own time to accept
    // and greet; the client's login, from the greeting on, must be done within the connect
    // timeout (MariaDB's connect_timeout also starts when it greets).
    client.set_limit(MAX_LOGIN_MESSAGE);
    let greeted = handshake::connect_backend(&mut client, &proxy.backend, proxy.backend_connect_timeout).await;
    let login = match greeted {
        Ok(Ok(greeted)) => {
            tokio::time::timeout(
                proxy.connect_timeout,
                handshake::establish(&mut client, greeted, &proxy.backend, &proxy.tls, &proxy.counters),
            )
            .await
        }
        Ok(Err(outcome)) => Ok(Ok(outcome)),
        Err(e) => Ok(Err(e)),
    };
    let login = match login {
        Ok(r) => r,
        Err(_) => {
            let secs = proxy.connect_timeout.as_secs();
            let _ = client.write(&errors::bad_handshake(2, &format!("login not complete within {secs} s"))).await;
            Err(RelayError::Client(std::io::Error::new(std::io::ErrorKind::TimedOut, "login timed out")))
        }
    };
    client.set_limit(MAX_MESSAGE);
    client.set_read_timeout(proxy.net_read_timeout);
    match login {
        Ok(Outcome::Ready(server, login)) => {
            proxy.backend_reached(true);
            let cache = CacheConn::new(&proxy, &login);
            let mut conn = Conn { cache, client, server, login, proxy: proxy.clone(), own_reply_due: false };
            match conn.run().await {
                Err(RelayError::Backend(e)) => {
                    conn.cache.backend_lost();
                    proxy.counters.backend_errors.fetch_add(1, Ordering::Relaxed);
                    log::debug!("mysql proxy: backend connection lost: {e}");
                }
                Err(RelayError::Client(e)) => log::debug!("mysql proxy: client connection: {e}"),
                _ => {}
            }
        }
        Ok(Outcome::Closed) => {}
        Ok(Outcome::BackendDown) => {
            proxy.backend_reached(false);
            proxy.counters.backend_errors.fetch_add(1, Ordering::Relaxed);
        }
        // As MariaDB counts them: a client that left, stalled or sent garbage before its login
        // was done (a port probe, a health check that only connects) is an aborted connect.
        Err(RelayError::Client(e)) => {
            proxy.counters.aborted_connects.fetch_add(1, Ordering::Relaxed);
            log::debug!("mysql proxy: client login not completed: {e}");
        }
        Err(RelayError::Backend(e)) => {
            proxy.counters.backend_errors.fetch_add(1, Ordering::Relaxed);
            log::debug!("mysql proxy: backend failed during a login: {e}");
        }
    }
    proxy.counters.connections.fetch_sub(1, Ordering::Relaxed);
}

/// A logged-in client and its backend connection.
pub struct Conn {
    /// The client socket.
    pub client: Wire,
    /// The backend socket.
    pub server: Box<Wire>,
    /// What the login negotiated.
    pub login: Login,
    /// Query-cache state of this connection.
    pub cache: CacheConn,
    /// Shared proxy state.
    pub proxy: Arc<Proxy>,
    /// A statement the proxy sent and already answered (a read-only transaction's COMMIT,
    /// see `cache/txn.rs`) has a reply still to be read.
    pub own_reply_due: bool,
}

impl Conn {
    async fn run(&mut self) -> Result<(), RelayError> {
        let mut stop = self.proxy.stop_signal();
        loop {
            if std::mem::take(&mut self.own_reply_due) {
                // A read-only transaction's COMMIT, answered already: its OK, read now.
                self.own_reply(0).await?;
            }
            self.cache.begin_command();
            // Idle between commands: the client may send one, or the backend may close this
            // connection (wait_timeout, KILL, a restart). Then close the client at once, as
            // the server itself would, so pools see a dead connection and replace it
            // instead of failing the next command with "lost connection to backend".
            let (client, server) = (&mut self.client, &mut self.server);
            let len = tokio::select! {
                // A command the client already sent is answered before a stop closes it.
                biased;
                r = client.message_len() => match r {
                    Ok(len) => len,
                    Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                        // A half-sent command stalled (net_read_timeout): say so and close.
                        let msg = "Got timeout reading communication packets";
                        let _ = client.write(&errors::err41(1, errors::READ_TIMEOUT, b"08S01", msg)).await;
                        self.proxy.counters.aborted_clients.fetch_add(1, Ordering::Relaxed);
                        return Ok(());
                    }
                    Err(_) => return Ok(()), // client went away (or sent garbage): close both
                },
                r = server.fill() => {
                    // What an idle backend says is its goodbye (MySQL 8 sends ER_CLIENT_
                    // INTERACTION_TIMEOUT before closing): pass it on, then close.
                    let said = server.buffered().to_vec();
                    let _ = client.write(&said).await;
                    self.cache.backend_lost();
                    log::debug!("mysql proxy: the backend closed an idle connection ({}): closing its client", match r {
                        Ok(()) => "after an unsolicited message".to_string(),
                        Err(e) => e.to_string(),
                    });
                    return Ok(());
                }
                // Shutting down and idle between commands: close, as a stopping server does.
                _ = stopped(&mut stop) => return Ok(()),
            };
            let started = self.proxy.counters.start();
            let (code, last_seq) = {
                let m = self.client.message(len);
                (m.payload.first().copied().unwrap_or(COM_SLEEP), m.last_seq)
            };
            match code {
                COM_QUIT => {
                    let _ = self.server.write(&self.client.buffered()[..len]).await;
                    return Ok(());
                }
                COM_STMT_CLOSE | COM_STMT_SEND_LONG_DATA => {
                    self.cache.no_reply_command(&self.client.message(len).payload, &self.login);
                    self.forward(len, last_seq).await?;
                    continue;
                }
                COM_CHANGE_USER => {
                    let new = match Command::parse(&self.client.message(len).payload, self.login.caps) {
                        Ok(Command::ChangeUser(c)) => Some((c.user.to_vec(), c.database.to_vec(), c.charset)),
                        _ => None,
                    };
                    self.forward(len, last_seq).await?;
                    match handshake::relay_auth(&mut self.client, &mut self.server, 0).await {
                        Ok(Some(status)) => self.change_user(new, status),
                        Ok(None) => {}
                        Err(e) => return Err(e),
                    }
                    continue;
                }
                COM_BINLOG_DUMP
                | COM_BINLOG_DUMP_GTID
                | COM_REGISTER_SLAVE
                | COM_TABLE_DUMP
                | COM_CONNECT_OUT
                | COM_DAEMON
                | COM_CLONE
                | COM_STMT_BULK_EXECUTE
                | COM_SLEEP
                | COM_CONNECT
                | COM_TIME
                | COM_DELAYED_INSERT => {
                    self.client.consume(len);
                    let msg = format!("Command {code:#04x} is not supported by sqlcached's MySQL proxy");
                    let err = errors::err41(last_seq.wrapping_add(1), errors::UNKNOWN_COMMAND, b"08S01", &msg);
                    self.client.write(&err).await.map_err(RelayError::Client)?;
                    continue;
                }
                _ => {}
            }
            let expect = match code {
                COM_QUERY | COM_STMT_EXECUTE | COM_PROCESS_INFO => Expect::Results,
                COM_STMT_PREPARE => Expect::Prepare,
                COM_FIELD_LIST => Expect::FieldList,
                COM_STMT_FETCH => Expect::Rows,
                _ => Expect::Single,
            };
            let cached = expect == Expect::Results
                || code == COM_INIT_DB
                || code == COM_STMT_PREPARE
                || code == COM_RESET_CONNECTION;
            if cached && self.cache.enabled() && self.through_cache(len, code, last_seq, started).await? {
                continue;
            }
            self.forward(len, last_seq).await?;
            let mut reply = Reply::new(expect, self.login.caps);
            let learning = self.cache.learning();
            let mut copy = Vec::new();
            let sink = if learning { Sink::Copy(&mut copy) } else { Sink::Stream };
            let cache = &mut self.cache;
            let mut end = |r: &Reply| cache.after_reply(r, code);
            relay_reply(&mut self.server, &mut self.client, &mut reply, sink, last_seq, &self.proxy.backend, &mut end)
                .await?;
            if learning {
                self.cache.learn(&copy);
            }
            if matches!(code, COM_QUERY | COM_STMT_EXECUTE) {
                self.proxy.counters.served(started, Served::Passthrough);
            }
        }
    }

    /// Runs command `code` (`len` buffered bytes, last sequence id `seq`, begun at
    /// `started`) as the query cache decides; false if it is to be forwarded as usual.
    async fn through_cache(
        &mut self,
        len: usize,
        code: u8,
        seq: u8,
        started: Option<std::time::Instant>,
    ) -> Result<bool, RelayError> {
        let local = {
            let msg = self.client.message(len);
            self.cache.local_txn(&self.client.buffered()[..len], &msg.payload, code, seq)
        };
        if let Some((bytes, how)) = local {
            let c = &self.proxy.counters;
            match how {
                Local::Begin => c.begins_deferred.fetch_add(1, Ordering::Relaxed),
                Local::End => c.ends_local.fetch_add(1, Ordering::Relaxed),
                Local::EndSent(packet) => {
                    if let Err(e) = self.server.write(&packet).await {
                        self.client.consume(len);
                        return Err(self.lost(seq, e).await);
                    }
                    self.own_reply_due = true;
                    c.ends_local.fetch_add(1, Ordering::Relaxed)
                }
            };
            // Not timed in mysql_query_duration: neither the cache nor the backend answered it.
            self.answer(len, &bytes).await?;
            return Ok(true);
        }
        let replay = self.cache.replay_first(&self.client.message(len).payload, code);
        if let Some(packet) = replay {
            // The last command was a hit and this one asks about it: the backend runs it first
            // (after the transaction's deferred BEGIN, if there is one).
            if let Some(begin) = self.cache.take_deferred() {
                self.send_begin(&begin, seq).await?;
            }
            self.server.write(&packet).await.map_err(RelayError::Backend)?;
            drain_reply(&mut self.server, &mut Reply::new(Expect::Results, self.login.caps)).await?;
        }
        let decision = {
            let msg = self.client.message(len);
            self.cache.decide(&self.client.buffered()[..len], &msg.payload, code, seq, self.login.caps)
        };
        match decision {
            Decision::Forward => return Ok(false),
            Decision::Answer(bytes) => self.answer(len, &bytes).await?,
            Decision::Fill(fill) => {
                let t0 = std::time::Instant::now();
                self.forward(len, seq).await?;
                let mut reply = Reply::new(Expect::Results, self.login.caps);
                let mut copy = Vec::new();
                let cache = &mut self.cache;
                let mut end = |r: &Reply| cache.after_reply(r, code);
                let (server, client, backend) = (&mut self.server, &mut self.client, &self.proxy.backend);
                // A failed relay drops the fill unfinished, which wakes its followers.
                relay_reply(server, client, &mut reply, Sink::Copy(&mut copy), seq, backend, &mut end).await?;
                self.cache.filled(fill, &reply, &copy, t0.elapsed().as_micros() as u64);
                self.proxy.counters.served(started, Served::Miss);
                return Ok(true);
            }
            Decision::Wait(waiter) => match waiter.wait().await {
                Some(shared) => {
                    let bytes = self.cache.served(shared.to_vec(), &self.client.buffered()[..len], code);
                    self.answer(len, &bytes).await?;
                }
                None => return Ok(false), // the leader's query failed: ask the backend
            },
            Decision::Reset => {
                self.forward(len, seq).await?;
                let mut reply = Reply::new(Expect::Single, self.login.caps);
                let (cache, login) = (&mut self.cache, &self.login);
                let mut end = |r: &Reply| {
                    if !r.error {
                        cache.after_reset(login);
                    }
                };
                let (server, client, backend) = (&mut self.server, &mut self.client, &self.proxy.backend);
                relay_reply(server, client, &mut reply, Sink::Stream, seq, backend, &mut end).await?;
                return Ok(true);
            }
        }
        self.proxy.counters.served(started, Served::Hit);
        Ok(true)
    }

    /// Answers the buffered command (`len` bytes) with `bytes` from the cache.
    async fn answer(&mut self, len: usize, bytes: &[u8]) -> Result<(), RelayError> {
        self.client.consume(len);
        self.client.write(bytes).await.map_err(RelayError::Client)
    }

    /// Sends the client's buffered message of `len` bytes (last sequence id `seq`) to the
    /// backend, consumed; if the backend is gone the client gets an ERR. A deferred `BEGIN`
    /// (see `cache/txn.rs`) goes first: in the same write if the message is a cacheable
    /// read, else on its own, its OK awaited.
    pub async fn forward(&mut self, len: usize, seq: u8) -> Result<(), RelayError> {
        self.cache.forwarded();
        let begin = self.cache.take_deferred();
        let pipelined = begin.is_some() && self.cache.planned_read();
        if let (Some(b), false) = (&begin, pipelined) {
            self.send_begin(b, seq).await?;
        }
        let rewrite = self.cache.take_rewrite();
        let body = rewrite.as_deref().unwrap_or(&self.client.buffered()[..len]);
        let r = match (&begin, pipelined) {
            (Some(b), true) => self.server.write(&[b.as_slice(), body].concat()).await,
            _ => self.server.write(body).await,
        };
        self.client.consume(len);
        if let Err(e) = r {
            return Err(self.lost(seq, e).await);
        }
        if pipelined {
            self.own_reply(seq).await?;
        }
        Ok(())
    }

    /// The backend connection failed while sending a command (last sequence id `seq`): the
    /// client gets an ERR.
    async fn lost(&mut self, seq: u8, e: std::io::Error) -> RelayError {
        let msg = format!("Lost connection to MySQL backend {} ({e})", self.proxy.backend);
        let _ = self.client.write(&errors::err41(seq.wrapping_add(1), errors::BACKEND_LOST, b"08S01", &msg)).await;
        RelayError::Backend(e)
    }

    /// Sends a deferred `BEGIN` (`packet`) and reads its reply, for the client's command
    /// with last sequence id `seq`.
    async fn send_begin(&mut self, packet: &[u8], seq: u8) -> Result<(), RelayError> {
        if let Err(e) = self.server.write(packet).await {
            return Err(self.lost(seq, e).await);
        }
        self.own_reply(seq).await
    }

    /// Reads the reply to a statement the proxy answered itself before the backend did (a
    /// deferred `BEGIN`, a read-only transaction's `COMMIT`). The client was told it
    /// succeeded; should the backend refuse it, the client's command (last sequence id
    /// `seq`) gets its ERR and the connection closes, as its transaction state is no longer
    /// what it was told.
    async fn own_reply(&mut self, seq: u8) -> Result<(), RelayError> {
        let (payload, used) = loop {
            match protocol_mysql::parse_packet(self.server.buffered()) {
                Ok(Some((p, used))) => break (p.payload.to_vec(), used),
                Ok(None) => {
                    if let Err(e) = self.server.fill().await {
                        return Err(self.lost(seq, e).await);
                    }
                }
                Err(_) => {
                    let e = std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        "malformed reply to a transaction statement",
                    );
                    return Err(self.lost(seq, e).await);
                }
            }
        };
        self.server.consume(used);
        if payload.first() == Some(&0) {
            return Ok(());
        }
        let mut err = Vec::with_capacity(payload.len() + 4);
        protocol_mysql::write_packet(&mut err, seq.wrapping_add(1), &payload);
        let _ = self.client.write(&err).await;
        let why = String::from_utf8_lossy(payload.get(9..).unwrap_or_default()).into_owned();
        Err(RelayError::Backend(std::io::Error::other(format!(
            "the backend refused a statement answered early: {why}"
        ))))
    }

    /// After a successful COM_CHANGE_USER: a new session (user, database, charset).
    fn change_user(&mut self, new: Option<(Vec<u8>, Vec<u8>, Option<u16>)>, status: u16) {
        self.login.status = status;
        if let Some((user, db, charset)) = new {
            self.login.user = user;
            self.login.db = (!db.is_empty()).then_some(db);
            if let Some(cs) = charset {
                self.login.charset = cs as u8;
            }
        }
        self.cache.reset(&self.proxy, &self.login);
    }
}

/// Resolves once the proxy is stopping (never, if its sender is gone).
async fn stopped(rx: &mut tokio::sync::watch::Receiver<bool>) {
    while !*rx.borrow_and_update() {
        if rx.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}
