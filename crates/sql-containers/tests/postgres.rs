//! PostgreSQL end to end: the scenarios every backend runs (`common`). Runs when
//! SQLCACHED_POSTGRES=postgres://user:password@host:port/db names a server (scripts/postgres.sh
//! start DIR PORT prints one); skipped (passing) otherwise. Every test works in a schema of
//! its own.

mod common;

use common::{BoxFut, Peek};
use sql_containers::{Containers, SqlConfig};
use tokio_postgres::{NoTls, SimpleQueryMessage};

fn server() -> Option<String> {
    std::env::var("SQLCACHED_POSTGRES").ok().filter(|v| !v.is_empty())
}

macro_rules! need_server {
    () => {
        match server() {
            Some(s) => s,
            None => {
                eprintln!("SQLCACHED_POSTGRES not set: PostgreSQL test skipped");
                return;
            }
        }
    };
}

/// The URL with `sslmode=disable` (the tests' own connections; sqlcached's use the URL as given).
fn plain(url: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}sslmode=disable")
}

/// Runs `sql` (simple protocol); every value as text, NULL as None.
async fn simple(url: &str, sql: &str) -> Vec<Vec<Option<String>>> {
    let (client, conn) = tokio_postgres::connect(&plain(url), NoTls).await.unwrap();
    let task = tokio::spawn(conn);
    let msgs = client.simple_query(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    drop(client);
    let _ = task.await;
    msgs.into_iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::Row(r) => Some((0..r.len()).map(|i| r.get(i).map(str::to_string)).collect()),
            _ => None,
        })
        .collect()
}

/// A string literal (standard_conforming_strings: only quotes are doubled).
fn literal(b: &[u8]) -> String {
    format!("'{}'", String::from_utf8_lossy(b).replace('\'', "''"))
}

const DDL: &str = "
CREATE TABLE demo (c1 VARCHAR(250) NOT NULL PRIMARY KEY, c2 TEXT, c3 BIGINT, c4 BIGINT, c5 BIGINT);
CREATE TABLE multi (k VARCHAR(250) NOT NULL, a TEXT, n BIGINT, b TEXT, f BIGINT, c BIGINT, e BIGINT);
CREATE UNIQUE INDEX multi_k ON multi (k);
CREATE TABLE plain (k BYTEA NOT NULL PRIMARY KEY, v BYTEA)
";

struct PgPeek {
    url: String,
    schema: String,
}

impl Peek for PgPeek {
    fn one<'a>(&'a self, sql: &'a str, param: &'a [u8]) -> BoxFut<'a, Option<Vec<u8>>> {
        Box::pin(async move {
            let sql = format!("SET search_path = {}; {}", self.schema, sql.replacen('?', &literal(param), 1));
            let rows = simple(&self.url, &sql).await;
            rows.first().map(|r| r[0].clone().map_or_else(|| b"NULL".to_vec(), String::into_bytes))
        })
    }

    fn count<'a>(&'a self, table: &'a str) -> BoxFut<'a, i64> {
        Box::pin(async move {
            let rows = simple(&self.url, &format!("SELECT count(*) FROM {}.\"{table}\"", self.schema)).await;
            rows[0][0].as_deref().unwrap().parse().unwrap()
        })
    }
}

/// A fresh schema `name` with `ddl` run in it.
async fn schema(url: &str, name: &str, ddl: &str) {
    simple(
        url,
        &format!("DROP SCHEMA IF EXISTS {name} CASCADE; CREATE SCHEMA {name}; SET search_path = {name}; {ddl}"),
    )
    .await;
}

fn config(url: &str, schema: &str, backend_extra: &str, options: &str, containers: &str) -> SqlConfig {
    // Every container in `schema`: the scenarios' tables are unqualified.
    let containers = containers.replace("[[container]]\n", &format!("[[container]]\nschema = \"{schema}\"\n"));
    let toml = format!(
        "[backend]\nkind = \"postgres\"\nurl = \"{url}\"\npool_size = 4\nplugin_tables = \"off\"\n{backend_extra}\n[options]\n{options}\n{containers}"
    );
    SqlConfig::from_toml_str(&toml).unwrap()
}

