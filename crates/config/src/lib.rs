//! Command-line settings, with memcached 1.6.18's flags and meanings.
//!
//! Flags that only tune memcached's slab allocator or LRU threads (`-f`, `-n`, `-L`,
//! `-o slab_*`, `-o hot_lru_pct`, ...) are accepted and ignored: sqlcached has no slab
//! allocator. Features sqlcached does not have (memory files, ...) are refused
//! with a message rather than silently ignored.

#![warn(missing_docs)]

use std::fmt;

pub mod file;
pub mod help;
pub mod invalidate;
pub mod mysql;
pub mod persistence;
pub mod postgres;
pub mod querycache;
pub mod template;
pub mod tls;
pub mod usage;

/// How log lines are written (`--log-format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum LogFormat {
    /// `sqlcached: message`, `sqlcached: warning: message`.
    #[default]
    Text,
    /// `{"ts":"2026-11-24T22:50:01.123Z","level":"INFO","target":"...","msg":"..."}`.
    Json,
}

/// Which protocols a connection may speak (`-B`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// Pick per connection from the first byte.
    Auto,
    /// Text and meta only.
    Ascii,
    /// Binary only.
    Binary,
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Protocol::Auto => "auto-negotiate",
            Protocol::Ascii => "ascii",
            Protocol::Binary => "binary",
        })
    }
}

/// Which kernel interface serves memcached connections (`--io-uring`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum IoUring {
    /// io_uring where the kernel and the sandbox allow it, epoll otherwise (said at start).
    #[default]
    Auto,
    /// io_uring, or refuse to start.
    On,
    /// epoll (tokio), as before io_uring.
    Off,
}

impl IoUring {
    /// Parse `on`, `off` or `auto`.
    pub fn parse(v: &str) -> Result<IoUring, String> {
        match v {
            "auto" => Ok(IoUring::Auto),
            "on" => Ok(IoUring::On),
            "off" => Ok(IoUring::Off),
            other => Err(format!("--io-uring must be on, off or auto, not '{other}'")),
        }
    }
}

impl fmt::Display for IoUring {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            IoUring::Auto => "auto",
            IoUring::On => "on",
            IoUring::Off => "off",
        })
    }
}

