//! The rules against the backend: the account can follow the binlog (the login,
//! REPLICATION SLAVE, BINLOG MONITOR / REPLICATION CLIENT, `log_bin`: `binlog::account`, the
//! check the query cache and the containers share), the binlog carries whole row images
//! (`binlog_format = ROW`, `binlog_row_image = FULL`: with MINIMAL a before image holds only
//! the primary key, so a changed email could not name the old `user_by_email:` key), and
//! every table exists with every column a template names. A wrong rule or account stops the
//! start: keys that are never invalidated would be served stale for good.

use std::time::Duration;

use mysql_async::prelude::Queryable;
use mysql_async::{Conn, OptsBuilder};

use super::Rules;
use binlog::account;
use config::mysql::MysqlConfig;

/// How long the check may take before the backend counts as unreachable.
const TIMEOUT: Duration = Duration::from_secs(5);
/// How often an unreachable backend is tried again.
const RETRY: Duration = Duration::from_secs(2);

/// The account the rules follow the binlog with.
#[derive(Clone)]
pub struct Login {
    /// `--mysql-backend`.
    pub backend: String,
    /// `--mysql-user`.
    pub user: String,
    /// Its password.
    pub password: String,
}

impl Login {
    /// The login of `--mysql-backend` / `--mysql-user` / its password.
    pub fn of(mysql: &MysqlConfig) -> Result<Login, String> {
        let backend = mysql.backend.clone().ok_or("no --mysql-backend")?;
        let user = mysql.user.clone().ok_or("no --mysql-user")?;
        let password = mysql.password().map_err(|e| format!("--mysql-password-file: {e}"))?;
        Ok(Login { backend, user, password })
    }
}

/// What the backend said about the rules.
enum Verdict {
    /// Every rule checked.
    Good,
    /// What is wrong (one line each).
    Wrong(Vec<String>),
    /// The backend did not answer (why).
    Unreachable(String),
}

/// At start: wrong rules are an error; an unreachable backend is said, and the check runs
/// again every 2 s (on a thread of its own) until it answers, logging what it finds.
pub fn at_start(login: &Login, rules: &Rules) -> Result<(), String> {
    let tables = tables(rules);
    match verify(login, &tables) {
        Verdict::Good => Ok(()),
        Verdict::Wrong(problems) => Err(format!("--invalidate: {}", problems.join("; "))),
        Verdict::Unreachable(why) => {
            log::warn!(
                "--invalidate: {} does not answer ({why}): the rules are not checked yet (checked again every \
                 {}s) and apply as soon as its binlog flows",
                login.backend,
                RETRY.as_secs()
            );
            let login = login.clone();
            let spawned = std::thread::Builder::new().name("sqlcached-invalidate-check".into()).spawn(move || loop {
                std::thread::sleep(RETRY);
                match verify(&login, &tables) {
                    Verdict::Good => return log::warn!("--invalidate: {} answers; every rule checked", login.backend),
                    Verdict::Wrong(p) => {
                        return log::error!(
                            "--invalidate: {} answers but the rules are wrong: {}",
                            login.backend,
                            p.join("; ")
                        )
                    }
                    Verdict::Unreachable(_) => {}
                }
            });
            if let Err(e) = spawned {
                log::error!("--invalidate: cannot start the check thread: {e}");
            }
            Ok(())
        }
    }
}

/// For `--check-config`: (passed, what to print).
pub fn for_check_config(login: &Login, rules: &Rules) -> (bool, String) {
    let n = rules.rules.len();
    match verify(login, &tables(rules)) {
        Verdict::Good => (
            true,
            format!(
                "--invalidate: {n} rule(s): the account's login and replication rights, the binlog's row format, \
                 tables and columns checked"
            ),
        ),
        Verdict::Wrong(p) => (false, format!("--invalidate: {}", p.join("; "))),
        Verdict::Unreachable(why) => (false, format!("--invalidate: {} does not answer: {why}", login.backend)),
    }
}

/// (db, table, columns the templates name) per rule.
type Wanted = Vec<(String, String, Vec<String>)>;

