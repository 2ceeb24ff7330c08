//! `--help`: the flags in groups, laid out the way GNU programs are, so that `help2man`
//! turns it into a man page with NAME, SYNOPSIS, DESCRIPTION, OPTIONS (one entry per flag,
//! a sub-section per group), ENVIRONMENT and EXAMPLES (`dist/build-deb.sh`).
//!
//! Each group is a table ([`Section`]) kept beside the flags it documents; this module
//! lays them out (options at column 2, descriptions wrapped at column [`DESC_COL`]) and
//! answers "did you mean" for a misspelt long flag from the same tables.

use crate::usage::{Opt, Section};

/// Column where descriptions start; an entry whose flags reach it has its description on
/// the next line.
pub const DESC_COL: usize = 28;
/// Longest line printed.
const WIDTH: usize = 79;

const DESCRIPTION: &str = "sqlcached is a caching server for SQL databases. It speaks memcached \
1.6.18's text, meta and binary protocols byte for byte and takes memcached's flags: started \
without --data-dir it is a memory-only memcached. With --data-dir it keeps items on disk below \
memory, so a restart comes back warm and the data may be larger than -m. --containers serves \
SQL tables (SQLite, MariaDB/MySQL) as memcached keys; --mysql-listen puts a query cache, kept \
fresh by the binlog, in front of a MariaDB/MySQL server, --pg-listen a front for PostgreSQL; --invalidate deletes cache-aside keys \
when the rows they were built from change. Documentation: README.md and docs/ in the source, \
/usr/share/doc/sqlcached once installed.";

/// memcached 1.6.18's own flags.
const MEMCACHED: Section = Section {
    title: "memcached's options",
    options: &[
        Opt("-p, --port=<num>", "TCP port to listen on (default: 11211), 0 to disable"),
        Opt("-U, --udp-port=<num>", "UDP port to listen on (default: 0, off)"),
        Opt("-s, --unix-socket=<file>", "UNIX socket to listen on (disables network support)"),
        Opt("-a, --unix-mask=<mask>", "access mask for UNIX socket, in octal (default: 700)"),
        Opt("-A, --enable-shutdown", "enable ascii \"shutdown\" command"),
        Opt(
            "-l, --listen=<addr>",
            "interface to listen on (default: all; without -Y, -S or client certificates anyone who \
             can connect may read and change every item: say -l 127.0.0.1 unless the port is firewalled)",
        ),
        Opt("-u, --user=<user>", "assume identity of <username> (only when run as root)"),
        Opt(
            "-m, --memory-limit=<num>",
            "memory in megabytes for everything the server holds: items and, with the features on, the \
             disk tier's cache and staged writes, query results, containers' copies (default: 64; \
             docs/memory.md)",
        ),
        Opt("-M, --disable-evictions", "return error on memory exhausted instead of evicting"),
        Opt("-c, --conn-limit=<num>", "max simultaneous connections (default: 1024)"),
        Opt("-k, --lock-memory", "lock down all paged memory"),
        Opt("-v, --verbose", "verbose (print errors/warnings while in event loop)"),
        Opt("-vv", "very verbose (also print client commands/responses)"),
        Opt("-h, --help", "print this help and exit"),
        Opt("-i, --license", "print the license and exit"),
        Opt("-V, --version", "print version and exit"),
        Opt("-d, --daemon", "run as a daemon (the command returns once the server serves)"),
        Opt("-P, --pidfile=<file>", "save PID in <file>"),
        Opt("-r, --enable-coredumps", "maximize core file limit"),
        Opt("-t, --threads=<num>", "number of worker threads to use (default: 4)"),
        Opt("-R, --max-reqs-per-event=<num>", "requests handled per connection before yielding (default: 20)"),
        Opt("-C, --disable-cas", "disable use of CAS"),
        Opt("-b, --listen-backlog=<num>", "set the backlog queue limit (default: 1024)"),
        Opt("-B, --protocol=<name>", "protocol - one of ascii, binary, or auto (default: auto)"),
        Opt("-I, --max-item-size=<num>", "adjusts max item size (default: 1m, min: 1k, max: 1024m)"),
        Opt("-F, --disable-flush-all", "disable flush_all command"),
        Opt(
            "-S, --enable-sasl",
            "turn on binary SASL authentication (PLAIN; passwords from the user:password file named by \
             the environment variable MEMCACHED_SASL_PWDB)",
        ),
        Opt(
            "-Y, --auth-file=<file>",
            "(EXPERIMENTAL) enable ASCII protocol authentication. format: user:pass\\nuser2:pass2\\n \
             (reloaded on SIGHUP)",
        ),
        Opt("-D, --prefix-delimiter=<char>", "delimiter between key prefixes and IDs for 'stats detail'"),
        Opt(
            "-Z, --enable-ssl",
            "enable TLS/SSL on the TCP listeners; 'notls' prefix can be used to disable it for specific \
             listeners (-l notls:<ip>:<port>)",
        ),
        Opt("-o, --extended=<opts>", "comma separated list of extended options, each below as -o <name>=<value>"),
        Opt("-o idle_timeout=<s>", "timeout for idle connections (default: 0, no timeout)"),
        Opt("-o ssl_chain_cert=<file>", "certificate chain file in PEM format"),
        Opt("-o ssl_key=<file>", "private key file"),
        Opt("-o ssl_keyformat=<n>", "private key format, 1 (PEM, default) or 2 (DER)"),
        Opt(
            "-o ssl_verify_mode=<n>",
            "peer certificate verification mode, default is 0(None). valid values are 0(None), \
             1(Request), 2(Require) or 3(Once)",
        ),
        Opt("-o ssl_ciphers=<list>", "TLS 1.2 cipher names (OpenSSL or IANA), ':' separated"),
        Opt("-o ssl_ca_cert=<file>", "PEM format file of acceptable client CA's"),
        Opt("-o ssl_wbuf_size=<kb>", "size in kilobytes of per-connection TLS output buffer (default: 16)"),
        Opt("-o ssl_session_cache", "enable server-side TLS session cache, to support session resumption"),
        Opt(
            "-o ssl_min_version=<n>",
            "minimum protocol version to accept (default: tlsv1.2) valid values are 2(tlsv1.2) or \
             3(tlsv1.3); 0 and 1 mean tlsv1.2 (sqlcached's TLS has no TLS 1.0/1.1)",
        ),
        Opt(
            "-f, -n, -L, -X, -W",
            "memcached's slab allocator and LRU tuning (--slab-growth-factor, --slab-min-size, \
             --enable-largepages, --disable-dumping, --disable-watch, and -o hashpower, hot_lru_pct, \
             slab_*, lru_*, ...): accepted, with no effect, since sqlcached has no slab allocator",
        ),
    ],
};

