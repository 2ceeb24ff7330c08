//! The `report` subcommand: run.sh's TSV to a markdown table (medians), plus shared formatters.

use std::collections::BTreeMap;

use crate::args::{die, Args};

pub(crate) fn case_title(c: &str) -> String {
    match c {
        "a" => "a: 90/10 get/set".into(),
        "b" => "b: get only".into(),
        "c" => "c: 10-key multiget".into(),
        "d" => "d: pipelined gets (16 in flight)".into(),
        "m" => "m: memcaslap 90/10 (cross-check)".into(),
        other => other.into(),
    }
}

pub(crate) fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

pub(crate) fn thousands(v: f64) -> String {
    if !v.is_finite() {
        return "n/a".into();
    }
    let s = format!("{:.0}", v);
    let (sign, digits) = s.strip_prefix('-').map_or(("", s.as_str()), |d| ("-", d));
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    format!("{sign}{out}")
}

pub(crate) fn fmt_f(v: f64, prec: usize) -> String {
    if v.is_finite() {
        format!("{:.*}", prec, v)
    } else {
        "n/a".into()
    }
}

pub(crate) fn ratio(s: f64, m: f64) -> String {
    if s.is_finite() && m.is_finite() && m > 0.0 {
        format!("**{:.2}**", s / m)
    } else {
        "n/a".into()
    }
}

