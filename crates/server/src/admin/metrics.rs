//! `GET /metrics`: the `stats` figures as OpenMetrics, encoded by prometheus-client.
//!
//! Names are `sqlcached_` + memcached's stat name in lower case (`cmd_get` →
//! `sqlcached_cmd_get_total`, a counter; `curr_items` → `sqlcached_curr_items`, a
//! gauge; times get `_seconds`), typed by the [`Kind`] each producer gives. Settings and labels (`Kind::Info`)
//! are not metrics, except the version, as `sqlcached_build_info{version=...} 1`.

use std::fmt::Display;
use std::sync::Arc;

use engine::latency::BOUNDS;
use engine::stats::{Kind, Series, StatSink, Value};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric, NoLabelSet};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};

use crate::shared::Shared;

/// What `GET /metrics` answers with.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// A registry whose one collector reads every figure at scrape time.
pub fn registry(shared: Arc<Shared>) -> Registry {
    let mut r = Registry::default();
    r.register_collector(Box::new(Stats(shared)));
    r
}

/// Encode the registry.
pub fn render(r: &Registry) -> Result<String, std::fmt::Error> {
    let mut body = String::with_capacity(16 * 1024);
    prometheus_client::encoding::text::encode(&mut body, r)?;
    Ok(body)
}

struct Stats(Arc<Shared>);

impl std::fmt::Debug for Stats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("sqlcached stats")
    }
}

impl Collector for Stats {
    fn encode(&self, encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let mut sink = Sink { encoder, result: Ok(()), name: String::new() };
        crate::stats::report(b"", &self.0, &mut sink);
        sink.result
    }
}

/// A [`StatSink`] that encodes each figure as a metric; keeps the first error.
struct Sink<'a> {
    encoder: DescriptorEncoder<'a>,
    result: Result<(), std::fmt::Error>,
    name: String,
}

impl Sink<'_> {
    /// One metric named `self.name` (already built from the stat's `name`).
    fn metric(&mut self, name: &str, m: impl EncodeMetric) -> Result<(), std::fmt::Error> {
        let help = format!("memcached stats: {name}");
        m.encode(self.encoder.encode_descriptor(&self.name, &help, unit_of(name), m.metric_type())?)
    }

    fn encode(&mut self, name: &str, kind: Kind, value: &dyn Display) -> Result<(), std::fmt::Error> {
        let text = value.to_string();
        self.name.clear();
        self.name.push_str("sqlcached_");
        for ch in name.chars() {
            self.name.push(if ch.is_ascii_alphanumeric() { ch.to_ascii_lowercase() } else { '_' });
        }
        match kind {
            Kind::Info if name == "sqlcached_version" => {
                let labels = [("version", text.as_str())];
                let g = ConstGauge::new(1i64);
                let mut e =
                    self.encoder.encode_descriptor("sqlcached_build", "Build information", None, g.metric_type())?;
                g.encode(e.encode_family(&labels)?)
            }
            Kind::Info => Ok(()),
            Kind::Counter => match (text.parse::<u64>(), text.parse::<f64>()) {
                (Ok(n), _) => self.metric(name, ConstCounter::new(n)),
                (_, Ok(f)) => self.metric(name, ConstCounter::new(f)),
                _ => Ok(()),
            },
            Kind::Gauge => match (text.parse::<i64>(), text.parse::<f64>()) {
                (Ok(n), _) => self.metric(name, ConstGauge::new(n)),
                (_, Ok(f)) => self.metric(name, ConstGauge::new(f)),
                _ => Ok(()),
            },
        }
    }
}

/// The unit of the figures that are times (memcached's seconds); the byte counts already
/// say `bytes` in their names.
fn unit_of(name: &str) -> Option<&'static Unit> {
    matches!(name, "uptime" | "time" | "rusage_user" | "rusage_system").then_some(&Unit::Seconds)
}

impl StatSink for Sink<'_> {
    fn stat(&mut self, name: &str, kind: Kind, value: &dyn Display) {
        if self.result.is_ok() {
            self.result = self.encode(name, kind, value);
        }
    }

    fn family(&mut self, name: &str, help: &str, series: &[Series]) {
        if self.result.is_ok() {
            self.result = self.encode_family(name, help, series);
        }
    }

    fn wants_families(&self) -> bool {
        true
    }
}

impl Sink<'_> {
    /// A labeled family: `sqlcached_<name>` (+ `_seconds` for histograms, `_total` for
    /// counters, which the encoder adds), one sample (or bucket row) per series.
    fn encode_family(&mut self, name: &str, help: &str, series: &[Series]) -> Result<(), std::fmt::Error> {
        let Some(first) = series.first() else { return Ok(()) };
        let (metric_type, unit) = match first.value {
            Value::Counter(_) | Value::CounterFloat(_) => (MetricType::Counter, None),
            Value::Gauge(_) => (MetricType::Gauge, None),
            Value::Histogram(_) => (MetricType::Histogram, Some(&Unit::Seconds)),
        };
        let full = format!("sqlcached_{name}");
        let mut family = self.encoder.encode_descriptor(&full, help, unit, metric_type)?;
        for s in series {
            let e = family.encode_family(&s.labels)?;
            match &s.value {
                Value::Counter(n) => ConstCounter::new(*n).encode(e)?,
                Value::CounterFloat(f) => ConstCounter::new(*f).encode(e)?,
                Value::Gauge(n) => ConstGauge::new(*n).encode(e)?,
                Value::Histogram(h) => {
                    let mut e = e;
                    let mut buckets: Vec<(f64, u64)> = BOUNDS.iter().copied().zip(h.counts).collect();
                    buckets.push((f64::INFINITY, h.counts[BOUNDS.len()]));
                    e.encode_histogram::<NoLabelSet>(h.sum_seconds(), h.count(), &buckets, None)?
                }
            }
        }
        Ok(())
    }
}