/// Everything the server was started with.
#[derive(Clone, Debug)]
pub struct Config {
    /// TCP port (`-p`), 0 to disable TCP.
    pub port: u16,
    /// UDP port (`-U`), 0 for off.
    pub udp_port: u16,
    /// Interfaces to listen on (`-l`, comma separated or repeated); empty for all.
    pub listen: Vec<String>,
    /// Unix socket path (`-s`); disables network listeners.
    pub unix_socket: Option<String>,
    /// `-S`: memcached's binary SASL authentication (passwords from `MEMCACHED_SASL_PWDB`).
    pub sasl: bool,
    /// `-Y FILE`: memcached's ASCII authentication with this `user:password` file.
    pub auth_file: Option<String>,
    /// Unix socket permissions (`-a`, octal).
    pub unix_mask: u32,
    /// Allow the `shutdown` command (`-A`).
    pub enable_shutdown: bool,
    /// Item memory in bytes (`-m`, megabytes).
    pub memory_limit: usize,
    /// Refuse stores instead of evicting (`-M`).
    pub disable_evictions: bool,
    /// Connection limit (`-c`).
    pub max_connections: usize,
    /// Verbosity (`-v`, `-vv`, `-vvv`).
    pub verbose: u32,
    /// Worker threads (`-t`).
    pub threads: usize,
    /// Requests handled per connection before yielding (`-R`).
    pub reqs_per_event: usize,
    /// CAS disabled (`-C`).
    pub disable_cas: bool,
    /// Listen backlog (`-b`).
    pub backlog: i32,
    /// Protocols accepted (`-B`).
    pub protocol: Protocol,
    /// Largest item (`-I`).
    pub item_size_max: usize,
    /// `flush_all` refused (`-F`).
    pub disable_flush_all: bool,
    /// Prefix delimiter for `stats detail` (`-D`).
    pub prefix_delimiter: char,
    /// `-D` was given, which turns `stats detail` on.
    pub prefix_delimiter_set: bool,
    /// Pid file (`-P`).
    pub pidfile: Option<String>,
    /// User to run as when started as root (`-u`).
    pub user: Option<String>,
    /// Close connections idle for this many seconds (`-o idle_timeout`), 0 for never.
    pub idle_timeout: u64,
    /// Lock all memory (`-k`).
    pub lock_memory: bool,
    /// Raise the core file limit (`-r`).
    pub enable_coredumps: bool,
    /// The persistent tier (`--data-dir`, `--durability`, `--disk-*`).
    pub persistence: persistence::PersistenceConfig,
    /// `--containers`: TOML file of SQL containers (sql-containers); none means plain memcached.
    pub containers: Option<String>,
    /// The MySQL query-cache proxy (`--mysql-*`, `--query-cache-*`).
    pub mysql: mysql::MysqlConfig,
    /// The PostgreSQL front (`--pg-*`).
    pub postgres: postgres::PostgresConfig,
    /// Binlog-driven invalidation of plain keys (`--invalidate*`).
    pub invalidate: invalidate::InvalidateConfig,
    /// `--invalidate-hold-ms` or `--invalidate-table-changes` was given.
    pub invalidate_tuned: bool,
    /// `--config FILE` the settings were read from (flags override it).
    pub config_file: Option<String>,
    /// `--log-format`: text (default) or json lines.
    pub log_format: LogFormat,
    /// Run in the background (`-d`).
    pub daemonize: bool,
    /// `--metrics-listen ADDR`: the admin HTTP endpoint (`/metrics`).
    pub metrics_listen: Option<String>,
    /// `-Z` and `-o ssl_*`: TLS on the memcached TCP listeners.
    pub tls: tls::TlsConfig,
    /// `--io-uring`: io_uring or epoll for memcached connections.
    pub io_uring: IoUring,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            port: 11211,
            udp_port: 0,
            listen: Vec::new(),
            unix_socket: None,
            auth_file: None,
            sasl: false,
            unix_mask: 0o700,
            enable_shutdown: false,
            memory_limit: 64 * 1024 * 1024,
            disable_evictions: false,
            max_connections: 1024,
            verbose: 0,
            threads: 4,
            reqs_per_event: 20,
            disable_cas: false,
            backlog: 1024,
            protocol: Protocol::Auto,
            item_size_max: 1024 * 1024,
            disable_flush_all: false,
            prefix_delimiter: ':',
            prefix_delimiter_set: false,
            pidfile: None,
            user: None,
            idle_timeout: 0,
            lock_memory: false,
            enable_coredumps: false,
            persistence: Default::default(),
            containers: None,
            mysql: Default::default(),
            postgres: Default::default(),
            invalidate: Default::default(),
            invalidate_tuned: false,
            config_file: None,
            log_format: Default::default(),
            daemonize: false,
            metrics_listen: None,
            tls: Default::default(),
            io_uring: IoUring::Auto,
        }
    }
}

/// What the command line asks for.
pub enum Action {
    /// Run the server.
    Run(Box<Config>),
    /// Print this and exit 0 (`-h`, `-V`, `-i`).
    Print(String),
    /// `--check-config`: validate the settings (and what they point at), then exit.
    Check(Box<Config>),
}

/// Where the parser is: which tokens came from the file, which from the command line.
#[derive(Default)]
struct ParseState {
    /// `-I` was given.
    item_size_set: bool,
    /// Now parsing the command line after a `--config` file's tokens.
    cli_over_file: bool,
    /// The command line gave `-l` / `-v` already (which replace the file's, not add to them).
    cli_listen: bool,
    cli_verbose: bool,
    /// The error is a bad `-o` sub-option (memcached exits 1 for those).
    extended_error: bool,
}

/// memcached's exit status for bad usage.
const EX_USAGE: i32 = 64;

/// Parse a size with an optional k/m/g suffix, as memcached's `-I`.
pub fn parse_size(s: &str) -> Option<usize> {
    let s = s.trim();
    let (num, mult) = match s.chars().last()? {
        'k' | 'K' => (&s[..s.len() - 1], 1024),
        'm' | 'M' => (&s[..s.len() - 1], 1024 * 1024),
        'g' | 'G' => (&s[..s.len() - 1], 1024 * 1024 * 1024),
        _ => (s, 1),
    };
    num.parse::<usize>().ok()?.checked_mul(mult)
}

