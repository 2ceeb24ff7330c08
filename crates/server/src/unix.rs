//! Unix process chores memcached performs: `-u`, `-k`, `-r`, and waiting for signals.

use std::ffi::CString;

use config::Config;

/// Descriptors kept beyond the connections: listeners, data files, the binlog
/// connections, container pools, logs.
const SPARE_FILES: u64 = 64;

/// Make room for `-c` connections in the open-files limit, as memcached does at start:
/// the soft limit is raised to `-c` (twice with `--mysql-listen`: each proxied client has a
/// backend connection) plus some spare. If even `-c` does not fit under the hard limit,
/// memcached's error and exit; if only the spare or the proxy's share does not, a warning.
fn fit_open_files(cfg: &Config) -> std::io::Result<()> {
    let conns = cfg.max_connections as u64;
    // Each proxied client (MySQL, PostgreSQL) has a backend connection too.
    let pg = if cfg.postgres.listen.is_some() { 2 * cfg.postgres.max_connections as u64 } else { 0 };
    let want = conns * if cfg.mysql.listen.is_some() { 2 } else { 1 } + pg + SPARE_FILES;
    let mut rl = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit fills a valid struct.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) } != 0 {
        return Err(std::io::Error::other("failed to getrlimit number of files"));
    }
    if rl.rlim_cur >= want {
        return Ok(());
    }
    let set = |cur: u64, max: u64| {
        let rl = libc::rlimit { rlim_cur: cur, rlim_max: max };
        // SAFETY: setrlimit with a valid struct.
        unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &rl) == 0 }
    };
    // Raising the hard limit needs root (CAP_SYS_RESOURCE); the soft one does not.
    if set(want, rl.rlim_max.max(want)) {
        return Ok(());
    }
    if conns > rl.rlim_max {
        return Err(std::io::Error::other(
            "failed to set rlimit for open files. Try starting as root or requesting smaller maxconns value.",
        ));
    }
    set(rl.rlim_max, rl.rlim_max);
    log::warn!(
        "open files limited to {} (hard limit): -c {conns}{} wants {want}; connections beyond it are refused \
         (raise the limit: ulimit -n, systemd LimitNOFILE=)",
        rl.rlim_max,
        if cfg.mysql.listen.is_some() { " with the MySQL proxy (2 per client)" } else { "" }
    );
    Ok(())
}

/// Apply the open-files limit for `-c`, `-k` (lock memory) and `-r` (core dumps) at start.
pub fn apply_process_options(cfg: &Config) -> std::io::Result<()> {
    fit_open_files(cfg)?;
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

/// The background half of `-d`: tells the waiting parent that start-up is over.
pub struct Daemon {
    ready: libc::c_int,
}

/// `-d`: run in the background, as memcached's `daemonize()`: fork, the child starts a new
/// session; the parent waits until the child says it is serving (then exits 0) or the
/// child's start fails (exit 71; the child's error has gone to the same stderr). Must run
/// before any thread is started. Unlike memcached it keeps the working directory, so
/// relative paths (`--data-dir ./data`) keep their meaning.
pub fn daemonize() -> std::io::Result<Daemon> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe with a valid two-int array.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: no other thread exists yet (checked by the caller's position in start-up).
    match unsafe { libc::fork() } {
        -1 => Err(std::io::Error::last_os_error()),
        0 => {
            // SAFETY: plain syscalls on fds we own.
            unsafe {
                libc::close(fds[0]);
                libc::setsid();
            }
            Ok(Daemon { ready: fds[1] })
        }
        _ => {
            let mut b = [0u8; 1];
            // SAFETY: read into a one-byte buffer from the pipe we own.
            let n = unsafe {
                libc::close(fds[1]);
                libc::read(fds[0], b.as_mut_ptr().cast(), 1)
            };
            std::process::exit(if n == 1 && b[0] == b'R' { 0 } else { 71 });
        }
    }
}

impl Daemon {
    /// Start-up succeeded: detach from the terminal (stdio to /dev/null unless `-v`, as
    /// memcached) and let the parent exit 0.
    pub fn ready(self, keep_stdio: bool) {
        // SAFETY: open/dup2/close/write on fds we own and a static C string.
        unsafe {
            if !keep_stdio {
                let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
                if null >= 0 {
                    for fd in 0..3 {
                        libc::dup2(null, fd);
                    }
                    if null > 2 {
                        libc::close(null);
                    }
                }
            }
            libc::write(self.ready, b"R".as_ptr().cast(), 1);
            libc::close(self.ready);
        }
    }
}

/// The signals the server handles itself: SIGINT and SIGTERM stop it, SIGHUP reloads.
pub fn handled_signals() -> libc::sigset_t {
    // SAFETY: a zeroed sigset_t is valid storage; sigemptyset/sigaddset initialise it.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            libc::sigaddset(&mut set, sig);
        }
        set
    }
}

/// Block until SIGINT or SIGTERM arrives (they are blocked in every thread); each SIGHUP
/// meanwhile calls `on_hup` (memcached reloads its `-Y` file then).
pub fn wait_for_signal(on_hup: impl Fn()) {
    let set = handled_signals();
    loop {
        let mut sig = 0;
        // SAFETY: sigwait on a valid set whose signals are blocked process-wide.
        unsafe { libc::sigwait(&set, &mut sig) };
        if sig != libc::SIGHUP {
            return;
        }
        on_hup();
    }
}
