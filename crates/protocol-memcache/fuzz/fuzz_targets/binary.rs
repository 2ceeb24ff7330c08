//! Fuzzes the binary protocol: arbitrary bytes through repeated `parse_request` calls (as a
//! server reads a pipeline), `parse_response`, and compose → parse round trips.
//!
//! `cargo +nightly fuzz run binary -- -max_total_time=60` (from crates/protocol-memcache).

#![no_main]

use libfuzzer_sys::fuzz_target;
use protocol_memcache::binary::*;

fuzz_target!(|data: &[u8]| {
    requests(data);
    responses(data);
    compose_round_trip(data);
});

/// Reads `data` as a pipeline of requests, like a server loop.
fn requests(data: &[u8]) {
    let mut rest = data;
    // Bounded: every iteration consumes at least 24 bytes or stops.
    loop {
        let full = parse_request(rest);
        check_prefixes(rest, &full);
        match full {
            Ok(None) => break,
            Ok(Some((req, used))) => {
                assert!(used >= HEADER_LEN && used <= rest.len());
                let h = *req.header();
                assert_eq!(h.magic, REQUEST_MAGIC);
                assert_eq!(h.check(), Ok(req.opcode()));
                assert_eq!(h.frame_len(), used as u64);
                assert_eq!(req.extras().len(), usize::from(h.extras_len));
                assert_eq!(req.key().len(), usize::from(h.key_len));
                assert!(req.key().len() <= MAX_KEY_LEN);
                assert_eq!(
                    HEADER_LEN + req.extras().len() + req.key().len() + req.value().len(),
                    used
                );
                // Typed extras are present exactly for their commands.
                let base = req.opcode().base();
                assert_eq!(
                    req.store_extras().is_some(),
                    matches!(base, Opcode::Set | Opcode::Add | Opcode::Replace)
                );
                assert_eq!(
                    req.counter_extras().is_some(),
                    matches!(base, Opcode::Increment | Opcode::Decrement)
                );
                assert_eq!(
                    req.touch_expiration().is_some(),
                    matches!(base, Opcode::Touch | Opcode::Gat | Opcode::GatK)
                );
                assert_eq!(req.flush_expiration().is_some(), base == Opcode::Flush);
                round_trip_request(&req);
                rest = &rest[used..];
            }
            Err(e) => {
                let mut out = Vec::new();
                e.write_reply(&mut out);
                match e.reply_status() {
                    None => assert!(out.is_empty()),
                    Some(status) => {
                        let (resp, used) = parse_response(&out).unwrap().unwrap();
                        assert_eq!(used, out.len());
                        assert_eq!(resp.status(), Some(status));
                        assert_eq!(resp.header().opcode, e.opcode);
                        assert_eq!(resp.opaque(), e.opaque);
                        assert_eq!(resp.value(), status.message().as_bytes());
                    }
                }
                match e.action {
                    Invalid::RespondAndSkip { skip, .. } => {
                        assert_eq!(e.cause, Cause::UnknownOpcode);
                        assert!(skip >= HEADER_LEN as u64);
                        let skip = usize::try_from(skip).unwrap_or(usize::MAX);
                        if skip >= rest.len() {
                            break;
                        }
                        rest = &rest[skip..];
                    }
                    _ => {
                        assert!(e.closes());
                        break;
                    }
                }
            }
        }
    }
}

