//! Request/response tests, with golden bytes captured from memcached 1.6.18.

use super::*;

fn hex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

fn req(op: impl Into<u8>, extras: &[u8], key: &[u8], value: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    write_request(&mut v, op, 0xdeadbeef, 0, extras, key, value);
    v
}

/// A request with arbitrary (possibly inconsistent) lengths followed by `rest`.
fn raw(op: u8, extras_len: u8, key_len: u16, body_len: u32, rest: &[u8]) -> Vec<u8> {
    let h = RequestHeader {
        magic: REQUEST_MAGIC,
        opcode: op,
        key_len,
        extras_len,
        data_type: 0,
        vbucket: 0,
        body_len,
        opaque: 0xdeadbeef,
        cas: 0,
    };
    let mut v = h.to_bytes().to_vec();
    v.extend_from_slice(rest);
    v
}

fn parse_ok(buf: &[u8]) -> (Request<'_>, usize) {
    match parse_request(buf) {
        Ok(Some(r)) => r,
        other => panic!("expected a request, got {other:?}"),
    }
}

fn parse_err(buf: &[u8]) -> ParseError {
    match parse_request(buf) {
        Err(e) => e,
        other => panic!("expected an error, got {other:?}"),
    }
}

/// Every strict prefix of a complete request needs more bytes.
fn assert_prefixes_incomplete(buf: &[u8], used: usize) {
    for n in 0..used {
        assert_eq!(parse_request(&buf[..n]), Ok(None), "prefix {n} of {used}");
    }
}

// ---------------------------------------------------------------- golden exchanges

/// (request, memcached 1.6.18's reply), in order on one connection.
const GOLDEN: &[(&str, &str, &str)] = &[
    (
        "flush",
        "800800000000000000000000000000010000000000000000",
        "810800000000000000000000000000010000000000000000",
    ),
    (
        "set",
        "80010003080000000000000e000000020000000000000000deadbeef00000000666f6f626172",
        "810100000000000000000000000000020000000000000002",
    ),
    (
        "get hit",
        "800000030000000000000003000000030000000000000000666f6f",
        "810000000400000000000007000000030000000000000002deadbeef626172",
    ),
    (
        "getk hit",
        "800c00030000000000000003000000040000000000000000666f6f",
        "810c0003040000000000000a000000040000000000000002deadbeef666f6f626172",
    ),
    (
        "get miss",
        "8000000500000000000000050000000500000000000000006e6f6b6579",
        "8100000000000001000000090000000500000000000000004e6f7420666f756e64",
    ),
    (
        "getk miss",
        "800c000500000000000000050000000600000000000000006e6f6b6579",
        "810c000500000001000000050000000600000000000000006e6f6b6579",
    ),
    (
        "gatk miss",
        "802300050400000000000009000000070000000000000000000000006e6f6b6579",
        "8123000500000001000000050000000700000000000000006e6f6b6579",
    ),
    (
        "touch hit",
        "801c0003040000000000000700000008000000000000000000000000666f6f",
        "811c00000400000000000004000000080000000000000002deadbeef",
    ),
    (
        "gat hit",
        "801d0003040000000000000700000009000000000000000000000000666f6f",
        "811d00000400000000000007000000090000000000000002deadbeef626172",
    ),
    (
        "incr new",
        "8005000314000000000000170000000a0000000000000000000000000000000100000000000003e800000000637472",
        "8105000000000000000000080000000a000000000000000300000000000003e8",
    ),
    (
        "version",
        "800b000000000000000000000000000b0000000000000000",
        "810b000000000000000000060000000b0000000000000000312e362e3138",
    ),
    (
        "add exists",
        "80020003080000000000000c0000000c00000000000000000000000000000000666f6f78",
        "8102000000000002000000140000000c0000000000000000446174612065786973747320666f72206b65792e",
    ),
    (
        "append miss",
        "800e000500000000000000060000000d00000000000000006e6f6b657978",
        "810e0000000000050000000b0000000d00000000000000004e6f742073746f7265642e",
    ),
    (
        "incr non-numeric",
        "8005000314000000000000170000000e00000000000000000000000000000001000000000000000000000000666f6f",
        "81050000000000060000002e0000000e00000000000000004e6f6e2d6e756d65726963207365727665722d736964652076616c756520666f7220696e6372206f722064656372",
    ),
    (
        "unknown opcode",
        "8030000000000000000000000000000f0000000000000000",
        "81300000000000810000000f0000000f0000000000000000556e6b6e6f776e20636f6d6d616e64",
    ),
    (
        "get without key",
        "800000000000000000000000000000100000000000000000",
        "810000000000000400000011000000100000000000000000496e76616c696420617267756d656e7473",
    ),
];