fn num<T: std::str::FromStr>(flag: &str, v: &str) -> Result<T, String> {
    v.trim().parse().map_err(|_| format!("Invalid value for {flag}: '{v}'"))
}

/// Options of `-o` that only tune memcached internals sqlcached does not have.
const NOOP_EXTENDED: &[&str] = &[
    "maxconns_fast",
    "no_maxconns_fast",
    "hashpower",
    "tail_repair_time",
    "hash_algorithm",
    "lru_crawler",
    "no_lru_crawler",
    "lru_crawler_sleep",
    "lru_crawler_tocrawl",
    "read_buf_mem_limit",
    "lru_maintainer",
    "no_lru_maintainer",
    "hot_lru_pct",
    "warm_lru_pct",
    "hot_max_factor",
    "warm_max_factor",
    "temporary_ttl",
    "slab_chunk_max",
    "slab_reassign",
    "slab_automove",
    "slab_automove_ratio",
    "slab_automove_window",
    "slab_automove_freeratio",
    "modern",
    "no_modern",
    "track_sizes",
    "watcher_logbuf_size",
    "worker_logbuf_size",
    "no_hashexpand",
    "inline_ascii_response",
    "no_inline_ascii_response",
    "sock_cookie_id",
    "lru_segmented",
    "no_lru_segmented",
    "large_memory_pages",
    "drop_privileges",
    "no_drop_privileges",
    "num_napi_ids",
];

impl Config {
    /// Parse `argv` (without the program name), with the settings of `--config FILE` under
    /// the command line's. An error comes with the exit status memcached uses for it: 1 for
    /// a bad `-o` sub-option, `EX_USAGE` (64) for the rest.
    pub fn from_args(args: impl IntoIterator<Item = String>) -> Result<Action, (String, i32)> {
        let mut st = ParseState::default();
        Self::parse(args, &mut st).map_err(|msg| (msg, if st.extended_error { 1 } else { EX_USAGE }))
    }

    fn parse(args: impl IntoIterator<Item = String>, st: &mut ParseState) -> Result<Action, String> {
        let (path, check, args) = file::split_args(args.into_iter().collect())?;
        let mut c = Config::default();
        if let Some(path) = &path {
            for e in file::read(path)? {
                // Check each key alone first, so an error names its line.
                let at = |msg: String| format!("--config {path}: line {}: {}: {msg}", e.line, e.key);
                match Config::default().apply(e.tokens.clone(), &mut ParseState::default()) {
                    Err(msg) => return Err(at(msg)),
                    Ok(Some(_)) => return Err(at("not a setting".into())),
                    Ok(None) => {}
                }
                c.apply(e.tokens, st)?;
            }
            st.cli_over_file = true;
            c.config_file = Some(path.clone());
        }
        if let Some(action) = c.apply(args, st)? {
            return Ok(action);
        }
        c.finish(st)?;
        Ok(if check { Action::Check(Box::new(c)) } else { Action::Run(Box::new(c)) })
    }

