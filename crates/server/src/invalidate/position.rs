//! With `--data-dir`, where the rules' binlog follower is: saved in the data directory, so
//! that a restarted server (warm from disk) first invalidates what changed while it was
//! down instead of starting at the binlog's end.
//!
//! The file `DATA_DIR/binlog-position` holds `file\npos\n`, the follower's last transaction
//! boundary. It is written (temp file, fsync, rename) every second with the boundary seen
//! a second before, so the invalidations up to it have reached the disk tier (which commits
//! at least every `--flush-interval-ms`), and at a clean stop after the disk tier closed. A
//! start after a crash replays at most about two seconds of binlog again: deleting a key
//! twice is harmless.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use binlog::Position;

use sql_source::feeds::Feed;

/// The file's name in the data directory.
pub const FILE: &str = "binlog-position";

/// The saved position of `dir`, if any (a damaged file counts as none, and is said).
pub fn load(dir: &Path) -> Option<Position> {
    let path = dir.join(FILE);
    let text = std::fs::read_to_string(&path).ok()?;
    let mut lines = text.lines();
    match (lines.next(), lines.next().and_then(|p| p.trim().parse().ok())) {
        (Some(file), Some(pos)) if !file.is_empty() => Some(Position { file: file.to_string(), pos }),
        _ => {
            log::warn!("--invalidate: {} is damaged: starting at the binlog's end", path.display());
            None
        }
    }
}

/// Writes `pos` to `dir` atomically.
pub fn save(dir: &Path, pos: &Position) -> std::io::Result<()> {
    let tmp = dir.join(format!("{FILE}.tmp"));
    let mut f = std::fs::File::create(&tmp)?;
    writeln!(f, "{}\n{}", pos.file, pos.pos)?;
    f.sync_all()?;
    std::fs::rename(&tmp, dir.join(FILE))?;
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Saves the feed's position every second until `stop` (or the feed is gone).
pub struct Saver {
    dir: PathBuf,
    feed: Weak<Feed>,
    stop: Arc<AtomicBool>,
}

impl Saver {
    /// Starts the saving thread.
    pub fn start(dir: PathBuf, feed: Weak<Feed>) -> Saver {
        let stop = Arc::new(AtomicBool::new(false));
        let (d, f, s) = (dir.clone(), feed.clone(), stop.clone());
        let spawned = std::thread::Builder::new().name("sqlcached-binlog-pos".into()).spawn(move || {
            let mut seen: Option<Position> = None;
            let mut saved: Option<Position> = None;
            let mut failing = false;
            while !s.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_secs(1));
                let Some(feed) = f.upgrade() else { return };
                // Save what was seen a tick ago: its invalidations are on disk by now.
                if seen.is_some() && seen != saved && !s.load(Ordering::Relaxed) {
                    let p = seen.clone().expect("checked");
                    match save(&d, &p) {
                        Ok(()) => {
                            saved = Some(p);
                            failing = false;
                        }
                        Err(e) if !failing => {
                            failing = true;
                            log::error!("--invalidate: saving the binlog position in {}: {e}", d.display());
                        }
                        Err(_) => {}
                    }
                }
                seen = feed.stats().resume.as_deref().and_then(Position::parse);
            }
        });
        if let Err(e) = spawned {
            log::error!("--invalidate: cannot start the position saver ({e}): a restart starts at the binlog's end");
        }
        Saver { dir, feed, stop }
    }

    /// At a clean stop, after the disk tier closed: saves the position reached and stops.
    pub fn finish(&self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(p) = self.feed.upgrade().and_then(|f| f.stats().resume).as_deref().and_then(Position::parse) {
            if let Err(e) = save(&self.dir, &p) {
                log::error!("--invalidate: saving the binlog position at stop: {e}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_damage() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(load(dir.path()), None);
        let p = Position { file: "binlog.000007".into(), pos: 1234 };
        save(dir.path(), &p).unwrap();
        assert_eq!(load(dir.path()), Some(p));
        std::fs::write(dir.path().join(FILE), "binlog.000007\nnot a number\n").unwrap();
        assert_eq!(load(dir.path()), None);
    }
}