const CONFIG_FILE: Section = Section {
    title: "Configuration file",
    options: &[
        Opt(
            "--config=<file>",
            "TOML file holding any of these settings under its long name (port = 11211, listen = \
             [\"127.0.0.1\"], enable-shutdown = true, extended = { idle_timeout = 30 }); flags given \
             here override it",
        ),
        Opt(
            "--check-config",
            "check the settings and what they point at (containers, MySQL and PostgreSQL backends, data \
             directory, io_uring), print what was checked, and exit",
        ),
    ],
};

const IO: Section = Section {
    title: "I/O",
    options: &[Opt(
        "--io-uring=<on|off|auto>",
        "memcached connections (TCP, unix socket) on io_uring: multishot receive into provided buffers, \
         one submission per loop turn (default: auto, io_uring where the kernel and sandbox allow it, \
         epoll otherwise, said at start); TLS connections stay on epoll",
    )],
};

const METRICS: Section = Section {
    title: "Metrics and status page",
    options: &[Opt(
        "--metrics-listen=<addr>",
        "serve GET /metrics (OpenMetrics, for Prometheus) and a live status page at / on host:port",
    )],
};

const LOGS: Section = Section {
    title: "Logs",
    options: &[Opt(
        "--log-format=<fmt>",
        "text (default) or json: one JSON object per line on stderr. Lifecycle events, warnings and \
         errors are always logged; -v adds per-connection detail, -vv every command",
    )],
};

const CONTAINERS: Section = Section {
    title: "SQL containers (docs/containers.md)",
    options: &[Opt("--containers=<file>", "TOML file mapping @@name.key onto SQL tables (SQLite, MariaDB/MySQL)")],
};

const ENVIRONMENT: &[Opt] = &[
    Opt("MEMCACHED_SASL_PWDB", "the user:password file of -S"),
    Opt("SQLCACHED_MYSQL_PASSWORD", "--mysql-user's password, unless --mysql-password-file names a file"),
    Opt("SQLCACHED_PG_PASSWORD", "--pg-user's password, unless --pg-password-file names a file"),
];

