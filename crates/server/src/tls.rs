//! TLS on the memcached port (`-Z`), as memcached 1.6.18's `tls.c` does it, with rustls.
//!
//! One server configuration for the process, built from `-o ssl_*` at start and rebuilt
//! by `refresh_certs`; each TLS listener's connection does its handshake on its worker
//! before its first request. A client that fails the handshake (a plain-text client on a
//! TLS port, a missing or untrusted client certificate) is counted in
//! `ssl_handshake_errors` and reset, as memcached resets it.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::RwLock;
use rustls::crypto::{ring, CryptoProvider};
use rustls::server::{ServerSessionMemoryCache, StoresServerSessions, WebPkiClientVerifier};
use rustls::{CipherSuite, ServerConfig, SupportedCipherSuite};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

use config::tls::{load_chain, load_key, load_roots, TlsConfig};

/// The first byte of a TLS connection: a handshake record (ClientHello).
pub const HANDSHAKE_RECORD: u8 = 0x16;

/// Sessions kept for resumption with `ssl_session_cache`.
const SESSION_CACHE_SIZE: usize = 1024;

/// The process's TLS state: the configuration clients get and memcached's TLS counters.
pub struct Tls {
    settings: TlsConfig,
    current: RwLock<Arc<ServerConfig>>,
    /// `ssl_handshake_errors`: handshakes that failed.
    pub handshake_errors: AtomicU64,
    /// `ssl_new_sessions`: sessions stored by the session cache.
    pub new_sessions: Arc<AtomicU64>,
    /// Server clock second of the last (re)load, for `time_since_server_cert_refresh`.
    pub refreshed_at: AtomicU32,
}

impl Tls {
    /// Load the certificate, key and CA named by `settings`; the message says what failed,
    /// in memcached's words.
    pub fn new(settings: &TlsConfig, now: u32) -> Result<Tls, String> {
        let new_sessions = Arc::new(AtomicU64::new(0));
        let config = server_config(settings, &new_sessions)?;
        Ok(Tls {
            settings: settings.clone(),
            current: RwLock::new(Arc::new(config)),
            handshake_errors: AtomicU64::new(0),
            new_sessions,
            refreshed_at: AtomicU32::new(now),
        })
    }

    /// `refresh_certs`: load the files again; on failure the old ones stay in use.
    pub fn refresh(&self, now: u32) -> Result<(), String> {
        let config = server_config(&self.settings, &self.new_sessions)?;
        *self.current.write() = Arc::new(config);
        self.refreshed_at.store(now, Ordering::Relaxed);
        Ok(())
    }

    /// Run the server side of the handshake on `sock`; a failed handshake is counted.
    pub async fn accept<S>(&self, sock: S) -> Option<TlsStream<S>>
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        let acceptor = TlsAcceptor::from(self.current.read().clone());
        match acceptor.accept(sock).await {
            Ok(mut s) => {
                s.get_mut().1.set_buffer_limit(Some(self.settings.wbuf_size.max(4096) as usize));
                Some(s)
            }
            Err(e) => {
                self.handshake_errors.fetch_add(1, Ordering::Relaxed);
                log::debug!("TLS handshake failed: {e}");
                None
            }
        }
    }

    /// Whether clients must present a certificate (`ssl_verify_mode` 2 or 3).
    pub fn requires_client_certs(&self) -> bool {
        self.settings.verify_mode >= 2
    }

    /// The settings this state was built from.
    pub fn settings(&self) -> &TlsConfig {
        &self.settings
    }
}

/// Say at start what the settings do not do as written (at the default verbosity).
pub fn explain(s: &TlsConfig) {
    if s.min_version < 2 {
        log::warn!(
            "ssl_min_version {}: sqlcached's TLS (rustls) has no TLS 1.0 or 1.1; clients need TLS 1.2 or newer",
            s.min_version
        );
    }
    if s.verify_mode == 0 && s.ca_cert.is_some() {
        log::warn!("ssl_ca_cert is set but ssl_verify_mode is 0: client certificates are not asked for");
    }
}

