//! The invalidation rules' counters.
//!
//! `stats` lines: `invalidate_rules` (tables with rules), `invalidate_keys` (keys
//! invalidated), `invalidate_hits` (of which an item was there), `invalidate_skipped`
//! (row images that named no key: a NULL or a value that makes no valid key),
//! `invalidate_table_changes` (changes that named no keys), `invalidate_held_sets`
//! (`set`/`add` answered but not kept while a key was held), `invalidate_holds` (holds kept
//! now), `invalidate_holds_dropped` (holds ended early for room), then per rule
//! `invalidate:<db>.<table>:keys`, `:hits`, `:skipped`. The metrics carry the per-rule
//! figures as the family `sqlcached_invalidate_rule_keys_total{rule, outcome}`.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use engine::stats::{Kind, Series, StatSink, Value};

use super::Rules;

/// Counters of one rule (bumped on the binlog thread).
#[derive(Default)]
pub struct RuleCounters {
    keys: AtomicU64,
    hits: AtomicU64,
    skipped: AtomicU64,
}

impl RuleCounters {
    /// One key invalidated (`found`: an item was there).
    pub fn invalidated(&self, found: bool) {
        self.keys.fetch_add(1, Relaxed);
        if found {
            self.hits.fetch_add(1, Relaxed);
        }
    }

    /// One row image that named no key through one template.
    pub fn skipped(&self) {
        self.skipped.fetch_add(1, Relaxed);
    }

    /// (keys, hits, skipped).
    pub fn snapshot(&self) -> (u64, u64, u64) {
        (self.keys.load(Relaxed), self.hits.load(Relaxed), self.skipped.load(Relaxed))
    }

    fn reset(&self) {
        for c in [&self.keys, &self.hits, &self.skipped] {
            c.store(0, Relaxed);
        }
    }
}

/// Counters over every rule.
#[derive(Default)]
pub struct Totals {
    table_changes: AtomicU64,
}

impl Totals {
    /// One change that named no keys.
    pub fn table_change(&self) {
        self.table_changes.fetch_add(1, Relaxed);
    }

    /// Changes that named no keys so far.
    pub fn table_changes(&self) -> u64 {
        self.table_changes.load(Relaxed)
    }
}

impl Rules {
    /// Writes the figures (see the module documentation).
    pub fn write_stats(&self, sink: &mut dyn StatSink) {
        let per: Vec<(String, (u64, u64, u64))> =
            self.rules.iter().map(|r| (r.name(), r.counters.snapshot())).collect();
        let sum = |f: fn(&(u64, u64, u64)) -> u64| per.iter().map(|(_, s)| f(s)).sum::<u64>();
        let items = self.engine.stats().items;
        let (holds, dropped) = self.engine.hold_stats();
        sink.stat("invalidate_rules", Kind::Gauge, &self.rules.len());
        sink.stat("invalidate_keys", Kind::Counter, &sum(|s| s.0));
        sink.stat("invalidate_hits", Kind::Counter, &sum(|s| s.1));
        sink.stat("invalidate_skipped", Kind::Counter, &sum(|s| s.2));
        sink.stat("invalidate_table_changes", Kind::Counter, &self.totals.table_changes());
        sink.stat("invalidate_held_sets", Kind::Counter, &items.held_stores);
        sink.stat("invalidate_holds", Kind::Gauge, &holds);
        sink.stat("invalidate_holds_dropped", Kind::Counter, &dropped);
        if sink.wants_families() {
            let mut series = Vec::new();
            for (name, (keys, hits, skipped)) in &per {
                let l = |o: &str| vec![("rule", name.clone()), ("outcome", o.to_string())];
                series.push(Series::new(l("hit"), Value::Counter(*hits)));
                series.push(Series::new(l("miss"), Value::Counter(keys - hits)));
                series.push(Series::new(l("skipped"), Value::Counter(*skipped)));
            }
            sink.family("invalidate_rule_keys", "Keys named by --invalidate rules, by rule and outcome", &series);
        } else {
            for (name, (keys, hits, skipped)) in &per {
                sink.stat(&format!("invalidate:{name}:keys"), Kind::Counter, keys);
                sink.stat(&format!("invalidate:{name}:hits"), Kind::Counter, hits);
                sink.stat(&format!("invalidate:{name}:skipped"), Kind::Counter, skipped);
            }
        }
    }

    /// The status page's view: whether the binlog flows to the rules, and per table its key
    /// templates and counters.
    pub fn status(&self) -> serde_json::Value {
        let rules: Vec<serde_json::Value> = self
            .rules
            .iter()
            .map(|r| {
                let (keys, hits, skipped) = r.counters.snapshot();
                let templates: Vec<String> = r.templates.iter().map(|t| t.to_string()).collect();
                serde_json::json!({ "table": r.name(), "keys": templates, "invalidated": keys, "hits": hits,
                                    "skipped": skipped })
            })
            .collect();
        serde_json::json!({ "flowing": *self.connected.lock(), "rules": rules })
    }

    /// Zero the per-rule counters (`stats reset`).
    pub fn reset_stats(&self) {
        self.rules.iter().for_each(|r| r.counters.reset());
        self.totals.table_changes.store(0, Relaxed);
    }
}
