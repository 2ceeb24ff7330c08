//! TLS on both links of the PostgreSQL front. Toward clients (`--pg-tls-cert`,
//! `--pg-tls-key`) the proxy answers SSLRequest with `S` and terminates TLS, so it reads
//! every message; toward the backend (`--pg-backend-sslmode`, `--pg-backend-sslrootcert`)
//! it is a libpq-like client, with source-postgres's rustls configuration per sslmode (the
//! one the WAL feed uses too).

use std::sync::Arc;

use rustls::crypto::ring;
use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ServerConfig};
use tokio_rustls::{TlsAcceptor, TlsConnector};

use config::postgres::{PostgresConfig, SslMode};
use config::tls::{load_chain, load_key};

/// The proxy's TLS configurations.
#[derive(Default)]
pub struct ProxyTls {
    /// Offered to clients, when a certificate is configured.
    pub acceptor: Option<TlsAcceptor>,
    /// Used for backend connections (none with sslmode disable), with the name the
    /// certificate is checked for.
    pub connector: Option<(TlsConnector, ServerName<'static>)>,
    /// `--pg-backend-sslmode`.
    pub sslmode: SslMode,
}

impl ProxyTls {
    /// Loads the certificates the settings name; the message says which file failed and why.
    pub fn new(cfg: &PostgresConfig) -> Result<ProxyTls, String> {
        let mut out = ProxyTls { sslmode: cfg.backend_sslmode, ..ProxyTls::default() };
        if let (Some(cert), Some(key)) = (&cfg.tls_cert, &cfg.tls_key) {
            let chain = load_chain(Some(cert)).map_err(|e| format!("--pg-tls-cert: {e}"))?;
            let key_der = load_key(Some(key), 1).map_err(|e| format!("--pg-tls-key: {e}"))?;
            let config = ServerConfig::builder_with_provider(Arc::new(ring::default_provider()))
                .with_safe_default_protocol_versions()
                .map_err(|e| e.to_string())?
                .with_no_client_auth()
                .with_single_cert(chain, key_der)
                .map_err(|e| match e {
                    rustls::Error::InconsistentKeys(_) => {
                        format!("--pg-tls-key {key}: the key does not match the certificate {cert}")
                    }
                    e => format!("--pg-tls-cert {cert}: {e}"),
                })?;
            out.acceptor = Some(TlsAcceptor::from(Arc::new(config)));
        }
        if let Some((config, name)) = backend_client_config(cfg)? {
            out.connector = Some((TlsConnector::from(config), name));
        }
        Ok(out)
    }
}

/// The settings as source-postgres's connection settings (host, port, sslmode, CA, and
/// `--pg-user` with `password`).
pub fn source_config(cfg: &PostgresConfig, password: Option<String>) -> Result<source_postgres::Config, String> {
    let (host, port) = cfg.backend_host_port().ok_or("--pg-backend: want HOST:PORT")?;
    let sslmode = match cfg.backend_sslmode {
        SslMode::Disable => source_postgres::SslMode::Disable,
        SslMode::Prefer => source_postgres::SslMode::Prefer,
        SslMode::Require => source_postgres::SslMode::Require,
        SslMode::VerifyCa => source_postgres::SslMode::VerifyCa,
        SslMode::VerifyFull => source_postgres::SslMode::VerifyFull,
    };
    let user = cfg.user.clone().unwrap_or_default();
    Ok(source_postgres::Config {
        host,
        port,
        dbname: cfg.database.clone(),
        user,
        password,
        sslmode,
        sslrootcert: cfg.backend_sslrootcert.as_ref().map(std::path::PathBuf::from),
        application_name: "sqlcached".into(),
        connect_timeout: cfg.backend_connect_timeout,
        options: None,
    })
}

fn backend_client_config(cfg: &PostgresConfig) -> Result<Option<(Arc<ClientConfig>, ServerName<'static>)>, String> {
    if cfg.backend_sslmode == SslMode::Disable {
        return Ok(None);
    }
    let src = source_config(cfg, None)?;
    source_postgres::tls::client_config(&src).map_err(|e| {
        let e = e.to_string();
        match &cfg.backend_sslrootcert {
            Some(ca) if e.contains("sslrootcert") => format!("--pg-backend-sslrootcert {ca}: {e}"),
            _ => format!("--pg-backend-sslmode {}: {e}", cfg.backend_sslmode.name()),
        }
    })
}
