//! The rules against the backend: every table exists with every column a template names,
//! and the binlog carries whole row images (`log_bin`, `binlog_format = ROW`,
//! `binlog_row_image = FULL`: with MINIMAL a before image holds only the primary key, so
//! a changed email could not name the old `user_by_email:` key).

use std::time::Duration;

use mysql_async::prelude::Queryable;
use mysql_async::{Conn, OptsBuilder};

use super::Rules;
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
        Verdict::Good => {
            (true, format!("--invalidate: {n} rule(s): tables, columns and the binlog's row format checked"))
        }
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
            Ok(Err(e)) if is_refusal(&e) => {
                return Verdict::Wrong(vec![format!("--mysql-user {}: {}", login.user, engine::errors::cause(&e))])
            }
            Ok(Err(e)) => return Verdict::Unreachable(format!("cannot connect: {}", engine::errors::cause(&e))),
            Err(_) => return Verdict::Unreachable(format!("no answer within {}s", TIMEOUT.as_secs())),
        };
        match tokio::time::timeout(TIMEOUT, problems(&mut conn, wanted)).await {
            Ok(Ok(p)) if p.is_empty() => Verdict::Good,
            Ok(Ok(p)) => Verdict::Wrong(p),
            Ok(Err(e)) => Verdict::Unreachable(engine::errors::cause(&e)),
            Err(_) => Verdict::Unreachable(format!("no answer within {}s", TIMEOUT.as_secs())),
        }
    })
}

/// A login the server refused (wrong password, unknown user): a configuration error.
fn is_refusal(e: &mysql_async::Error) -> bool {
    matches!(e, mysql_async::Error::Server(s) if s.code == 1045 || s.code == 1044)
}

async fn problems(c: &mut Conn, wanted: &Wanted) -> mysql_async::Result<Vec<String>> {
    let mut out = Vec::new();
    let vars: Option<(String, String, String)> = c
        .query_first("SELECT CAST(@@GLOBAL.log_bin AS CHAR), @@GLOBAL.binlog_format, @@GLOBAL.binlog_row_image")
        .await?;
    if let Some((log_bin, format, image)) = vars {
        if log_bin != "1" && !log_bin.eq_ignore_ascii_case("ON") {
            out.push("the backend writes no binlog (log_bin is off): nothing would ever be invalidated".into());
        }
        if !format.eq_ignore_ascii_case("ROW") {
            out.push(format!(
                "binlog_format is {format}: rows cannot be named, every change would flush (set binlog_format=ROW)"
            ));
        }
        if !image.eq_ignore_ascii_case("FULL") {
            out.push(format!(
                "binlog_row_image is {image}: before images lack the old values of non-key columns, so old keys \
                 (a changed email's) would stay (set binlog_row_image=FULL)"
            ));
        }
    }
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
