//! `GET /` (the live status page) and `GET /stats.json` (what it polls).
//!
//! The page is one HTML file with its script and styles inline, embedded in the binary:
//! it works without internet. Every second it fetches `/stats.json` (every `stats` figure,
//! from the same [`StatSink`] producers as the memcached port and `/metrics`) and draws
//! rates, ratios and the last two minutes as charts on a canvas.

use std::sync::Arc;

use engine::stats::{Kind, StatSink};
use serde_json::{Map, Value};

use crate::shared::Shared;

/// The page.
pub const PAGE: &str = include_str!("status.html");

/// A [`StatSink`] building a JSON object: numbers stay numbers, the rest are strings.
struct JsonSink(Map<String, Value>);

impl StatSink for JsonSink {
    fn stat(&mut self, name: &str, _kind: Kind, value: &dyn std::fmt::Display) {
        let text = value.to_string();
        let v = match text.parse::<u64>() {
            Ok(n) => Value::from(n),
            Err(_) => match text.parse::<f64>() {
                Ok(f) if f.is_finite() => Value::from(f),
                _ => Value::from(text),
            },
        };
        self.0.insert(name.to_string(), v);
    }
}

/// Every `stats` figure as one JSON object, with the MySQL query digest table's top 20
/// statements under `queries` (when the proxy caches).
pub fn json(shared: &Arc<Shared>) -> String {
    let mut sink = JsonSink(Map::new());
    crate::stats::report(b"", shared, &mut sink);
    if let Some(cache) = shared.mysql.as_ref().and_then(|p| p.cache.as_ref()) {
        let rows = cache.digests(20).into_iter().map(|d| {
            serde_json::json!({
                "text": d.text, "count": d.count, "hits": d.hits, "misses": d.misses,
                "not_cached": d.not_cached, "reason": d.reason, "writes": d.writes,
                "backend_us": d.backend_us, "bytes": d.bytes, "invalidations": d.invalidations,
            })
        });
        sink.0.insert("queries".into(), Value::Array(rows.collect()));
    }
    Value::Object(sink.0).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_stay_numbers() {
        let mut s = JsonSink(Map::new());
        s.stat("a", Kind::Counter, &7u64);
        s.stat("b", Kind::Gauge, &"0.25");
        s.stat("c", Kind::Info, &"say \"hi\"");
        let v = Value::Object(s.0).to_string();
        assert_eq!(v, r#"{"a":7,"b":0.25,"c":"say \"hi\""}"#);
    }
}