/// Parses each golden request and composes the reply memcached sent, byte for byte.
#[test]
fn golden_exchanges_with_memcached() {
    for &(name, request, reply) in GOLDEN {
        let wire = hex(request);
        let mut out = Vec::new();
        match parse_request(&wire) {
            Ok(Some((r, used))) => {
                assert_eq!(used, wire.len(), "{name}");
                let o = r.opaque();
                match name {
                    "flush" => write_ok(&mut out, r.opcode(), o, 0),
                    "set" => write_ok(&mut out, r.opcode(), o, 2),
                    "get hit" | "getk hit" | "touch hit" | "gat hit" => {
                        write_get_hit(&mut out, r.opcode(), o, 2, 0xdeadbeef, r.key(), b"bar")
                    }
                    "get miss" | "getk miss" | "gatk miss" => write_get_miss(&mut out, r.opcode(), o, r.key()),
                    "incr new" => {
                        let c = r.counter_extras().unwrap();
                        write_counter(&mut out, r.opcode(), o, 3, c.initial)
                    }
                    "version" => write_version(&mut out, o, b"1.6.18"),
                    "add exists" => write_error(&mut out, r.opcode(), Status::KeyExists, o),
                    "append miss" => write_error(&mut out, r.opcode(), Status::ItemNotStored, o),
                    "incr non-numeric" => write_error(&mut out, r.opcode(), Status::NonNumeric, o),
                    _ => panic!("{name}: unexpected success"),
                }
            }
            Err(e) => e.write_reply(&mut out),
            Ok(None) => panic!("{name}: incomplete"),
        }
        assert_eq!(out, hex(reply), "{name}");
    }
}

#[test]
fn golden_stats() {
    // memcached's first "stats slabs" entry and the terminator, opaque 0x11.
    let mut out = Vec::new();
    write_stat(&mut out, 0x11, b"1:chunk_size", b"96");
    assert_eq!(out, hex("8110000c000000000000000e000000110000000000000000313a6368756e6b5f73697a653936"));
    out.clear();
    write_stat_end(&mut out, 0x11);
    assert_eq!(out, hex("811000000000000000000000000000110000000000000000"));
}

// ---------------------------------------------------------------- every opcode

#[test]
fn get_family() {
    for op in [Opcode::Get, Opcode::GetQ, Opcode::GetK, Opcode::GetKQ] {
        let wire = req(op, &[], b"hello", &[]);
        let (r, used) = parse_ok(&wire);
        assert_eq!(used, 29);
        assert_eq!(r.opcode(), op);
        assert_eq!(r.key(), b"hello");
        assert!(r.extras().is_empty() && r.value().is_empty());
        assert_eq!(r.opaque(), 0xdeadbeef);
        assert_eq!(r.store_extras(), None);
        assert_eq!(r.counter_extras(), None);
        assert_eq!(r.touch_expiration(), None);
        assert_eq!(r.flush_expiration(), None);
        assert_prefixes_incomplete(&wire, used);
    }
}

