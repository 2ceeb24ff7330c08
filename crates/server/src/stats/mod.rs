//! `stats` and its subcommands, with memcached's stat names.
//!
//! Figures that only exist inside memcached's slab allocator or LRU maintainer are not
//! invented: `stats items` and `stats slabs` report sqlcached's items grouped by the
//! slab class memcached would have used, with the counters sqlcached really keeps.

use std::sync::atomic::Ordering;

use engine::stats::{Kind, StatSink};
use protocol_memcache::text::{reply, Tokens};

use crate::ctx::{Ctx, Flow};
use crate::shared::Shared;
use crate::slab;
use crate::VERSION;

mod sinks;

pub use sinks::{BinarySink, TextSink};

/// Run `stats [sub]` on the text protocol.
pub fn execute(args: &Tokens<'_>, ctx: &Ctx<'_>, out: &mut Vec<u8>) -> Flow {
    match args.get(0) {
        b"reset" => {
            reset(ctx);
            out.extend_from_slice(reply::RESET);
        }
        b"detail" => match args.get(1) {
            b"on" => {
                ctx.shared.detail.set_enabled(true);
                out.extend_from_slice(b"OK\r\n");
            }
            b"off" => {
                ctx.shared.detail.set_enabled(false);
                out.extend_from_slice(b"OK\r\n");
            }
            b"dump" => ctx.shared.detail.dump(out),
            _ => out.extend_from_slice(b"CLIENT_ERROR usage: stats detail on|off|dump\r\n"),
        },
        b"cachedump" => cachedump(args, ctx, out),
        sub => {
            if report(sub, ctx.shared, &mut TextSink(out)) {
                out.extend_from_slice(reply::END);
            } else {
                out.extend_from_slice(reply::ERROR);
            }
        }
    }
    Flow::Continue
}

/// `stats reset`: zero the engine's and the server's counters.
pub fn reset(ctx: &Ctx<'_>) {
    ctx.shared.engine.reset_stats();
    ctx.shared.reset_stats();
    ctx.shared.detail.clear();
    if let Some(proxy) = &ctx.shared.mysql {
        proxy.counters.reset();
        if let Some(cache) = &proxy.cache {
            cache.reset_digests();
        }
    }
    if let Some(proxy) = &ctx.shared.postgres {
        proxy.counters.reset();
    }
    if let Some(rules) = &ctx.shared.invalidate {
        rules.reset_stats();
    }
    if let Some(sql) = &ctx.shared.sql {
        sql.reset_stats();
    }
    if let Some(auth) = &ctx.shared.auth {
        auth.reset();
    }
    if let Some(sasl) = &ctx.shared.sasl {
        sasl.reset();
    }
}

/// The `stats [sub]` reports made of figures (general, `settings`, `items`, `slabs`,
/// `conns`, `sizes`, and sqlcached's `queries` and `tables`), written into `sink`; `false` for a sub-command that is not one.
pub fn report(sub: &[u8], shared: &Shared, sink: &mut dyn StatSink) -> bool {
    match sub {
        b"" => general(shared, sink),
        b"settings" => settings(shared, sink),
        b"items" => items(shared, sink),
        b"slabs" => slabs(shared, sink),
        b"conns" => conns(shared, sink),
        b"sizes" => sink.stat("sizes_status", Kind::Info, &"disabled"),
        // sqlcached's: the MySQL query digest table, top 50 by executions.
        b"queries" => {
            if let Some(proxy) = &shared.mysql {
                proxy.write_digests(50, sink);
            }
        }
        // sqlcached's: the PostgreSQL query digest table, top 50 by executions.
        b"pg_queries" => {
            if let Some(proxy) = &shared.postgres {
                proxy.write_digests(50, sink);
            }
        }
        // sqlcached's: the tables whose cached results were invalidated most, top 50.
        b"tables" => {
            if let Some(proxy) = &shared.mysql {
                proxy.write_tables(50, sink);
            }
        }
        _ => return false,
    }
    true
}

fn rusage() -> (f64, f64) {
    let (user, sys) = engine::clock::process_cpu();
    (user.as_secs_f64(), sys.as_secs_f64())
}

