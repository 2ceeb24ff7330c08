//! sqlcached's transparent MySQL query cache: pure logic, no I/O.
//!
//! The proxy (`crates/mysql-proxy`) drives it; `Send + Sync`, share one
//! [`QueryCache`] behind an `Arc`. No global lock on the hit path: a hit is one lexer
//! pass, one memo lookup (sharded), one key hash and one engine shard lock.
//!
//! # API
//! ```text
//! QueryCache::new(Config { size, limit, mode, in_transactions })  CacheType::{On, Demand, Off}
//! cache.session(user, db, charset, capabilities) -> Session   (one per client connection;
//!                                                      capabilities: u64, MariaDB ext. caps in bits 32..)
//! cache.on_query(&mut s, sql) -> Plan                   COM_QUERY
//! cache.prepare(&s, sql) -> Arc<Prepared>               COM_STMT_PREPARE (keep per statement id)
//! cache.on_execute(&mut s, &p, raw_params, &params, allow_cache) -> Plan   COM_STMT_EXECUTE
//! cache.on_init_db(&mut s, db)                          COM_INIT_DB (applied on the OK)
//! cache.on_reply(&mut s, status_flags, ok)              every backend reply (and the auth OK),
//!                                                      before the client sees it
//! cache.on_backend_lost(&mut s)                         backend connection broke
//! cache.lookup(&key) -> Option<Vec<u8>>                 exact reply bytes (seq ids from 1)
//! cache.begin_fill(&key, &tags) -> FillStart            Leader(Fill) | Follower(Waiter)
//! cache.finish_fill(fill, Option<&[u8]>)                None: not cacheable (wakes followers)
//! waiter.wait().await -> Option<Arc<[u8]>>              None: query the backend yourself
//! cache.invalidate(&Invalidation, Source)               binlog changes (and anything else)
//! cache.rows_changed(db, table, columns, rows, value) -> Invalidation   a binlog row event's
//!                                                      images as key values (see docs "Tags")
//! cache.set_online(bool)                                binlog connected / broken; drops all
//! cache.schema() -> &SchemaRegistry                     wanted(), wanted_notify(), set_table(),
//!                                                      forget()
//! cache.stats() -> Stats
//! ```
//! `Plan::Cached { key, tags }`: lookup; on a miss begin_fill, forward, finish_fill
//! (`FillStart::Skip`: the statement is bypassed, forward and store nothing: [`bypass`]).
//! `Plan::Forward { .. }`: forward. `Plan::Write(invs)`: forward; `on_reply` applies
//! `invs` (the proxy need not call `invalidate` for them; doing so is harmless).
//!
//! # Modules
//! - `lexer`: one-pass lexer, digest (literals → `?`) and slots;
//! - `memo`: digest → analysis, bounded; `analyze` / `setstmt` / `ast`: the
//!   analysis (token rules, then `sqlparser` for table references and key predicates);
//! - `funcs`: deterministic / non-deterministic function lists;
//! - [`session`]: per-connection state; `plan`: statement → [`Plan`];
//! - `cache`: entries in an `engine::Engine`, versioned fills, singleflight
//!   ([`flight`]), invalidation; [`bypass`]: statements whose results do not pay back; `index`: the tag index (`ranges`: its integer-key
//!   ranges); `keys`: key values as tags (collations); `reply`: storable replies;
//! - [`schema`]: the schema registry; [`effects`]: triggers, cascades and stored functions
//!   (what a write changes beyond its text); [`stats`]: counters.

#![warn(missing_docs)]

mod analyze;
mod ast;
pub mod bypass;
mod cache;
pub mod config;
/// The statement digest table: one type for every query cache (`sql_source::digests`).
pub use sql_source::digests;
pub mod effects;
pub mod flight;
mod funcs;
mod hash;
mod index;
mod joins;
mod keys;
mod kind;
mod lexer;
mod memo;
mod plan;
mod ranges;
mod reply;
pub mod schema;
mod scopes;
pub mod session;
mod setstmt;
pub mod stats;
pub mod types;
mod values;
mod writes;

pub use bypass::BypassStats;
pub use cache::{Fill, FillStart, QueryCache};
pub use config::{CacheType, Config, InTransactions};
pub use digests::{DigestStats, Outcome};
pub use effects::{Effects, EffectsBuilder, Follow};
pub use flight::Waiter;
pub use plan::Prepared;
pub use schema::{PkColumn, SchemaRegistry, TableInfo};
pub use session::Session;
pub use stats::Stats;
pub use types::{Invalidation, Key, KeyValues, Param, Plan, RowChange, RowTag, Scope, Source, TableName, Tag, Tags};

#[cfg(test)]
fn _assert_send_sync() {
    fn ok<T: Send + Sync>() {}
    ok::<QueryCache>();
    ok::<Session>();
    ok::<Fill>();
}