/// The rustls configuration for `s`: versions, cipher suites, certificate, client checks.
fn server_config(s: &TlsConfig, new_sessions: &Arc<AtomicU64>) -> Result<ServerConfig, String> {
    if s.kernel_tls {
        return Err("Kernel TLS offload is not available".into());
    }
    let provider = Arc::new(provider(s)?);
    let versions: &[&rustls::SupportedProtocolVersion] = if s.effective_min_version() == 3 {
        &[&rustls::version::TLS13]
    } else {
        &[&rustls::version::TLS12, &rustls::version::TLS13]
    };
    let chain = load_chain(s.chain_cert.as_deref())?;
    let key = load_key(s.key.as_deref(), s.keyformat)?;
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(versions)
        .map_err(|e| format!("Error setting the TLS versions: {e}"))?;
    let builder = match (s.verify_mode, &s.ca_cert) {
        (0, _) => builder.with_no_client_auth(),
        (mode, Some(ca)) => {
            let roots = load_roots(ca)?;
            let v = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
            let v = if mode == 1 { v.allow_unauthenticated() } else { v };
            builder.with_client_cert_verifier(
                v.build().map_err(|e| format!("Error loading the CA certificate: {ca} : {e}"))?,
            )
        }
        (mode, None) => {
            return Err(format!(
                "ssl_verify_mode {mode} needs ssl_ca_cert: without CAs no client certificate can be verified"
            ))
        }
    };
    let key_path = s.key.as_deref().unwrap_or("(null)");
    let mut config = builder.with_single_cert(chain, key).map_err(|e| match e {
        rustls::Error::InconsistentKeys(_) => format!("Error loading the key: {key_path} : key values mismatch"),
        e => format!("Error validating the certificate: {e}"),
    })?;
    config.session_storage = if s.session_cache {
        Arc::new(CountingCache { inner: ServerSessionMemoryCache::new(SESSION_CACHE_SIZE), new: new_sessions.clone() })
    } else {
        Arc::new(rustls::server::NoServerSessionStorage {})
    };
    Ok(config)
}

/// ring's provider, with `ssl_ciphers` (OpenSSL or IANA names) narrowing the TLS 1.2 suites.
fn provider(s: &TlsConfig) -> Result<CryptoProvider, String> {
    let mut p = ring::default_provider();
    if let Some(list) = &s.ciphers {
        let (chosen, unknown) = pick_suites(list, &p.cipher_suites);
        if chosen.is_empty() {
            return Err(format!("Error setting the provided cipher(s): {list}"));
        }
        if !unknown.is_empty() {
            log::warn!(
                "ssl_ciphers: {} not available in sqlcached's TLS (rustls); offering {}",
                unknown.join(":"),
                chosen.iter().map(|c| suite_name(*c)).collect::<Vec<_>>().join(":")
            );
        }
        // TLS 1.3 suites are not chosen by this list (OpenSSL's ciphersuites), as in memcached.
        let tls13 = p.cipher_suites.iter().filter(|c| c.version() == &rustls::version::TLS13);
        p.cipher_suites = tls13.copied().chain(chosen).collect();
    }
    Ok(p)
}

/// Suites of `available` named in the `:`/`,`/space separated `list`, and the names not known.
fn pick_suites<'a>(list: &'a str, available: &[SupportedCipherSuite]) -> (Vec<SupportedCipherSuite>, Vec<&'a str>) {
    let mut chosen = Vec::new();
    let mut unknown = Vec::new();
    for name in list.split([':', ',', ' ']).filter(|n| !n.is_empty()) {
        let found = available.iter().find(|c| {
            c.version() == &rustls::version::TLS12 && (suite_name(**c) == name || format!("{:?}", c.suite()) == name)
        });
        match found {
            Some(c) if !chosen.iter().any(|x: &SupportedCipherSuite| x.suite() == c.suite()) => chosen.push(*c),
            Some(_) => {}
            None => unknown.push(name),
        }
    }
    (chosen, unknown)
}

/// OpenSSL's names of the TLS 1.2 suites rustls has (what `ssl_ciphers` is written in).
const OPENSSL_NAMES: &[(CipherSuite, &str)] = &[
    (CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, "ECDHE-ECDSA-AES256-GCM-SHA384"),
    (CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, "ECDHE-ECDSA-AES128-GCM-SHA256"),
    (CipherSuite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, "ECDHE-ECDSA-CHACHA20-POLY1305"),
    (CipherSuite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384, "ECDHE-RSA-AES256-GCM-SHA384"),
    (CipherSuite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, "ECDHE-RSA-AES128-GCM-SHA256"),
    (CipherSuite::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256, "ECDHE-RSA-CHACHA20-POLY1305"),
];

/// OpenSSL's name of a suite, else its IANA name.
fn suite_name(c: SupportedCipherSuite) -> String {
    match OPENSSL_NAMES.iter().find(|(s, _)| *s == c.suite()) {
        Some((_, name)) => name.to_string(),
        None => format!("{:?}", c.suite()),
    }
}

/// The session cache, counting the sessions it stores (`ssl_new_sessions`).
#[derive(Debug)]
struct CountingCache {
    inner: Arc<ServerSessionMemoryCache>,
    new: Arc<AtomicU64>,
}