fn general(shared: &Shared, sink: &mut dyn StatSink) {
    let sh = shared;
    let e = sh.engine.stats();
    let clock = sh.engine.clock();
    let i = &e.items;
    let (user, sys) = rusage();
    sink.stat("pid", Kind::Info, &std::process::id());
    sink.stat("uptime", Kind::Gauge, &clock.uptime());
    sink.stat("time", Kind::Gauge, &clock.unix_now());
    sink.stat("version", Kind::Info, &VERSION);
    sink.stat("sqlcached_version", Kind::Info, &env!("CARGO_PKG_VERSION"));
    sink.stat("pointer_size", Kind::Info, &(usize::BITS));
    sink.stat("rusage_user", Kind::Counter, &format!("{user:.6}"));
    sink.stat("rusage_system", Kind::Counter, &format!("{sys:.6}"));
    sink.stat("max_connections", Kind::Gauge, &sh.cfg.max_connections);
    sink.stat("curr_connections", Kind::Gauge, &sh.curr_connections.load(Ordering::Relaxed));
    sink.stat("total_connections", Kind::Counter, &sh.total_connections.load(Ordering::Relaxed));
    sink.stat("rejected_connections", Kind::Counter, &sh.rejected_connections.load(Ordering::Relaxed));
    sink.stat("connection_structures", Kind::Gauge, &sh.curr_connections.load(Ordering::Relaxed));
    sink.stat("cmd_get", Kind::Counter, &i.cmd_get);
    sink.stat("cmd_set", Kind::Counter, &i.cmd_set);
    sink.stat("cmd_flush", Kind::Counter, &e.cmd_flush);
    sink.stat("cmd_touch", Kind::Counter, &i.cmd_touch);
    sink.stat("cmd_meta", Kind::Counter, &sh.sum(|w| &w.cmd_meta));
    sink.stat("get_hits", Kind::Counter, &i.get_hits);
    sink.stat("get_misses", Kind::Counter, &i.get_misses);
    sink.stat("get_expired", Kind::Counter, &i.get_expired);
    sink.stat("get_flushed", Kind::Counter, &i.get_flushed);
    sink.stat("delete_misses", Kind::Counter, &i.delete_misses);
    sink.stat("delete_hits", Kind::Counter, &i.delete_hits);
    sink.stat("incr_misses", Kind::Counter, &i.incr_misses);
    sink.stat("incr_hits", Kind::Counter, &i.incr_hits);
    sink.stat("decr_misses", Kind::Counter, &i.decr_misses);
    sink.stat("decr_hits", Kind::Counter, &i.decr_hits);
    sink.stat("cas_misses", Kind::Counter, &i.cas_misses);
    sink.stat("cas_hits", Kind::Counter, &i.cas_hits);
    sink.stat("cas_badval", Kind::Counter, &i.cas_badval);
    sink.stat("touch_hits", Kind::Counter, &i.touch_hits);
    sink.stat("touch_misses", Kind::Counter, &i.touch_misses);
    sink.stat("store_too_large", Kind::Counter, &i.store_too_large);
    sink.stat("store_no_memory", Kind::Counter, &i.store_no_memory);
    let auth = |f: fn(&crate::auth::AuthFile) -> &std::sync::atomic::AtomicU64| {
        sh.auth.as_deref().map_or(0, |a| f(a).load(Ordering::Relaxed))
    };
    let sasl = |f: fn(&crate::sasl::Sasl) -> &std::sync::atomic::AtomicU64| {
        sh.sasl.as_deref().map_or(0, |a| f(a).load(Ordering::Relaxed))
    };
    sink.stat("auth_cmds", Kind::Counter, &(auth(|a| &a.cmds) + sasl(|s| &s.cmds)));
    sink.stat("auth_errors", Kind::Counter, &(auth(|a| &a.errors) + sasl(|s| &s.errors)));
    sink.stat("bytes_read", Kind::Counter, &sh.sum(|w| &w.bytes_read));
    sink.stat("bytes_written", Kind::Counter, &sh.sum(|w| &w.bytes_written));
    sink.stat("limit_maxbytes", Kind::Gauge, &e.limit_maxbytes);
    sink.stat("accepting_conns", Kind::Gauge, &1);
    sink.stat("listen_disabled_num", Kind::Gauge, &0);
    sink.stat("time_in_listen_disabled_us", Kind::Counter, &0);
    sink.stat("threads", Kind::Gauge, &sh.cfg.threads);
    sink.stat("conn_yields", Kind::Counter, &sh.sum(|w| &w.conn_yields));
    if let Some(tls) = &sh.tls {
        if tls.settings().session_cache {
            sink.stat("ssl_new_sessions", Kind::Counter, &tls.new_sessions.load(Ordering::Relaxed));
        }
        sink.stat("ssl_handshake_errors", Kind::Counter, &tls.handshake_errors.load(Ordering::Relaxed));
        let since = clock.now().saturating_sub(tls.refreshed_at.load(Ordering::Relaxed));
        sink.stat("time_since_server_cert_refresh", Kind::Gauge, &since);
    }
    sink.stat("bytes", Kind::Gauge, &e.bytes);
    sink.stat("curr_items", Kind::Gauge, &i.curr_items);
    sink.stat("total_items", Kind::Counter, &i.total_items);
    sink.stat("expired_unfetched", Kind::Counter, &i.expired_unfetched);
    sink.stat("evicted_unfetched", Kind::Counter, &i.evicted_unfetched);
    sink.stat("evictions", Kind::Counter, &i.evictions);
    sink.stat("reclaimed", Kind::Counter, &i.reclaimed);
    sink.stat("engine_shards", Kind::Gauge, &sh.engine.shard_count());
    if let Some(proxy) = &sh.mysql {
        proxy.write_stats(sink);
    }
    if let Some(proxy) = &sh.postgres {
        proxy.write_stats(sink);
    }
    sh.feeds.write_stats(sink);
    if let Some(rules) = &sh.invalidate {
        rules.write_stats(sink);
    }
    if let Some(sql) = &sh.sql {
        sql.write_stats(sink);
    }
    if let Some(tier) = sh.engine.tier() {
        sink.stat("disk_hits", Kind::Counter, &i.tier_hits);
        tier.stats(sink);
    }
    sh.budget.stats(sink);
    crate::memory::write_stats(sink);
    crate::timing::write(sh.workers.iter().map(|w| &w.latency), sink);
}