#[test]
fn store_family() {
    let extras = [0xde, 0xad, 0xbe, 0xef, 0x00, 0x00, 0x1c, 0x20];
    for op in [Opcode::Set, Opcode::Add, Opcode::Replace, Opcode::SetQ, Opcode::AddQ, Opcode::ReplaceQ] {
        let mut wire = Vec::new();
        write_request(&mut wire, op, 1, 0x1234, &extras, b"Hello", b"World");
        let (r, used) = parse_ok(&wire);
        assert_eq!(used, 42);
        assert_eq!(r.opcode(), op);
        assert_eq!(r.cas(), 0x1234);
        assert_eq!(r.key(), b"Hello");
        assert_eq!(r.value(), b"World");
        assert_eq!(r.store_extras(), Some(StoreExtras { flags: 0xdeadbeef, expiration: 7200 }));
        assert_prefixes_incomplete(&wire, used);
        // An empty value is valid.
        let wire = req(op, &extras, b"k", &[]);
        assert_eq!(parse_ok(&wire).0.value(), b"");
    }
}

#[test]
fn append_prepend_family() {
    for op in [Opcode::Append, Opcode::Prepend, Opcode::AppendQ, Opcode::PrependQ] {
        let wire = req(op, &[], b"Hello", b"!");
        let (r, used) = parse_ok(&wire);
        assert_eq!(used, 30);
        assert_eq!((r.opcode(), r.key(), r.value()), (op, &b"Hello"[..], &b"!"[..]));
        assert_eq!(r.store_extras(), None);
        assert_prefixes_incomplete(&wire, used);
    }
}

#[test]
fn delete_family() {
    for op in [Opcode::Delete, Opcode::DeleteQ] {
        let wire = req(op, &[], b"Hello", &[]);
        let (r, used) = parse_ok(&wire);
        assert_eq!((r.opcode(), r.key(), used), (op, &b"Hello"[..], 29));
    }
}

#[test]
fn counter_family() {
    let mut extras = Vec::new();
    extras.extend_from_slice(&1u64.to_be_bytes());
    extras.extend_from_slice(&0u64.to_be_bytes());
    extras.extend_from_slice(&0x1c20u32.to_be_bytes());
    for op in [Opcode::Increment, Opcode::Decrement, Opcode::IncrementQ, Opcode::DecrementQ] {
        let wire = req(op, &extras, b"counter", &[]);
        let (r, used) = parse_ok(&wire);
        assert_eq!(used, 51);
        let c = r.counter_extras().unwrap();
        assert_eq!(c, CounterExtras { delta: 1, initial: 0, expiration: 7200 });
        assert!(c.creates_missing());
        assert_prefixes_incomplete(&wire, used);
    }
    let mut no_create = extras.clone();
    no_create[16..].copy_from_slice(&[0xff; 4]);
    let wire = req(Opcode::Increment, &no_create, b"c", &[]);
    assert!(!parse_ok(&wire).0.counter_extras().unwrap().creates_missing());
}

#[test]
fn touch_family() {
    for op in [Opcode::Touch, Opcode::Gat, Opcode::GatQ, Opcode::GatK, Opcode::GatKQ] {
        let wire = req(op, &100u32.to_be_bytes(), b"foo", &[]);
        let (r, used) = parse_ok(&wire);
        assert_eq!(used, 31);
        assert_eq!(r.touch_expiration(), Some(100));
        assert_eq!(r.key(), b"foo");
        assert_prefixes_incomplete(&wire, used);
    }
}

#[test]
fn flush_family() {
    for op in [Opcode::Flush, Opcode::FlushQ] {
        let wire = req(op, &[], &[], &[]);
        let (r, used) = parse_ok(&wire);
        assert_eq!((used, r.flush_expiration()), (24, Some(None)));
        let wire = req(op, &7200u32.to_be_bytes(), &[], &[]);
        let (r, used) = parse_ok(&wire);
        assert_eq!((used, r.flush_expiration()), (28, Some(Some(7200))));
        assert_prefixes_incomplete(&wire, used);
    }
}

#[test]
fn empty_commands() {
    for op in [Opcode::Noop, Opcode::Version, Opcode::Quit, Opcode::QuitQ, Opcode::SaslListMechs] {
        let wire = req(op, &[], &[], &[]);
        let (r, used) = parse_ok(&wire);
        assert_eq!((r.opcode(), used), (op, 24));
        assert_prefixes_incomplete(&wire, used);
    }
}