fn tables(rules: &Rules) -> Wanted {
    rules
        .rules
        .iter()
        .map(|r| {
            let mut cols: Vec<String> = Vec::new();
            for c in r.templates.iter().flat_map(|t| t.columns()) {
                if !cols.iter().any(|x| x.eq_ignore_ascii_case(c)) {
                    cols.push(c.to_string());
                }
            }
            (r.db.clone(), r.table.clone(), cols)
        })
        .collect()
}

fn verify(login: &Login, wanted: &Wanted) -> Verdict {
    // The account, its rights and the binlog's settings: the check every consumer of the
    // feed shares. The rules need row images with every column (FULL) in row format, or they
    // could not name the keys: those two count as wrong here.
    let account = binlog::Config {
        backend: login.backend.clone(),
        user: login.user.clone(),
        password: login.password.clone(),
        server_id: 0,
        start: None,
    };
    let mut wrong: Vec<String> = match account::check(&account, TIMEOUT) {
        account::Verdict::Unreachable(why) => return Verdict::Unreachable(why),
        account::Verdict::Checked { problems, .. } => problems
            .into_iter()
            .filter(|p| p.blocking || matches!(p.check, "binlog_format" | "binlog_row_image"))
            .map(|p| p.message)
            .collect(),
    };
    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => return Verdict::Unreachable(format!("runtime: {e}")),
    };
    let Some((host, port)) = login.backend.rsplit_once(':').and_then(|(h, p)| Some((h, p.parse::<u16>().ok()?))) else {
        return Verdict::Wrong(vec![format!("--mysql-backend {}: want host:port", login.backend)]);
    };
    let opts = OptsBuilder::default()
        .ip_or_hostname(host.trim_start_matches('[').trim_end_matches(']'))
        .tcp_port(port)
        .user(Some(login.user.clone()))
        .pass(Some(login.password.clone()))
        .prefer_socket(false);
    rt.block_on(async {
        let mut conn = match tokio::time::timeout(TIMEOUT, Conn::new(opts)).await {
            Ok(Ok(c)) => c,
            // The login failed: the account check said why.
            Ok(Err(e)) if is_refusal(&e) && !wrong.is_empty() => return Verdict::Wrong(wrong),
            Ok(Err(e)) if is_refusal(&e) => {
                return Verdict::Wrong(vec![format!("--mysql-user {}: {}", login.user, engine::errors::cause(&e))])
            }
            Ok(Err(e)) => return Verdict::Unreachable(format!("cannot connect: {}", engine::errors::cause(&e))),
            Err(_) => return Verdict::Unreachable(format!("no answer within {}s", TIMEOUT.as_secs())),
        };
        match tokio::time::timeout(TIMEOUT, problems(&mut conn, wanted)).await {
            Ok(Ok(p)) => {
                wrong.extend(p);
                if wrong.is_empty() {
                    Verdict::Good
                } else {
                    Verdict::Wrong(wrong)
                }
            }
            Ok(Err(e)) => Verdict::Unreachable(engine::errors::cause(&e)),
            Err(_) => Verdict::Unreachable(format!("no answer within {}s", TIMEOUT.as_secs())),
        }
    })
}

/// A login the server refused (wrong password, unknown user): a configuration error.
fn is_refusal(e: &mysql_async::Error) -> bool {
    matches!(e, mysql_async::Error::Server(s) if s.code == 1045 || s.code == 1044 || s.code == 1130)
}

/// The rules' own checks: every table exists with every column a template names.
async fn problems(c: &mut Conn, wanted: &Wanted) -> mysql_async::Result<Vec<String>> {
    let mut out = Vec::new();
    for (db, table, cols) in wanted {
        let have: Vec<String> = c
            .exec(
                "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?",
                (db.as_str(), table.as_str()),
            )
            .await?;
        if have.is_empty() {
            out.push(format!("{db}.{table}: no such table (or --mysql-user cannot see it)"));
            continue;
        }
        for col in cols.iter().filter(|c| !have.iter().any(|h| h.eq_ignore_ascii_case(c))) {
            out.push(format!("{db}.{table} has no column {col} (it has {})", have.join(", ")));
        }
    }
    Ok(out)
}