const EXAMPLES: &[(&str, &str)] = &[
    ("A memory-only memcached on loopback with 1 GiB for items.", "sqlcached -l 127.0.0.1 -m 1024"),
    (
        "The same, persistent: a restart comes back warm.",
        "sqlcached -l 127.0.0.1 -m 1024 --data-dir /var/lib/sqlcached",
    ),
    ("Every setting from a file, checked first.", "sqlcached --config /etc/sqlcached/sqlcached.toml --check-config"),
];

/// Every group, in `--help` order.
fn sections() -> [&'static Section; 10] {
    [
        &MEMCACHED,
        &CONFIG_FILE,
        &IO,
        &METRICS,
        &LOGS,
        &crate::persistence::HELP,
        &CONTAINERS,
        &crate::mysql::HELP,
        &crate::postgres::HELP,
        &crate::invalidate::HELP,
    ]
}

/// The `--help` text.
pub fn usage() -> String {
    let mut out = String::from("Usage: sqlcached [OPTION]...\n\n");
    wrap_into(&mut out, DESCRIPTION, 0);
    out.push_str("\nOptions:\n");
    for s in sections() {
        out.push_str(&format!("{}:\n", s.title));
        for o in s.options {
            entry(&mut out, o);
        }
        out.push('\n');
    }
    out.push_str("Environment:\n");
    ENVIRONMENT.iter().for_each(|o| entry(&mut out, o));
    out.push_str("\nExamples:\n");
    for (what, cmd) in EXAMPLES {
        out.push_str(&format!("{what}\n  $ {cmd}\n\n"));
    }
    out.pop(); // the blank line after the last example
    out
}

/// One entry: the flags at column 2, the description from [`DESC_COL`] (on the next line
/// if the flags reach it), wrapped.
fn entry(out: &mut String, o: &Opt) {
    out.push_str("  ");
    out.push_str(o.0);
    let at = 2 + o.0.len();
    if at + 2 <= DESC_COL {
        out.push_str(&" ".repeat(DESC_COL - at));
    } else {
        out.push('\n');
        out.push_str(&" ".repeat(DESC_COL));
    }
    wrap_into(out, o.1, DESC_COL);
}

/// `text` wrapped at [`WIDTH`], the first line continuing where `out` is, the others
/// indented by `indent`.
fn wrap_into(out: &mut String, text: &str, indent: usize) {
    let mut col = indent;
    let mut first = true;
    for word in text.split_whitespace() {
        if !first && col + 1 + word.len() > WIDTH {
            out.push('\n');
            out.push_str(&" ".repeat(indent));
            col = indent;
            first = true;
        }
        if !first {
            out.push(' ');
            col += 1;
        }
        out.push_str(word);
        col += word.len();
        first = false;
    }
    out.push('\n');
}

/// Every long flag `--help` names (in an entry's flags or its text), without dashes.
pub fn long_flags() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = Vec::new();
    for s in sections() {
        for o in s.options {
            for text in [o.0, o.1] {
                for (i, _) in text.match_indices("--") {
                    let rest = &text[i + 2..];
                    let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '-')).unwrap_or(rest.len());
                    let name = rest[..end].trim_end_matches('-');
                    if name.len() > 1 && !names.contains(&name) {
                        names.push(name);
                    }
                }
            }
        }
    }
    names
}

/// The long flags closest to the unknown `--name` (edit distance, transpositions counting
/// one, as git's and cargo's suggestions), or the one flag it begins; empty if none is near.
pub fn did_you_mean(name: &str) -> Vec<&'static str> {
    let flags = long_flags();
    let name = name.to_ascii_lowercase().replace('_', "-");
    if let Some(exact) = flags.iter().find(|f| **f == name) {
        return vec![exact]; // --Data_Dir
    }
    let limit = (name.len() / 3).clamp(1, 3);
    let scored: Vec<(usize, &'static str)> =
        flags.iter().map(|f| (strsim::osa_distance(&name, f), *f)).filter(|(d, _)| *d <= limit).collect();
    if let Some(best) = scored.iter().map(|(d, _)| *d).min() {
        return scored.into_iter().filter(|(d, _)| *d == best).map(|(_, f)| f).collect();
    }
    // A beginning (`--invalid`): the shortest flag it begins, if the others begin with it.
    let prefixed: Vec<&'static str> = flags.into_iter().filter(|f| name.len() >= 3 && f.starts_with(&name)).collect();
    match prefixed.iter().min_by_key(|f| f.len()) {
        Some(short) if prefixed.iter().all(|f| f.starts_with(short)) => vec![short],
        _ => Vec::new(),
    }
}

