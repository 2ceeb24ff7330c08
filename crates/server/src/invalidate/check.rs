//! The rules against their sources at start and in `--check-config`: each source's
//! `sql_source::check::Check` logs in and checks what following the rules' tables needs
//! (the account and its replication rights, the log's settings, every table with every
//! column a template names). A wrong rule or account stops the start: keys that are never
//! invalidated would be served stale for good. An unreachable server is said, and checked
//! again every 2 s until it answers.

use std::sync::Arc;
use std::time::Duration;

use sql_source::check::{Check, Verdict, Wanted};

use super::Rule;

/// How long the check may take before the backend counts as unreachable.
const TIMEOUT: Duration = Duration::from_secs(5);
/// How often an unreachable backend is tried again.
const RETRY: Duration = Duration::from_secs(2);

/// At start: wrong rules are an error; an unreachable backend is said, and the check runs
/// again every 2 s (on a thread of its own) until it answers, logging what it finds.
pub fn at_start(source: Arc<dyn Check>, rules: &[&Rule]) -> Result<(), String> {
    let tables = tables(rules);
    match source.check(&tables, TIMEOUT) {
        Verdict::Good { notes } => {
            for n in notes.iter().filter_map(|n| n.strip_prefix("WARNING: ")) {
                log::warn!("--invalidate: {n}");
            }
            Ok(())
        }
        Verdict::Wrong(problems) => Err(format!("--invalidate: {}", problems.join("; "))),
        Verdict::Unreachable(why) => {
            let backend = source.backend();
            log::warn!(
                "--invalidate: {backend} does not answer ({why}): the rules are not checked yet (checked again every \
                 {}s) and apply as soon as its log flows",
                RETRY.as_secs()
            );
            let spawned = std::thread::Builder::new().name("sqlcached-invalidate-check".into()).spawn(move || loop {
                std::thread::sleep(RETRY);
                match source.check(&tables, TIMEOUT) {
                    Verdict::Good { .. } => return log::warn!("--invalidate: {backend} answers; every rule checked"),
                    Verdict::Wrong(p) => {
                        return log::error!("--invalidate: {backend} answers but the rules are wrong: {}", p.join("; "))
                    }
                    Verdict::Unreachable(_) => {}
                }
            });
            if let Err(e) = spawned {
                log::error!("--invalidate: cannot start the check thread: {e}");
            }
            Ok(())
        }
    }
}

/// For `--check-config`: (Some(passed), or None for a warning; what to print) per line.
pub fn for_check_config(source: &dyn Check, rules: &[&Rule]) -> Vec<(Option<bool>, String)> {
    let n = rules.len();
    match source.check(&tables(rules), TIMEOUT) {
        Verdict::Good { notes } => notes
            .into_iter()
            .map(|m| match m.strip_prefix("WARNING: ") {
                Some(w) => (None, format!("--invalidate on {}: {w}", source.backend())),
                None => (Some(true), format!("--invalidate: {n} rule(s) on {}: {m}", source.backend())),
            })
            .collect(),
        Verdict::Wrong(p) => p.into_iter().map(|m| (Some(false), format!("--invalidate: {m}"))).collect(),
        Verdict::Unreachable(why) => {
            vec![(Some(false), format!("--invalidate: {} does not answer: {why}", source.backend()))]
        }
    }
}

/// The table and the columns its templates name, per rule.
fn tables(rules: &[&Rule]) -> Vec<Wanted> {
    rules
        .iter()
        .map(|r| {
            let mut cols: Vec<String> = Vec::new();
            for c in r.templates.iter().flat_map(|t| t.columns()) {
                if !cols.iter().any(|x| x.eq_ignore_ascii_case(c)) {
                    cols.push(c.to_string());
                }
            }
            Wanted { db: r.db.clone(), table: r.table.clone(), columns: cols }
        })
        .collect()
}
