//! Replies composed once from outcomes, for every key whatever tier answered it (memory,
//! disk-backed memory, a SQL container): one composer per protocol (issue 16's "compose
//! once"; the [`crate::outcome::Reply`] each implements: [`text::Text`], [`meta::Echo`],
//! [`binary::Binary`]), and the protocols' other replies. Nothing here looks at where a
//! key lives; no reply bytes are written anywhere else.

pub mod binary;
pub mod meta;
pub mod text;
