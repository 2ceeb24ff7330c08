//! Log files written full of zeros ahead of time, for sync durability.
//!
//! An fdatasync of a file that grew must write the file's inode (its new size) as well
//! as the data: two writes to the device, one after the other, before the flush. An
//! fdatasync of a file whose blocks already hold data writes the data only. In sync
//! mode every acknowledgement waits for an fsync, so a thread writes the next log file
//! as zeros (and fsyncs it) before it is needed: `wal/spare`, which a rotation renames
//! into place. Replay reads an all-zero tail as the end of a file, so nothing else
//! changes. On ext4 on this project's benchmark machine that shortened the fsync of a
//! batch by about a third (docs/persistence.md).
//!
//! Not done on tmpfs (an fsync costs nothing there), nor while the data dir's filesystem
//! has less than [`MIN_FREE_FILES`] prepared files' size available: the zeros must never
//! take the space the log itself needs (said once, when it starts and when it ends). A
//! failed preparation is logged and left; the log then grows a plain file as before.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

/// Space the filesystem must have available before a file is prepared, in prepared
/// files' sizes.
const MIN_FREE_FILES: u64 = 4;
/// Bytes written between two fdatasyncs of a file being prepared (spreads its I/O out
/// instead of one long flush that the log's fsyncs would queue behind; each chunk is
/// followed by a pause as long as it took).
const SYNC_EVERY: u64 = 4 << 20;
/// Name of a prepared file in the log's directory.
const READY: &str = "spare";
/// Name of a file being prepared.
const PARTIAL: &str = "spare.tmp";

/// The prepared file of a log directory, and the thread preparing the next one.
pub struct Spares {
    dir: PathBuf,
    /// Size of a prepared file.
    size: u64,
    /// Why files are not prepared here (None: they are).
    off: Option<String>,
    /// Whether `spare` is complete and not yet taken (known here, not asked of the
    /// filesystem per batch).
    have_ready: bool,
    /// Whether the last look found too little space free (said when this changes).
    short_of_space: bool,
    /// The preparation under way: true once it has renamed its file to `spare`.
    job: Option<JoinHandle<Result<bool, String>>>,
    stop: Arc<AtomicBool>,
}

impl Spares {
    /// Spares of `size` bytes for the log directory `dir`, prepared if `wanted` (sync
    /// durability) and the filesystem is worth it. A partial file a crash or stop left
    /// is deleted; a complete one is used.
    pub fn new(dir: &Path, size: u64, wanted: bool) -> Spares {
        let _ = std::fs::remove_file(dir.join(PARTIAL));
        let off = match wanted {
            false => Some("durability is async".to_string()),
            true if crate::fsinfo::on_tmpfs(dir) => {
                Some("the data dir is on tmpfs, where an fsync costs nothing".to_string())
            }
            true => None,
        };
        let ready = dir.join(READY);
        let have_ready = off.is_none() && std::fs::metadata(&ready).is_ok_and(|m| m.len() == size);
        if !have_ready {
            // Of no use: left by a sync run to an async one, or of another size.
            let _ = std::fs::remove_file(&ready);
        }
        let stop = Arc::new(AtomicBool::new(false));
        Spares { dir: dir.to_path_buf(), size, off, have_ready, short_of_space: false, job: None, stop }
    }

    /// Why files are not prepared (None: they are).
    pub fn off(&self) -> Option<&str> {
        self.off.as_deref()
    }

    /// Whether a prepared file is waiting to be taken.
    pub fn ready(&mut self) -> bool {
        self.off.is_none() && self.reap() && self.have_ready
    }

    /// Rename the prepared file to `dest` and open it for writing (None: no file is
    /// ready; the caller creates a plain one). Starts preparing the next one.
    pub fn take(&mut self, dest: &Path) -> Option<File> {
        if !self.ready() {
            self.start();
            return None;
        }
        self.have_ready = false;
        let f = std::fs::rename(self.dir.join(READY), dest)
            .and_then(|_| OpenOptions::new().write(true).open(dest))
            .map_err(|e| log::warn!("write-ahead log: cannot use the prepared file: {e}"))
            .ok();
        self.start();
        f
    }

    /// Whether no preparation is running (one that ended is reaped: its file is ready,
    /// or its failure is logged).
    fn reap(&mut self) -> bool {
        match &self.job {
            Some(j) if !j.is_finished() => false,
            Some(_) => {
                match self.job.take().expect("checked").join() {
                    Ok(Ok(done)) => self.have_ready = done,
                    Ok(Err(e)) => {
                        log::warn!(
                            "write-ahead log: preparing the next file failed ({e}); files grow as written instead"
                        );
                        let _ = std::fs::remove_file(self.dir.join(PARTIAL));
                    }
                    Err(_) => log::warn!("write-ahead log: the thread preparing the next file panicked"),
                }
                true
            }
            None => true,
        }
    }

