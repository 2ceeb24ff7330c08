//! Fuzzes command and result set parsers: `Command::parse` (+ COM_STMT_EXECUTE parameter
//! decoding), column definitions, text and binary rows, COM_STMT_PREPARE_OK, with
//! compose → parse round trips.
//!
//! `cargo +nightly fuzz run commands -- -max_total_time=60` (from crates/protocol-mysql).

#![no_main]

use libfuzzer_sys::fuzz_target;
use protocol_mysql::*;

fuzz_target!(|data: &[u8]| {
    // 4 bytes of capabilities, 1 byte of column / parameter count, then the payload.
    let Some((head, p)) = data.split_first_chunk::<5>() else { return };
    let caps = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
    let n = usize::from(head[4] % 32);

    if let Ok(cmd) = Command::parse(p, caps) {
        let mut a = Vec::new();
        cmd.write(&mut a, caps);
        let again = Command::parse(&a, caps).expect("composed command parses");
        let mut b = Vec::new();
        again.write(&mut b, caps);
        assert_eq!(a, b);
        if let Command::StmtExecute(e) = cmd {
            // Types from the bytes themselves for the "not re-sent" case.
            let prev: Vec<FieldType> = p.chunks_exact(2).take(n).map(|c| FieldType::from_bytes([c[0], c[1]])).collect();
            for prev in [&[][..], &prev[..]] {
                if let Ok(params) = e.params(n, caps, prev) {
                    let mut out = Vec::new();
                    if StmtExecute::write_with_params(&mut out, caps, e.stmt_id, e.flags, &params.params, true).is_ok()
                    {
                        let Ok(Command::StmtExecute(e2)) = Command::parse(&out, caps) else { panic!("re-parse") };
                        let back = e2.params(params.params.len(), caps, &[]).expect("composed params parse");
                        assert_eq!(back.params.len(), params.params.len());
                    }
                }
            }
        }
    }

    if let Ok(c) = ColumnDefinition::parse(p) {
        let mut a = Vec::new();
        c.write(&mut a);
        assert_eq!(ColumnDefinition::parse(&a).unwrap(), c);
    }
    if let Ok(row) = parse_text_row(p, n) {
        let mut a = Vec::new();
        write_text_row(&mut a, &row);
        assert_eq!(parse_text_row(&a, n).unwrap(), row);
    }
    let types: Vec<FieldType> =
        (0..n).map(|i| FieldType::from_bytes([head[4].wrapping_add((i as u8).wrapping_mul(37)), head[0]])).collect();
    if let Ok(vals) = parse_binary_row(p, &types) {
        let mut a = Vec::new();
        write_binary_row(&mut a, &types, &vals).expect("parsed values fit their types");
        assert_eq!(parse_binary_row(&a, &types).unwrap().len(), vals.len());
    }
    if let Ok(ok) = StmtPrepareOk::parse(p) {
        let mut a = Vec::new();
        ok.write(&mut a);
        let _ = StmtPrepareOk::parse(&a).unwrap();
    }
    let _ = QueryResponse::parse(p, caps);
});