#[test]
fn stat() {
    let wire = req(Opcode::Stat, &[], &[], &[]);
    assert_eq!(parse_ok(&wire).1, 24);
    let wire = req(Opcode::Stat, &[], b"slabs", &[]);
    let (r, used) = parse_ok(&wire);
    assert_eq!((r.key(), used), (&b"slabs"[..], 29));
}

#[test]
fn sasl_auth_and_step() {
    for op in [Opcode::SaslAuth, Opcode::SaslStep] {
        let wire = req(op, &[], b"PLAIN", b"\0u\0p");
        let (r, used) = parse_ok(&wire);
        assert_eq!((r.key(), r.value(), used), (&b"PLAIN"[..], &b"\0u\0p"[..], 33));
    }
}

#[test]
fn every_opcode_has_a_parse_test() {
    // Guard: the family tests above cover all of Opcode::ALL.
    let covered = [
        Opcode::Get,
        Opcode::GetQ,
        Opcode::GetK,
        Opcode::GetKQ,
        Opcode::Set,
        Opcode::Add,
        Opcode::Replace,
        Opcode::SetQ,
        Opcode::AddQ,
        Opcode::ReplaceQ,
        Opcode::Append,
        Opcode::Prepend,
        Opcode::AppendQ,
        Opcode::PrependQ,
        Opcode::Delete,
        Opcode::DeleteQ,
        Opcode::Increment,
        Opcode::Decrement,
        Opcode::IncrementQ,
        Opcode::DecrementQ,
        Opcode::Touch,
        Opcode::Gat,
        Opcode::GatQ,
        Opcode::GatK,
        Opcode::GatKQ,
        Opcode::Flush,
        Opcode::FlushQ,
        Opcode::Noop,
        Opcode::Version,
        Opcode::Quit,
        Opcode::QuitQ,
        Opcode::SaslListMechs,
        Opcode::Stat,
        Opcode::SaslAuth,
        Opcode::SaslStep,
    ];
    let mut all = covered.to_vec();
    all.sort();
    assert_eq!(all, Opcode::ALL);
}

#[test]
fn header_fields_are_exposed() {
    let mut wire = req(Opcode::Get, &[], b"k", &[]);
    wire[5] = 0x01; // data type
    wire[6] = 0x00;
    wire[7] = 0x07; // vbucket
    wire[16..24].copy_from_slice(&9u64.to_be_bytes());
    let (r, _) = parse_ok(&wire);
    // memcached ignores data type and vbucket.
    assert_eq!((r.data_type(), r.vbucket(), r.cas()), (1, 7, 9));
    assert_eq!(r.header().key_len, 1);
}

#[test]
fn pipelined_requests() {
    let mut wire = Vec::new();
    write_request(&mut wire, Opcode::GetQ, 1, 0, &[], b"a", &[]);
    write_request(&mut wire, Opcode::GetKQ, 2, 0, &[], b"bb", &[]);
    write_request(&mut wire, Opcode::Set, 3, 0, &[0; 8], b"c", b"value");
    write_request(&mut wire, Opcode::Noop, 4, 0, &[], &[], &[]);
    let mut rest = &wire[..];
    let mut seen = Vec::new();
    while let Some((r, used)) = parse_request(rest).unwrap() {
        seen.push((r.opcode(), r.opaque()));
        rest = &rest[used..];
    }
    assert!(rest.is_empty());
    assert_eq!(seen, [(Opcode::GetQ, 1), (Opcode::GetKQ, 2), (Opcode::Set, 3), (Opcode::Noop, 4)]);
}

// ---------------------------------------------------------------- memcached quirks

/// memcached reads only header + key of a `Stat`: a value is parsed as the next request.
#[test]
fn stat_value_is_the_next_request() {
    let version = req(Opcode::Version, &[], &[], &[]);
    let mut wire = raw(Opcode::Stat.as_u8(), 0, 5, 5 + 24, b"bogus");
    wire.extend_from_slice(&version);
    let (r, used) = parse_ok(&wire);
    assert_eq!((r.key(), r.value(), used), (&b"bogus"[..], &b""[..], 29));
    assert_eq!(parse_ok(&wire[used..]).0.opcode(), Opcode::Version);
}

