//! TLS on both links of the MySQL proxy. Toward clients (`--mysql-tls-cert`,
//! `--mysql-tls-key`) the proxy terminates TLS, so it still reads every packet and can
//! cache; toward the backend (`--mysql-backend-tls verify-ca|verify-full`,
//! `--mysql-backend-tls-ca`) it encrypts its own connection and checks the server's
//! certificate against the CA (and, with verify-full, the backend's host name).

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::ring;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, ServerConfig, SignatureScheme};
use tokio_rustls::{TlsAcceptor, TlsConnector};

use config::mysql::{BackendTls, MysqlConfig};
use config::tls::{load_chain, load_key, load_roots};

/// The proxy's TLS configurations.
#[derive(Default)]
pub struct ProxyTls {
    /// Offered to clients, when a certificate is configured.
    pub acceptor: Option<TlsAcceptor>,
    /// Used for every backend connection, with the name the certificate is checked for.
    pub connector: Option<(TlsConnector, ServerName<'static>)>,
}

impl ProxyTls {
    /// Load the certificates the settings name; the message says which file failed and why.
    pub fn new(cfg: &MysqlConfig) -> Result<ProxyTls, String> {
        let mut out = ProxyTls::default();
        if let (Some(cert), Some(key)) = (&cfg.tls_cert, &cfg.tls_key) {
            let chain = load_chain(Some(cert)).map_err(|e| format!("--mysql-tls-cert: {e}"))?;
            let key_der = load_key(Some(key), 1).map_err(|e| format!("--mysql-tls-key: {e}"))?;
            let config = ServerConfig::builder_with_provider(Arc::new(ring::default_provider()))
                .with_safe_default_protocol_versions()
                .map_err(|e| e.to_string())?
                .with_no_client_auth()
                .with_single_cert(chain, key_der)
                .map_err(|e| match e {
                    rustls::Error::InconsistentKeys(_) => {
                        format!("--mysql-tls-key {key}: the key does not match the certificate {cert}")
                    }
                    e => format!("--mysql-tls-cert {cert}: {e}"),
                })?;
            out.acceptor = Some(TlsAcceptor::from(Arc::new(config)));
        }
        if cfg.backend_tls != BackendTls::Off {
            let ca = cfg.backend_tls_ca.as_deref().unwrap_or_default();
            let roots = Arc::new(load_roots(ca).map_err(|e| format!("--mysql-backend-tls-ca: {e}"))?);
            let provider = Arc::new(ring::default_provider());
            let builder = ClientConfig::builder_with_provider(provider.clone())
                .with_safe_default_protocol_versions()
                .map_err(|e| e.to_string())?;
            let config = match cfg.backend_tls {
                BackendTls::VerifyCa => {
                    let inner = WebPkiServerVerifier::builder_with_provider(roots, provider)
                        .build()
                        .map_err(|e| format!("--mysql-backend-tls-ca {ca}: {e}"))?;
                    builder.dangerous().with_custom_certificate_verifier(Arc::new(AnyName(inner))).with_no_client_auth()
                }
                _ => builder.with_root_certificates(roots).with_no_client_auth(),
            };
            let backend = cfg.backend.as_deref().unwrap_or_default();
            let name = server_name(backend)?;
            out.connector = Some((TlsConnector::from(Arc::new(config)), name));
        }
        Ok(out)
    }
}

/// The host part of `host:port` (or `[v6]:port`) as the name the certificate must show.
fn server_name(backend: &str) -> Result<ServerName<'static>, String> {
    let host = match backend.rsplit_once(':') {
        Some((h, _)) => h.trim_start_matches('[').trim_end_matches(']'),
        None => backend,
    };
    ServerName::try_from(host.to_string()).map_err(|e| format!("--mysql-backend {backend}: {e}"))
}

/// verify-ca: the chain must lead to the CA, any host name is accepted (MySQL's
/// `--ssl-mode=VERIFY_CA`).
#[derive(Debug)]
struct AnyName(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for AnyName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self.0.verify_server_cert(end_entity, intermediates, server_name, ocsp, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            r => r,
        }
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backend_names() {
        assert!(matches!(server_name("127.0.0.1:3306").unwrap(), ServerName::IpAddress(_)));
        assert!(matches!(server_name("[::1]:3306").unwrap(), ServerName::IpAddress(_)));
        assert!(matches!(server_name("db.internal:3306").unwrap(), ServerName::DnsName(_)));
    }
}
