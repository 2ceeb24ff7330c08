//! Shared helpers of the PostgreSQL tests: the server from SQLCACHED_POSTGRES (a
//! `postgres://` URL of a superuser, as scripts/postgres.sh prints), unique names, an
//! admin session, and an owned view of pgoutput transactions.
#![allow(dead_code)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use protocol_postgres::replication::pgoutput::{Column, LogicalMessage, OldTuple, ReplicaIdentity, TupleData};
use source_postgres::replication::{Event, ReplicationStream};
use source_postgres::{Config, Connection, Error, Lsn};

/// The server's URL, or `None` (the test is skipped, passing).
pub fn server_url() -> Option<String> {
    std::env::var("SQLCACHED_POSTGRES").ok().filter(|v| !v.is_empty())
}

/// Returns from the test when no server is configured.
#[macro_export]
macro_rules! need_server {
    () => {
        match common::server_url() {
            Some(u) => u,
            None => {
                eprintln!("SQLCACHED_POSTGRES not set: PostgreSQL test skipped");
                return;
            }
        }
    };
}

/// The URL with extra query parameters (`sslmode=require`, ...).
pub fn with_params(url: &str, params: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    if params.is_empty() {
        url.to_string()
    } else {
        format!("{url}{sep}{params}")
    }
}

/// The URL's config with `params` added.
pub fn config(url: &str, params: &str) -> Config {
    Config::from_url(&with_params(url, params)).expect("test URL parses")
}

/// The URL with its user and password replaced.
pub fn as_user(url: &str, user: &str, password: &str) -> String {
    let rest = url.split_once('@').expect("URL has user@").1;
    format!("postgres://{user}:{password}@{rest}")
}

/// A name no other test (or earlier run) uses.
pub fn unique(prefix: &str) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    format!("{prefix}_{}_{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed))
}

/// A plain (non-replication) superuser session.
pub async fn admin(url: &str) -> Connection {
    Connection::connect(&config(url, ""), false).await.expect("admin connection")
}

/// Runs SQL as the admin, panicking with the server's message on error.
pub async fn sql(admin: &mut Connection, statements: &str) {
    if let Err(e) = admin.simple_query(statements).await {
        panic!("{statements}: {e}");
    }
}

/// A column value, owned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Val {
    Null,
    Unchanged,
    Text(String),
    Binary(Vec<u8>),
}

/// `t("x")`.
pub fn t(s: &str) -> Val {
    Val::Text(s.to_string())
}

fn vals(tuple: &TupleData<'_>) -> Vec<Val> {
    tuple
        .columns
        .iter()
        .map(|c| match c {
            Column::Null => Val::Null,
            Column::UnchangedToast => Val::Unchanged,
            Column::Text(v) => Val::Text(String::from_utf8_lossy(v).into_owned()),
            Column::Binary(v) => Val::Binary(v.to_vec()),
        })
        .collect()
}

fn old(o: &OldTuple<'_>) -> (char, Vec<Val>) {
    match o {
        OldTuple::Key(t) => ('K', vals(t)),
        OldTuple::Full(t) => ('O', vals(t)),
    }
}

/// A pgoutput message, owned and simplified for assertions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Msg {
    Begin,
    Relation { name: String, identity: ReplicaIdentity, keys: Vec<String> },
    Insert { rel: String, new: Vec<Val> },
    Update { rel: String, old: Option<(char, Vec<Val>)>, new: Vec<Val> },
    Delete { rel: String, old: (char, Vec<Val>) },
    Truncate { rels: Vec<String>, cascade: bool, restart: bool },
    Commit,
    Other(char),
}

/// One transaction as received: its messages and its Commit's end LSN.
#[derive(Clone, Debug)]
pub struct Tx {
    pub msgs: Vec<Msg>,
    pub end: Lsn,
}

impl Tx {
    /// The row changes only (no Begin/Commit/Relation).
    pub fn changes(&self) -> Vec<Msg> {
        self.msgs.iter().filter(|m| !matches!(m, Msg::Begin | Msg::Commit | Msg::Relation { .. })).cloned().collect()
    }
}

/// Reads up to the next Commit (skipping keepalives), within 15 s. Relation names are
/// remembered in `rels` (OID → name) to name changes.
pub async fn next_tx(stream: &mut ReplicationStream, rels: &mut Vec<(u32, String)>) -> Result<Tx, Error> {
    let mut msgs = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    loop {
        let ev = tokio::time::timeout_at(deadline, stream.recv()).await.expect("a transaction within 15 s")?;
        let Event::Message { message, .. } = ev else { continue };
        let name = |id: u32| rels.iter().find(|(o, _)| *o == id).map(|(_, n)| n.clone()).unwrap_or(id.to_string());
        let m = match &message {
            LogicalMessage::Begin(_) => Msg::Begin,
            LogicalMessage::Relation(r) => {
                rels.retain(|(o, _)| *o != r.id);
                rels.push((r.id, r.name.to_string()));
                Msg::Relation {
                    name: r.name.to_string(),
                    identity: r.replica_identity,
                    keys: r.columns.iter().filter(|c| c.is_key()).map(|c| c.name.to_string()).collect(),
                }
            }
            LogicalMessage::Insert(i) => Msg::Insert { rel: name(i.relation), new: vals(&i.new) },
            LogicalMessage::Update(u) => {
                Msg::Update { rel: name(u.relation), old: u.old.as_ref().map(old), new: vals(&u.new) }
            }
            LogicalMessage::Delete(d) => Msg::Delete { rel: name(d.relation), old: old(&d.old) },
            LogicalMessage::Truncate(tr) => Msg::Truncate {
                rels: tr.relations.iter().map(|r| name(*r)).collect(),
                cascade: tr.cascade(),
                restart: tr.restart_identity(),
            },
            LogicalMessage::Commit(c) => {
                msgs.push(Msg::Commit);
                return Ok(Tx { msgs, end: c.end_lsn });
            }
            other => Msg::Other(other.tag() as char),
        };
        msgs.push(m);
    }
}
