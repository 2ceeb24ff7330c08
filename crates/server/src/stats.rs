//! `stats` and its subcommands, with memcached's stat names.
//!
//! Figures that only exist inside memcached's slab allocator or LRU maintainer are not
//! invented: `stats items` and `stats slabs` report sqlcached's items grouped by the
//! slab class memcached would have used, with the counters sqlcached really keeps.

use std::sync::atomic::Ordering;

use protocol_memcache::text::{reply, Tokens};

use crate::ctx::{Ctx, Flow};
use crate::slab;
use crate::text::VERSION;

/// Run `stats [sub]`.
pub fn execute(args: &Tokens<'_>, ctx: &Ctx<'_>, out: &mut Vec<u8>) -> Flow {
    match args.get(0) {
        b"" => general(ctx, out),
        b"reset" => {
            ctx.shared.engine.reset_stats();
            ctx.shared.reset_stats();
            out.extend_from_slice(reply::RESET);
            return Flow::Continue;
        }
        b"settings" => settings(ctx, out),
        b"items" => items(ctx, out),
        b"slabs" => slabs(ctx, out),
        b"conns" => conns(ctx, out),
        b"detail" => {
            match args.get(1) {
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
            }
            return Flow::Continue;
        }
        b"sizes" => {
            out.extend_from_slice(b"STAT sizes_status disabled\r\n");
        }
        b"cachedump" => {
            cachedump(args, ctx, out);
            return Flow::Continue;
        }
        _ => {
            out.extend_from_slice(reply::ERROR);
            return Flow::Continue;
        }
    }
    out.extend_from_slice(reply::END);
    Flow::Continue
}

fn rusage() -> (f64, f64) {
    // SAFETY: getrusage fills the struct we pass; a zeroed rusage is a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_SELF with a valid out pointer.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    (t(ru.ru_utime), t(ru.ru_stime))
}

fn general(ctx: &Ctx<'_>, out: &mut Vec<u8>) {
    let sh = ctx.shared;
    let e = sh.engine.stats();
    let clock = sh.engine.clock();
    let i = &e.items;
    let (user, sys) = rusage();
    let s = |out: &mut Vec<u8>, n: &str, v: &dyn std::fmt::Display| reply::stat(out, n, v);
    s(out, "pid", &std::process::id());
    s(out, "uptime", &clock.uptime());
    s(out, "time", &clock.unix_now());
    s(out, "version", &VERSION);
    s(out, "sqlcached_version", &env!("CARGO_PKG_VERSION"));
    s(out, "pointer_size", &(usize::BITS));
    s(out, "rusage_user", &format!("{user:.6}"));
    s(out, "rusage_system", &format!("{sys:.6}"));
    s(out, "max_connections", &sh.cfg.max_connections);
    s(out, "curr_connections", &sh.curr_connections.load(Ordering::Relaxed));
    s(out, "total_connections", &sh.total_connections.load(Ordering::Relaxed));
    s(out, "rejected_connections", &sh.rejected_connections.load(Ordering::Relaxed));
    s(out, "connection_structures", &sh.curr_connections.load(Ordering::Relaxed));
    s(out, "cmd_get", &i.cmd_get);
    s(out, "cmd_set", &i.cmd_set);
    s(out, "cmd_flush", &e.cmd_flush);
    s(out, "cmd_touch", &i.cmd_touch);
    s(out, "cmd_meta", &sh.sum(|w| &w.cmd_meta));
    s(out, "get_hits", &i.get_hits);
    s(out, "get_misses", &i.get_misses);
    s(out, "get_expired", &i.get_expired);
    s(out, "get_flushed", &i.get_flushed);
    s(out, "delete_misses", &i.delete_misses);
    s(out, "delete_hits", &i.delete_hits);
    s(out, "incr_misses", &i.incr_misses);
    s(out, "incr_hits", &i.incr_hits);
    s(out, "decr_misses", &i.decr_misses);
    s(out, "decr_hits", &i.decr_hits);
    s(out, "cas_misses", &i.cas_misses);
    s(out, "cas_hits", &i.cas_hits);
    s(out, "cas_badval", &i.cas_badval);
    s(out, "touch_hits", &i.touch_hits);
    s(out, "touch_misses", &i.touch_misses);
    s(out, "store_too_large", &i.store_too_large);
    s(out, "store_no_memory", &i.store_no_memory);
    s(out, "auth_cmds", &0);
    s(out, "auth_errors", &0);
    s(out, "bytes_read", &sh.sum(|w| &w.bytes_read));
    s(out, "bytes_written", &sh.sum(|w| &w.bytes_written));
    s(out, "limit_maxbytes", &e.limit_maxbytes);
    s(out, "accepting_conns", &1);
    s(out, "listen_disabled_num", &0);
    s(out, "time_in_listen_disabled_us", &0);
    s(out, "threads", &sh.cfg.threads);
    s(out, "conn_yields", &sh.sum(|w| &w.conn_yields));
    s(out, "bytes", &e.bytes);
    s(out, "curr_items", &i.curr_items);
    s(out, "total_items", &i.total_items);
    s(out, "expired_unfetched", &i.expired_unfetched);
    s(out, "evicted_unfetched", &i.evicted_unfetched);
    s(out, "evictions", &i.evictions);
    s(out, "reclaimed", &i.reclaimed);
    s(out, "engine_shards", &sh.engine.shard_count());
    if let Some(proxy) = &sh.mysql {
        proxy.write_stats(&mut |name, value| reply::stat(out, name, value));
    }
    if let Some(sql) = &sh.sql {
        for (name, value) in sql.stats_lines() {
            s(out, &name, &value);
        }
    }
    if let Some(tier) = sh.engine.tier() {
        s(out, "disk_hits", &i.tier_hits);
        for (name, value) in tier.stats() {
            s(out, name, &value);
        }
    }
}

