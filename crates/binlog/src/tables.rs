//! `sql_source::check::Check` for the binlog: the account can follow it (the login,
//! REPLICATION SLAVE, BINLOG MONITOR / REPLICATION CLIENT, `log_bin`: [`crate::account`]),
//! the binlog carries whole row images (`binlog_format = ROW`, `binlog_row_image = FULL`:
//! with MINIMAL a before image holds only the primary key, so a changed email could not
//! name the old `user_by_email:` key), and every table exists with every column wanted.

use std::time::Duration;

use mysql_async::prelude::Queryable;
use mysql_async::{Conn, OptsBuilder};
use sql_source::check::{Check, Verdict, Wanted};

use crate::account;
use crate::state::Config;

impl Check for Config {
    fn backend(&self) -> String {
        self.backend.clone()
    }

    fn check(&self, wanted: &[Wanted], timeout: Duration) -> Verdict {
        // The account, its rights and the binlog's settings: the check every consumer of the
        // feed shares. Row images with every column (FULL) in row format are needed to name
        // keys: those two count as wrong here.
        let mut wrong: Vec<String> = match account::check(self, timeout) {
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
        let Some((host, port)) = self.backend.rsplit_once(':').and_then(|(h, p)| Some((h, p.parse::<u16>().ok()?)))
        else {
            return Verdict::Wrong(vec![format!("--mysql-backend {}: want host:port", self.backend)]);
        };
        let opts = OptsBuilder::default()
            .ip_or_hostname(host.trim_start_matches('[').trim_end_matches(']'))
            .tcp_port(port)
            .user(Some(self.user.clone()))
            .pass(Some(self.password.clone()))
            .prefer_socket(false);
        rt.block_on(async {
            let mut conn = match tokio::time::timeout(timeout, Conn::new(opts)).await {
                Ok(Ok(c)) => c,
                // The login failed: the account check said why.
                Ok(Err(e)) if is_refusal(&e) && !wrong.is_empty() => return Verdict::Wrong(wrong),
                Ok(Err(e)) if is_refusal(&e) => {
                    return Verdict::Wrong(vec![format!("--mysql-user {}: {}", self.user, engine::errors::cause(&e))])
                }
                Ok(Err(e)) => return Verdict::Unreachable(format!("cannot connect: {}", engine::errors::cause(&e))),
                Err(_) => return Verdict::Unreachable(format!("no answer within {}s", timeout.as_secs())),
            };
            match tokio::time::timeout(timeout, problems(&mut conn, wanted)).await {
                Ok(Ok(p)) => {
                    wrong.extend(p);
                    if wrong.is_empty() {
                        Verdict::Good {
                            notes: vec!["the account's login and replication rights, the binlog's row format, \
                                         tables and columns checked"
                                .into()],
                        }
                    } else {
                        Verdict::Wrong(wrong)
                    }
                }
                Ok(Err(e)) => Verdict::Unreachable(engine::errors::cause(&e)),
                Err(_) => Verdict::Unreachable(format!("no answer within {}s", timeout.as_secs())),
            }
        })
    }
}

/// A login the server refused (wrong password, unknown user): a configuration error.
fn is_refusal(e: &mysql_async::Error) -> bool {
    matches!(e, mysql_async::Error::Server(s) if s.code == 1045 || s.code == 1044 || s.code == 1130)
}

/// Every table exists with every column wanted.
async fn problems(c: &mut Conn, wanted: &[Wanted]) -> mysql_async::Result<Vec<String>> {
    let mut out = Vec::new();
    for w in wanted {
        let (db, table) = (&w.db, &w.table);
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
        for col in w.columns.iter().filter(|c| !have.iter().any(|h| h.eq_ignore_ascii_case(c))) {
            out.push(format!("{db}.{table} has no column {col} (it has {})", have.join(", ")));
        }
    }
    Ok(out)
}