/// Same for `Touch` and the `Gat` family (verified on memcached with an embedded version).
#[test]
fn touch_value_is_the_next_request() {
    let version = req(Opcode::Version, &[], &[], &[]);
    for op in [Opcode::Touch, Opcode::Gat, Opcode::GatQ, Opcode::GatK, Opcode::GatKQ] {
        let mut wire = raw(op.as_u8(), 4, 3, 7 + 24, &[0, 0, 0, 0]);
        wire.extend_from_slice(b"foo");
        wire.extend_from_slice(&version);
        let (r, used) = parse_ok(&wire);
        assert_eq!((r.key(), r.value(), used), (&b"foo"[..], &b""[..], 31));
        assert_eq!(parse_ok(&wire[used..]).0.opcode(), Opcode::Version);
    }
}

/// A large declared value: the header is available long before the body.
#[test]
fn huge_body_is_visible_from_the_header() {
    let mut wire = raw(Opcode::Set.as_u8(), 8, 3, 11 + 2 * 1024 * 1024, &[0; 8]);
    wire.extend_from_slice(b"foo");
    assert_eq!(parse_request(&wire), Ok(None));
    let h = parse_header(&wire).unwrap().unwrap();
    assert_eq!(h.check(), Ok(Opcode::Set));
    assert_eq!(h.value_len(), 2 * 1024 * 1024);
    assert_eq!(h.frame_len(), 24 + 11 + 2 * 1024 * 1024);
    // Maximal body length never overflows.
    let wire = raw(Opcode::Set.as_u8(), 8, 3, u32::MAX, &[0; 11]);
    assert_eq!(parse_request(&wire), Ok(None));
    let h = parse_header(&wire).unwrap().unwrap();
    assert_eq!(h.frame_len(), 24 + u64::from(u32::MAX));
}

// ---------------------------------------------------------------- malformed input

#[test]
fn bad_magic_closes_without_reply() {
    for magic in [0x00, 0x81, b'g', 0xff] {
        let mut wire = req(Opcode::Get, &[], b"foo", &[]);
        wire[0] = magic;
        let e = parse_err(&wire);
        assert_eq!((e.cause, e.action), (Cause::BadMagic, Invalid::Close));
        let mut out = Vec::new();
        e.write_reply(&mut out);
        assert!(out.is_empty());
        // Needs a whole header first, like memcached.
        assert_eq!(parse_request(&wire[..23]), Ok(None));
    }
}

#[test]
fn key_and_extras_longer_than_body() {
    // get with keylen 3, bodylen 2; set with extras 8 + key 3, bodylen 10; unknown opcode.
    for (op, e, k, b) in [(0x00, 0, 3, 2), (0x01, 8, 3, 10), (0x30, 0, 3, 1)] {
        let wire = raw(op, e, k, b, &[b'x'; 11]);
        let err = parse_err(&wire);
        assert_eq!(err.cause, Cause::BodyTooShort);
        assert_eq!(err.action, Invalid::RespondAndClose(Status::UnknownCommand));
        let mut out = Vec::new();
        err.write_reply(&mut out);
        let (resp, _) = parse_response(&out).unwrap().unwrap();
        assert_eq!(resp.header().opcode, op);
        assert_eq!(resp.value(), b"Unknown command");
        // Reported only once extras + key are buffered.
        let head = 24 + usize::from(e) + usize::from(k);
        assert_eq!(parse_request(&wire[..head - 1]), Ok(None));
    }
}

#[test]
fn key_longer_than_250() {
    let key = [b'a'; 251];
    for op in [0x00, 0x0c, 0x30] {
        let wire = raw(op, 0, 251, 251, &key);
        let e = parse_err(&wire);
        assert_eq!(e.cause, Cause::KeyTooLong);
        assert_eq!(e.action, Invalid::RespondAndClose(Status::InvalidArguments));
        // memcached waits for the key before answering.
        assert_eq!(parse_request(&wire[..24 + 250]), Ok(None));
    }
    let wire = req(Opcode::Get, &[], &[b'a'; 250], &[]);
    assert!(parse_request(&wire).unwrap().is_some());
}

