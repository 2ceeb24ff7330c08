//! Setting up a ring the way the front end uses it, and the start-up probe that tells
//! whether this kernel and sandbox allow it (`--io-uring auto` falls back to epoll if not).

use std::io;

use io_uring::{opcode, register::Probe, IoUring};

/// The kernel's switch for io_uring (0: allowed, 1: only for `io_uring_group`, 2: nobody).
const DISABLED_SYSCTL: &str = "/proc/sys/kernel/io_uring_disabled";

/// A ring of `entries` submission slots (completions: 4x, the kernel keeps more past that),
/// for one thread: SINGLE_ISSUER (only the creating thread submits) and DEFER_TASKRUN
/// (completions are run in that thread's next `io_uring_enter`, not by interrupting it),
/// the setup the floor benchmark measured (`bench/floor`). Linux 6.1 or later.
pub fn build(entries: u32) -> io::Result<IoUring> {
    IoUring::builder()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .setup_submit_all()
        .setup_cqsize(entries * 4)
        .build(entries)
}

/// Whether the front end can run here: a ring as [`build`] makes it, a provided-buffer
/// ring registered on it, the opcodes it uses, and one round trip through
/// `io_uring_enter` (a seccomp filter may allow the setup and not the rest). `Err` says why
/// not, in words for the start-up log.
pub fn probe() -> Result<(), String> {
    let sysctl = std::fs::read_to_string(DISABLED_SYSCTL).ok().map(|s| s.trim().to_string());
    let mut ring = build(8).map_err(|e| setup_error(&e, sysctl.as_deref()))?;
    let mut probe = Probe::new();
    ring.submitter().register_probe(&mut probe).map_err(|e| format!("io_uring_register(PROBE): {e}"))?;
    let ops = [
        ("RECV", opcode::RecvMulti::CODE),
        ("SEND", opcode::Send::CODE),
        ("READ", opcode::Read::CODE),
        ("ASYNC_CANCEL", opcode::AsyncCancel::CODE),
    ];
    for (name, code) in ops {
        if !probe.is_supported(code) {
            return Err(format!("the kernel's io_uring has no {name} operation"));
        }
    }
    // A provided-buffer ring (Linux 5.19) of one entry, then gone again.
    let bufs = crate::uring::bufring::BufRing::register(&ring, 1, 64, PROBE_GROUP)
        .map_err(|e| format!("provided buffer rings not available (Linux 5.19+): {e}"))?;
    bufs.unregister(&ring);
    // SAFETY: a NOP references no memory.
    unsafe { ring.submission().push(&opcode::Nop::new().build().user_data(1)) }
        .map_err(|_| "io_uring: submission queue full".to_string())?;
    ring.submit_and_wait(1).map_err(|e| format!("io_uring_enter: {e}"))?;
    let done = ring.completion().next().map(|c| c.result());
    match done {
        Some(r) if r >= 0 => Ok(()),
        Some(r) => Err(format!("io_uring: a NOP failed: {}", io::Error::from_raw_os_error(-r))),
        None => Err("io_uring: a NOP did not complete".into()),
    }
}

/// The buffer group the probe registers (any id works: the ring is thrown away).
const PROBE_GROUP: u16 = 0;

/// Why `io_uring_setup` failed, with the likely cause.
fn setup_error(e: &io::Error, sysctl: Option<&str>) -> String {
    match e.raw_os_error() {
        Some(libc::ENOSYS) => format!("io_uring_setup: {e} (a kernel without io_uring, or a seccomp filter)"),
        Some(libc::EPERM) => match sysctl {
            Some(v) if v != "0" => format!("io_uring_setup: {e} (kernel.io_uring_disabled = {v})"),
            _ => format!("io_uring_setup: {e} (a seccomp filter or security module forbids it)"),
        },
        Some(libc::EINVAL) => format!("io_uring_setup: {e} (needs Linux 6.1 or later: SINGLE_ISSUER, DEFER_TASKRUN)"),
        Some(libc::ENOMEM) => format!("io_uring_setup: {e} (locked memory limit, ulimit -l?)"),
        _ => format!("io_uring_setup: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setup_errors_name_their_cause() {
        let e = |n| io::Error::from_raw_os_error(n);
        assert!(setup_error(&e(libc::ENOSYS), None).contains("seccomp"));
        assert!(setup_error(&e(libc::EPERM), Some("2")).contains("kernel.io_uring_disabled = 2"));
        assert!(setup_error(&e(libc::EPERM), Some("0")).contains("seccomp"));
        assert!(setup_error(&e(libc::EINVAL), None).contains("6.1"));
    }
}