    /// Apply flags in order; `Some` for flags that print and exit.
    fn apply(&mut self, args: Vec<String>, st: &mut ParseState) -> Result<Option<Action>, String> {
        use lexopt::prelude::*;
        let c = self;
        let mut p = lexopt::Parser::from_args(args);
        while let Some(arg) = p.next().map_err(|e| e.to_string())? {
            let val = |p: &mut lexopt::Parser| -> Result<String, String> {
                p.value().map_err(|e| e.to_string())?.into_string().map_err(|_| "invalid UTF-8".to_string())
            };
            match arg {
                Short('p') | Long("port") => c.port = num("-p", &val(&mut p)?)?,
                Short('U') | Long("udp-port") => c.udp_port = num("-U", &val(&mut p)?)?,
                Short('s') | Long("unix-socket") => c.unix_socket = Some(val(&mut p)?),
                Short('a') | Long("unix-mask") => {
                    let v = val(&mut p)?;
                    c.unix_mask = u32::from_str_radix(&v, 8).map_err(|_| format!("Invalid value for -a: '{v}'"))?;
                }
                Short('A') | Long("enable-shutdown") => c.enable_shutdown = true,
                Short('l') | Long("listen") => {
                    if st.cli_over_file && !st.cli_listen {
                        st.cli_listen = true;
                        c.listen.clear();
                    }
                    for a in val(&mut p)?.split(',') {
                        c.listen.push(a.trim().to_string());
                    }
                }
                Short('m') | Long("memory-limit") => {
                    let v = val(&mut p)?;
                    let mb: usize = match v.chars().last() {
                        Some('k' | 'K' | 'm' | 'M' | 'g' | 'G') => {
                            parse_size(&v).ok_or(format!("Invalid value for -m: '{v}'"))? / (1024 * 1024)
                        }
                        _ => num("-m", &v)?,
                    };
                    c.memory_limit = mb * 1024 * 1024;
                }
                Short('M') | Long("disable-evictions") => c.disable_evictions = true,
                Short('c') | Long("conn-limit") => c.max_connections = num("-c", &val(&mut p)?)?,
                Short('v') | Long("verbose") => {
                    if st.cli_over_file && !st.cli_verbose {
                        st.cli_verbose = true;
                        c.verbose = 0;
                    }
                    c.verbose += 1;
                }
                Short('h') | Long("help") => return Ok(Some(Action::Print(help::usage()))),
                Short('V') | Long("version") => {
                    return Ok(Some(Action::Print(format!(
                        "sqlcached {} (memcached 1.6.18 compatible)\n",
                        env!("CARGO_PKG_VERSION")
                    ))))
                }
                Short('i') | Long("license") => return Ok(Some(Action::Print(LICENSE.to_string()))),
                Short('t') | Long("threads") => {
                    c.threads = num("-t", &val(&mut p)?)?;
                    if c.threads == 0 {
                        return Err("Number of threads must be greater than 0".into());
                    }
                }
                Short('R') | Long("max-reqs-per-event") => {
                    c.reqs_per_event = num("-R", &val(&mut p)?)?;
                    if c.reqs_per_event == 0 {
                        return Err("Number of requests per event must be greater than 0".into());
                    }
                }
                Short('C') | Long("disable-cas") => c.disable_cas = true,
                Short('b') | Long("listen-backlog") => c.backlog = num("-b", &val(&mut p)?)?,
                Short('B') | Long("protocol") => {
                    c.protocol = match val(&mut p)?.as_str() {
                        "auto" => Protocol::Auto,
                        "ascii" => Protocol::Ascii,
                        "binary" => Protocol::Binary,
                        other => {
                            return Err(format!(
                            "Invalid value for binding protocol: {other}\n -- should be one of auto, binary, or ascii"
                        ))
                        }
                    }
                }
                Short('I') | Long("max-item-size") => {
                    let v = val(&mut p)?;
                    c.item_size_max = parse_size(&v).ok_or(format!("Invalid value for -I: '{v}'"))?;
                    st.item_size_set = true;
                }
                Short('F') | Long("disable-flush-all") => c.disable_flush_all = true,
                Short('D') | Long("prefix-delimiter") => {
                    let v = val(&mut p)?;
                    c.prefix_delimiter = v.chars().next().ok_or("-D needs a character")?;
                    c.prefix_delimiter_set = true;
                }
                Short('P') | Long("pidfile") => c.pidfile = Some(val(&mut p)?),
                Short('u') | Long("user") => c.user = Some(val(&mut p)?),
                Short('k') | Long("lock-memory") => c.lock_memory = true,
                Short('r') | Long("enable-coredumps") => c.enable_coredumps = true,
                // Slab allocator and LRU tuning: memcached-only internals.
                Short('f') | Long("slab-growth-factor") | Short('n') | Long("slab-min-size") => {
                    val(&mut p)?;
                }
                Short('L')
                | Long("enable-largepages")
                | Short('X')
                | Long("disable-dumping")
                | Short('W')
                | Long("disable-watch") => {}
                Short('o') | Long("extended") => {
                    for opt in val(&mut p)?.split(',') {
                        st.extended_error = true;
                        let (name, value) = opt.split_once('=').unwrap_or((opt, ""));
                        match name.trim() {
                            "idle_timeout" => c.idle_timeout = num("idle_timeout", value)?,
                            n if tls::OPTIONS.contains(&n) => {
                                c.tls.set(n, opt.split_once('=').map(|(_, v)| v))?;
                            }
                            n if NOOP_EXTENDED.contains(&n) => {}
                            n => return Err(format!("Illegal suboption \"{n}\"")),
                        }
                        st.extended_error = false;
                    }
                }
                Long(flag) if persistence::FLAGS.contains(&flag) => {
                    let flag = flag.to_string();
                    c.persistence.set(&flag, Some(&val(&mut p)?))?;
                }
                Long(flag) if persistence::SWITCHES.contains(&flag) => c.persistence.set(flag, None)?,
                Long("containers") => c.containers = Some(val(&mut p)?),
                Long("metrics-listen") => c.metrics_listen = Some(val(&mut p)?),
                Long("log-format") => {
                    c.log_format = match val(&mut p)?.as_str() {
                        "text" => LogFormat::Text,
                        "json" => LogFormat::Json,
                        other => return Err(format!("--log-format must be text or json, not '{other}'")),
                    }
                }
                Long(flag) if invalidate::FLAGS.contains(&flag) => {
                    let flag = flag.to_string();
                    c.invalidate_tuned |= flag != "invalidate";
                    c.invalidate.set(&flag, &val(&mut p)?)?;
                }
                Long(flag) if mysql::FLAGS.contains(&flag) => {
                    let flag = flag.to_string();
                    c.mysql.set(&flag, &val(&mut p)?)?;
                }
                Long(flag) if postgres::FLAGS.contains(&flag) => {
                    let flag = flag.to_string();
                    c.postgres.set(&flag, &val(&mut p)?)?;
                }
                Long(flag) if postgres::SWITCHES.contains(&flag) => c.postgres.set(flag, "")?,
                Long("io-uring") => c.io_uring = IoUring::parse(&val(&mut p)?)?,
                Short('d') | Long("daemon") => c.daemonize = true,
                Short('S') | Long("enable-sasl") => c.sasl = true,
                Short('Y') | Long("auth-file") => c.auth_file = Some(val(&mut p)?),
                Short('Z') | Long("enable-ssl") => c.tls.enabled = true,
                Short('e') | Long("memory-file") => {
                    return Err("-e: memory files are not supported by sqlcached".into())
                }
                Long(name) => {
                    let name = format!("--{name}");
                    return Err(help::unknown_option(&name, arg.unexpected().to_string()));
                }
                _ => return Err(format!("{} (sqlcached --help lists the options)", arg.unexpected())),
            }
        }
        Ok(None)
    }