/// The error for an unknown option: lexopt's words, then the suggestion if there is one.
pub fn unknown_option(arg: &str, lexopt_message: String) -> String {
    let Some(name) = arg.strip_prefix("--") else { return lexopt_message };
    let name = name.split('=').next().unwrap_or(name);
    match did_you_mean(name).as_slice() {
        [] => format!("{lexopt_message} (sqlcached --help lists the options)"),
        [one] => format!("{lexopt_message}: did you mean --{one}?"),
        many => format!(
            "{lexopt_message}: did you mean {}?",
            many.iter().map(|f| format!("--{f}")).collect::<Vec<_>>().join(" or ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shape help2man parses: `Usage:` first, option lines at column 2, descriptions and
    /// their continuations at exactly DESC_COL, nothing wider than WIDTH.
    #[test]
    fn help_is_laid_out_for_help2man() {
        let text = usage();
        assert!(text.starts_with("Usage: sqlcached [OPTION]...\n\n"));
        assert!(text.contains("\n\nOptions:\n"));
        for line in text.lines() {
            assert!(line.len() <= WIDTH, "too wide: {line:?}");
            let indent = line.len() - line.trim_start().len();
            assert!(
                [0, 2, DESC_COL].contains(&indent),
                "an option starts at column 2, a description at {DESC_COL}: {line:?}"
            );
            if let Some(gap) = line[indent..].find("  ").filter(|_| indent == 2) {
                // An option with its description on the same line.
                let desc = indent + gap;
                let start = desc + line[desc..].len() - line[desc..].trim_start().len();
                assert_eq!(start, DESC_COL, "{line:?}");
            }
        }
    }

    /// Every long flag the parser takes is documented.
    #[test]
    fn every_flag_is_in_the_help() {
        let documented = long_flags();
        let parsed = crate::persistence::FLAGS
            .iter()
            .chain(crate::persistence::SWITCHES)
            .chain(crate::postgres::SWITCHES)
            .chain(crate::mysql::FLAGS)
            .chain(crate::invalidate::FLAGS)
            .chain(&[
                "port",
                "udp-port",
                "unix-socket",
                "unix-mask",
                "enable-shutdown",
                "listen",
                "memory-limit",
                "disable-evictions",
                "conn-limit",
                "verbose",
                "help",
                "version",
                "license",
                "threads",
                "max-reqs-per-event",
                "disable-cas",
                "listen-backlog",
                "protocol",
                "max-item-size",
                "disable-flush-all",
                "prefix-delimiter",
                "pidfile",
                "user",
                "lock-memory",
                "enable-coredumps",
                "slab-growth-factor",
                "slab-min-size",
                "enable-largepages",
                "disable-dumping",
                "disable-watch",
                "extended",
                "containers",
                "metrics-listen",
                "log-format",
                "daemon",
                "enable-sasl",
                "auth-file",
                "enable-ssl",
                "config",
                "check-config",
            ]);
        for flag in parsed {
            assert!(documented.contains(flag), "--{flag} is parsed but not in --help");
        }
    }

    #[test]
    fn suggestions() {
        assert_eq!(did_you_mean("data-dri"), ["data-dir"]);
        assert_eq!(did_you_mean("datadir"), ["data-dir"]);
        assert_eq!(did_you_mean("data_dir"), ["data-dir"]);
        assert_eq!(did_you_mean("metrics-listn"), ["metrics-listen"]);
        assert_eq!(did_you_mean("mysql-backnd"), ["mysql-backend"]);
        assert_eq!(did_you_mean("containres"), ["containers"]);
        assert_eq!(did_you_mean("invalid"), ["invalidate"]);
        assert!(did_you_mean("frobnicate").is_empty());
        let e = unknown_option("--data-dri=/x", "invalid option '--data-dri'".into());
        assert_eq!(e, "invalid option '--data-dri': did you mean --data-dir?");
        assert!(unknown_option("--zzzzzz", "invalid option '--zzzzzz'".into()).contains("--help"));
    }
}