#[test]
fn head_larger_than_read_buffer_closes_at_once() {
    let wire = raw(0x00, 0, 16361, 16361, &[]);
    let e = parse_err(&wire);
    assert_eq!((e.cause, e.action), (Cause::HeadTooLarge, Invalid::Close));
    let wire = raw(0x00, 0, 16360, 16360, &[]);
    assert_eq!(parse_request(&wire), Ok(None));
}

#[test]
fn unknown_opcodes_reply_and_skip() {
    for op in [0x1b, 0x1f, 0x25, 0x30, 0x40, 0xff] {
        // Extras 2, key 3, value 4: memcached consumes 24 + 5, then discards 9 more.
        let wire = raw(op, 2, 3, 9, b"eekkkvvvv");
        let e = parse_err(&wire);
        assert_eq!(e.cause, Cause::UnknownOpcode);
        assert_eq!(e.action, Invalid::RespondAndSkip { status: Status::UnknownCommand, skip: 24 + 5 + 9 });
        assert_eq!(e.opcode, op);
        assert!(!e.closes());
        // Answered as soon as extras + key are in, before the rest arrives.
        assert_eq!(parse_request(&wire[..28]), Ok(None));
        assert!(parse_request(&wire[..29]).is_err());
    }
}

#[test]
fn wrong_lengths_for_the_opcode() {
    let e8 = [0u8; 8];
    let e20 = [0u8; 20];
    let cases: &[(&str, Vec<u8>)] = &[
        ("get no key", req(Opcode::Get, &[], &[], &[])),
        ("get extras", req(Opcode::Get, b"1234", b"foo", &[])),
        ("get value", req(Opcode::Get, &[], b"foo", b"v")),
        ("getq value", req(Opcode::GetQ, &[], b"foo", b"v")),
        ("getk extras", req(Opcode::GetK, b"1234", b"foo", &[])),
        ("getkq no key", req(Opcode::GetKQ, &[], &[], &[])),
        ("set no extras", req(Opcode::Set, &[], b"foo", b"v")),
        ("set extras 4", req(Opcode::Set, b"1234", b"foo", b"v")),
        ("set no key", req(Opcode::Set, &e8, &[], b"v")),
        ("setq no extras", req(Opcode::SetQ, &[], b"foo", b"v")),
        ("add extras 20", req(Opcode::Add, &e20, b"foo", b"v")),
        ("replace no key", req(Opcode::Replace, &e8, &[], &[])),
        ("delete extras", req(Opcode::Delete, b"1234", b"foo", &[])),
        ("delete value", req(Opcode::Delete, &[], b"foo", b"v")),
        ("delete no key", req(Opcode::Delete, &[], &[], &[])),
        ("deleteq no key", req(Opcode::DeleteQ, &[], &[], &[])),
        ("incr extras 8", req(Opcode::Increment, &e8, b"foo", &[])),
        ("incr value", req(Opcode::Increment, &e20, b"foo", b"v")),
        ("incr no key", req(Opcode::Increment, &e20, &[], &[])),
        ("decrq no extras", req(Opcode::DecrementQ, &[], b"foo", &[])),
        ("quit key", req(Opcode::Quit, &[], b"k", &[])),
        ("quit extras", req(Opcode::Quit, b"1234", &[], &[])),
        ("quitq value", req(Opcode::QuitQ, &[], &[], b"v")),
        ("flush extras 8", req(Opcode::Flush, &e8, &[], &[])),
        ("flush key", req(Opcode::Flush, &[], b"k", &[])),
        ("flush value", req(Opcode::Flush, &[], &[], b"v")),
        ("flush extras 4 + value", req(Opcode::Flush, b"1234", &[], b"v")),
        ("flushq extras 1", req(Opcode::FlushQ, b"1", &[], &[])),
        ("noop key", req(Opcode::Noop, &[], b"k", &[])),
        ("noop value", req(Opcode::Noop, &[], &[], b"v")),
        ("version value", req(Opcode::Version, &[], &[], b"v")),
        ("version extras", req(Opcode::Version, b"1234", &[], &[])),
        ("append extras", req(Opcode::Append, b"1234", b"foo", b"v")),
        ("append no key", req(Opcode::Append, &[], &[], b"v")),
        ("prependq no key", req(Opcode::PrependQ, &[], &[], b"v")),
        ("stat extras", req(Opcode::Stat, b"1234", &[], &[])),
        ("touch no extras", req(Opcode::Touch, &[], b"foo", &[])),
        ("touch no key", req(Opcode::Touch, b"1234", &[], &[])),
        ("gat extras 8", req(Opcode::Gat, &e8, b"foo", &[])),
        ("gatq no key", req(Opcode::GatQ, b"1234", &[], &[])),
        ("gatk no extras", req(Opcode::GatK, &[], b"foo", &[])),
        ("gatkq extras 8", req(Opcode::GatKQ, &e8, b"foo", &[])),
        ("sasl list key", req(Opcode::SaslListMechs, &[], b"k", &[])),
        ("sasl auth no key", req(Opcode::SaslAuth, &[], &[], &[])),
        ("sasl step extras", req(Opcode::SaslStep, b"1234", b"P", &[])),
    ];
    for (name, wire) in cases {
        let e = parse_err(wire);
        assert_eq!(e.cause, Cause::BadLayout, "{name}");
        assert_eq!(e.action, Invalid::RespondAndClose(Status::InvalidArguments), "{name}");
        assert_eq!(e.opcode, wire[1], "{name}");
        assert_eq!(e.opaque, 0xdeadbeef, "{name}");
        let mut out = Vec::new();
        e.write_reply(&mut out);
        let (resp, used) = parse_response(&out).unwrap().unwrap();
        assert_eq!(used, out.len());
        assert_eq!(resp.header().opcode, wire[1], "{name}");
        assert_eq!(resp.value(), b"Invalid arguments", "{name}");
    }
}

