//! Where a key lives: memory (or disk-backed memory) or a SQL container, and the container
//! side of execution. Every front end (text, meta, binary) asks [`key`] and gets a
//! [`Routed`]; a container key becomes a [`Place`] whose operations return the same
//! outcome types as `engine::ops`, later ([`Later`]), so one composer per protocol serves
//! both (`compose/`). `bind` and which commands the containers claim live here too.

use std::sync::Arc;

use engine::ops::{ArithOutcome, ArithRequest, DeleteOutcome, StoreOutcome, StoreRequest};
use protocol_memcache::binary::Opcode;
use protocol_memcache::meta::MetaCmd;
use protocol_memcache::text::{split_keys, Command};
use sql_containers::{Reply, Request, Row};

use crate::containers::{Slot, Sql, Target};
use crate::ctx::Ctx;
use crate::pending::{Fail, Later};

/// `bind <name>`: bind the connection to a container. `None` if the line is not `bind`.
pub fn bind_line(slot: &Slot, line: &[u8], ctx: &Ctx<'_>) -> Option<Vec<u8>> {
    let mut toks = line.split(|&b| b == b' ').filter(|t| !t.is_empty());
    if toks.next() != Some(b"bind") {
        return None;
    }
    let Some(sql) = slot.get() else {
        return Some(slot.unavailable().line());
    };
    Some(match (toks.next(), toks.next()) {
        (Some(name), None) => match sql.index(name) {
            Some(i) => {
                ctx.bound.set(Some(i));
                b"OK\r\n".to_vec()
            }
            None => Sql::unknown(name).line(),
        },
        _ => b"CLIENT_ERROR bad command line format.  Usage: bind <container>\r\n".to_vec(),
    })
}

/// Does `key` go to the containers (loaded or waiting for their backend)?
fn claims_key(slot: &Slot, ctx: &Ctx<'_>, key: &[u8]) -> bool {
    match slot.get() {
        Some(sql) => sql.claims(&ctx.bound, key),
        None => slot.waiting_claims(key),
    }
}

/// Is this connection bound to a container (so keyless commands go there)?
fn bound(slot: &Slot, ctx: &Ctx<'_>) -> bool {
    match slot.get() {
        Some(sql) => sql.binding(&ctx.bound).is_some(),
        None => slot.waiting_claims_keyless(),
    }
}

/// Does this text (or meta) command go to the containers? (Such commands skip the memory
/// tier's own checks: disk refusal, the memory size precheck.)
pub fn claims(ctx: &Ctx<'_>, cmd: &Command<'_>) -> bool {
    let Some(slot) = &ctx.shared.sql else {
        return false;
    };
    match cmd {
        Command::Get { keys, .. } | Command::Gat { keys, .. } => {
            bound(slot, ctx) || split_keys(keys).any(|k| k.starts_with(b"@@"))
        }
        Command::Store { key, .. }
        | Command::Delete { key, .. }
        | Command::Arith { key, .. }
        | Command::Touch { key, .. } => claims_key(slot, ctx, key),
        Command::FlushAll { .. } => bound(slot, ctx),
        Command::Meta(m) => {
            matches!(m.cmd, MetaCmd::Get | MetaCmd::Set | MetaCmd::Delete | MetaCmd::Arith)
                && claims_key(slot, ctx, &m.key)
        }
        _ => false,
    }
}

/// Does this binary request go to the containers?
pub fn binary_claims(ctx: &Ctx<'_>, op: Opcode, key: &[u8]) -> bool {
    let Some(slot) = &ctx.shared.sql else {
        return false;
    };
    matches!(
        op.base(),
        Opcode::Get
            | Opcode::GetK
            | Opcode::Touch
            | Opcode::Gat
            | Opcode::GatK
            | Opcode::Set
            | Opcode::Add
            | Opcode::Replace
            | Opcode::Append
            | Opcode::Prepend
            | Opcode::Delete
            | Opcode::Increment
            | Opcode::Decrement
    ) && claims_key(slot, ctx, key)
}

/// Where one key's command runs.
pub enum Routed {
    /// The memory engine (and its disk tier).
    Memory,
    /// A container.
    Container(Place),
    /// `@@name` alone: the connection is now bound to it; the error for commands that need a
    /// key (`mg` answers a miss instead, like `get @@name`).
    Bind(Fail),
    /// A wrong key (unknown container): the error, not sent under `noreply`.
    Refused(Fail),
    /// The containers are unavailable: the error, sent even under `noreply` like
    /// memcached's other `SERVER_ERROR` replies.
    Down(Fail),
}

/// Route `key` for this connection (binding it where `@@name` binds).
pub fn key(ctx: &Ctx<'_>, key: &[u8]) -> Routed {
    let Some(slot) = &ctx.shared.sql else {
        return Routed::Memory;
    };
    if !claims_key(slot, ctx, key) {
        return Routed::Memory;
    }
    let Some(sql) = slot.get() else {
        return Routed::Down(slot.unavailable());
    };
    match sql.route(&ctx.bound, key) {
        Target::Memory => Routed::Memory,
        Target::Container(i, k) => {
            let use_cas = ctx.shared.engine.config().use_cas;
            Routed::Container(Place { sql: sql.clone(), i, key: k.to_vec(), use_cas })
        }
        Target::Bind(i) => Routed::Bind(sql.missing_key(i)),
        Target::Unknown(n) => Routed::Refused(Sql::unknown(n)),
    }
}