    /// Checks across flags, once everything is applied.
    fn finish(&mut self, st: &ParseState) -> Result<(), String> {
        let c = self;
        c.persistence.validate()?;
        c.mysql.validate(c.invalidate.follows(invalidate::RuleSource::Mysql))?;
        c.postgres.validate(c.invalidate.follows(invalidate::RuleSource::Postgres))?;
        c.invalidate.validate(&c.mysql, &c.postgres, c.invalidate_tuned)?;
        if c.sasl {
            // memcached's rules: SASL is binary-only, and UDP cannot carry it.
            if c.protocol == Protocol::Ascii {
                return Err("ERROR: You cannot allow the ASCII protocol while using SASL.".into());
            }
            if c.auth_file.is_some() {
                return Err("-S and -Y cannot be combined: choose binary SASL or ASCII authentication".into());
            }
            c.protocol = Protocol::Binary;
            if c.udp_port != 0 {
                return Err("ERROR: Cannot enable UDP while using binary SASL authentication.".into());
            }
        }
        if c.auth_file.is_some() && c.udp_port != 0 {
            return Err("Cannot use UDP with ascii authentication enabled (-U 0 to disable)".into());
        }
        if c.auth_file.is_some() && c.protocol == Protocol::Binary {
            return Err("ERROR: You cannot allow the BINARY protocol while using ascii authentication tokens.".into());
        }
        if c.tls.enabled && c.port == 0 {
            return Err("ERROR: You cannot enable SSL without a TCP port.".into());
        }
        if !st.item_size_set {
            c.item_size_max = 1024 * 1024;
        }
        if c.item_size_max < 1024 {
            return Err("Item max size cannot be less than 1024 bytes.".into());
        }
        if c.item_size_max > c.memory_limit / 2 {
            return Err("Cannot set item size limit higher than 1/2 of memory max.".into());
        }
        if c.item_size_max > 1024 * 1024 * 1024 {
            return Err("Cannot set item size limit higher than a gigabyte.".into());
        }
        Ok(())
    }
}

const LICENSE: &str = "sqlcached is licensed under the Apache License, Version 2.0.\n";
