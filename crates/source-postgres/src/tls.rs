//! TLS toward PostgreSQL: the rustls client configuration each `sslmode` calls for (the
//! `ring` provider, as the rest of the workspace).
//!
//! PostgreSQL starts TLS inside its own protocol: the client sends SSLRequest, the server
//! answers one byte, `S` (then the TLS handshake) or `N` (no TLS: `prefer` goes on in
//! plain text, `require` and stricter fail). `prefer` and `require` (without a CA)
//! encrypt but accept any certificate, as libpq does; the handshake's signatures are still
//! checked. `verify-ca` checks the chain against the CA; `verify-full` also the host name.
//! The same [`ClientConfig`] serves a tokio-postgres connection (through
//! tokio-postgres-rustls), so both links of a source check certificates alike.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{ring, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};

use crate::config::{Config, SslMode};
use crate::error::Error;

/// The TLS client configuration for `cfg` (`None` when `sslmode=disable` or over a unix
/// socket), with the server name to present and check.
pub fn client_config(cfg: &Config) -> Result<Option<(Arc<ClientConfig>, ServerName<'static>)>, Error> {
    if cfg.sslmode == SslMode::Disable || cfg.is_unix_socket() {
        return Ok(None);
    }
    let provider = Arc::new(ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::Tls(e.to_string()))?;
    let roots = cfg.sslrootcert.as_ref().map(|p| load_roots(p)).transpose()?;
    let config = match (cfg.sslmode, roots) {
        (SslMode::VerifyFull, Some(roots)) => builder.with_root_certificates(roots).with_no_client_auth(),
        (SslMode::VerifyCa | SslMode::Require, Some(roots)) | (SslMode::Prefer, Some(roots)) => {
            let inner = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|e| Error::Tls(e.to_string()))?;
            builder.dangerous().with_custom_certificate_verifier(Arc::new(AnyName(inner))).with_no_client_auth()
        }
        (SslMode::Prefer | SslMode::Require, None) => {
            builder.dangerous().with_custom_certificate_verifier(Arc::new(NoCheck(provider))).with_no_client_auth()
        }
        (SslMode::VerifyCa | SslMode::VerifyFull, None) => {
            return Err(Error::Config("sslmode verify-ca/verify-full needs sslrootcert".into()))
        }
        (SslMode::Disable, _) => return Ok(None),
    };
    let name = ServerName::try_from(cfg.host.clone()).map_err(|e| Error::Config(format!("host {}: {e}", cfg.host)))?;
    Ok(Some((Arc::new(config), name)))
}

/// The CA certificates in a PEM file.
fn load_roots(path: &std::path::Path) -> Result<RootCertStore, Error> {
    let err = |why: String| Error::Config(format!("sslrootcert {}: {why}", path.display()));
    let bytes = std::fs::read(path).map_err(|e| err(e.to_string()))?;
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(&bytes) {
        roots.add(cert.map_err(|e| err(e.to_string()))?).map_err(|e| err(e.to_string()))?;
    }
    if roots.is_empty() {
        return Err(err("no PEM certificate in the file".into()));
    }
    Ok(roots)
}

/// verify-ca: the chain must lead to the CA; any host name is accepted.
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

/// prefer / require without a CA: encryption without authentication of the server (what
/// libpq does); the handshake signatures are still verified.
#[derive(Debug)]
struct NoCheck(Arc<CryptoProvider>);

impl ServerCertVerifier for NoCheck {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