/// A prefix of the input never gives a different answer: only "need more" or the same.
fn check_prefixes(buf: &[u8], full: &Result<Option<(Request<'_>, usize)>, ParseError>) {
    let limit = match full {
        Ok(Some((_, used))) => *used,
        _ => buf.len(),
    };
    let mut cuts = [0, 1, 23, 24, 25, limit / 2, limit.saturating_sub(1), limit];
    if let Some(h) = RequestHeader::from_prefix(buf) {
        cuts[0] = h.head_len().saturating_sub(1);
        cuts[1] = h.head_len();
    }
    for n in cuts {
        if n > buf.len() {
            continue;
        }
        let part = parse_request(&buf[..n]);
        match (&part, full) {
            (Ok(None), _) => {}
            (Ok(Some((a, ua))), Ok(Some((b, ub)))) => {
                assert_eq!((a, ua), (b, ub));
            }
            (Err(a), Err(b)) => assert_eq!(a, b),
            _ => panic!("prefix {n} gave {part:?}, full input {full:?}"),
        }
    }
}

/// Composing a parsed request and parsing it again gives the same request.
fn round_trip_request(req: &Request<'_>) {
    let mut wire = Vec::new();
    write_request(
        &mut wire,
        req.opcode(),
        req.opaque(),
        req.cas(),
        req.extras(),
        req.key(),
        req.value(),
    );
    let (again, used) = parse_request(&wire).unwrap().unwrap();
    assert_eq!(used, wire.len());
    assert_eq!(again.opcode(), req.opcode());
    assert_eq!(again.opaque(), req.opaque());
    assert_eq!(again.cas(), req.cas());
    assert_eq!(again.extras(), req.extras());
    assert_eq!(again.key(), req.key());
    assert_eq!(again.value(), req.value());
    assert_eq!(again.store_extras(), req.store_extras());
    assert_eq!(again.counter_extras(), req.counter_extras());
    assert_eq!(again.touch_expiration(), req.touch_expiration());
    assert_eq!(again.flush_expiration(), req.flush_expiration());
}

/// Reads `data` as a stream of responses, like a client.
fn responses(data: &[u8]) {
    let mut rest = data;
    while let Ok(Some((resp, used))) = parse_response(rest) {
        assert!(used >= HEADER_LEN && used <= rest.len());
        let h = resp.header();
        assert_eq!(h.magic, RESPONSE_MAGIC);
        assert_eq!(
            resp.extras().len() + resp.key().len() + resp.value().len(),
            h.body_len as usize
        );
        // Re-compose and compare bytes.
        let mut out = Vec::new();
        let status = match resp.status() {
            Some(s) => s,
            None => {
                rest = &rest[used..];
                continue;
            }
        };
        write_response(
            &mut out,
            h.opcode,
            status,
            resp.opaque(),
            resp.cas(),
            resp.extras(),
            resp.key(),
            resp.value(),
        );
        let mut expected = rest[..used].to_vec();
        expected[5] = 0; // composed data type is always 0
        assert_eq!(out, expected);
        rest = &rest[used..];
    }
}

/// Builds replies and requests from slices of `data` and parses them back.
fn compose_round_trip(data: &[u8]) {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let third = rest.len() / 3;
    let (a, rest) = rest.split_at(third.min(300));
    let (b, c) = rest.split_at((rest.len() / 2).min(70_000));
    let n = |s: &[u8]| {
        s.iter()
            .fold(0u64, |acc, &x| acc.rotate_left(8) ^ u64::from(x))
    };
    let (opaque, cas) = (n(a) as u32, n(c));
    let status = Status::ALL[usize::from(sel) % Status::ALL.len()];
    let op = Opcode::ALL[usize::from(sel) % Opcode::ALL.len()];

    let mut out = Vec::new();
    write_response(&mut out, sel, status, opaque, cas, a, b, c);
    let (r, used) = parse_response(&out).unwrap().unwrap();
    assert_eq!(used, out.len());
    let ne = a.len().min(255);
    let nk = b.len().min(65535);
    assert_eq!(r.extras(), &a[..ne]);
    assert_eq!(r.key(), &b[..nk]);
    assert_eq!(r.value(), c);
    assert_eq!(
        (r.status(), r.opaque(), r.cas()),
        (Some(status), opaque, cas)
    );

    out.clear();
    write_get_hit(&mut out, op, opaque, cas, opaque, b, c);
    let (r, _) = parse_response(&out).unwrap().unwrap();
    assert_eq!(r.flags(), Some(opaque));
    assert_eq!(r.key(), if op.returns_key() { &b[..nk] } else { &[][..] });
    assert_eq!(r.value(), if op == Opcode::Touch { &[][..] } else { c });

    out.clear();
    write_get_miss(&mut out, op, opaque, b);
    let (r, _) = parse_response(&out).unwrap().unwrap();
    assert_eq!(r.status(), Some(Status::KeyNotFound));

    out.clear();
    write_counter(&mut out, op, opaque, cas, cas);
    assert_eq!(
        parse_response(&out).unwrap().unwrap().0.counter(),
        Some(cas)
    );

    out.clear();
    write_stat(&mut out, opaque, b, c);
    write_stat_end(&mut out, opaque);
    let (r, used) = parse_response(&out).unwrap().unwrap();
    assert_eq!((r.key(), r.value()), (&b[..nk], c));
    let (end, _) = parse_response(&out[used..]).unwrap().unwrap();
    assert_eq!(end.header().body_len, 0);

    out.clear();
    write_request(&mut out, sel, opaque, cas, a, b, c);
    let h = parse_header(&out).unwrap().unwrap();
    assert_eq!(h.opcode, sel);
    assert_eq!(h.to_bytes()[..], out[..HEADER_LEN]);
    assert_eq!(HEADER_LEN as u64 + u64::from(h.body_len), out.len() as u64);
    // Whatever the verdict, parsing a well-formed frame is consistent with check().
    match (parse_request(&out), h.check()) {
        (Ok(Some((r, _))), Ok(o)) => assert_eq!(r.opcode(), o),
        (Ok(None), Ok(_)) => panic!("complete frame reported incomplete"),
        (Err(e), Err(f)) => assert_eq!(e, f),
        (Ok(None), Err(e)) => assert_eq!(e.cause, Cause::HeadTooLarge),
        (p, c) => panic!("parse {p:?} vs check {c:?}"),
    }
}