fn settings(ctx: &Ctx<'_>, out: &mut Vec<u8>) {
    let c = &ctx.shared.cfg;
    let yn = |b: bool| if b { "yes" } else { "no" };
    let s = |out: &mut Vec<u8>, n: &str, v: &dyn std::fmt::Display| reply::stat(out, n, v);
    s(out, "maxbytes", &ctx.shared.engine.memory_limit());
    s(out, "maxconns", &c.max_connections);
    s(out, "tcpport", &c.port);
    s(out, "udpport", &c.udp_port);
    s(out, "inter", &if c.listen.is_empty() { "NULL".to_string() } else { c.listen.join(",") });
    s(out, "verbosity", &ctx.shared.verbose());
    s(out, "oldest", &0);
    s(out, "evictions", &if c.disable_evictions { "off" } else { "on" });
    s(out, "domain_socket", &c.unix_socket.clone().unwrap_or_else(|| "NULL".into()));
    s(out, "umask", &format!("{:o}", c.unix_mask));
    s(out, "shutdown_command", &yn(c.enable_shutdown));
    s(out, "num_threads", &c.threads);
    s(out, "stat_key_prefix", &c.prefix_delimiter);
    s(out, "detail_enabled", &"no");
    s(out, "reqs_per_event", &c.reqs_per_event);
    s(out, "cas_enabled", &yn(!c.disable_cas));
    s(out, "tcp_backlog", &c.backlog);
    s(out, "binding_protocol", &c.protocol);
    s(out, "auth_enabled_sasl", &"no");
    s(out, "auth_enabled_ascii", &"no");
    s(out, "item_size_max", &c.item_size_max);
    s(out, "maxconns_fast", &"yes");
    s(out, "flush_enabled", &yn(!c.disable_flush_all));
    s(out, "dump_enabled", &"no");
    s(out, "idle_timeout", &c.idle_timeout);
    s(out, "ssl_enabled", &"no");
    s(out, "eviction_policy", &"s3-fifo");
    s(out, "engine_shards", &ctx.shared.engine.shard_count());
}

/// Items of one memcached slab class.
#[derive(Default)]
struct ClassStats {
    number: u64,
    age: u32,
    bytes: u64,
}

/// Group live items by the slab class memcached would use for them.
fn class_stats(ctx: &Ctx<'_>) -> std::collections::BTreeMap<u32, ClassStats> {
    let engine = &ctx.shared.engine;
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

fn items(ctx: &Ctx<'_>, out: &mut Vec<u8>) {
    for (cls, c) in class_stats(ctx) {
        let p = |n: &str| format!("items:{cls}:{n}");
        reply::stat(out, &p("number"), c.number);
        reply::stat(out, &p("age"), c.age);
        reply::stat(out, &p("mem_requested"), c.bytes);
    }
}

fn slabs(ctx: &Ctx<'_>, out: &mut Vec<u8>) {
    let classes = class_stats(ctx);
    for (cls, c) in &classes {
        let p = |n: &str| format!("{cls}:{n}");
        reply::stat(out, &p("chunk_size"), slab::class_size(*cls));
        reply::stat(out, &p("used_chunks"), c.number);
        reply::stat(out, &p("mem_requested"), c.bytes);
    }
    reply::stat(out, "active_slabs", classes.len());
    reply::stat(out, "total_malloced", ctx.shared.engine.mem_used());
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

fn conns(ctx: &Ctx<'_>, out: &mut Vec<u8>) {
    let now = ctx.shared.engine.clock().now();
    for (id, c) in ctx.shared.conns.lock().iter() {
        reply::stat(out, &format!("{id}:addr"), &c.addr);
        reply::stat(out, &format!("{id}:listen_addr"), &c.listen_addr);
        reply::stat(out, &format!("{id}:state"), "conn_parse_cmd");
        reply::stat(out, &format!("{id}:secs_since_last_cmd"), now.saturating_sub(c.last_cmd.load(Ordering::Relaxed)));
    }
}
