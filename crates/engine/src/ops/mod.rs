//! The operations memcached's commands are made of, independent of any protocol.
//!
//! One file per operation, as memcached's `do_store_item`, `do_add_delta`, ...:
//! the text, meta and binary front ends all call these, so they agree by construction.

pub mod arith;
pub mod delete;
pub mod get;
pub mod store;
pub mod touch;

pub use arith::{add_delta, arith, padded, parse_u64, ArithOutcome, ArithRequest};
pub use delete::{delete, DeleteOutcome};
pub use get::{get, GetOptions};
pub use store::{item_too_large, store, StoreMode, StoreOutcome, StoreRequest};
pub use touch::touch;
