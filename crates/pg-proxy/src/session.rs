//! What the proxy knows of a session: who logged in where, the backend's reported settings
//! (ParameterStatus, at login and whenever one changes) and the transaction status of the
//! last ReadyForQuery. The query cache keys results on it (docs/pgproxy.md, "Session state").

use protocol_postgres::{ParameterStatus, TransactionStatus};

/// One client's session.
#[derive(Clone, Debug, Default)]
pub struct Session {
    /// The startup packet's `user`.
    pub user: String,
    /// The startup packet's `database` (the user name when absent, as the server does).
    pub database: String,
    /// Every ParameterStatus the backend reported, latest value per name, in first-seen
    /// order (`server_version`, `TimeZone`, `DateStyle`, `IntervalStyle`, `client_encoding`,
    /// `standard_conforming_strings`, `integer_datetimes`, `is_superuser`,
    /// `session_authorization`, `application_name`, `default_transaction_read_only`, ...).
    pub params: Vec<(String, String)>,
    /// The transaction status the last ReadyForQuery reported.
    pub status: Option<TransactionStatus>,
    /// ParameterStatus messages seen after login (a setting changed).
    pub changes: u64,
}

impl Session {
    /// The reported value of parameter `name`.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    /// Notes a ParameterStatus body; false if it is malformed.
    pub fn parameter_status(&mut self, body: &[u8]) -> bool {
        let Ok(p) = ParameterStatus::parse(body) else { return false };
        let (name, value) = (String::from_utf8_lossy(p.name), String::from_utf8_lossy(p.value));
        match self.params.iter_mut().find(|(n, _)| *n == name) {
            Some(slot) => slot.1 = value.into_owned(),
            None => self.params.push((name.into_owned(), value.into_owned())),
        }
        true
    }

    /// Notes a ReadyForQuery body.
    pub fn ready(&mut self, body: &[u8]) {
        self.status = TransactionStatus::parse(body).ok();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_keep_the_latest_value() {
        let mut s = Session::default();
        let mut b = Vec::new();
        ParameterStatus { name: b"TimeZone", value: b"UTC" }.write(&mut b);
        assert!(s.parameter_status(&b[5..]));
        b.clear();
        ParameterStatus { name: b"TimeZone", value: b"Europe/Paris" }.write(&mut b);
        assert!(s.parameter_status(&b[5..]));
        assert_eq!((s.param("TimeZone"), s.params.len()), (Some("Europe/Paris"), 1));
        assert!(!s.parameter_status(b"no terminator"));
        s.ready(b"T");
        assert_eq!(s.status, Some(TransactionStatus::InTransaction));
    }
}