pub(crate) fn cmd_report(a: &Args) {
    let path = a.str("input", "");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| die(&format!("read {path}: {e}")));
    // case -> server -> list of k=v maps
    let mut runs: BTreeMap<String, BTreeMap<String, Vec<BTreeMap<String, String>>>> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    let mut failed: BTreeMap<(String, String), usize> = BTreeMap::new();
    let mut failures: Vec<String> = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.splitn(4, '\t').collect();
        if f.len() < 4 {
            continue;
        }
        if f[3].starts_with("FAILED") {
            *failed.entry((f[0].to_string(), f[1].to_string())).or_insert(0) += 1;
            let reason: String = f[3].chars().take(300).collect();
            failures.push(format!("- case {} {} rep {}: {}", f[0], f[1], f[2], reason));
            if !order.contains(&f[0].to_string()) {
                order.push(f[0].to_string());
            }
            runs.entry(f[0].into()).or_default().entry(f[1].into()).or_default();
            continue;
        }
        let mut kv: BTreeMap<String, String> = f[3]
            .split_whitespace()
            .filter_map(|t| t.split_once('=').map(|(k, v)| (k.to_string(), v.to_string())))
            .collect();
        kv.insert("rep".into(), f[2].to_string());
        if !order.contains(&f[0].to_string()) {
            order.push(f[0].to_string());
        }
        runs.entry(f[0].into()).or_default().entry(f[1].into()).or_default().push(kv);
    }
    // Servers in the order they first appear (run.sh: memcached first, then sqlcached's front
    // ends, then the floor servers); ratios are to memcached.
    let mut servers: Vec<String> = Vec::new();
    for line in text.lines() {
        if let Some(s) = line.splitn(4, '\t').nth(1) {
            if !servers.iter().any(|x| x == s) {
                servers.push(s.to_string());
            }
        }
    }
    servers.sort_by_key(|s| s != "memcached");
    let med = |rs: &Vec<BTreeMap<String, String>>, k: &str| -> f64 {
        let mut v: Vec<f64> = rs.iter().filter_map(|r| r.get(k)?.parse().ok()).collect();
        median(&mut v)
    };
    let minmax = |rs: &Vec<BTreeMap<String, String>>, k: &str| -> (f64, f64) {
        let v: Vec<f64> = rs.iter().filter_map(|r| r.get(k)?.parse().ok()).collect();
        (v.iter().cloned().fold(f64::INFINITY, f64::min), v.iter().cloned().fold(f64::NEG_INFINITY, f64::max))
    };
    let empty = Vec::new();
    let runs_col = |c: &str, s: &str, n: usize| -> String {
        match failed.get(&(c.to_string(), s.to_string())) {
            Some(f) => format!("{n} (+{f} FAILED)"),
            None => n.to_string(),
        }
    };
    // A run's value of `k`; "cpu_op" is server CPU µs per op.
    let metric = |r: &BTreeMap<String, String>, k: &str| -> Option<f64> {
        if k == "cpu_op" {
            let cpu: f64 = r.get("srv_cpu_s")?.parse().ok()?;
            let ops: f64 = r.get("ops")?.parse().ok()?;
            (ops > 0.0).then(|| cpu * 1e6 / ops)
        } else {
            r.get(k)?.parse().ok()
        }
    };

    let perf_cases: Vec<&String> = order.iter().filter(|c| c.as_str() != "e").collect();
    if !perf_cases.is_empty() {
        println!("| case | server | ops/s (median) | ops/s min–max | p50 µs | p99 µs | p99.9 µs | hit % | errors | server CPU µs/op | loadgen CPU % | runs |");
        println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        for c in perf_cases {
            let by = &runs[c];
            let mut vals = BTreeMap::new();
            for s in servers.iter().filter(|s| by.contains_key(*s)) {
                let rs = by.get(s).unwrap_or(&empty);
                let ops = med(rs, "ops_s");
                let (lo, hi) = minmax(rs, "ops_s");
                let p50 = med(rs, "p50_us");
                let p99 = med(rs, "p99_us");
                let p999 = med(rs, "p999_us");
                let keys: f64 = rs.iter().filter_map(|r| r.get("keys")?.parse::<f64>().ok()).sum();
                let hits: f64 = rs.iter().filter_map(|r| r.get("hits")?.parse::<f64>().ok()).sum();
                let errs: f64 = rs.iter().filter_map(|r| r.get("errors")?.parse::<f64>().ok()).sum::<f64>()
                    + rs.iter().filter_map(|r| r.get("bad")?.parse::<f64>().ok()).sum::<f64>();
                let mut cpu_op: Vec<f64> = rs.iter().filter_map(|r| metric(r, "cpu_op")).collect();
                let cpu_op = median(&mut cpu_op);
                let mut lg: Vec<f64> = rs
                    .iter()
                    .filter_map(|r| {
                        let cpu: f64 = r.get("lg_cpu_s")?.parse().ok()?;
                        let secs: f64 = r.get("lg_secs").or(r.get("secs"))?.parse().ok()?;
                        Some(100.0 * cpu / secs)
                    })
                    .collect();
                let lg = median(&mut lg);
                let hitp = if keys > 0.0 { fmt_f(100.0 * hits / keys, 1) } else { "–".into() };
                println!(
                    "| {} | {} | {} | {}–{} | {} | {} | {} | {} | {} | {} | {} | {} |",
                    case_title(c),
                    s,
                    thousands(ops),
                    thousands(lo),
                    thousands(hi),
                    fmt_f(p50, 1),
                    fmt_f(p99, 1),
                    fmt_f(p999, 1),
                    hitp,
                    errs.max(0.0) as u64,
                    fmt_f(cpu_op, 2),
                    fmt_f(lg, 0),
                    runs_col(c, s, rs.len())
                );
                vals.insert(s.as_str(), (ops, p50, p99, p999, cpu_op));
            }
            let Some(&(mo, m50, m99, m999, mc)) = vals.get("memcached") else { continue };
            for s in servers.iter().filter(|s| *s != "memcached" && vals.contains_key(s.as_str())) {
                let (so, s50, s99, s999, sc) = vals[s.as_str()];
                // Ratios: the median over repetitions of server/memcached within one repetition
                // (the servers of a repetition ran interleaved, so they shared the machine's
                // noise); the ratio of the medians when there are no pairs.
                let pairs = |k: &str| -> Vec<f64> {
                    by.get(s)
                        .unwrap_or(&empty)
                        .iter()
                        .filter_map(|r| {
                            let sv = metric(r, k)?;
                            let m = by.get("memcached")?.iter().find(|m| m.get("rep") == r.get("rep"))?;
                            let mv = metric(m, k)?;
                            (mv > 0.0 && sv.is_finite()).then(|| sv / mv)
                        })
                        .collect()
                };
                let pratio = |k: &str, sv: f64, mv: f64| -> String {
                    let mut p = pairs(k);
                    if p.is_empty() {
                        ratio(sv, mv)
                    } else {
                        format!("**{:.2}**", median(&mut p))
                    }
                };
                let mut paired = pairs("ops_s");
                paired.sort_by(|a, b| a.partial_cmp(b).unwrap());
                let spread = if paired.is_empty() {
                    String::new()
                } else {
                    let list: Vec<String> = paired.iter().map(|r| format!("{r:.2}")).collect();
                    format!("per rep: {}", list.join(" · "))
                };
                println!(
                    "| {} | ratio {}/memcached | {} | {} | {} | {} | {} | | | {} | | |",
                    case_title(c),
                    s,
                    pratio("ops_s", so, mo),
                    spread,
                    pratio("p50_us", s50, m50),
                    pratio("p99_us", s99, m99),
                    pratio("p999_us", s999, m999),
                    pratio("cpu_op", sc, mc)
                );
            }
        }
        println!();
    }

    if let Some(by) = runs.get("e") {
        println!("Capacity (e): distinct keys with 100-byte values set into a fresh server started with `-m 64`,");
        println!("past the first eviction, then every written key read back (`items held` = hits on that scan).");
        println!();
        println!("| server | items held (scan hits, median) | curr_items | items when evictions began | keys written | evictions | failed sets | RSS MiB | runs |");
        println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
        let mut held = BTreeMap::new();
        for s in servers.iter().filter(|s| by.contains_key(*s)) {
            let rs = by.get(s).unwrap_or(&empty);
            let h = med(rs, "scan_hits");
            println!(
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                s,
                thousands(h),
                thousands(med(rs, "curr_items")),
                thousands(med(rs, "items_at_first_evict")),
                thousands(med(rs, "written")),
                thousands(med(rs, "evictions")),
                {
                    // all repetitions, with the wrong values the scan saw
                    let v: Vec<String> = rs
                        .iter()
                        .map(|r| {
                            let e: u64 = r.get("set_errors").and_then(|x| x.parse().ok()).unwrap_or(0);
                            let b: u64 = r.get("scan_bad").and_then(|x| x.parse().ok()).unwrap_or(0);
                            if b > 0 {
                                format!("{e} (+{b} bad values)")
                            } else {
                                e.to_string()
                            }
                        })
                        .collect();
                    v.join(" · ")
                },
                fmt_f(med(rs, "rss_kb") / 1024.0, 1),
                runs_col("e", s, rs.len())
            );
            held.insert(s.as_str(), (h, med(rs, "rss_kb")));
        }
        if let Some(&(mh, mr)) = held.get("memcached") {
            for (s, &(h, r)) in held.iter().filter(|(s, _)| **s != "memcached") {
                println!("| ratio {s}/memcached | {} | | | | | | {} | |", ratio(h, mh), ratio(r, mr));
            }
        }
        println!();
    }
    if !failures.is_empty() {
        println!("Failed measurements (not in the medians):");
        println!();
        for f in &failures {
            println!("{f}");
        }
        println!();
    }
}
