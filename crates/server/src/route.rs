//! Where a key lives: the server's memory engine (and its disk tier) or a SQL container,
//! decided once per key of a request ([`key`], [`keyless`]) as a [`Where`] that
//! `crate::exec::run` takes. `bind` lives here too.

use std::sync::Arc;

use crate::containers::{Slot, Sql, Target};
use crate::ctx::Ctx;
use crate::pending::Fail;

/// Where one key's command runs.
pub enum Where {
    /// The memory engine (and its disk tier).
    Memory,
    /// A container.
    Container(Place),
    /// Nowhere: the error ([`Fail::Bound`]: `@@name` alone bound the connection;
    /// [`Fail::Down`]: the containers are not loaded; else a wrong key).
    Refused(Fail),
}

/// A key in a container.
pub struct Place {
    /// The containers.
    pub sql: Arc<Sql>,
    /// Which container.
    pub i: usize,
    /// Bytes of the client's key before the container's key (`@@name.`).
    skip: usize,
    /// `-C` off: CAS values are reported as 0, as for memory keys.
    pub use_cas: bool,
}

impl Place {
    /// The key in the container, from the key as the client wrote it.
    pub fn key<'k>(&self, key: &'k [u8]) -> &'k [u8] {
        &key[self.skip.min(key.len())..]
    }
}

/// `bind <name>`: bind the connection to a container (`Some(Err)`: why not); None if the
/// line is not `bind`.
pub fn bind_line(slot: &Slot, line: &[u8], ctx: &Ctx<'_>) -> Option<Result<(), Fail>> {
    let mut toks = line.split(|&b| b == b' ').filter(|t| !t.is_empty());
    if toks.next() != Some(b"bind") {
        return None;
    }
    Some(match (slot.get(), toks.next(), toks.next()) {
        (None, ..) => Err(slot.unavailable()),
        (Some(sql), Some(name), None) => match sql.index(name) {
            Some(i) => {
                ctx.bound.set(Some(i));
                Ok(())
            }
            None => Err(Sql::unknown(name)),
        },
        (Some(_), ..) => Err(Fail::Client("bad command line format.  Usage: bind <container>".into())),
    })
}

/// Route `key` for this connection (binding it where `@@name` binds).
#[inline(always)]
pub fn key(ctx: &Ctx<'_>, key: &[u8]) -> Where {
    match &ctx.shared.sql {
        None => Where::Memory,
        Some(slot) => with_containers(ctx, slot, key),
    }
}

/// [`key`] when the server has containers.
#[inline(never)]
fn with_containers(ctx: &Ctx<'_>, slot: &Slot, key: &[u8]) -> Where {
    let Some(sql) = slot.get() else {
        return if slot.waiting_claims(key) { Where::Refused(slot.unavailable()) } else { Where::Memory };
    };
    if !sql.claims(&ctx.bound, key) {
        return Where::Memory;
    }
    match sql.route(&ctx.bound, key) {
        Target::Memory => Where::Memory,
        Target::Container(i, k) => place(ctx, sql, i, key.len() - k.len()),
        Target::Bind(i) => Where::Refused(sql.missing_key(i)),
        Target::Unknown(n) => Where::Refused(Sql::unknown(n)),
    }
}

/// Where a command without a key (`flush_all`) runs: the connection's container if it is
/// bound to one, else memory.
pub fn keyless(ctx: &Ctx<'_>) -> Where {
    let Some(slot) = &ctx.shared.sql else {
        return Where::Memory;
    };
    match slot.get() {
        Some(sql) => match sql.binding(&ctx.bound) {
            Some(i) => place(ctx, sql, i, 0),
            None => Where::Memory,
        },
        None if slot.waiting_claims_keyless() => Where::Refused(slot.unavailable()),
        None => Where::Memory,
    }
}

/// Where commands the containers never claim run (`me`, which reads the memory engine).
pub fn unrouted() -> Where {
    Where::Memory
}

fn place(ctx: &Ctx<'_>, sql: &Arc<Sql>, i: usize, skip: usize) -> Where {
    let use_cas = ctx.shared.engine.config().use_cas;
    Where::Container(Place { sql: sql.clone(), i, skip, use_cas })
}
