//! The last two minutes of rates, kept by the admin thread, so that the status page shows
//! real rates and filled charts at its first paint (a page computing rates itself needs
//! two polls, and shows zeros and empty charts until then).
//!
//! Every [`INTERVAL`] the admin thread reads the counters below from the same `stats`
//! report as `/stats.json` and keeps their per-second rates since the previous reading;
//! `/stats.json` carries them as `history` (oldest first, with each reading's unix time
//! in milliseconds for the charts' time axis).

use std::collections::VecDeque;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value};

/// Time between two readings.
pub const INTERVAL: Duration = Duration::from_secs(1);
/// Readings kept: two minutes.
const KEPT: usize = 120;

/// Each series: its name in `history`, and the counters it sums.
const SERIES: &[(&str, &[&str])] = &[
    ("gets", &["cmd_get"]),
    ("sets", &["cmd_set"]),
    ("hits", &["get_hits"]),
    ("misses", &["get_misses"]),
    ("qc_hits", &["Qcache_hits"]),
    ("qc_lookups", &["Qcache_hits", "Qcache_inserts", "Qcache_not_cached"]),
    ("fsyncs", &["disk_fsyncs"]),
    ("invalidated", &["invalidate_keys"]),
    ("container_gets", &["containers_get_keys"]),
    ("pg_queries", &["pg_queries_simple", "pg_queries_extended", "pg_function_calls"]),
    ("pg_qc_hits", &["pg_query_cache_hits"]),
    ("pg_qc_lookups", &["pg_query_cache_hits", "pg_query_cache_misses"]),
];

/// The rates of the last two minutes.
#[derive(Default)]
pub struct History {
    /// The previous reading: when, and each series' counter sum.
    last: Option<(Instant, Vec<u64>)>,
    /// (unix ms, rate per second of each series), oldest first.
    rates: VecDeque<(u64, Vec<f64>)>,
}

impl History {
    /// Take a reading from `stats` (the flat `/stats.json` object).
    pub fn record(&mut self, stats: &Map<String, Value>) {
        let now = Instant::now();
        let sums: Vec<u64> = SERIES.iter().map(|(_, names)| names.iter().map(|n| counter(stats, n)).sum()).collect();
        if let Some((at, prev)) = &self.last {
            let dt = now.duration_since(*at).as_secs_f64();
            if dt > 0.0 {
                // A counter that went down was reset (`stats reset`): no rate for that second.
                let rates = sums.iter().zip(prev).map(|(n, p)| n.saturating_sub(*p) as f64 / dt).collect();
                if self.rates.len() == KEPT {
                    self.rates.pop_front();
                }
                self.rates.push_back((unix_ms(), rates));
            }
        }
        self.last = Some((now, sums));
    }

    /// `{"t": [unix ms...], "gets": [per second...], ...}`, oldest first.
    pub fn json(&self) -> Value {
        let mut out = Map::new();
        out.insert("t".into(), self.rates.iter().map(|(t, _)| Value::from(*t)).collect());
        for (i, (name, _)) in SERIES.iter().enumerate() {
            let v: Vec<Value> = self.rates.iter().map(|(_, r)| Value::from((r[i] * 10.0).round() / 10.0)).collect();
            out.insert((*name).into(), Value::Array(v));
        }
        Value::Object(out)
    }
}

/// A counter of the report, 0 if absent (a feature that is off) or not a number.
fn counter(stats: &Map<String, Value>, name: &str) -> u64 {
    if name == "containers_get_keys" {
        // The sum over containers: `container_<name>_get_keys`.
        return stats
            .iter()
            .filter(|(k, _)| k.starts_with("container_") && k.ends_with("_get_keys"))
            .filter_map(|(_, v)| v.as_u64())
            .sum();
    }
    stats.get(name).and_then(Value::as_u64).unwrap_or(0)
}

fn unix_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_per_second_and_resets() {
        let mut h = History::default();
        let mut s = Map::new();
        s.insert("cmd_get".into(), Value::from(100u64));
        h.record(&s);
        assert_eq!(h.json()["t"].as_array().unwrap().len(), 0, "one reading has no rate yet");
        std::thread::sleep(Duration::from_millis(100));
        s.insert("cmd_get".into(), Value::from(110u64));
        h.record(&s);
        let gets = h.json()["gets"][0].as_f64().unwrap();
        assert!(gets > 0.0 && gets <= 100.0, "{gets}");
        s.insert("cmd_get".into(), Value::from(5u64)); // stats reset
        h.record(&s);
        assert_eq!(h.json()["gets"][1].as_f64(), Some(0.0));
        assert_eq!(h.json()["sets"][1].as_f64(), Some(0.0), "absent counters read 0");
    }

    #[test]
    fn pg_queries_sum_the_fronts_protocols() {
        let mut h = History::default();
        let mut s = Map::new();
        for n in ["pg_queries_simple", "pg_queries_extended", "pg_function_calls"] {
            s.insert(n.into(), Value::from(0u64));
        }
        h.record(&s);
        std::thread::sleep(Duration::from_millis(100));
        for (n, v) in [("pg_queries_simple", 3u64), ("pg_queries_extended", 5), ("pg_function_calls", 2)] {
            s.insert(n.into(), Value::from(v));
        }
        h.record(&s);
        let rate = h.json()["pg_queries"][0].as_f64().unwrap();
        assert!(rate > 10.0 && rate <= 100.0, "10 queries in ~0.1 s: {rate}");
    }
}
