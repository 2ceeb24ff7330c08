//! TLS settings of the memcached port: `-Z` and memcached 1.6.18's `-o ssl_*` sub-options,
//! with its names, defaults and parse errors. What they do is in the server's `tls` module; the files they name are loaded here.

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::RootCertStore;

/// `-Z` (`--enable-ssl`) and the `-o ssl_*` sub-options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsConfig {
    /// `-Z`: TCP listeners speak TLS (except those given as `-l notls:...`).
    pub enabled: bool,
    /// `ssl_chain_cert`: the server's certificate chain, PEM.
    pub chain_cert: Option<String>,
    /// `ssl_key`: its private key.
    pub key: Option<String>,
    /// `ssl_keyformat`: OpenSSL's file type number, 1 for PEM (default), 2 for DER.
    pub keyformat: i64,
    /// `ssl_verify_mode` as given: 0 none, 1 request, 2 require, 3 once.
    pub verify_mode: u8,
    /// `ssl_ciphers`: OpenSSL cipher names for TLS 1.2, `:` separated.
    pub ciphers: Option<String>,
    /// `ssl_ca_cert`: PEM file of the CAs client certificates must chain to.
    pub ca_cert: Option<String>,
    /// `ssl_wbuf_size` in bytes (given in KiB): the per-connection TLS output buffer.
    pub wbuf_size: u64,
    /// `ssl_session_cache`: a server-side session cache, for resumption.
    pub session_cache: bool,
    /// `ssl_kernel_tls`: kernel TLS offload (refused at start: not available).
    pub kernel_tls: bool,
    /// `ssl_min_version` as given: 0 TLS 1.0, 1 TLS 1.1, 2 TLS 1.2 (default), 3 TLS 1.3.
    pub min_version: u8,
}

impl Default for TlsConfig {
    fn default() -> Self {
        TlsConfig {
            enabled: false,
            chain_cert: None,
            key: None,
            keyformat: 1,
            verify_mode: 0,
            ciphers: None,
            ca_cert: None,
            wbuf_size: 16 * 1024,
            session_cache: false,
            kernel_tls: false,
            min_version: 2,
        }
    }
}

/// The `-o` sub-options this file owns.
pub const OPTIONS: &[&str] = &[
    "ssl_chain_cert",
    "ssl_key",
    "ssl_keyformat",
    "ssl_verify_mode",
    "ssl_ciphers",
    "ssl_ca_cert",
    "ssl_wbuf_size",
    "ssl_session_cache",
    "ssl_kernel_tls",
    "ssl_min_version",
];

/// The listener prefix that turns TLS off for one `-l` entry.
pub const NOTLS_PREFIX: &str = "notls:";

impl TlsConfig {
    /// Apply `-o name[=value]` (`value` is `None` without `=`), with memcached's messages.
    pub fn set(&mut self, name: &str, value: Option<&str>) -> Result<(), String> {
        let need = || value.ok_or_else(|| format!("Missing {name} argument"));
        let int = |v: &str| v.trim().parse::<i64>().map_err(|_| format!("could not parse argument to {name}"));
        match name {
            "ssl_chain_cert" => self.chain_cert = Some(need()?.to_string()),
            "ssl_key" => self.key = Some(need()?.to_string()),
            "ssl_keyformat" => self.keyformat = int(need()?)?,
            "ssl_ciphers" => self.ciphers = Some(need()?.to_string()),
            "ssl_ca_cert" => self.ca_cert = Some(need()?.to_string()),
            "ssl_session_cache" => self.session_cache = true,
            "ssl_kernel_tls" => self.kernel_tls = true,
            "ssl_wbuf_size" => {
                let kib = need()?.trim().parse::<u32>().map_err(|_| format!("could not parse argument to {name}"))?;
                self.wbuf_size = u64::from(kib) * 1024;
            }
            "ssl_verify_mode" => match int(need()?)? {
                m @ 0..=3 => self.verify_mode = m as u8,
                _ => return Err("Invalid ssl_verify_mode. Use help to see valid options.".into()),
            },
            "ssl_min_version" => match int(need()?)? {
                v @ 0..=3 => self.min_version = v as u8,
                _ => return Err("Invalid ssl_min_version. Use help to see valid options.".into()),
            },
            other => return Err(format!("Illegal suboption \"{other}\"")),
        }
        Ok(())
    }

    /// `ssl_verify_mode` as memcached's `stats settings` shows it: OpenSSL's flag bits.
    pub fn verify_mode_flags(&self) -> u8 {
        [0, 1, 3, 7][usize::from(self.verify_mode.min(3))]
    }

