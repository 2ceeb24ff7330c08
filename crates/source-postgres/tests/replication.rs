//! The replication client against a real PostgreSQL 15 (scripts/postgres.sh: wal_level
//! logical). Runs when SQLCACHED_POSTGRES names a superuser URL; skipped (passing)
//! otherwise. Every test works on tables, a publication and a slot of its own, streams
//! over TLS (sslmode=require) with SCRAM, and drops its slot at the end.

mod common;

use std::time::Duration;

use common::*;
use protocol_postgres::replication::pgoutput::ReplicaIdentity;
use source_postgres::replication::{Event, Publication, ReplicationClient, ReplicationStream, StartOptions};
use source_postgres::{Error, Lsn};

/// Creates the tables (`ddl`), a publication for `tables` and a slot; starts streaming.
async fn setup(url: &str, ddl: &str, tables: &[&str]) -> (String, String, ReplicationStream) {
    let mut admin = admin(url).await;
    sql(&mut admin, ddl).await;
    admin.close().await;
    let slot = unique("slot");
    let publication = unique("pub");
    let cfg = config(url, "sslmode=require");
    let mut client = ReplicationClient::connect(&cfg).await.expect("replication connection");
    assert!(client.connection().is_tls());
    let sys = client.identify_system().await.unwrap();
    assert!(sys.timeline >= 1 && !sys.xlog_pos.is_invalid() && sys.dbname.as_deref() == Some("postgres"));
    assert!(!client.publication_exists(&publication).await.unwrap());
    let list: Vec<(&str, &str)> = tables.iter().map(|t| ("public", *t)).collect();
    client.create_publication(&publication, Publication::Tables(&list)).await.unwrap();
    assert!(client.publication_exists(&publication).await.unwrap());
    let info = client.create_slot(&slot, false).await.unwrap();
    assert!(!info.consistent_point.is_invalid());
    let state = client.slot(&slot).await.unwrap().expect("slot listed");
    assert_eq!((state.plugin.as_deref(), state.active), (Some("pgoutput"), false));
    let stream =
        client.start(&slot, Lsn::INVALID, StartOptions::new(&[&publication])).await.expect("START_REPLICATION");
    (slot, publication, stream)
}

/// Drops the slot and the publication (the stream must be stopped or dropped first).
async fn teardown(url: &str, slot: &str, publication: &str) {
    let mut client = ReplicationClient::connect(&config(url, "")).await.unwrap();
    client.drop_slot(slot, true).await.unwrap();
    client.drop_publication(publication).await.unwrap();
    client.close().await;
}

