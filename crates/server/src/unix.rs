//! Unix process chores memcached performs: `-u`, `-k`, `-r`, and waiting for signals.

use std::ffi::CString;

use crate::config::Config;

/// Apply `-k` (lock memory) and `-r` (core dumps) at start.
pub fn apply_process_options(cfg: &Config) -> std::io::Result<()> {
    if cfg.enable_coredumps {
        let rl = libc::rlimit { rlim_cur: libc::RLIM_INFINITY, rlim_max: libc::RLIM_INFINITY };
        // SAFETY: setrlimit with a valid struct.
        if unsafe { libc::setrlimit(libc::RLIMIT_CORE, &rl) } != 0 {
            log::warn!("failed to ensure corefile creation");
        }
    }
    if cfg.lock_memory {
        // SAFETY: mlockall has no pointer arguments.
        if unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) } != 0 {
            log::warn!("-k invalid, mlockall() failed: {}", std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// `-u user`: when started as root, switch to that user once sockets are bound.
pub fn drop_privileges(cfg: &Config) -> std::io::Result<()> {
    // SAFETY: getuid has no arguments.
    let root = unsafe { libc::getuid() } == 0;
    let Some(user) = &cfg.user else { return Ok(()) };
    if !root {
        return Ok(());
    }
    let name = CString::new(user.as_str()).map_err(|_| std::io::Error::other("bad user name"))?;
    // SAFETY: getpwnam returns a pointer into static storage or null; read it at once.
    let pw = unsafe { libc::getpwnam(name.as_ptr()) };
    if pw.is_null() {
        return Err(std::io::Error::other(format!("can't find the user {user} to switch to")));
    }
    // SAFETY: pw is non-null and points to a valid passwd entry.
    let (uid, gid) = unsafe { ((*pw).pw_uid, (*pw).pw_gid) };
    // SAFETY: plain syscalls.
    if unsafe { libc::setgid(gid) } != 0 || unsafe { libc::setuid(uid) } != 0 {
        return Err(std::io::Error::other(format!("failed to assume identity of user {user}")));
    }
    Ok(())
}

/// Block until SIGINT or SIGTERM arrives (they are blocked in every thread).
pub fn wait_for_signal() {
    // SAFETY: sigwait on a set we build here; the signals are blocked process-wide.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        let mut sig = 0;
        libc::sigwait(&set, &mut sig);
    }
}