    /// The lowest TLS version offered: rustls has no TLS 1.0/1.1, so 0 and 1 mean TLS 1.2.
    pub fn effective_min_version(&self) -> u8 {
        self.min_version.max(2)
    }

    /// `ssl_min_version` as `stats settings` shows it (the version actually in force).
    pub fn min_version_text(&self) -> &'static str {
        if self.effective_min_version() == 3 {
            "tlsv1.3"
        } else {
            "tlsv1.2"
        }
    }
}

/// Split `-l notls:HOST:PORT` into the address and whether TLS applies to it.
pub fn listener_tls(spec: &str, tls_enabled: bool) -> (&str, bool) {
    match spec.strip_prefix(NOTLS_PREFIX) {
        Some(rest) => (rest, false),
        None => (spec, tls_enabled),
    }
}

// Loading the files the settings name (at start, so a bad file stops it, and again on
// `refresh_certs`). memcached's error wording; used by `-Z` and the MySQL proxy's TLS.

/// A PEM certificate chain, with memcached's error wording.
pub fn load_chain(path: Option<&str>) -> Result<Vec<CertificateDer<'static>>, String> {
    let shown = path.unwrap_or("(null)");
    let err = |why: String| format!("Error loading the certificate chain: {shown} : {why}");
    let path = path.ok_or_else(|| err("no ssl_chain_cert given".into()))?;
    let bytes = std::fs::read(path).map_err(|e| err(io_reason(&e)))?;
    let chain: Vec<_> =
        CertificateDer::pem_slice_iter(&bytes).collect::<Result<_, _>>().map_err(|e| err(format!("{e}")))?;
    if chain.is_empty() {
        return Err(err("no PEM certificate in the file (PEM routines::no start line)".into()));
    }
    Ok(chain)
}

/// A private key, PEM (`format` 1) or DER (2), with memcached's error wording.
pub fn load_key(path: Option<&str>, format: i64) -> Result<PrivateKeyDer<'static>, String> {
    let shown = path.unwrap_or("(null)");
    let err = |why: String| format!("Error loading the key: {shown} : {why}");
    let path = path.ok_or_else(|| err("no ssl_key given".into()))?;
    let bytes = std::fs::read(path).map_err(|e| err(io_reason(&e)))?;
    match format {
        1 => PrivateKeyDer::from_pem_slice(&bytes).map_err(|e| err(format!("{e}"))),
        2 => PrivateKeyDer::try_from(bytes).map_err(|e| err(e.to_string())),
        _ => Err(err("bad ssl filetype (ssl_keyformat is 1 for PEM or 2 for DER)".into())),
    }
}

/// PEM CA certificates to verify peers against.
pub fn load_roots(path: &str) -> Result<RootCertStore, String> {
    let err = |why: String| format!("Error loading the CA certificate: {path} : {why}");
    let bytes = std::fs::read(path).map_err(|e| err(io_reason(&e)))?;
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(&bytes) {
        roots.add(cert.map_err(|e| err(format!("{e}")))?).map_err(|e| err(e.to_string()))?;
    }
    if roots.is_empty() {
        return Err(err("no PEM certificate in the file".into()));
    }
    Ok(roots)
}

/// An I/O error as strerror says it ("No such file or directory").
fn io_reason(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memcached_messages_for_bad_values() {
        let mut t = TlsConfig::default();
        assert_eq!(
            t.set("ssl_verify_mode", Some("9")).unwrap_err(),
            "Invalid ssl_verify_mode. Use help to see valid options."
        );
        assert_eq!(t.set("ssl_min_version", Some("x")).unwrap_err(), "could not parse argument to ssl_min_version");
        assert_eq!(t.set("ssl_key", None).unwrap_err(), "Missing ssl_key argument");
        t.set("ssl_verify_mode", Some("2")).unwrap();
        assert_eq!(t.verify_mode_flags(), 3);
        t.set("ssl_wbuf_size", Some("32")).unwrap();
        assert_eq!(t.wbuf_size, 32 * 1024);
        t.set("ssl_min_version", Some("0")).unwrap();
        assert_eq!(t.min_version_text(), "tlsv1.2");
    }

    #[test]
    fn notls_prefix() {
        assert_eq!(listener_tls("notls:127.0.0.1:1", true), ("127.0.0.1:1", false));
        assert_eq!(listener_tls("127.0.0.1", true), ("127.0.0.1", true));
        assert_eq!(listener_tls("127.0.0.1", false), ("127.0.0.1", false));
    }
}
