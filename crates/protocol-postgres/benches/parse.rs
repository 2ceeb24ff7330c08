//! Parsing micro-benchmarks, std only (`harness = false`), in the style of
//! protocol-mysql's: `cargo bench -p protocol-postgres --bench parse` (`-- --quick` for a
//! smoke run).
//!
//! Prints ns/op for framing + parsing a 10-column DataRow (a proxy's hottest path), a
//! Bind, and decoding an XLogData holding a pgoutput Update with an old key and a new row.

use std::hint::black_box;
use std::time::{Duration, Instant};

use protocol_postgres::replication::pgoutput::{Column, Decoder, LogicalMessage, OldTuple, TupleData, Update};
use protocol_postgres::{
    parse_backend_frame, parse_frontend_frame, Bind, DataRow, FrontendMessage, Lsn, ServerMessage, XLogData,
};

/// Runs `op` in batches until `budget` has elapsed; prints the best batch's ns/op.
fn measure(name: &str, budget: Duration, mut op: impl FnMut()) {
    const BATCH: u32 = 10_000;
    for _ in 0..BATCH {
        op(); // warm-up
    }
    let start = Instant::now();
    let mut best = f64::INFINITY;
    let mut total: u64 = 0;
    while start.elapsed() < budget {
        let t = Instant::now();
        for _ in 0..BATCH {
            op();
        }
        best = best.min(t.elapsed().as_nanos() as f64 / f64::from(BATCH));
        total += u64::from(BATCH);
    }
    println!("{name:<44} {best:>8.1} ns/op  ({total} iterations)");
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let budget = Duration::from_millis(if quick { 50 } else { 1000 });

    let values: Vec<Option<&[u8]>> = vec![
        Some(b"12345"),
        Some(b"Ada Lovelace"),
        Some(b"ada@example.com"),
        Some(b"2024-05-17 10:11:12+00"),
        None,
        Some(b"t"),
        Some(b"3.14159"),
        Some(b"some longer text column value with a few words in it"),
        Some(b""),
        Some(b"42"),
    ];
    let mut row = Vec::new();
    DataRow::write(&mut row, &values);
    let mut out = Vec::with_capacity(10);
    measure("frame + parse 10-column DataRow (values_into)", budget, || {
        let (f, _) = parse_backend_frame(black_box(&row)).unwrap().unwrap();
        DataRow::parse(f.body).unwrap().values_into(&mut out);
        black_box(&out);
    });

    let mut bind = Vec::new();
    FrontendMessage::Bind(Bind {
        portal: b"",
        statement: b"s_42",
        param_formats: vec![0],
        params: vec![Some(b"12345"), Some(b"ada@example.com"), None],
        result_formats: vec![],
    })
    .write(&mut bind);
    measure("frame + parse Bind (3 parameters)", budget, || {
        let (f, _) = parse_frontend_frame(black_box(&bind)).unwrap().unwrap();
        black_box(FrontendMessage::parse(f).unwrap());
    });

    let key = TupleData { columns: vec![Column::Text(b"12345")] };
    let new = TupleData {
        columns: vec![
            Column::Text(b"12345"),
            Column::Text(b"Ada Lovelace"),
            Column::Text(b"ada@example.com"),
            Column::UnchangedToast,
            Column::Null,
            Column::Text(b"2024-05-17 10:11:12+00"),
        ],
    };
    let mut pgoutput = Vec::new();
    LogicalMessage::Update(Update { xid: None, relation: 16384, old: Some(OldTuple::Key(key)), new })
        .write(&mut pgoutput);
    let mut xlog = Vec::new();
    ServerMessage::XLogData(XLogData {
        wal_start: Lsn(0x1_6B37_4D48),
        wal_end: Lsn(0x1_6B37_4D48),
        send_time: 0,
        data: &pgoutput,
    })
    .write(&mut xlog);
    let mut decoder = Decoder::new(1).unwrap();
    measure("XLogData + pgoutput Update (key + 6 columns)", budget, || {
        let ServerMessage::XLogData(x) = ServerMessage::parse(black_box(&xlog)).unwrap() else { unreachable!() };
        black_box(decoder.decode(x.data).unwrap());
    });
}
