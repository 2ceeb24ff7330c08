//! protocol-postgres against the bytes a real PostgreSQL 15 sends: a raw session (a
//! `trust_login` role, plain TCP, no client library) drives the simple and extended
//! protocols, COPY, notices, notifications, FunctionCall and CancelRequest; every backend
//! message must parse and compose back to the same bytes, and `reply::Reply` /
//! `reply::Pipeline` must end each reply where the server does. Runs when
//! SQLCACHED_POSTGRES is set (scripts/postgres.sh); skipped (passing) otherwise.

mod common;

use std::time::Duration;

use common::*;
use protocol_postgres::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

struct Raw {
    tcp: TcpStream,
    buf: Vec<u8>,
    pid: u32,
    key: Vec<u8>,
}

impl Raw {
    async fn connect(port: u16, user: &str) -> Raw {
        let mut tcp = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        let mut out = Vec::new();
        let params = vec![(&b"user"[..], user.as_bytes()), (b"database", b"postgres")];
        StartupMessage { version: ProtocolVersion::V3_0, params }.write(&mut out);
        tcp.write_all(&out).await.unwrap();
        let mut raw = Raw { tcp, buf: Vec::new(), pid: 0, key: Vec::new() };
        loop {
            let (tag, body) = raw.next().await;
            match BackendMessage::parse(Frame { tag, body: &body }).unwrap() {
                BackendMessage::Authentication(a) => assert_eq!(a, Authentication::Ok, "trust"),
                BackendMessage::BackendKeyData(k) => (raw.pid, raw.key) = (k.process_id, k.secret_key.to_vec()),
                BackendMessage::ReadyForQuery(s) => {
                    assert_eq!(s, TransactionStatus::Idle);
                    return raw;
                }
                _ => {}
            }
        }
    }

    /// The next backend message, checked: it parses and composes back to its bytes.
    async fn next(&mut self) -> (u8, Vec<u8>) {
        loop {
            if let Some((frame, used)) = parse_backend_frame(&self.buf).unwrap() {
                let m = BackendMessage::parse(frame).unwrap_or_else(|e| panic!("{e}: {frame:?}"));
                let mut again = Vec::new();
                m.write(&mut again);
                assert_eq!(again, &self.buf[..used], "compose(parse(x)) == x for {m:?}");
                let out = (frame.tag, frame.body.to_vec());
                self.buf.drain(..used);
                return out;
            }
            let n =
                tokio::time::timeout(Duration::from_secs(15), self.tcp.read_buf(&mut self.buf)).await.unwrap().unwrap();
            assert!(n > 0, "server closed");
        }
    }

