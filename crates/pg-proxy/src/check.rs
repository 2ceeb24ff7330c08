//! `--check-config` for the PostgreSQL front: the certificates load, and `--pg-user` logs
//! in to the backend as the proxy's settings say (TLS per `--pg-backend-sslmode`); each
//! failure comes with what to change.

use config::postgres::PostgresConfig;

/// One line per check: (passed, what).
pub fn run(cfg: &PostgresConfig) -> Vec<(bool, String)> {
    let mut out = Vec::new();
    if cfg.tls_cert.is_some() || cfg.backend_sslrootcert.is_some() {
        match crate::tls::ProxyTls::new(cfg) {
            Ok(_) => out.push((true, "PostgreSQL front TLS: certificate, key and CA files load and match".into())),
            Err(e) => out.push((false, format!("PostgreSQL front TLS: {e}"))),
        }
    }
    let backend = cfg.backend.clone().unwrap_or_default();
    let Some(user) = &cfg.user else {
        out.push((
            false,
            format!(
                "--pg-backend {backend}: no --pg-user to log in with (the proxy's own account: give --pg-user \
                 and its password in {} or --pg-password-file)",
                config::postgres::PASSWORD_ENV
            ),
        ));
        return out;
    };
    let password = match cfg.password() {
        Ok(p) => p,
        Err(e) => {
            out.push((false, e.to_string()));
            return out;
        }
    };
    let src = match crate::tls::source_config(cfg, password.clone()) {
        Ok(s) => s,
        Err(e) => {
            out.push((false, e));
            return out;
        }
    };
    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            out.push((false, format!("--pg-backend {backend}: {e}")));
            return out;
        }
    };
    let result = rt.block_on(async {
        let mut conn = source_postgres::Connection::connect(&src, false).await?;
        let rows = conn.simple_query("SELECT version()").await?;
        let tls = conn.is_tls();
        conn.close().await;
        Ok::<_, source_postgres::Error>((rows, tls))
    });
    let who = format!("--pg-user {user} at {backend} (database {})", cfg.database);
    match result {
        Ok((rows, tls)) => {
            let version = rows.first().and_then(|r| r.rows.first()).and_then(|r| r[0].clone()).unwrap_or_default();
            let link = if tls { format!("TLS, sslmode {}", cfg.backend_sslmode.name()) } else { "no TLS".into() };
            out.push((true, format!("{who}: logs in ({link}); {version}")));
        }
        Err(e) => out.push((false, format!("{who}: {e}; {}", fix(&e, cfg, user, password.is_some())))),
    }
    out
}

/// What to change for a failed login.
fn fix(e: &source_postgres::Error, cfg: &PostgresConfig, user: &str, has_password: bool) -> String {
    use source_postgres::Error::*;
    let backend = cfg.backend.as_deref().unwrap_or_default();
    let text = e.to_string();
    match e {
        Connect(_) => format!(
            "is PostgreSQL running and listening on {backend}? (its listen_addresses and port, a firewall between)"
        ),
        Tls(_) => format!(
            "TLS as --pg-backend-sslmode {} demands failed: check that the server has ssl = on, that \
             --pg-backend-sslrootcert is the CA that signed its certificate, and (verify-full) that the \
             certificate names the host of --pg-backend",
            cfg.backend_sslmode.name()
        ),
        Auth(_) if text.contains("28P01") && !has_password => {
            format!("no password was given: set {} or --pg-password-file", config::postgres::PASSWORD_ENV)
        }
        Auth(_) if text.contains("28P01") => format!(
            "the password is wrong: fix {} or --pg-password-file (or ALTER ROLE {user} PASSWORD '...')",
            config::postgres::PASSWORD_ENV
        ),
        Auth(_) if text.contains("pg_hba.conf") => format!(
            "pg_hba.conf has no line letting {user} in from this host: add one (host {db} {user} ADDRESS/32 \
             scram-sha-256) and reload PostgreSQL (SELECT pg_reload_conf())",
            db = cfg.database
        ),
        Auth(_) if text.contains("none was given") => {
            format!("the server asks for a password: set {} or --pg-password-file", config::postgres::PASSWORD_ENV)
        }
        Auth(_) => "the server refused the login: see its log for the reason".into(),
        Server(d) if d.code == "3D000" => {
            format!("database {} does not exist: --pg-database names the one --pg-user logs in to", cfg.database)
        }
        _ => "see the server's log".into(),
    }
}
