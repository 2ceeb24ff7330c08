//! The PostgreSQL front's counters: its lines in `stats` on the memcached port (`pg_*`) and
//! its latency histograms for the metrics endpoint.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use engine::latency::Histogram;
use engine::stats::{Kind, Series, StatSink, Value};

/// What kind of unit of work a reply answered (one per ReadyForQuery).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// A simple Query ('Q').
    Simple = 0,
    /// An extended-protocol batch up to its Sync.
    Extended = 1,
    /// A FunctionCall ('F').
    Function = 2,
}

const UNITS: [&str; 3] = ["simple", "extended", "function"];

/// Counters of the PostgreSQL front.
#[derive(Default)]
pub struct Counters {
    /// Current client connections.
    pub connections: AtomicU64,
    /// Client connections accepted since start.
    pub connections_total: AtomicU64,
    /// Connections refused with 53300 (`--pg-max-connections` reached).
    pub connections_refused: AtomicU64,
    /// Logins the backend accepted.
    pub logins_ok: AtomicU64,
    /// Logins the backend refused (wrong password, unknown role or database, pg_hba).
    pub logins_failed: AtomicU64,
    /// Logins not completed on the client's side: it left, stalled past
    /// `--pg-login-timeout`, or sent a packet the server would refuse.
    pub logins_aborted: AtomicU64,
    /// Backend connections that could not be opened (unreachable, TLS) or broke.
    pub backend_errors: AtomicU64,
    /// Backend connections whose TLS could not be set up as `--pg-backend-sslmode` demands.
    pub backend_ssl_errors: AtomicU64,
    /// Clients' SSLRequests answered `S`.
    pub ssl_accepts: AtomicU64,
    /// ... whose TLS handshake then failed.
    pub ssl_handshake_errors: AtomicU64,
    /// Simple Query messages.
    pub queries_simple: AtomicU64,
    /// Execute messages (the extended protocol).
    pub queries_extended: AtomicU64,
    /// Parse messages (statements prepared, named or unnamed).
    pub parses: AtomicU64,
    /// FunctionCall messages.
    pub function_calls: AtomicU64,
    /// COPY ... FROM STDIN started (CopyInResponse).
    pub copy_in: AtomicU64,
    /// COPY ... TO STDOUT started (CopyOutResponse).
    pub copy_out: AtomicU64,
    /// NotificationResponses relayed (LISTEN/NOTIFY).
    pub notifications: AtomicU64,
    /// CancelRequests received.
    pub cancel_requests: AtomicU64,
    /// ... whose key was a live session's and that were sent to the backend.
    pub cancels_forwarded: AtomicU64,
    /// Bytes read from clients after their login.
    pub bytes_from_clients: AtomicU64,
    /// Bytes written to clients after their login.
    pub bytes_to_clients: AtomicU64,
    /// Whether units are timed (`--metrics-listen`).
    pub timing: bool,
    latency: [Histogram; 3],
}

impl Counters {
    /// Counters; replies are timed when `timing`.
    pub fn new(timing: bool) -> Counters {
        Counters { timing, ..Counters::default() }
    }

    /// The start time of a unit of work, if timed.
    #[inline]
    pub fn start(&self) -> Option<Instant> {
        self.timing.then(Instant::now)
    }

    /// Records a unit that started at `t`: from the read that brought its first message to
    /// the write of its ReadyForQuery.
    #[inline]
    pub fn served(&self, t: Option<Instant>, unit: Unit) {
        if let Some(t) = t {
            self.latency[unit as usize].record_since(t);
        }
    }

    /// Zeroes the histograms (`stats reset`).
    pub fn reset(&self) {
        self.latency.iter().for_each(Histogram::reset);
    }

    /// Writes the front's figures.
    pub fn write(&self, sink: &mut dyn StatSink) {
        let n = |c: &AtomicU64| c.load(Ordering::Relaxed);
        sink.stat("pg_connections", Kind::Gauge, &n(&self.connections));
        for (name, c) in [
            ("pg_connections_total", &self.connections_total),
            ("pg_connections_refused", &self.connections_refused),
            ("pg_logins_ok", &self.logins_ok),
            ("pg_logins_failed", &self.logins_failed),
            ("pg_logins_aborted", &self.logins_aborted),
            ("pg_backend_errors", &self.backend_errors),
            ("pg_backend_ssl_errors", &self.backend_ssl_errors),
            ("pg_ssl_accepts", &self.ssl_accepts),
            ("pg_ssl_handshake_errors", &self.ssl_handshake_errors),
            ("pg_queries_simple", &self.queries_simple),
            ("pg_queries_extended", &self.queries_extended),
            ("pg_parses", &self.parses),
            ("pg_function_calls", &self.function_calls),
            ("pg_copy_in", &self.copy_in),
            ("pg_copy_out", &self.copy_out),
            ("pg_notifications", &self.notifications),
            ("pg_cancel_requests", &self.cancel_requests),
            ("pg_cancels_forwarded", &self.cancels_forwarded),
            ("pg_bytes_from_clients", &self.bytes_from_clients),
            ("pg_bytes_to_clients", &self.bytes_to_clients),
        ] {
            sink.stat(name, Kind::Counter, &n(c));
        }
        let series: Vec<Series> = UNITS
            .iter()
            .zip(&self.latency)
            .map(|(kind, h)| Series::new(vec![("protocol", kind.to_string())], Value::Histogram(h.snapshot())))
            .filter(|s| matches!(&s.value, Value::Histogram(h) if h.count() > 0))
            .collect();
        sink.family(
            "pg_query_duration",
            "PostgreSQL front: time from a unit of work's first message (a Query, an extended batch, a \
             FunctionCall) to its ReadyForQuery, by protocol",
            &series,
        );
    }
}
