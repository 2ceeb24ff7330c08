//! Facts about the filesystem a data dir is on: space available, tmpfs or not.

use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// `dir` as the C string the system calls take.
fn c_path(dir: &Path) -> Option<std::ffi::CString> {
    std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()
}

/// Bytes available to this process on the filesystem of `dir` (None: unknown).
pub(crate) fn available(dir: &Path) -> Option<u64> {
    let path = c_path(dir)?;
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated path and a zeroed statvfs the call fills in.
    let rc = unsafe { libc::statvfs(path.as_ptr(), &mut st) };
    (rc == 0).then(|| st.f_bavail as u64 * st.f_frsize as u64)
}

/// Whether `dir` is on tmpfs or ramfs (memory: an fsync there costs nothing).
pub(crate) fn on_tmpfs(dir: &Path) -> bool {
    const TMPFS: i64 = 0x0102_1994;
    const RAMFS: i64 = 0x8584_58f6;
    let Some(path) = c_path(dir) else { return false };
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated path and a zeroed statfs the call fills in.
    let rc = unsafe { libc::statfs(path.as_ptr(), &mut st) };
    rc == 0 && matches!(st.f_type as i64, TMPFS | RAMFS)
}