fn settings(shared: &Shared, sink: &mut dyn StatSink) {
    let c = &shared.cfg;
    let yn = |b: bool| if b { "yes" } else { "no" };
    let mut s = |n: &str, v: &dyn std::fmt::Display| sink.stat(n, Kind::Info, v);
    s("maxbytes", &shared.engine.memory_limit());
    s("maxconns", &c.max_connections);
    s("tcpport", &c.port);
    s("udpport", &c.udp_port);
    s("inter", &if c.listen.is_empty() { "NULL".to_string() } else { c.listen.join(",") });
    s("verbosity", &shared.verbose());
    s("oldest", &0);
    s("evictions", &if c.disable_evictions { "off" } else { "on" });
    s("domain_socket", &c.unix_socket.clone().unwrap_or_else(|| "NULL".into()));
    s("umask", &format!("{:o}", c.unix_mask));
    s("shutdown_command", &yn(c.enable_shutdown));
    s("num_threads", &c.threads);
    s("stat_key_prefix", &c.prefix_delimiter);
    s("detail_enabled", &yn(shared.detail.enabled()));
    s("reqs_per_event", &c.reqs_per_event);
    s("cas_enabled", &yn(!c.disable_cas));
    s("tcp_backlog", &c.backlog);
    s("binding_protocol", &c.protocol);
    s("auth_enabled_sasl", &yn(shared.sasl.is_some()));
    // memcached shows the file's path here when -Y is on.
    s("auth_enabled_ascii", &shared.auth.as_ref().map_or("no", |a| a.path.as_str()));
    s("item_size_max", &c.item_size_max);
    s("maxconns_fast", &"yes");
    s("flush_enabled", &yn(!c.disable_flush_all));
    s("dump_enabled", &"no");
    s("idle_timeout", &c.idle_timeout);
    let t = &c.tls;
    let or_null = |v: &Option<String>| v.clone().unwrap_or_else(|| "NULL".into());
    s("ssl_enabled", &yn(t.enabled));
    // memcached prints its (possibly NULL) strings with %s here.
    s("ssl_chain_cert", &t.chain_cert.as_deref().unwrap_or("(null)"));
    s("ssl_key", &t.key.as_deref().unwrap_or("(null)"));
    s("ssl_verify_mode", &t.verify_mode_flags());
    s("ssl_keyformat", &t.keyformat);
    s("ssl_ciphers", &or_null(&t.ciphers));
    s("ssl_ca_cert", &or_null(&t.ca_cert));
    s("ssl_wbuf_size", &t.wbuf_size);
    s("ssl_session_cache", &yn(t.session_cache));
    s("ssl_kernel_tls", &yn(t.kernel_tls));
    s("ssl_min_version", &t.min_version_text());
    s("eviction_policy", &"s3-fifo");
    s("engine_shards", &shared.engine.shard_count());
    s("worker_rotation_us", &crate::rotate::interval_us());
    // Which kernel interface serves memcached connections in clear (`--io-uring`).
    s("io_frontend", &if shared.io_uring.load(Ordering::Relaxed) { "io_uring" } else { "epoll" });
}