#[tokio::test]
async fn changes_with_old_and_new_images() {
    let url = need_server!();
    let (pk, full) = (unique("pk"), unique("full"));
    let ddl = format!(
        "CREATE TABLE {pk} (id int PRIMARY KEY, name text, n int);
         CREATE TABLE {full} (id int, v text);
         ALTER TABLE {full} REPLICA IDENTITY FULL;"
    );
    let (slot, publication, mut stream) = setup(&url, &ddl, &[&pk, &full]).await;
    let mut admin = admin(&url).await;
    for s in [
        format!("INSERT INTO {pk} VALUES (1, 'a', 10)"),
        format!("UPDATE {pk} SET name = 'b' WHERE id = 1"),
        format!("UPDATE {pk} SET id = 2 WHERE id = 1"),
        format!("DELETE FROM {pk} WHERE id = 2"),
        format!("INSERT INTO {full} VALUES (1, 'x')"),
        format!("UPDATE {full} SET v = 'y'"),
        format!("DELETE FROM {full}"),
        format!("TRUNCATE {pk}, {full} RESTART IDENTITY"),
        format!("TRUNCATE {pk} CASCADE"),
    ] {
        sql(&mut admin, &s).await;
    }
    let mut rels = Vec::new();
    let tx = next_tx(&mut stream, &mut rels).await.unwrap();
    let relation = Msg::Relation { name: pk.clone(), identity: ReplicaIdentity::Default, keys: vec!["id".into()] };
    assert_eq!(
        tx.msgs,
        [Msg::Begin, relation, Msg::Insert { rel: pk.clone(), new: vec![t("1"), t("a"), t("10")] }, Msg::Commit]
    );
    // The key did not change: no old image.
    let tx = next_tx(&mut stream, &mut rels).await.unwrap();
    assert_eq!(tx.changes(), [Msg::Update { rel: pk.clone(), old: None, new: vec![t("1"), t("b"), t("10")] }]);
    // The key changed: the old key ('K'), other columns NULL in it.
    let tx = next_tx(&mut stream, &mut rels).await.unwrap();
    let old = Some(('K', vec![t("1"), Val::Null, Val::Null]));
    assert_eq!(tx.changes(), [Msg::Update { rel: pk.clone(), old, new: vec![t("2"), t("b"), t("10")] }]);
    let tx = next_tx(&mut stream, &mut rels).await.unwrap();
    assert_eq!(tx.changes(), [Msg::Delete { rel: pk.clone(), old: ('K', vec![t("2"), Val::Null, Val::Null]) }]);
    // REPLICA IDENTITY FULL: every column is part of the identity; whole old rows ('O').
    let tx = next_tx(&mut stream, &mut rels).await.unwrap();
    let relation =
        Msg::Relation { name: full.clone(), identity: ReplicaIdentity::Full, keys: vec!["id".into(), "v".into()] };
    assert_eq!(tx.msgs[1], relation);
    assert_eq!(tx.changes(), [Msg::Insert { rel: full.clone(), new: vec![t("1"), t("x")] }]);
    let tx = next_tx(&mut stream, &mut rels).await.unwrap();
    let old = Some(('O', vec![t("1"), t("x")]));
    assert_eq!(tx.changes(), [Msg::Update { rel: full.clone(), old, new: vec![t("1"), t("y")] }]);
    let tx = next_tx(&mut stream, &mut rels).await.unwrap();
    assert_eq!(tx.changes(), [Msg::Delete { rel: full.clone(), old: ('O', vec![t("1"), t("y")]) }]);
    let tx = next_tx(&mut stream, &mut rels).await.unwrap();
    assert_eq!(tx.changes(), [Msg::Truncate { rels: vec![pk.clone(), full.clone()], cascade: false, restart: true }]);
    let tx = next_tx(&mut stream, &mut rels).await.unwrap();
    assert_eq!(tx.changes(), [Msg::Truncate { rels: vec![pk.clone()], cascade: true, restart: false }]);

    stream.confirm(tx.end);
    let client = stream.stop().await.expect("stop returns the session");
    client.close().await;
    teardown(&url, &slot, &publication).await;
    sql(&mut admin, &format!("DROP TABLE {pk}, {full}")).await;
}

#[tokio::test]
async fn unchanged_toast_is_not_a_value() {
    let url = need_server!();
    let tbl = unique("toast");
    // EXTERNAL: stored out of line uncompressed, so 10,000 bytes are surely TOASTed.
    let ddl = format!(
        "CREATE TABLE {tbl} (id int PRIMARY KEY, big text, small int);
         ALTER TABLE {tbl} ALTER big SET STORAGE EXTERNAL;"
    );
    let (slot, publication, mut stream) = setup(&url, &ddl, &[&tbl]).await;
    let mut admin = admin(&url).await;
    sql(&mut admin, &format!("INSERT INTO {tbl} VALUES (1, repeat('x', 10000), 1)")).await;
    sql(&mut admin, &format!("UPDATE {tbl} SET small = 2")).await;
    sql(&mut admin, &format!("UPDATE {tbl} SET big = 'short', small = 3")).await;
    let mut rels = Vec::new();
    let tx = next_tx(&mut stream, &mut rels).await.unwrap();
    assert_eq!(tx.changes(), [Msg::Insert { rel: tbl.clone(), new: vec![t("1"), t(&"x".repeat(10000)), t("1")] }]);
    let tx = next_tx(&mut stream, &mut rels).await.unwrap();
    assert_eq!(tx.changes(), [Msg::Update { rel: tbl.clone(), old: None, new: vec![t("1"), Val::Unchanged, t("2")] }]);
    let tx = next_tx(&mut stream, &mut rels).await.unwrap();
    assert_eq!(tx.changes(), [Msg::Update { rel: tbl.clone(), old: None, new: vec![t("1"), t("short"), t("3")] }]);
    drop(stream);
    teardown(&url, &slot, &publication).await;
    sql(&mut admin, &format!("DROP TABLE {tbl}")).await;
}

/// Starts streaming from the slot's confirmed position, retrying while the previous
/// walsender still holds the slot (it notices its client is gone a moment later).
async fn restart(url: &str, slot: &str, publication: &str) -> ReplicationStream {
    for _ in 0..100 {
        let client = ReplicationClient::connect(&config(url, "sslmode=require")).await.unwrap();
        match client.start(slot, Lsn::INVALID, StartOptions::new(&[publication])).await {
            Ok(s) => return s,
            Err(Error::SlotInUse(_)) => tokio::time::sleep(Duration::from_millis(100)).await,
            Err(e) => panic!("restart: {e}"),
        }
    }
    panic!("the slot stayed in use for 10 s");
}