/// A key in a container: the operations the front ends run on it.
pub struct Place {
    /// The containers.
    pub sql: Arc<Sql>,
    /// Which container.
    pub i: usize,
    /// The key in it (without `@@name.`).
    pub key: Vec<u8>,
    /// `-C` off: CAS values are reported as 0, as for memory keys.
    pub use_cas: bool,
}

/// Run `req` on container `i` and keep the reply `pick` expects.
fn run<T: Send + 'static>(sql: Arc<Sql>, i: usize, req: Request, pick: fn(Reply) -> Option<T>) -> Later<T> {
    Box::pin(async move {
        let r = sql.run(i, req).await?;
        pick(r).ok_or_else(|| Fail::Server("internal: unexpected container answer".into()))
    })
}

impl Place {
    /// get (`touch` None) or gat: the row, if any.
    pub fn get(self, touch: Option<i64>) -> Later<Option<Row>> {
        let use_cas = self.use_cas;
        let rows = get_many(self.sql, self.i, vec![self.key], touch, use_cas);
        Box::pin(async move { Ok(rows.await?.pop().flatten()) })
    }

    /// A store, as `engine::ops::store` takes it (the meta-only fields do not apply).
    pub fn store(self, r: &StoreRequest<'_>) -> Later<StoreOutcome> {
        let req = Request::Store {
            mode: r.mode,
            key: self.key,
            value: r.value.to_vec(),
            flags: r.flags,
            exptime: r.exptime,
            cas: r.cas,
        };
        let stored = run(self.sql, self.i, req, |r| match r {
            Reply::Store(o) => Some(o),
            _ => None,
        });
        if self.use_cas {
            return stored;
        }
        Box::pin(async move {
            Ok(match stored.await? {
                StoreOutcome::Stored(_) => StoreOutcome::Stored(0),
                o => o,
            })
        })
    }

    /// delete (`cas`: only if the row's CAS is this, 0 included).
    pub fn delete(self, cas: Option<u64>) -> Later<DeleteOutcome> {
        run(self.sql, self.i, Request::Delete { key: self.key, cas }, |r| match r {
            Reply::Delete(o) => Some(o),
            _ => None,
        })
    }

    /// incr/decr as `engine::ops::arith` takes it: `create` makes a missing key (value,
    /// exptime), `cas` != 0 compares first, `touch` sets a new exptime on success.
    pub fn arith(self, r: &ArithRequest<'_>) -> Later<ArithOutcome> {
        let req =
            Request::Arith { key: self.key, incr: r.incr, delta: r.delta, init: r.create, cas: r.cas, touch: r.touch };
        let done = run(self.sql, self.i, req, |r| match r {
            Reply::Arith(o) => Some(o),
            _ => None,
        });
        if self.use_cas {
            return done;
        }
        Box::pin(async move {
            Ok(match done.await? {
                ArithOutcome::Done { value, created, .. } => ArithOutcome::Done { value, cas: 0, created },
                o => o,
            })
        })
    }

    /// touch: whether the key was there.
    pub fn touch(self, exptime: i64) -> Later<bool> {
        run(self.sql, self.i, Request::Touch { key: self.key, exptime }, |r| match r {
            Reply::Touch(row) => Some(row.is_some()),
            _ => None,
        })
    }
}

/// A store refused as too large (`-I`) before its data was read: for a `set` on a
/// `cache_only` container key, the old value goes, as memcached unlinks it. A SQL row stays:
/// the table is the data of record, and a refused write must not remove it.
pub fn too_large(ctx: &Ctx<'_>, key: &[u8], is_set: bool) {
    if let (true, Routed::Container(p)) = (is_set, self::key(ctx, key)) {
        p.sql.forget_cache_only(p.i, &p.key);
    }
}

/// The container a bound connection's keyless commands (`flush_all`) go to.
pub fn bound_container(ctx: &Ctx<'_>) -> Option<Result<(Arc<Sql>, usize), Fail>> {
    let slot = ctx.shared.sql.as_ref()?;
    if !bound(slot, ctx) {
        return None;
    }
    Some(match slot.get() {
        Some(sql) => sql.binding(&ctx.bound).map(|i| (sql.clone(), i)).ok_or_else(|| slot.unavailable()),
        None => Err(slot.unavailable()),
    })
}

/// flush_all on container `i` (empties its table).
pub fn flush(sql: Arc<Sql>, i: usize) -> Later<()> {
    run(sql, i, Request::Flush, |_| Some(()))
}

/// One get over several keys of container `i`, rows in key order (CAS 0 unless `use_cas`).
pub fn get_many(
    sql: Arc<Sql>,
    i: usize,
    keys: Vec<Vec<u8>>,
    touch: Option<i64>,
    use_cas: bool,
) -> Later<Vec<Option<Row>>> {
    let rows = run(sql, i, Request::Get { keys, touch }, |r| match r {
        Reply::Rows(rows) => Some(rows),
        _ => None,
    });
    Box::pin(async move {
        let mut rows = rows.await?;
        if !use_cas {
            rows.iter_mut().flatten().for_each(|r| r.cas = 0);
        }
        Ok(rows)
    })
}