/// Items of one memcached slab class.
#[derive(Default)]
struct ClassStats {
    number: u64,
    age: u32,
    bytes: u64,
}

/// Group live items by the slab class memcached would use for them.
fn class_stats(shared: &Shared) -> std::collections::BTreeMap<u32, ClassStats> {
    let engine = &shared.engine;
    let use_cas = engine.config().use_cas;
    let now = engine.clock().now();
    let mut classes = std::collections::BTreeMap::<u32, ClassStats>::new();
    engine.for_each_item(|it| {
        let size = engine::item::memcached_item_size(it.key().len(), it.value().len(), it.flags, use_cas);
        let c = classes.entry(slab::class_of(size)).or_default();
        c.number += 1;
        c.bytes += size as u64;
        c.age = c.age.max(now.saturating_sub(it.atime));
    });
    classes
}

fn items(shared: &Shared, sink: &mut dyn StatSink) {
    for (cls, c) in class_stats(shared) {
        let p = |n: &str| format!("items:{cls}:{n}");
        sink.stat(&p("number"), Kind::Gauge, &c.number);
        sink.stat(&p("age"), Kind::Gauge, &c.age);
        sink.stat(&p("mem_requested"), Kind::Gauge, &c.bytes);
    }
}

fn slabs(shared: &Shared, sink: &mut dyn StatSink) {
    let classes = class_stats(shared);
    for (cls, c) in &classes {
        let p = |n: &str| format!("{cls}:{n}");
        sink.stat(&p("chunk_size"), Kind::Info, &slab::class_size(*cls));
        sink.stat(&p("used_chunks"), Kind::Gauge, &c.number);
        sink.stat(&p("mem_requested"), Kind::Gauge, &c.bytes);
    }
    sink.stat("active_slabs", Kind::Gauge, &classes.len());
    sink.stat("total_malloced", Kind::Gauge, &shared.engine.mem_used());
}

/// `stats cachedump <class> <limit>`: keys of one slab class (limit 0: all), as
/// `ITEM <key> [<bytes> b; <expiry unix time> s]`.
fn cachedump(args: &Tokens<'_>, ctx: &Ctx<'_>, out: &mut Vec<u8>) {
    use protocol_memcache::number::parse_u32;
    if args.len() < 3 {
        out.extend_from_slice(b"CLIENT_ERROR bad command line\r\n");
        return;
    }
    let (Some(id), Some(limit)) = (parse_u32(args.get(1)), parse_u32(args.get(2))) else {
        out.extend_from_slice(b"CLIENT_ERROR bad command line format\r\n");
        return;
    };
    if id >= 64 {
        out.extend_from_slice(b"CLIENT_ERROR Illegal slab id\r\n");
        return;
    }
    let engine = &ctx.shared.engine;
    let use_cas = engine.config().use_cas;
    let clock = engine.clock();
    let mut n = 0;
    engine.for_each_item(|it| {
        let size = engine::item::memcached_item_size(it.key().len(), it.value().len(), it.flags, use_cas);
        if slab::class_of(size) != id || (limit != 0 && n >= limit) || out.len() > 2 << 20 {
            return;
        }
        n += 1;
        out.extend_from_slice(b"ITEM ");
        out.extend_from_slice(it.key());
        out.extend_from_slice(format!(" [{} b; {} s]\r\n", it.value().len(), clock.to_unix(it.exptime)).as_bytes());
    });
    out.extend_from_slice(reply::END);
}

fn conns(shared: &Shared, sink: &mut dyn StatSink) {
    let now = shared.engine.clock().now();
    for (id, c) in shared.conns.lock().iter() {
        sink.stat(&format!("{id}:addr"), Kind::Info, &c.addr);
        sink.stat(&format!("{id}:listen_addr"), Kind::Info, &c.listen_addr);
        sink.stat(&format!("{id}:state"), Kind::Info, &"conn_parse_cmd");
        let idle = now.saturating_sub(c.last_cmd.load(Ordering::Relaxed));
        sink.stat(&format!("{id}:secs_since_last_cmd"), Kind::Gauge, &idle);
    }
}
