//! The server's change feeds: one follower per database server, shared by every cache that
//! follows it (`sql_source::feeds`), kept apart by the kind of log they read.

use engine::stats::StatSink;
use sql_source::feeds::Feeds;

/// The followers of this process.
pub struct SourceFeeds {
    /// MariaDB/MySQL binlogs (figures `binlog_*`).
    pub binlog: Feeds,
    /// PostgreSQL logical replication slots (figures `wal_*`).
    pub wal: Feeds,
    /// The replica server id this process registers with on MariaDB/MySQL (`--mysql-server-id`).
    pub server_id: u32,
}

impl SourceFeeds {
    /// No follower yet; binlog followers register as `server_id`.
    pub fn new(server_id: u32) -> SourceFeeds {
        SourceFeeds { binlog: Feeds::new("binlog"), wal: Feeds::new("WAL"), server_id }
    }

    /// Every feed's figures (`binlog_*`, then `wal_*`; nothing for a kind with no follower).
    pub fn write_stats(&self, sink: &mut dyn StatSink) {
        self.binlog.write_stats(sink);
        self.wal.write_stats(sink);
    }
}
