//! Connecting to a real PostgreSQL 15: every password method, every sslmode, and the
//! errors an operator must be told clearly (no REPLICATION attribute, wal_level not
//! logical, wrong password, untrusted certificate). Runs when SQLCACHED_POSTGRES names a
//! superuser URL of a server started by scripts/postgres.sh (its groups md5_login,
//! password_login, trust_login pick the method); SQLCACHED_POSTGRES_CA (the script's
//! `ca=` line) enables the certificate checks. Skipped (passing) otherwise.

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::*;
use source_postgres::replication::ReplicationClient;
use source_postgres::{Config, Connection, Error};

async fn current_user(url: &str) -> Result<String, Error> {
    let mut c = Connection::connect(&Config::from_url(url)?, false).await?;
    let r = c.simple_query("SELECT current_user").await?;
    c.close().await;
    Ok(r[0].rows[0][0].clone().unwrap())
}

#[tokio::test]
async fn every_password_method() {
    let url = need_server!();
    let (md5, plain, trust) = (unique("md5"), unique("plain"), unique("trust"));
    let mut admin = admin(&url).await;
    sql(
        &mut admin,
        &format!(
            "SET password_encryption = 'md5';
             CREATE ROLE {md5} LOGIN PASSWORD 'pw-md5' IN ROLE md5_login;
             SET password_encryption = 'scram-sha-256';
             CREATE ROLE {plain} LOGIN PASSWORD 'pw-plain' IN ROLE password_login;
             CREATE ROLE {trust} LOGIN IN ROLE trust_login;"
        ),
    )
    .await;
    // SCRAM-SHA-256 (the server's default), over TLS and in plain text.
    for mode in ["sslmode=require", "sslmode=disable"] {
        assert_eq!(current_user(&with_params(&url, mode)).await.unwrap(), "sqlcached");
    }
    assert_eq!(current_user(&with_params(&as_user(&url, &md5, "pw-md5"), "sslmode=disable")).await.unwrap(), md5);
    assert_eq!(current_user(&as_user(&url, &plain, "pw-plain")).await.unwrap(), plain);
    assert_eq!(current_user(&as_user(&url, &trust, "ignored")).await.unwrap(), trust);
    for (user, method) in [("sqlcached", "scram"), (md5.as_str(), "md5"), (plain.as_str(), "password")] {
        let err = current_user(&as_user(&url, user, "wrong")).await.unwrap_err();
        assert!(matches!(err, Error::Auth(_)), "{method}: {err}");
        assert!(err.to_string().contains("password authentication failed"), "{method}: {err}");
    }
    // No password given where one is needed: said before anything is sent.
    let no_pw = url.replacen(":sqlcached-test@", "@", 1);
    let err = current_user(&no_pw).await.unwrap_err();
    assert!(matches!(&err, Error::Auth(m) if m.contains("none was given")), "{err}");
    sql(&mut admin, &format!("DROP ROLE {md5}; DROP ROLE {plain}; DROP ROLE {trust};")).await;
}

