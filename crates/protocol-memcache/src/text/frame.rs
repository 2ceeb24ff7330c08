//! Finding the next command line in the read buffer, as `try_read_command_ascii`.

/// What the read buffer holds.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    /// A complete line (without its `\r\n`, cut at the first NUL byte as C would) and the
    /// number of buffer bytes it used.
    Line(&'a [u8], usize),
    /// No complete line yet: read more.
    Incomplete,
    /// The line is too long to be a command: memcached closes the connection.
    Close,
}

/// Look for the next command line. memcached tolerates lines over 2048 bytes only for
/// `get`/`gets` (huge multigets); `max_line` bounds those so memory stays bounded.
pub fn next_line(buf: &[u8], max_line: usize) -> Frame<'_> {
    let Some(el) = memchr(b'\n', buf) else {
        if buf.len() > 2048 {
            let spaces = buf.iter().take_while(|&&b| b == b' ').count();
            let rest = &buf[spaces..];
            if spaces > 100 || !(rest.starts_with(b"get ") || rest.starts_with(b"gets ")) {
                return Frame::Close;
            }
            if buf.len() > max_line {
                return Frame::Close;
            }
        }
        return Frame::Incomplete;
    };
    let mut end = el;
    if el > 1 && buf[el - 1] == b'\r' {
        end -= 1;
    }
    let mut line = &buf[..end];
    if let Some(nul) = memchr(0, line) {
        line = &line[..nul];
    }
    Frame::Line(line, el + 1)
}

#[inline]
fn memchr(needle: u8, hay: &[u8]) -> Option<usize> {
    hay.iter().position(|&b| b == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines() {
        assert_eq!(next_line(b"get a\r\nx", 1 << 20), Frame::Line(b"get a", 7));
        assert_eq!(next_line(b"get a\n", 1 << 20), Frame::Line(b"get a", 6));
        assert_eq!(next_line(b"\r\n", 1 << 20), Frame::Line(b"\r", 2));
        assert_eq!(next_line(b"get a", 1 << 20), Frame::Incomplete);
        assert_eq!(next_line(&[b'x'; 3000], 1 << 20), Frame::Close);
        let mut g = b"get ".to_vec();
        g.extend_from_slice(&[b'k'; 3000]);
        assert_eq!(next_line(&g, 1 << 20), Frame::Incomplete);
        assert_eq!(next_line(&g, 2500), Frame::Close);
    }
}