#[test]
fn truncated_input_never_errors_early() {
    // Any prefix of a valid pipeline parses to Ok(None) or a request.
    let mut wire = Vec::new();
    write_request(&mut wire, Opcode::Set, 3, 0, &[0; 8], b"c", b"value");
    write_request(&mut wire, Opcode::Get, 4, 0, &[], b"c", &[]);
    for n in 0..=wire.len() {
        assert!(parse_request(&wire[..n]).is_ok(), "prefix {n}");
    }
}

// ---------------------------------------------------------------- composing

#[test]
fn response_helpers() {
    let mut out = Vec::new();
    write_ok(&mut out, Opcode::SetQ, 9, 77);
    let (r, used) = parse_response(&out).unwrap().unwrap();
    assert_eq!(used, 24);
    assert_eq!((r.header().opcode, r.status(), r.opaque(), r.cas()), (0x11, Some(Status::NoError), 9, 77));

    out.clear();
    write_counter(&mut out, Opcode::Decrement, 1, 2, 0x0102);
    let (r, _) = parse_response(&out).unwrap().unwrap();
    assert_eq!(r.counter(), Some(0x0102));
    assert_eq!(r.value().len(), 8);

    out.clear();
    write_error_message(&mut out, Opcode::Set, Status::OutOfMemory, 1, OUT_OF_MEMORY_STORE_MESSAGE.as_bytes());
    let (r, _) = parse_response(&out).unwrap().unwrap();
    assert_eq!(r.value(), b"Out of memory allocating item");
    assert_eq!(r.status(), Some(Status::OutOfMemory));

    for status in Status::ALL {
        out.clear();
        write_error(&mut out, 0x42u8, status, 3);
        let (r, _) = parse_response(&out).unwrap().unwrap();
        assert_eq!(r.value(), status.message().as_bytes());
        assert_eq!(r.header().opcode, 0x42);
        assert_eq!(r.cas(), 0);
    }
}

