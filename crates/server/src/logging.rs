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
    "pg_proxy",
    "source_postgres",
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

/// Route panic reports through the log: one line (one JSON object with `--log-format json`)
/// naming the thread, the message and where, instead of Rust's default multi-line text that
/// a log pipeline cannot parse. A panic in a connection's task or in the binlog follower is
/// caught and survived; this makes its report look like the rest of the log. A backtrace
/// follows when `RUST_BACKTRACE` asks for one, as with the default hook.
pub fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| log::error!(target: "sqlcached", "{}", panic_report(info))));
}

/// The text of a panic's log line: `panic in thread 'NAME' at FILE:LINE:COL: MESSAGE`.
fn panic_report(info: &std::panic::PanicHookInfo<'_>) -> String {
    let thread = std::thread::current();
    let name = thread.name().unwrap_or("<unnamed>");
    let msg = info.payload_as_str().unwrap_or("(a non-text panic payload)");
    let at = info.location().map_or_else(|| "an unknown place".to_string(), |l| l.to_string());
    let mut line = format!("panic in thread '{name}' at {at}: {msg}");
    let bt = std::backtrace::Backtrace::capture();
    if bt.status() == std::backtrace::BacktraceStatus::Captured {
        line.push_str(&format!("\nbacktrace:\n{bt}"));
    }
    line
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
    use super::{panic_report, rfc3339};
    use std::sync::Mutex;

    #[test]
    fn a_panic_report_names_thread_place_and_message() {
        static SEEN: Mutex<Vec<String>> = Mutex::new(Vec::new());
        let old = std::panic::take_hook();
        std::panic::set_hook(Box::new(|info| SEEN.lock().unwrap().push(panic_report(info))));
        let t = std::thread::Builder::new().name("reporter-test".into()).spawn(|| panic!("boom {}", 42));
        let joined = t.unwrap().join();
        std::panic::set_hook(old);
        assert!(joined.is_err());
        let seen = SEEN.lock().unwrap();
        let line = seen.iter().find(|l| l.contains("reporter-test")).expect("the hook saw the panic");
        assert!(line.starts_with("panic in thread 'reporter-test' at crates/server/src/logging.rs:"), "{line}");
        assert!(line.contains(": boom 42"), "{line}");
    }

    #[test]
    fn timestamps() {
        assert_eq!(rfc3339(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(951_782_400, 5), "2000-02-29T00:00:00.005Z");
        assert_eq!(rfc3339(1_795_563_001, 123), "2026-11-24T23:30:01.123Z");
    }
}