#[tokio::test]
async fn resumes_after_the_confirmed_position() {
    let url = need_server!();
    let tbl = unique("resume");
    let (slot, publication, mut stream) =
        setup(&url, &format!("CREATE TABLE {tbl} (id int PRIMARY KEY)"), &[&tbl]).await;
    let mut admin = admin(&url).await;
    for i in 1..=3 {
        sql(&mut admin, &format!("INSERT INTO {tbl} VALUES ({i})")).await;
    }
    let mut rels = Vec::new();
    let mut ends = Vec::new();
    for i in 1..=3 {
        let tx = next_tx(&mut stream, &mut rels).await.unwrap();
        assert_eq!(tx.changes(), [Msg::Insert { rel: tbl.clone(), new: vec![t(&i.to_string())] }]);
        ends.push(tx.end);
    }
    // Only the first two are applied: confirm the second, report it, then lose the link.
    stream.confirm(ends[1]);
    stream.send_status(false).await.unwrap();
    let confirmed = stream.confirmed();
    drop(stream);
    sql(&mut admin, &format!("INSERT INTO {tbl} VALUES (4)")).await;

    let mut stream = restart(&url, &slot, &publication).await;
    let mut rels = Vec::new();
    let tx = next_tx(&mut stream, &mut rels).await.unwrap();
    assert_eq!(tx.changes(), [Msg::Insert { rel: tbl.clone(), new: vec![t("3")] }], "the unconfirmed one again");
    let tx = next_tx(&mut stream, &mut rels).await.unwrap();
    assert_eq!(tx.changes(), [Msg::Insert { rel: tbl.clone(), new: vec![t("4")] }], "then the new one");
    assert!(tx.end > confirmed);

    // A clean stop reports the position; the next session starts after it.
    stream.confirm(tx.end);
    let mut client = stream.stop().await.unwrap();
    let state = client.slot(&slot).await.unwrap().unwrap();
    assert!(state.confirmed_flush.unwrap() >= tx.end, "{state:?} vs {}", tx.end);
    client.close().await;
    sql(&mut admin, &format!("INSERT INTO {tbl} VALUES (5)")).await;
    let mut stream = restart(&url, &slot, &publication).await;
    let tx = next_tx(&mut stream, &mut Vec::new()).await.unwrap();
    assert_eq!(tx.changes(), [Msg::Insert { rel: tbl.clone(), new: vec![t("5")] }]);
    drop(stream);
    teardown(&url, &slot, &publication).await;
    sql(&mut admin, &format!("DROP TABLE {tbl}")).await;
}

#[tokio::test]
async fn keepalives_are_answered() {
    let url = need_server!();
    let tbl = unique("alive");
    let mut admin = admin(&url).await;
    sql(&mut admin, &format!("CREATE TABLE {tbl} (id int PRIMARY KEY)")).await;
    let (slot, publication) = (unique("slot"), unique("pub"));
    // The walsender asks for a reply after 1 s of silence and hangs up after 2 s; our own
    // periodic updates are off (1 h), so only the replies keep the session alive.
    let cfg = config(&url, "sslmode=require&options=-c%20wal_sender_timeout%3D2s");
    let mut client = ReplicationClient::connect(&cfg).await.unwrap();
    client.create_publication(&publication, Publication::Tables(&[("public", &tbl)])).await.unwrap();
    client.create_slot(&slot, false).await.unwrap();
    let mut opts = StartOptions::new(&[&publication]);
    opts.status_interval = Duration::from_secs(3600);
    let mut stream = client.start(&slot, Lsn::INVALID, opts).await.unwrap();
    let until = tokio::time::Instant::now() + Duration::from_secs(6);
    let mut asked = 0;
    while let Ok(ev) = tokio::time::timeout_at(until, stream.recv()).await {
        if let Event::Keepalive { reply_requested: true, .. } = ev.expect("the session outlives wal_sender_timeout") {
            asked += 1;
        }
    }
    assert!(asked >= 2, "keepalives asking for a reply: {asked}");
    assert_eq!(stream.stats().replies, asked);
    // Still streaming after three timeouts' worth of time.
    sql(&mut admin, &format!("INSERT INTO {tbl} VALUES (1)")).await;
    let tx = next_tx(&mut stream, &mut Vec::new()).await.unwrap();
    assert_eq!(tx.changes().len(), 1);
    drop(stream);
    teardown(&url, &slot, &publication).await;
    sql(&mut admin, &format!("DROP TABLE {tbl}")).await;
}

