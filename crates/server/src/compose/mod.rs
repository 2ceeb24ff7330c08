//! Replies composed once from outcomes, for every key whatever tier answered it (memory,
//! disk-backed memory, a SQL container): one composer per protocol (issue 16's "compose
//! once"). The front ends and the container routing both call these; nothing here looks at
//! where a key lives.

pub mod binary;
pub mod meta;
pub mod text;