impl StoresServerSessions for CountingCache {
    fn put(&self, key: Vec<u8>, value: Vec<u8>) -> bool {
        self.new.fetch_add(1, Ordering::Relaxed);
        self.inner.put(key, value)
    }
    fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        self.inner.get(key)
    }
    fn take(&self, key: &[u8]) -> Option<Vec<u8>> {
        self.inner.take(key)
    }
    fn can_cache(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openssl_names_pick_tls12_suites() {
        let p = ring::default_provider();
        let (chosen, unknown) =
            pick_suites("ECDHE-ECDSA-AES128-GCM-SHA256:HIGH:ECDHE-RSA-CHACHA20-POLY1305", &p.cipher_suites);
        assert_eq!(unknown, ["HIGH"]);
        let names: Vec<_> = chosen.iter().map(|c| suite_name(*c)).collect();
        assert_eq!(names, ["ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-RSA-CHACHA20-POLY1305"]);
        let (chosen, _) = pick_suites("TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", &p.cipher_suites);
        assert_eq!(suite_name(chosen[0]), "ECDHE-RSA-AES256-GCM-SHA384");
    }

    /// The settings of a server using the unit-test certificates in `testdata/`.
    fn test_settings() -> TlsConfig {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src/testdata");
        TlsConfig {
            enabled: true,
            chain_cert: Some(format!("{dir}/server.crt")),
            key: Some(format!("{dir}/server.key")),
            ..Default::default()
        }
    }

    /// A real ClientHello from a rustls client trusting the test CA.
    fn client_hello() -> Vec<u8> {
        let roots = load_roots(concat!(env!("CARGO_MANIFEST_DIR"), "/src/testdata/ca.crt")).unwrap();
        let cfg = rustls::ClientConfig::builder_with_provider(Arc::new(ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
        let mut c = rustls::ClientConnection::new(Arc::new(cfg), name).unwrap();
        let mut out = Vec::new();
        while c.wants_write() {
            c.write_tls(&mut out).unwrap();
        }
        out
    }

    /// Property test of the handshake parser as configured here (fuzz-style, deterministic):
    /// thousands of mutated, truncated and random first flights never panic, and each ends
    /// in a clean error or a server still waiting for more, with bounded buffering.
    #[test]
    fn mutated_client_hellos_fail_cleanly() {
        let cfg = Arc::new(server_config(&test_settings(), &Arc::new(AtomicU64::new(0))).unwrap());
        let hello = client_hello();
        assert_eq!(hello[0], HANDSHAKE_RECORD);
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut rnd = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for i in 0..5000 {
            let mut input = hello.clone();
            match i % 4 {
                0 => {
                    for _ in 0..1 + rnd() % 8 {
                        let at = (rnd() as usize) % input.len();
                        input[at] = rnd() as u8;
                    }
                }
                1 => input.truncate((rnd() as usize) % input.len()),
                2 => {
                    let at = (rnd() as usize) % input.len();
                    let n = (rnd() % 300) as usize;
                    let junk: Vec<u8> = (0..n).map(|_| rnd() as u8).collect();
                    input.splice(at..at, junk);
                }
                _ => input = (0..(rnd() % 2048) as usize).map(|_| rnd() as u8).collect(),
            }
            let mut server = rustls::ServerConnection::new(cfg.clone()).unwrap();
            let mut rd: &[u8] = &input;
            let mut failed = false;
            while !rd.is_empty() && !failed {
                match server.read_tls(&mut rd) {
                    Ok(0) => break,
                    Ok(_) => failed = server.process_new_packets().is_err(),
                    Err(_) => failed = true,
                }
            }
            let mut reply = Vec::new();
            while server.wants_write() && reply.len() < 1 << 20 {
                if server.write_tls(&mut reply).is_err() {
                    break;
                }
            }
            assert!(reply.len() < 64 * 1024, "case {i}: {} bytes of reply", reply.len());
        }
    }

    #[test]
    fn a_real_client_completes_the_handshake() {
        let cfg = Arc::new(server_config(&test_settings(), &Arc::new(AtomicU64::new(0))).unwrap());
        let mut server = rustls::ServerConnection::new(cfg).unwrap();
        let mut rd: &[u8] = &client_hello();
        server.read_tls(&mut rd).unwrap();
        server.process_new_packets().unwrap();
        assert!(server.wants_write(), "the server answers a valid ClientHello");
    }

    #[test]
    fn missing_files_are_named() {
        let s = TlsConfig { enabled: true, chain_cert: Some("/nonexistent".into()), ..Default::default() };
        let e = server_config(&s, &Arc::new(AtomicU64::new(0))).unwrap_err();
        assert_eq!(e, "Error loading the certificate chain: /nonexistent : No such file or directory");
    }
}