#[test]
fn get_hit_variants() {
    let mut out = Vec::new();
    for op in [Opcode::Get, Opcode::GetQ, Opcode::Gat, Opcode::GatQ] {
        out.clear();
        write_get_hit(&mut out, op, 1, 5, 0xabcd, b"key", b"value");
        let (r, _) = parse_response(&out).unwrap().unwrap();
        assert_eq!((r.flags(), r.key(), r.value()), (Some(0xabcd), &b""[..], &b"value"[..]));
    }
    for op in [Opcode::GetK, Opcode::GetKQ, Opcode::GatK, Opcode::GatKQ] {
        out.clear();
        write_get_hit(&mut out, op, 1, 5, 0xabcd, b"key", b"value");
        let (r, _) = parse_response(&out).unwrap().unwrap();
        assert_eq!((r.key(), r.value()), (&b"key"[..], &b"value"[..]));
    }
    out.clear();
    write_get_hit(&mut out, Opcode::Touch, 1, 5, 0xabcd, b"key", b"value");
    let (r, _) = parse_response(&out).unwrap().unwrap();
    assert_eq!((r.flags(), r.key(), r.value()), (Some(0xabcd), &b""[..], &b""[..]));

    // Header-only form, value sent separately.
    out.clear();
    write_get_hit_header(&mut out, Opcode::GetK, 1, 5, 7, b"key", 5);
    assert_eq!(out.len(), 24 + 4 + 3);
    out.extend_from_slice(b"value");
    let (r, used) = parse_response(&out).unwrap().unwrap();
    assert_eq!((used, r.key(), r.value()), (out.len(), &b"key"[..], &b"value"[..]));
}

#[test]
fn get_miss_variants() {
    let mut out = Vec::new();
    for op in [Opcode::Get, Opcode::GetQ, Opcode::Gat, Opcode::Touch] {
        out.clear();
        write_get_miss(&mut out, op, 1, b"key");
        let (r, _) = parse_response(&out).unwrap().unwrap();
        assert_eq!((r.key(), r.value()), (&b""[..], &b"Not found"[..]));
    }
    for op in [Opcode::GetK, Opcode::GetKQ, Opcode::GatK, Opcode::GatKQ] {
        out.clear();
        write_get_miss(&mut out, op, 1, b"key");
        let (r, _) = parse_response(&out).unwrap().unwrap();
        assert_eq!(r.status(), Some(Status::KeyNotFound));
        assert_eq!((r.key(), r.value()), (&b"key"[..], &b""[..]));
    }
}

#[test]
fn oversized_slices_are_truncated_consistently() {
    let key = vec![b'k'; 70_000];
    let extras = vec![0u8; 300];
    let mut out = Vec::new();
    write_response(&mut out, Opcode::Get, Status::NoError, 0, 0, &extras, &key, b"v");
    let (r, used) = parse_response(&out).unwrap().unwrap();
    assert_eq!(used, out.len());
    assert_eq!((r.extras().len(), r.key().len(), r.value()), (255, 65535, &b"v"[..]));

    out.clear();
    write_request(&mut out, Opcode::Get, 0, 0, &extras, &key, b"v");
    let h = parse_header(&out).unwrap().unwrap();
    assert_eq!((h.extras_len, h.key_len, h.body_len), (255, 65535, 255 + 65535 + 1));
}

#[test]
fn response_parse_errors() {
    let mut out = Vec::new();
    write_ok(&mut out, Opcode::Noop, 0, 0);
    assert_eq!(parse_response(&out[..23]), Ok(None));
    out[0] = 0x80;
    assert_eq!(parse_response(&out), Err(ResponseError::BadMagic(0x80)));
    out[0] = RESPONSE_MAGIC;
    out[3] = 1; // key length 1 > body 0
    assert_eq!(parse_response(&out), Err(ResponseError::BodyTooShort));
    assert!(!ResponseError::BodyTooShort.to_string().is_empty());
}
