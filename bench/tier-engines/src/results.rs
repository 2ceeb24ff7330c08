//! The results table: samples per metric and engine, printed as markdown medians with ranges.

use std::collections::BTreeMap;

/// Samples per (metric, engine), in the order metrics were first reported.
#[derive(Default)]
pub struct Results {
    // metric -> engine -> samples
    m: BTreeMap<(usize, String), BTreeMap<String, Vec<f64>>>,
    order: Vec<String>,
    /// Free-text lines printed under the table.
    pub notes: Vec<String>,
}

impl Results {
    /// Records one sample and echoes it on stderr.
    pub fn add(&mut self, metric: &str, engine: &str, v: f64) {
        let pos = match self.order.iter().position(|x| x == metric) {
            Some(p) => p,
            None => {
                self.order.push(metric.to_string());
                self.order.len() - 1
            }
        };
        eprintln!("  {engine:8} {metric:55} {v:.1}");
        self.m.entry((pos, metric.to_string())).or_default().entry(engine.to_string()).or_default().push(v);
    }

    /// A markdown table: one row per metric, median [min..max] per engine.
    pub fn table(&self, engines: &[&str]) -> String {
        let mut s = String::from("| metric |");
        for e in engines {
            s += &format!(" {e} (median [min..max]) |");
        }
        s += "\n|---|";
        for _ in engines {
            s += "---:|";
        }
        s += "\n";
        for ((_, metric), per) in &self.m {
            s += &format!("| {metric} |");
            for e in engines {
                match per.get(*e) {
                    Some(v) => {
                        let mut v = v.clone();
                        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
                        let med = v[v.len() / 2];
                        if v.len() > 1 {
                            s += &format!(" **{}** [{}..{}] |", fmt(med), fmt(v[0]), fmt(v[v.len() - 1]));
                        } else {
                            s += &format!(" **{}** |", fmt(med));
                        }
                    }
                    None => s += " – |",
                }
            }
            s += "\n";
        }
        s
    }
}

/// A number for the table: thousands separators from 1000, no decimals from 10.
pub fn fmt(v: f64) -> String {
    if v.abs() >= 1000.0 {
        let i = v.round() as i64;
        let s = i.to_string();
        let mut out = String::new();
        for (n, ch) in s.chars().enumerate() {
            if n > 0 && (s.len() - n).is_multiple_of(3) && ch != '-' {
                out.push(',');
            }
            out.push(ch);
        }
        out
    } else if v.abs() >= 10.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}
