//! How long the memcached front ends take per command, for the metrics endpoint: one
//! latency histogram per protocol (text, meta, binary) and command class (get, set,
//! other), kept per worker thread so workers never share them.
//!
//! Measured from a parsed command to its reply written into the output buffer: the
//! server's own time, without the network or queueing in the socket. Recorded only when
//! `--metrics-listen` is set (reading the clock twice per command is the whole cost), and
//! exported as `sqlcached_memcached_command_duration_seconds{protocol,command}`; the
//! histogram counts double as per-protocol command counters. Container commands are timed
//! by the containers (`sqlcached_container_operation_duration_seconds`).

use std::time::Instant;

use engine::latency::{Histogram, Snapshot};
use engine::stats::{Series, StatSink, Value};

/// Which memcached protocol a command came in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proto {
    /// The text protocol's classic commands.
    Text = 0,
    /// Meta commands (`mg`, `ms`, ...).
    Meta = 1,
    /// The binary protocol.
    Binary = 2,
}

/// What kind of command, for the `command` label.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// Retrievals (`get`, `gets`, `gat`, `mg`, binary GET/GAT).
    Get = 0,
    /// Storage (`set` family, `cas`, `ms`, binary SET family).
    Set = 1,
    /// Everything else (delete, arithmetic, touch, stats, ...).
    Other = 2,
}

const PROTOS: [&str; 3] = ["text", "meta", "binary"];
const CLASSES: [&str; 3] = ["get", "set", "other"];

/// One worker's histograms, by protocol then class.
#[derive(Debug, Default)]
pub struct FrontLatency([[Histogram; 3]; 3]);

impl FrontLatency {
    /// Zero them (`stats reset`).
    pub fn reset(&self) {
        self.0.iter().flatten().for_each(Histogram::reset);
    }
}

/// The start time of a command, if commands are being timed (`timing`).
#[inline]
pub fn start(timing: bool) -> Option<Instant> {
    timing.then(Instant::now)
}

/// Count a command that started at `t` (from [`start`]) in this worker's histograms.
#[inline]
pub fn done(latency: &FrontLatency, t: Option<Instant>, proto: Proto, class: Class) {
    if let Some(t) = t {
        latency.0[proto as usize][class as usize].record_since(t);
    }
}

/// Write the histograms summed over the workers' (series with no observations are left out).
pub fn write<'a>(workers: impl Iterator<Item = &'a FrontLatency> + Clone, sink: &mut dyn StatSink) {
    let mut series = Vec::new();
    for (p, proto) in PROTOS.iter().enumerate() {
        for (c, class) in CLASSES.iter().enumerate() {
            let mut sum = Snapshot::default();
            for w in workers.clone() {
                sum.add(&w.0[p][c]);
            }
            if sum.count() > 0 {
                let labels = vec![("protocol", proto.to_string()), ("command", class.to_string())];
                series.push(Series::new(labels, Value::Histogram(sum)));
            }
        }
    }
    sink.family(
        "memcached_command_duration",
        "Time from a parsed memcached command to its reply, by protocol and command class",
        &series,
    );
}
