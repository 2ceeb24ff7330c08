//! Error text for log lines and replies.

/// An error as its innermost cause, said once: libraries that wrap an error in layers
/// print every layer (mysql_async's `Input/output error: Input/output error: Connection
/// refused (os error 111)`); the cause alone (`Connection refused (os error 111)`) is what
/// an operator needs after saying what failed and where.
pub fn cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut inner = e;
    while let Some(next) = inner.source() {
        inner = next;
    }
    inner.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Wrapper(std::io::Error);

    impl std::fmt::Display for Wrapper {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "Input/output error: Input/output error: {}", self.0)
        }
    }

    impl std::error::Error for Wrapper {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn says_the_cause_once() {
        let e = Wrapper(std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "Connection refused"));
        assert_eq!(cause(&e), "Connection refused");
        assert_eq!(cause(&std::io::Error::other("plain")), "plain");
    }
}