    async fn send(&mut self, msgs: &[FrontendMessage<'_>]) {
        let mut out = Vec::new();
        for m in msgs {
            m.write(&mut out);
        }
        self.tcp.write_all(&out).await.unwrap();
    }

    /// Reads one reply to its ReadyForQuery; returns it with its messages.
    async fn reply(&mut self) -> (Reply, Vec<(u8, Vec<u8>)>) {
        let mut r = Reply::new();
        let mut msgs = Vec::new();
        loop {
            let (tag, body) = self.next().await;
            let step = r.feed(tag, &body);
            msgs.push((tag, body));
            if step == Step::Done {
                return (r, msgs);
            }
        }
    }
}

fn rows(msgs: &[(u8, Vec<u8>)]) -> Vec<Vec<Option<String>>> {
    msgs.iter()
        .filter(|(t, _)| *t == b'D')
        .map(|(_, b)| {
            DataRow::parse(b).unwrap().iter().map(|v| v.map(|v| String::from_utf8_lossy(v).into_owned())).collect()
        })
        .collect()
}

#[tokio::test]
async fn real_server_bytes() {
    let url = need_server!();
    let port = config(&url, "").port;
    let role = unique("wire");
    let mut admin = admin(&url).await;
    sql(&mut admin, &format!("CREATE ROLE {role} LOGIN IN ROLE trust_login")).await;
    let int4pl: u32 = admin.simple_query("SELECT 'int4pl'::regproc::oid").await.unwrap()[0].rows[0][0]
        .as_ref()
        .unwrap()
        .parse()
        .unwrap();
    let mut s = Raw::connect(port, &role).await;
    let mut pipeline = Pipeline::new();
    let batch = [
        FrontendMessage::Parse(Parse { name: b"s1", query: b"SELECT $1::int + 1 AS x", param_types: vec![23] }),
        FrontendMessage::Bind(Bind {
            portal: b"",
            statement: b"s1",
            param_formats: vec![],
            params: vec![Some(b"41")],
            result_formats: vec![],
        }),
        FrontendMessage::Describe(Named { target: Target::Portal, name: b"" }),
        FrontendMessage::Execute(Execute { portal: b"", max_rows: 0 }),
        FrontendMessage::Sync,
        FrontendMessage::Query(b"SELECT 1; SELECT 2"),
        FrontendMessage::Parse(Parse { name: b"", query: b"SELEC nonsense", param_types: vec![] }),
        FrontendMessage::Bind(Bind {
            portal: b"",
            statement: b"",
            param_formats: vec![],
            params: vec![],
            result_formats: vec![],
        }),
        FrontendMessage::Execute(Execute { portal: b"", max_rows: 0 }),
        FrontendMessage::Sync,
    ];
    for m in &batch {
        pipeline.sent(m.tag());
    }
    s.send(&batch).await; // pipelined: three replies in flight
    assert_eq!(pipeline.pending(), 3);
    let (r, msgs) = s.reply().await;
    assert!(r.storable() && r.status == Some(TransactionStatus::Idle), "{r:?}");
    assert_eq!(rows(&msgs), [[Some("42".to_string())]]);
    assert_eq!(msgs.iter().map(|(t, _)| *t).collect::<Vec<_>>(), b"12TDCZ");
    let (r, msgs) = s.reply().await;
    assert!(!r.storable() && r.result_sets == 2 && r.commands == 2, "{r:?}");
    assert_eq!(rows(&msgs).len(), 2);
    // The error skips Bind and Execute up to the Sync, which still answers.
    let (r, msgs) = s.reply().await;
    assert!(r.error && r.status == Some(TransactionStatus::Idle), "{r:?}");
    assert_eq!(msgs.iter().map(|(t, _)| *t).collect::<Vec<_>>(), b"EZ");
    let ErrorFields { .. } = ErrorFields::parse(&msgs[0].1).unwrap();
    assert_eq!(ErrorFields::parse(&msgs[0].1).unwrap().code(), b"42601");
    for _ in 0..3 {
        pipeline.received(b'Z');
    }
    assert_eq!(pipeline.pending(), 0);

    // Transaction status through a failed transaction block.
    for (q, status, error) in [
        (&b"BEGIN"[..], TransactionStatus::InTransaction, false),
        (b"SELECT 1/0", TransactionStatus::Failed, true),
        (b"ROLLBACK", TransactionStatus::Idle, false),
    ] {
        s.send(&[FrontendMessage::Query(q)]).await;
        let (r, _) = s.reply().await;
        assert_eq!((r.status, r.error), (Some(status), error), "{}", String::from_utf8_lossy(q));
    }

    // COPY out, a notice, a parameter change, a notification to ourselves, an empty query.
    s.send(&[FrontendMessage::Query(b"COPY (SELECT g FROM generate_series(1, 3) g) TO STDOUT")]).await;
    let (r, msgs) = s.reply().await;
    assert!(r.copy && !r.storable());
    assert_eq!(msgs.iter().filter(|(t, _)| *t == b'd').count(), 3);
    assert!(msgs.iter().any(|(t, b)| *t == b'C' && command_rows(&b[..b.len() - 1]) == Some(3)));
    s.send(&[FrontendMessage::Query(b"DO $$ BEGIN RAISE NOTICE 'careful'; END $$")]).await;
    assert_eq!(s.reply().await.0.notices, 1);
    s.send(&[FrontendMessage::Query(b"SET TimeZone = 'Europe/Paris'")]).await;
    let (r, msgs) = s.reply().await;
    assert!(r.parameters_changed);
    let p = msgs.iter().find(|(t, _)| *t == b'S').unwrap();
    assert_eq!(ParameterStatus::parse(&p.1).unwrap().value, b"Europe/Paris");
    s.send(&[FrontendMessage::Query(b"LISTEN wire; NOTIFY wire, 'payload'")]).await;
    let (r, msgs) = s.reply().await;
    assert_eq!(r.notifications, 1);
    let n = msgs.iter().find(|(t, _)| *t == b'A').unwrap();
    let n = Notification::parse(&n.1).unwrap();
    assert_eq!((n.process_id, n.channel, n.payload), (s.pid, &b"wire"[..], &b"payload"[..]));
    s.send(&[FrontendMessage::Query(b"")]).await;
    assert!(s.reply().await.0.empty_query);

    // FunctionCall: int4pl(40, 2) with binary arguments and result.
    s.send(&[FrontendMessage::FunctionCall(FunctionCall {
        function: int4pl,
        arg_formats: vec![1],
        args: vec![Some(&40i32.to_be_bytes()), Some(&2i32.to_be_bytes())],
        result_format: 1,
    })])
    .await;
    let (_, msgs) = s.reply().await;
    assert_eq!(msgs[0], (b'V', [&4i32.to_be_bytes()[..], &42i32.to_be_bytes()].concat()));

    // CancelRequest on a second connection, with the session's BackendKeyData.
    s.send(&[FrontendMessage::Query(b"SELECT pg_sleep(30)")]).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut cancel = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let mut out = Vec::new();
    StartupPacket::Cancel(CancelRequest { process_id: s.pid, secret_key: &s.key }).write(&mut out);
    cancel.write_all(&out).await.unwrap();
    let (r, msgs) = s.reply().await;
    assert!(r.error);
    let e = msgs.iter().find(|(t, _)| *t == b'E').unwrap();
    assert_eq!(ErrorFields::parse(&e.1).unwrap().code(), b"57014", "query_canceled");

    s.send(&[FrontendMessage::Terminate]).await;
    drop(s);
    sql(&mut admin, &format!("DROP ROLE {role}")).await;
}

/// The server enforces the limits frame.rs documents: a Sync over 10,000 bytes ends the
/// session (PostgreSQL logs "invalid message length" and closes without a reply), as
/// `frontend_limit` refuses it; one within the limit gets an ordinary error.
#[tokio::test]
async fn server_refuses_what_the_framing_refuses() {
    let url = need_server!();
    let port = config(&url, "").port;
    let role = unique("wire_limit");
    let mut admin = admin(&url).await;
    sql(&mut admin, &format!("CREATE ROLE {role} LOGIN IN ROLE trust_login")).await;

    let mut s = Raw::connect(port, &role).await;
    let mut sync = Vec::new();
    write_frame(&mut sync, b'S', &[0u8; 9_996]); // length word 10,000: allowed, but a Sync has no body
    assert!(parse_frontend_frame(&sync).unwrap().is_some());
    s.tcp.write_all(&sync).await.unwrap();
    let (tag, body) = s.next().await;
    assert_eq!((tag, ErrorFields::parse(&body).unwrap().code()), (b'E', &b"08P01"[..]));

    let mut s = Raw::connect(port, &role).await;
    let mut big_sync = Vec::new();
    write_frame(&mut big_sync, b'S', &[0u8; 9_997]); // length word 10,001
    assert!(matches!(parse_frontend_frame(&big_sync), Err(Error::TooLarge { tag: b'S', .. })));
    s.tcp.write_all(&big_sync).await.unwrap();
    let mut rest = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(15), s.tcp.read_to_end(&mut rest)).await.unwrap();
    assert!(closed.is_err() || rest.is_empty(), "no reply, only the end of the session: {rest:?}");
    sql(&mut admin, &format!("DROP ROLE {role}")).await;
}
