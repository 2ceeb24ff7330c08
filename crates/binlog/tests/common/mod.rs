//! A throw-away MariaDB (scripts/mariadb.sh) and a follower whose changes land in a channel.
#![allow(dead_code)]

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::Command;
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

use binlog::{Change, Config, Follower};
use mysql_async::prelude::Queryable;

pub const USER: &str = "sqlcached";
pub const PASSWORD: &str = "sqlcached-test";

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/mariadb.sh")
}

/// Whether Debian's mariadbd is installed (tests skip with a message if not).
pub fn have_mariadb() -> bool {
    let found = ["/usr/sbin/mariadbd", "/usr/bin/mariadbd", "/usr/local/sbin/mariadbd"]
        .iter()
        .any(|p| std::path::Path::new(p).exists());
    if !found {
        eprintln!("SKIP: mariadbd is not installed (apt-get install mariadb-server)");
    }
    found
}

/// One MariaDB server in a temp dir; stopped on drop.
pub struct MariaDb {
    pub dir: tempfile::TempDir,
    pub port: u16,
}

impl MariaDb {
    /// Starts a server (binlog ROW, binlog_row_metadata=FULL, server-id 1).
    pub fn start() -> MariaDb {
        let dir = tempfile::tempdir().unwrap();
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let db = MariaDb { dir, port };
        db.up();
        db
    }

    /// Starts (again) on the same datadir and port.
    pub fn up(&self) {
        let out = Command::new("bash")
            .arg(script())
            .arg("start")
            .arg(self.dir.path())
            .arg(self.port.to_string())
            .output()
            .unwrap();
        assert!(out.status.success(), "mariadb.sh start: {}", String::from_utf8_lossy(&out.stderr));
    }

    /// Clean shutdown.
    pub fn down(&self) {
        let out = Command::new("bash").arg(script()).arg("stop").arg(self.dir.path()).output().unwrap();
        assert!(out.status.success(), "mariadb.sh stop: {}", String::from_utf8_lossy(&out.stderr));
    }

    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    pub fn opts(&self) -> mysql_async::Opts {
        mysql_async::OptsBuilder::default()
            .ip_or_hostname("127.0.0.1")
            .tcp_port(self.port)
            .user(Some(USER))
            .pass(Some(PASSWORD))
            .prefer_socket(false)
            .into()
    }

    pub fn follow(&self) -> (Follower, Changes) {
        self.follow_through(|_| {})
    }

    /// [`MariaDb::follow`], once the follower says it is connected (within `timeout`).
    pub fn follow_connected(&self, timeout: Duration) -> (Follower, Changes) {
        let (f, ch) = self.follow();
        ch.until(timeout, |c| *c == Change::Connected);
        (f, ch)
    }

    /// [`MariaDb::follow`], calling `first` on every change before it is collected (on the
    /// follower's thread, as a real sink runs).
    pub fn follow_through(&self, first: impl Fn(&Change) + Send + 'static) -> (Follower, Changes) {
        let (tx, rx) = channel();
        let cfg =
            Config { backend: self.addr(), user: USER.into(), password: PASSWORD.into(), server_id: 4242, start: None };
        let f = Follower::spawn(cfg, move |c| {
            first(&c);
            let _ = tx.send((Instant::now(), c));
        });
        (f, Changes { rx })
    }
}

impl Drop for MariaDb {
    fn drop(&mut self) {
        let _ = Command::new("bash").arg(script()).arg("stop").arg(self.dir.path()).output();
    }
}

/// A blocking SQL client (own runtime) for the tests' writes.
pub struct Sql {
    rt: tokio::runtime::Runtime,
    pub conn: mysql_async::Conn,
}

impl Sql {
    pub fn connect(db: &MariaDb) -> Sql {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let conn = rt.block_on(mysql_async::Conn::new(db.opts())).unwrap();
        Sql { rt, conn }
    }

    /// Runs statements separated by `;` (no `;` inside them).
    pub fn run(&mut self, sql: &str) {
        for s in sql.split(';').map(str::trim).filter(|s| !s.is_empty()) {
            self.run_one(s);
        }
    }

    /// Runs one statement as it is (a compound one may hold `;`).
    pub fn run_one(&mut self, s: &str) {
        self.rt.block_on(self.conn.query_drop(s)).unwrap_or_else(|e| panic!("{s}: {e}"));
    }
}

/// The follower's output.
pub struct Changes {
    pub rx: Receiver<(Instant, Change)>,
}

impl Changes {
    /// Collects changes until one satisfies `pred` (returned last); panics after `timeout`.
    pub fn until(&self, timeout: Duration, pred: impl Fn(&Change) -> bool) -> Vec<Change> {
        let deadline = Instant::now() + timeout;
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok((_, c)) => {
                    let hit = pred(&c);
                    seen.push(c);
                    if hit {
                        return seen;
                    }
                }
                Err(_) => panic!("timed out; changes so far: {seen:#?}"),
            }
        }
    }

    /// Everything that arrives within `quiet`.
    pub fn drain(&self, quiet: Duration) -> Vec<Change> {
        let mut seen = Vec::new();
        while let Ok((_, c)) = self.rx.recv_timeout(quiet) {
            seen.push(c);
        }
        seen
    }
}

/// Only the data changes (no Connected/Disconnected).
pub fn data(changes: Vec<Change>) -> Vec<Change> {
    changes.into_iter().filter(|c| !matches!(c, Change::Connected | Change::Disconnected { .. })).collect()
}

pub fn is_rows_of(c: &Change, t: &str) -> bool {
    matches!(c, Change::Rows { table, .. } if table == t)
}
