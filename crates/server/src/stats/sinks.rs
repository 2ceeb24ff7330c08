//! The two `stats` outputs of the memcached port, as [`StatSink`]s: text `STAT` lines and
//! binary Stat packets. Producers write each figure once; neither output parses the other.

use engine::stats::{Kind, StatSink};
use protocol_memcache::binary::write_stat;
use protocol_memcache::text::reply;

/// memcached's text protocol: `STAT name value\r\n`.
pub struct TextSink<'a>(pub &'a mut Vec<u8>);

impl StatSink for TextSink<'_> {
    fn stat(&mut self, name: &str, _kind: Kind, value: &dyn std::fmt::Display) {
        reply::stat(self.0, name, value);
    }
}

/// memcached's binary protocol: one Stat reply per figure (key = name, value = the text
/// of the value), all with the request's opaque.
pub struct BinarySink<'a> {
    /// The reply buffer.
    pub out: &'a mut Vec<u8>,
    /// The request's opaque.
    pub opaque: u32,
}

impl StatSink for BinarySink<'_> {
    fn stat(&mut self, name: &str, _kind: Kind, value: &dyn std::fmt::Display) {
        write_stat(self.out, self.opaque, name.as_bytes(), value.to_string().as_bytes());
    }
}
