//! Log lines on stderr, through the `log` facade (so the libraries' own warnings come out
//! the same way).
//!
//! - Default: one line per lifecycle event (listening, data dir opened, binlog connected /
//!   lost and why, backend unreachable, query cache online / offline, shutting down),
//!   every warning and error. Quiet while nothing changes.
//! - `-v`: per-connection detail (a client's backend connection lost, accept errors);
//!   `-vv`: also every command (memcached's `<fd cmd` lines, printed by the text front end).
//! - `--log-format json`: one JSON object per line (`ts`, `level`, `target`, `msg`).
//!
//! Libraries (mysql_async, fjall, ...) are shown from warnings up at `-v`, errors only by
//! default: their messages repeat what our own lines already say.

use std::io::Write;
use std::time::{SystemTime, UNIX_EPOCH};

use log::{Level, LevelFilter, Log, Metadata, Record};

use config::LogFormat;

struct Logger {
    ours: LevelFilter,
    theirs: LevelFilter,
    format: LogFormat,
}

/// Our crates' log targets start with one of these.
const OURS: &[&str] = &[
    "sqlcached",
    "mysql_proxy",
    "config",
    "binlog",
    "tier_disk",
    "sql_containers",
    "querycache",
    "engine",
    "protocol_",
];

impl Log for Logger {
    fn enabled(&self, m: &Metadata<'_>) -> bool {
        let max = if OURS.iter().any(|p| m.target().starts_with(p)) { self.ours } else { self.theirs };
        m.level() <= max
    }

    fn log(&self, r: &Record<'_>) {
        if !self.enabled(r.metadata()) {
            return;
        }
        let line = match self.format {
            LogFormat::Text => match r.level() {
                Level::Error => format!("sqlcached: error: {}\n", r.args()),
                Level::Warn => format!("sqlcached: warning: {}\n", r.args()),
                _ => format!("sqlcached: {}\n", r.args()),
            },
            LogFormat::Json => {
                let v = serde_json::json!({
                    "ts": rfc3339_now(),
                    "level": r.level().as_str(),
                    "target": r.target(),
                    "msg": r.args().to_string(),
                });
                format!("{v}\n")
            }
        };
        // One write per line, so lines from several threads never interleave.
        let _ = std::io::stderr().lock().write_all(line.as_bytes());
    }

    fn flush(&self) {}
}

/// Install the logger for `-v` count `verbose`; call once, before anything logs.
pub fn init(verbose: u32, format: LogFormat) {
    let (ours, theirs) = match verbose {
        0 => (LevelFilter::Info, LevelFilter::Error),
        1 => (LevelFilter::Debug, LevelFilter::Warn),
        _ => (LevelFilter::Trace, LevelFilter::Warn),
    };
    if log::set_boxed_logger(Box::new(Logger { ours, theirs, format })).is_ok() {
        log::set_max_level(ours.max(theirs));
    }
}

/// The current UTC time as RFC 3339 with milliseconds.
fn rfc3339_now() -> String {
    let d = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    rfc3339(d.as_secs() as i64, d.subsec_millis())
}

/// Unix seconds + milliseconds as `YYYY-MM-DDTHH:MM:SS.mmmZ` (civil-from-days, Howard Hinnant).
fn rfc3339(secs: i64, millis: u32) -> String {
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

#[cfg(test)]
mod tests {
    use super::rfc3339;

    #[test]
    fn timestamps() {
        assert_eq!(rfc3339(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(951_782_400, 5), "2000-02-29T00:00:00.005Z");
        assert_eq!(rfc3339(1_795_563_001, 123), "2026-11-24T23:30:01.123Z");
    }
}
