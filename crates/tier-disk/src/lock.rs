//! The data directory's lock file: one server per directory.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::os::unix::io::AsRawFd;
use std::path::Path;

/// Holds `DIR/LOCK` locked (flock) for the life of the server.
pub struct DirLock {
    _file: File,
}

impl DirLock {
    /// Lock `dir`, or explain who holds it.
    pub fn acquire(dir: &Path) -> Result<DirLock, String> {
        let path = dir.join("LOCK");
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
        // SAFETY: flock on a file descriptor we own.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc != 0 {
            let mut holder = String::new();
            let _ = file.read_to_string(&mut holder);
            let holder = holder.trim();
            return Err(format!(
                "data directory {} is in use by another sqlcached{}; refusing to share it",
                dir.display(),
                if holder.is_empty() { String::new() } else { format!(" (pid {holder})") }
            ));
        }
        let _ = file.set_len(0);
        let _ = file.rewind();
        let _ = writeln!(file, "{}", std::process::id());
        let _ = file.sync_all();
        Ok(DirLock { _file: file })
    }
}
