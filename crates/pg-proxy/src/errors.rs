//! ErrorResponses the proxy itself sends, as PostgreSQL composes them (severity in both
//! forms, SQLSTATE, message, detail and hint), and the SQLSTATEs it uses
//! (docs/pgproxy.md, "Errors the proxy sends").

use protocol_postgres::backend::fields::{CODE, DETAIL, HINT, MESSAGE, SEVERITY, SEVERITY_NONLOCALIZED};
use protocol_postgres::ErrorFields;

/// `08001` sqlclient_unable_to_establish_sqlconnection: the backend cannot be reached (or
/// TLS to it cannot be set up as `--pg-backend-sslmode` demands).
pub const CANNOT_CONNECT: &str = "08001";
/// `08006` connection_failure: the backend connection broke during a session.
pub const CONNECTION_FAILURE: &str = "08006";
/// `08P01` protocol_violation: a malformed or oversized message from the client.
pub const PROTOCOL_VIOLATION: &str = "08P01";
/// `53300` too_many_connections: `--pg-max-connections` reached.
pub const TOO_MANY_CONNECTIONS: &str = "53300";
/// `0A000` feature_not_supported: a replication connection, SCRAM channel binding that
/// cannot pass through the proxy.
pub const FEATURE_NOT_SUPPORTED: &str = "0A000";
/// `57014` query_canceled: the login took longer than `--pg-login-timeout` (PostgreSQL's
/// own "canceling authentication due to timeout").
pub const QUERY_CANCELED: &str = "57014";
/// `57P01` admin_shutdown: sqlcached is shutting down.
pub const ADMIN_SHUTDOWN: &str = "57P01";

/// A FATAL ErrorResponse (the session ends after it) with an optional detail and hint.
pub fn fatal(code: &str, message: &str, detail: Option<&str>, hint: Option<&str>) -> Vec<u8> {
    let mut fields = vec![
        (SEVERITY, &b"FATAL"[..]),
        (SEVERITY_NONLOCALIZED, b"FATAL"),
        (CODE, code.as_bytes()),
        (MESSAGE, message.as_bytes()),
    ];
    if let Some(d) = detail {
        fields.push((DETAIL, d.as_bytes()));
    }
    if let Some(h) = hint {
        fields.push((HINT, h.as_bytes()));
    }
    let mut out = Vec::with_capacity(message.len() + 64);
    ErrorFields { fields }.write(&mut out, b'E');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol_postgres::{parse_backend_frame, BackendMessage};

    #[test]
    fn fatal_is_a_server_error_response() {
        let bytes = fatal(TOO_MANY_CONNECTIONS, "sorry, too many clients already", None, Some("later"));
        let (f, used) = parse_backend_frame(&bytes).unwrap().unwrap();
        assert_eq!(used, bytes.len());
        let BackendMessage::ErrorResponse(e) = BackendMessage::parse(f).unwrap() else { panic!() };
        assert_eq!((e.severity(), e.code(), e.get(HINT)), (&b"FATAL"[..], &b"53300"[..], Some(&b"later"[..])));
    }
}
