//! The whole "cache": a hash map and the two memcached text commands `bench/loadgen` sends
//! (`get` of one or more keys, `set`), so what is measured around it is the kernel's share.

use std::collections::HashMap;

/// Keys to (flags, value).
#[derive(Default)]
pub struct Store {
    map: HashMap<Vec<u8>, (u32, Vec<u8>)>,
}

impl Store {
    /// Run every complete request in `buf`, append the replies to `out`, return the bytes
    /// used. Anything else than `get`/`set` answers `ERROR` (memcached's reply).
    pub fn process(&mut self, buf: &[u8], out: &mut Vec<u8>) -> usize {
        let mut pos = 0;
        loop {
            let rest = &buf[pos..];
            let Some(nl) = rest.windows(2).position(|w| w == b"\r\n") else {
                return pos;
            };
            let line = &rest[..nl];
            if let Some(keys) = line.strip_prefix(b"get ") {
                for key in keys.split(|&b| b == b' ').filter(|k| !k.is_empty()) {
                    if let Some((flags, v)) = self.map.get(key) {
                        out.extend_from_slice(b"VALUE ");
                        out.extend_from_slice(key);
                        out.extend_from_slice(format!(" {} {}\r\n", flags, v.len()).as_bytes());
                        out.extend_from_slice(v);
                        out.extend_from_slice(b"\r\n");
                    }
                }
                out.extend_from_slice(b"END\r\n");
                pos += nl + 2;
            } else if let Some(args) = line.strip_prefix(b"set ") {
                let Some((key, flags, len, noreply)) = parse_set(args) else {
                    out.extend_from_slice(b"CLIENT_ERROR bad command line format\r\n");
                    pos += nl + 2;
                    continue;
                };
                if rest.len() < nl + 2 + len + 2 {
                    return pos;
                }
                let v = rest[nl + 2..nl + 2 + len].to_vec();
                self.map.insert(key.to_vec(), (flags, v));
                if !noreply {
                    out.extend_from_slice(b"STORED\r\n");
                }
                pos += nl + 2 + len + 2;
            } else {
                out.extend_from_slice(b"ERROR\r\n");
                pos += nl + 2;
            }
        }
    }
}

/// `<key> <flags> <exptime> <bytes> [noreply]`.
fn parse_set(args: &[u8]) -> Option<(&[u8], u32, usize, bool)> {
    let parts: Vec<&[u8]> = args.split(|&b| b == b' ').filter(|p| !p.is_empty()).collect();
    if parts.len() < 4 {
        return None;
    }
    let num = |p: &[u8]| std::str::from_utf8(p).ok()?.parse::<u64>().ok();
    let flags = num(parts[1])? as u32;
    let len = usize::try_from(num(parts[3])?).ok().filter(|&n| n <= 1 << 20)?;
    Some((parts[0], flags, len, parts.get(4) == Some(&&b"noreply"[..])))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn get_set_and_partial_requests() {
        let mut s = Store::default();
        let mut out = Vec::new();
        let req = b"set k 5 0 3\r\nabc\r\nget k x\r\nget";
        let used = s.process(req, &mut out);
        assert_eq!(used, req.len() - 3);
        assert_eq!(out, b"STORED\r\nVALUE k 5 3\r\nabc\r\nEND\r\n");
        out.clear();
        assert_eq!(s.process(b"set k 0 0 3\r\nab", &mut out), 0);
        assert_eq!(s.process(b"bogus\r\nset k\r\n", &mut out), 14);
        assert_eq!(out, b"ERROR\r\nCLIENT_ERROR bad command line format\r\n");
    }
}