#[tokio::test]
async fn every_sslmode() {
    let url = need_server!();
    let tls = |params: &str| {
        let u = with_params(&url, params);
        async move {
            let c = Connection::connect(&Config::from_url(&u)?, false).await?;
            let on = c.is_tls();
            c.close().await;
            Ok::<bool, Error>(on)
        }
    };
    assert!(!tls("sslmode=disable").await.unwrap());
    assert!(tls("sslmode=prefer").await.unwrap());
    assert!(tls("sslmode=require").await.unwrap());
    let Some(ca) = std::env::var("SQLCACHED_POSTGRES_CA").ok().filter(|c| !c.is_empty()) else {
        eprintln!("SQLCACHED_POSTGRES_CA not set: certificate checks skipped");
        return;
    };
    assert!(tls(&format!("sslmode=verify-ca&sslrootcert={ca}")).await.unwrap());
    assert!(tls(&format!("sslmode=verify-full&sslrootcert={ca}")).await.unwrap());
    // The certificate names localhost and 127.0.0.1: verify-full to the name works too.
    let by_name = url.replacen("@127.0.0.1:", "@localhost:", 1);
    let u = with_params(&by_name, &format!("sslmode=verify-full&sslrootcert={ca}"));
    assert_eq!(current_user(&u).await.unwrap(), "sqlcached");
    // A CA that did not sign the server's certificate: refused, whatever the mode.
    let rogue = rogue_ca();
    for mode in ["verify-ca", "verify-full", "require"] {
        let err = tls(&format!("sslmode={mode}&sslrootcert={}", rogue.display())).await.unwrap_err();
        assert!(matches!(err, Error::Tls(_)), "{mode}: {err}");
    }
    let _ = std::fs::remove_dir_all(rogue.parent().unwrap());
}

/// A self-signed CA made with the real openssl command.
fn rogue_ca() -> PathBuf {
    let dir = std::env::temp_dir().join(unique("rogue-ca"));
    std::fs::create_dir_all(&dir).unwrap();
    let crt = dir.join("ca.crt");
    let ok = Command::new("openssl")
        .args(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1"])
        .args(["-subj", "/CN=rogue", "-keyout"])
        .arg(dir.join("ca.key"))
        .arg("-out")
        .arg(&crt)
        .output()
        .expect("openssl runs")
        .status
        .success();
    assert!(ok, "openssl made a CA");
    crt
}

#[tokio::test]
async fn a_role_without_replication_is_told_what_it_needs() {
    let url = need_server!();
    // scripts/postgres.sh's second login: no superuser, no REPLICATION.
    let app = as_user(&url, "sqlcached_app", "sqlcached-test");
    assert_eq!(current_user(&app).await.unwrap(), "sqlcached_app");
    let err = ReplicationClient::connect(&Config::from_url(&app).unwrap()).await.err().expect("refused");
    assert!(matches!(err, Error::NoReplicationPrivilege(_)), "{err}");
    assert!(err.to_string().contains("REPLICATION"), "{err}");
}

#[tokio::test]
async fn unreachable_server_is_a_connect_error() {
    need_server!();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let cfg = Config::from_url(&format!("postgres://u:p@127.0.0.1:{port}/d")).unwrap();
    let err = Connection::connect(&cfg, false).await.err().expect("nothing listens");
    assert!(matches!(err, Error::Connect(_)), "{err}");
}

/// A second server with wal_level=replica (scripts/postgres.sh, stopped by its pid).
#[tokio::test]
async fn wal_level_replica_is_refused_clearly() {
    let url = need_server!();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/postgres.sh");
    let dir = std::env::temp_dir().join(unique("sqlcached-pg-replica"));
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let out = Command::new("bash")
        .arg(&script)
        .args(["start", dir.to_str().unwrap(), &port.to_string()])
        .env("POSTGRES_EXTRA_ARGS", "-c wal_level=replica")
        .env("POSTGRES_SSL", "0")
        .output()
        .unwrap();
    let stop = || {
        let _ = Command::new("bash").arg(&script).args(["stop", dir.to_str().unwrap()]).status();
        let _ = std::fs::remove_dir_all(&dir);
    };
    if !out.status.success() {
        stop(); // whatever it started, stopped by its own pid
        panic!("postgres.sh start: {}", String::from_utf8_lossy(&out.stderr));
    }
    let mut cfg = Config::from_url(&url).unwrap();
    cfg.port = port;
    let result = async {
        let mut client = ReplicationClient::connect(&cfg).await?;
        client.create_slot("never", false).await
    }
    .await;
    stop();
    let err = result.unwrap_err();
    assert!(matches!(err, Error::WalLevelNotLogical(_)), "{err}");
    assert!(err.to_string().contains("wal_level must be logical"), "{err}");
}