async fn setup(url: &str, name: &str, options: &str) -> (Containers, PgPeek) {
    schema(url, name, DDL).await;
    let cs = Containers::load(&config(url, name, "", options, common::CONTAINERS)).await.unwrap();
    (cs, PgPeek { url: url.to_string(), schema: name.to_string() })
}

#[tokio::test]
async fn every_operation() {
    let url = need_server!();
    let (cs, peek) = setup(&url, "sqlcached_t_ops", "").await;
    common::basic(&cs).await;
    common::cas(&cs).await;
    common::arith(&cs).await;
    common::binary(&cs).await;
    common::many(&cs).await;
    common::flush(&cs, &peek).await;
    common::unbatched(&cs, &peek, "SELECT c2 FROM demo WHERE c1 = ?").await;
    assert_eq!(cs.stats().lost_writes, 0);
}

#[tokio::test]
async fn multi_column_values() {
    let url = need_server!();
    let (cs, peek) = setup(&url, "sqlcached_t_multi", "").await;
    common::multi(&cs, &peek, "SELECT b FROM multi WHERE k = ?").await;
}

#[tokio::test]
async fn empty_parts_in_not_null_columns() {
    let url = need_server!();
    let name = "sqlcached_t_strict";
    let strict = "CREATE TABLE strict (k VARCHAR(250) NOT NULL, a TEXT NOT NULL, n INT NOT NULL, b TEXT); \
                  CREATE UNIQUE INDEX strict_k ON strict (k)";
    schema(&url, name, &format!("{DDL};{strict}")).await;
    let containers = format!("{}{}", common::CONTAINERS, common::STRICT);
    let cs = Containers::load(&config(&url, name, "", "", &containers)).await.unwrap();
    common::empty_parts(&cs, &PgPeek { url: url.clone(), schema: name.into() }, "strict").await;
}

#[tokio::test]
async fn expiry() {
    let url = need_server!();
    let (cs, peek) = setup(&url, "sqlcached_t_exp", "").await;
    common::expire(&cs, &peek, "SELECT c2 FROM demo WHERE c1 = ?").await;
}

#[tokio::test]
async fn injection_is_inert() {
    let url = need_server!();
    let (cs, peek) = setup(&url, "sqlcached_t_inj", "").await;
    common::injection(&cs, &peek, "demo", "SELECT c2 FROM demo WHERE c1 = ?").await;
    let n = simple(&url, "SELECT count(*) FROM pg_tables WHERE schemaname = 'sqlcached_t_inj'").await;
    assert_eq!(n[0][0].as_deref(), Some("3"), "no table dropped");
}

#[tokio::test]
async fn batching_and_background_commit() {
    let url = need_server!();
    let name = "sqlcached_t_batch";
    schema(&url, name, DDL).await;
    let peek = PgPeek { url: url.clone(), schema: name.into() };
    // One writer connection: all three writes land in the same batch.
    let cs = Containers::load(&config(
        &url,
        name,
        "writers = 1",
        "w_batch_size = 3\nbk_commit_interval = 1",
        common::CONTAINERS,
    ))
    .await
    .unwrap();
    common::batching(&cs, &peek, "SELECT c2 FROM demo WHERE c1 = ?").await;
}

#[tokio::test]
async fn read_batching() {
    let url = need_server!();
    let (cs, _) = setup(&url, "sqlcached_t_rbatch", "r_batch_size = 4\nbk_commit_interval = 1").await;
    let c = cs.default_container();
    for i in 0..10 {
        let k = format!("r{i}");
        common::set(c, k.as_bytes(), b"x").await;
        assert_eq!(common::val(c, k.as_bytes()).await.unwrap(), b"x");
    }
    // Flush with read transactions open on reader connections: they commit first.
    c.flush().await.unwrap();
    assert_eq!(c.get(b"r1").await.unwrap(), None);
}
