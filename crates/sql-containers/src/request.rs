//! One memcached operation on a container, as the protocol front ends ask it, and what it
//! answered: the vocabulary the server routes container keys with (owned, so it outlives
//! the read buffer while the backend works).

use crate::{ArithOutcome, BackendError, Container, DeleteOutcome, Row, StoreMode, StoreOutcome};

/// A container operation (exptimes are memcached's wire values).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// get/gets (`touch` None) or gat/gats (`touch`: the new exptime; rows as found).
    Get {
        /// The keys, in request order.
        keys: Vec<Vec<u8>>,
        /// gat/gats: set this exptime on each row found.
        touch: Option<i64>,
    },
    /// set/add/replace/append/prepend/cas.
    Store {
        /// Which storage command.
        mode: StoreMode,
        /// The key.
        key: Vec<u8>,
        /// The data block.
        value: Vec<u8>,
        /// Client flags.
        flags: u32,
        /// Client exptime.
        exptime: i64,
        /// CAS to compare (0: none, except in `Cas` mode).
        cas: u64,
    },
    /// delete (`cas`: only if it matches, 0 included).
    Delete {
        /// The key.
        key: Vec<u8>,
        /// CAS to compare.
        cas: Option<u64>,
    },
    /// incr/decr.
    Arith {
        /// The key.
        key: Vec<u8>,
        /// incr (true) or decr.
        incr: bool,
        /// The amount.
        delta: u64,
        /// Create a missing key with this value and exptime (binary, meta `N`).
        init: Option<(u64, i64)>,
        /// CAS to compare first (0: none).
        cas: u64,
        /// On success, this new client exptime (meta `T`).
        touch: Option<i64>,
    },
    /// touch.
    Touch {
        /// The key.
        key: Vec<u8>,
        /// The new client exptime.
        exptime: i64,
    },
    /// flush_all on a bound connection (empties the table).
    Flush,
}

/// What a [`Request`] answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// One row per key of `Get` (None: absent or expired).
    Rows(Vec<Option<Row>>),
    /// What a store did.
    Store(StoreOutcome),
    /// What a delete did.
    Delete(DeleteOutcome),
    /// What incr/decr did.
    Arith(ArithOutcome),
    /// The touched row as found (old exptime), if any.
    Touch(Option<Row>),
    /// Flush done.
    Done,
}

impl Request {
    /// The keys the request names (none for `Flush`).
    pub fn keys(&self) -> Vec<Vec<u8>> {
        match self {
            Request::Get { keys, .. } => keys.clone(),
            Request::Store { key, .. }
            | Request::Delete { key, .. }
            | Request::Arith { key, .. }
            | Request::Touch { key, .. } => vec![key.clone()],
            Request::Flush => Vec::new(),
        }
    }
}

impl Container {
    /// Run `req` on the table.
    pub async fn execute(&self, req: Request) -> Result<Reply, BackendError> {
        Ok(match req {
            Request::Get { keys, touch: None } => {
                let ks: Vec<&[u8]> = keys.iter().map(|k| &k[..]).collect();
                Reply::Rows(self.get_many(&ks).await?)
            }
            Request::Get { keys, touch: Some(t) } => {
                let mut rows = Vec::with_capacity(keys.len());
                for k in &keys {
                    rows.push(self.touch(k, t).await?);
                }
                Reply::Rows(rows)
            }
            Request::Store { mode, key, value, flags, exptime, cas } => {
                Reply::Store(self.store(mode, &key, &value, flags, exptime, cas).await?)
            }
            Request::Delete { key, cas } => Reply::Delete(self.delete_if(&key, cas).await?),
            Request::Arith { key, incr, delta, init, cas, touch } => {
                Reply::Arith(self.arith_with(&key, incr, delta, init, cas, touch).await?)
            }
            Request::Touch { key, exptime } => Reply::Touch(self.touch(&key, exptime).await?),
            Request::Flush => {
                self.flush().await?;
                Reply::Done
            }
        })
    }
}