    /// Start preparing a file in the background, unless one is ready or being prepared,
    /// or the filesystem has too little space available.
    pub fn start(&mut self) {
        if self.off.is_some() || !self.reap() || self.have_ready {
            return;
        }
        let need = MIN_FREE_FILES * self.size;
        let free = crate::fsinfo::available(&self.dir);
        let short = free.is_none_or(|f| f < need);
        if short != self.short_of_space {
            self.short_of_space = short;
            match free {
                Some(f) if short => log::info!(
                    "write-ahead log: {} MiB free on the data dir's filesystem, under {} MiB: log files are not \
                     prepared ahead of time until there is (each fsync also writes the file's size)",
                    f >> 20,
                    need >> 20
                ),
                None => log::info!("write-ahead log: free space unknown: log files are not prepared ahead of time"),
                _ => log::info!("write-ahead log: space is free again: log files are prepared ahead of time"),
            }
        }
        if short {
            return;
        }
        let (dir, size, stop) = (self.dir.clone(), self.size, self.stop.clone());
        let spawned = std::thread::Builder::new().name("disk-spare".into()).spawn(move || prepare(&dir, size, &stop));
        match spawned {
            Ok(j) => self.job = Some(j),
            Err(e) => log::warn!("write-ahead log: cannot start preparing the next file: {e}"),
        }
    }

    /// Stop preparing (a preparation under way is abandoned and its file deleted; a
    /// ready file stays for the next start); no file is prepared after this.
    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(j) = self.job.take() {
            j.thread().unpark();
            let _ = j.join();
        }
        self.off.get_or_insert_with(|| "stopping".to_string());
    }
}

impl Drop for Spares {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Write `size` zeros to `spare.tmp`, fsync them, rename the file to `spare`. False if
/// stopped first (nothing is left behind).
fn prepare(dir: &Path, size: u64, stop: &AtomicBool) -> Result<bool, String> {
    let partial = dir.join(PARTIAL);
    let mut f = File::create(&partial).map_err(|e| format!("{}: {e}", partial.display()))?;
    let zeros = vec![0u8; 1 << 20];
    let mut done = 0u64;
    let mut chunk_started = Instant::now();
    while done < size {
        if stop.load(Ordering::Relaxed) {
            drop(f);
            let _ = std::fs::remove_file(&partial);
            return Ok(false);
        }
        f.write_all(&zeros).map_err(|e| format!("{}: {e}", partial.display()))?;
        done += zeros.len() as u64;
        if done.is_multiple_of(SYNC_EVERY) {
            f.sync_data().map_err(|e| format!("{}: {e}", partial.display()))?;
            // Pause as long as the chunk took: the device is busy with these zeros at
            // most half of the time, and the log's fsyncs wait behind them less. A stop
            // ends the pause (`Spares::stop` unparks this thread): on a busy disk a chunk,
            // and so the pause, can take seconds.
            let until = Instant::now() + chunk_started.elapsed();
            while !stop.load(Ordering::Relaxed) && Instant::now() < until {
                std::thread::park_timeout(until.saturating_duration_since(Instant::now()));
            }
            chunk_started = Instant::now();
        }
    }
    f.sync_all().map_err(|e| format!("{}: {e}", partial.display()))?;
    std::fs::rename(&partial, dir.join(READY)).map_err(|e| format!("{}: {e}", partial.display()))?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SIZE: u64 = 8 << 20;

    /// A prepared file is all zeros of its size, taken once, and the next one follows.
    #[test]
    fn a_prepared_file_is_taken_and_the_next_one_prepared() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut s = Spares::new(dir.path(), SIZE, true);
        if s.off().is_some() {
            return; // the test's temp dir is on tmpfs
        }
        assert!(s.take(&dir.path().join("1.wal")).is_none(), "nothing prepared yet");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while !s.ready() {
            assert!(std::time::Instant::now() < deadline, "no file prepared in 60 s");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let f = s.take(&dir.path().join("1.wal")).expect("ready");
        assert_eq!(f.metadata().expect("metadata").len(), SIZE);
        let bytes = std::fs::read(dir.path().join("1.wal")).expect("read");
        assert!(bytes.iter().all(|&b| b == 0));
        drop(s);
        assert!(!dir.path().join(PARTIAL).exists(), "a stopped preparation leaves nothing");
        // A file a previous run prepared is used at once; one of another size is not.
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join(READY), vec![0u8; SIZE as usize]).expect("write");
        assert!(Spares::new(dir.path(), SIZE, true).ready());
        assert!(!Spares::new(dir.path(), 2 * SIZE, true).ready());
        assert!(!dir.path().join(READY).exists());
    }

    /// Async durability prepares nothing and deletes what a sync run left.
    #[test]
    fn async_durability_prepares_nothing() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join(READY), b"").expect("write");
        let mut s = Spares::new(dir.path(), SIZE, false);
        assert!(s.off().is_some());
        assert!(s.take(&dir.path().join("1.wal")).is_none());
        assert!(!dir.path().join(READY).exists());
    }
}
