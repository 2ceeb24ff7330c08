//! `DIR/CHECKPOINT`: a small sidecar file, outside fjall's journal, recording the highest
//! write sequence known durable and whether the server stopped cleanly. At open it tells
//! whether fjall's recovery lost writes (a damaged or truncated journal is replayed only
//! up to the damage), which fjall itself does not report.

use std::io::Write;
use std::path::{Path, PathBuf};

/// What the sidecar says.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Checkpoint {
    /// Highest write sequence that was durable when this was written.
    pub seq: u64,
    /// Written by a clean shutdown.
    pub clean: bool,
}

fn path(dir: &Path) -> PathBuf {
    dir.join("CHECKPOINT")
}

/// Read the sidecar (`None` for a new directory or an unreadable file).
pub fn read(dir: &Path) -> Option<Checkpoint> {
    let text = std::fs::read_to_string(path(dir)).ok()?;
    let mut cp = Checkpoint::default();
    for word in text.split_whitespace() {
        match word.split_once('=') {
            Some(("seq", v)) => cp.seq = v.parse().ok()?,
            Some(("clean", v)) => cp.clean = v == "1",
            _ => {}
        }
    }
    Some(cp)
}

/// Replace the sidecar atomically and durably (temp file, fsync, rename, fsync dir).
pub fn write(dir: &Path, cp: Checkpoint) -> std::io::Result<()> {
    let tmp = dir.join("CHECKPOINT.tmp");
    let mut f = std::fs::File::create(&tmp)?;
    writeln!(f, "seq={} clean={}", cp.seq, cp.clean as u8)?;
    f.sync_data()?;
    std::fs::rename(&tmp, path(dir))?;
    std::fs::File::open(dir)?.sync_all()
}