#[tokio::test]
async fn a_dropped_slot_is_reported() {
    let url = need_server!();
    let tbl = unique("dropped");
    let (slot, publication, mut stream) =
        setup(&url, &format!("CREATE TABLE {tbl} (id int PRIMARY KEY)"), &[&tbl]).await;
    let mut admin = admin(&url).await;
    // An operator ends the walsender and drops the slot under us.
    sql(&mut admin, &format!("SELECT pg_terminate_backend({})", stream.backend_pid())).await;
    let err = loop {
        match tokio::time::timeout(Duration::from_secs(15), stream.recv()).await.expect("the loss is noticed") {
            Ok(_) => continue,
            Err(e) => break e,
        }
    };
    assert!(matches!(err, Error::ConnectionLost(_)), "{err}");
    let drop_sql = format!("SELECT pg_drop_replication_slot('{slot}')");
    for i in 0.. {
        match admin.simple_query(&drop_sql).await {
            Ok(_) => break,
            Err(Error::SlotInUse(_)) if i < 100 => tokio::time::sleep(Duration::from_millis(100)).await,
            Err(e) => panic!("{e}"),
        }
    }
    let client = ReplicationClient::connect(&config(&url, "")).await.unwrap();
    let err = client.start(&slot, Lsn::INVALID, StartOptions::new(&[&publication])).await.err().expect("no slot");
    assert!(matches!(err, Error::SlotMissing(_)), "{err}");
    assert!(err.to_string().contains("does not exist"), "{err}");
    let mut client = ReplicationClient::connect(&config(&url, "")).await.unwrap();
    assert!(client.slot(&slot).await.unwrap().is_none());
    let err = client.drop_slot(&slot, false).await.unwrap_err();
    assert!(matches!(err, Error::SlotMissing(_)), "{err}");
    client.drop_publication(&publication).await.unwrap();
    client.close().await;
    sql(&mut admin, &format!("DROP TABLE {tbl}")).await;
}

#[tokio::test]
async fn protocol_2_streams_a_large_transaction_in_chunks() {
    use protocol_postgres::LogicalMessage;
    let url = need_server!();
    let tbl = unique("streamed");
    let (slot, publication) = (unique("slot"), unique("pub"));
    let mut admin = admin(&url).await;
    sql(&mut admin, &format!("CREATE TABLE {tbl} (id int PRIMARY KEY, pad text)")).await;
    // 64 kB of decoded changes and the walsender streams the transaction before it commits.
    let cfg = config(&url, "options=-c%20logical_decoding_work_mem%3D64kB");
    let mut client = ReplicationClient::connect(&cfg).await.unwrap();
    client.create_publication(&publication, Publication::Tables(&[("public", &tbl)])).await.unwrap();
    client.create_slot(&slot, false).await.unwrap();
    let mut opts = StartOptions::new(&[&publication]);
    (opts.proto_version, opts.streaming, opts.messages) = (2, true, true);
    let mut stream = client.start(&slot, Lsn::INVALID, opts).await.unwrap();
    sql(
        &mut admin,
        &format!(
            "BEGIN;
             INSERT INTO {tbl} SELECT g, repeat('x', 100) FROM generate_series(1, 5000) g;
             SELECT pg_logical_emit_message(true, 'sqlcached', 'hello');
             COMMIT;"
        ),
    )
    .await;
    let (mut starts, mut stops, mut inserts, mut message) = (0, 0, 0, None);
    let end = loop {
        let ev = tokio::time::timeout(Duration::from_secs(15), stream.recv()).await.expect("streamed").unwrap();
        let Event::Message { message: m, .. } = ev else { continue };
        match m {
            LogicalMessage::StreamStart(_) => starts += 1,
            LogicalMessage::StreamStop => stops += 1,
            LogicalMessage::Insert(i) => {
                assert!(i.xid.is_some(), "a streamed change carries its transaction id");
                inserts += 1;
            }
            LogicalMessage::Message(msg) => message = Some((msg.prefix.to_string(), msg.content.to_vec(), msg.xid)),
            LogicalMessage::StreamCommit(c) => break c.commit.end_lsn,
            LogicalMessage::Begin(_) | LogicalMessage::Commit(_) => panic!("streamed, not sent at commit"),
            _ => {}
        }
    };
    assert!(starts >= 2 && starts == stops, "chunks: {starts} starts, {stops} stops");
    assert_eq!(inserts, 5000);
    let (prefix, content, xid) = message.expect("the logical message");
    assert_eq!((prefix.as_str(), content.as_slice()), ("sqlcached", &b"hello"[..]));
    assert!(xid.is_some());
    stream.confirm(end);
    stream.stop().await.unwrap().close().await;
    teardown(&url, &slot, &publication).await;
    sql(&mut admin, &format!("DROP TABLE {tbl}")).await;
}
