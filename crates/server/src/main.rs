//! The `sqlcached` binary: parse the command line, do the process chores memcached does
//! (daemon, signals, `-u`, pid file), run the server (`sqlcached::server`) until a
//! signal or `shutdown` asks it to stop.

use sqlcached::config::{Action, Config};
use sqlcached::server::Server;
use sqlcached::{check, logging, memory, unix};

/// Exit code for a `--check-config` that found a problem (`EX_CONFIG`).
const EX_CONFIG: i32 = 78;

fn main() {
    memory::configure_allocator();
    let cfg = match Config::from_args(std::env::args().skip(1)) {
        Ok(Action::Run(c)) if c.postgres.drop_slot => std::process::exit(if check::drop_pg_slot(&c) { 0 } else { 1 }),
        Ok(Action::Run(c)) => *c,
        Ok(Action::Print(text)) => {
            print!("{text}");
            return;
        }
        Ok(Action::Check(c)) => std::process::exit(if check::run(&c) { 0 } else { EX_CONFIG }),
        Err((e, status)) => {
            // Before logging starts: said as the log's text lines are.
            eprintln!("sqlcached: {e}");
            std::process::exit(status);
        }
    };
    // Before `run`, so that its errors are log lines too (`sqlcached: error: ...`, or JSON).
    logging::init(cfg.verbose, cfg.log_format);
    if let Err((msg, code)) = run(cfg) {
        log::error!("{msg}");
        std::process::exit(code);
    }
    std::process::exit(0);
}

fn run(cfg: Config) -> Result<(), (String, i32)> {
    let os = |e: std::io::Error| (format!("failed to start: {e}"), 71);
    // Before any thread exists: fork and wait in the parent.
    let daemon = if cfg.daemonize { Some(unix::daemonize().map_err(os)?) } else { None };
    logging::install_panic_hook();
    block_signals();
    // Its one error is memcached's own line (too many -c for the open-files limit).
    unix::apply_process_options(&cfg).map_err(|e| (e.to_string(), 71))?;
    let server = Server::start(cfg.clone()).map_err(|e| (e.message, e.code))?;
    // Everything is bound: privileges can go.
    unix::drop_privileges(&cfg).map_err(os)?;
    if let Some(pidfile) = &cfg.pidfile {
        std::fs::write(pidfile, format!("{}\n", std::process::id())).map_err(os)?;
    }
    let (stop, reload) = (server.stopper(), server.reloader());
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            unix::wait_for_signal(reload);
            let _ = stop.send(());
        })
        .map_err(os)?;
    log::info!(
        "ready: {} worker threads, {} MiB for items, up to {} connections",
        cfg.threads,
        cfg.memory_limit >> 20,
        cfg.max_connections
    );
    if let Some(d) = daemon {
        d.ready(cfg.verbose > 0);
    }
    server.wait();
    let times = server.stop();
    if let Some(pidfile) = &cfg.pidfile {
        let _ = std::fs::remove_file(pidfile);
    }
    log::info!("stopped in {times}");
    Ok(())
}

/// Block SIGINT/SIGTERM/SIGHUP in every thread so that one thread can wait for them.
fn block_signals() {
    let set = unix::handled_signals();
    // SAFETY: a valid signal set; the old mask is not asked for.
    unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
}
