use super::*;
use crate::lsn::Lsn;

fn round_trip(m: LogicalMessage<'_>) {
    let mut out = Vec::new();
    m.write(&mut out);
    assert_eq!(LogicalMessage::parse(&out, m.stream_xid().is_some()).unwrap(), m);
}

#[test]
fn update_with_old_key_and_unchanged_toast_from_bytes() {
    // U, relation 16384, K (1 column: text "7"), N (3 columns: text "8", unchanged, null)
    let mut b = vec![b'U'];
    b.extend_from_slice(&16384u32.to_be_bytes());
    b.extend_from_slice(b"K\0\x01t\0\0\0\x017");
    b.extend_from_slice(b"N\0\x03t\0\0\0\x018un");
    let m = LogicalMessage::parse(&b, false).unwrap();
    let LogicalMessage::Update(u) = &m else { panic!("{m:?}") };
    assert_eq!(u.relation, 16384);
    assert_eq!(u.old, Some(OldTuple::Key(TupleData { columns: vec![Column::Text(b"7")] })));
    assert_eq!(u.new.columns, [Column::Text(b"8"), Column::UnchangedToast, Column::Null]);
    // Unchanged is neither NULL nor any value, empty included.
    assert_ne!(Column::UnchangedToast, Column::Null);
    assert_ne!(Column::UnchangedToast, Column::Text(b""));
    let mut again = Vec::new();
    m.write(&mut again);
    assert_eq!(again, b);
}

#[test]
fn every_message_round_trips() {
    let tuple =
        TupleData { columns: vec![Column::Text(b"1"), Column::Binary(&[0, 1]), Column::Null, Column::UnchangedToast] };
    round_trip(LogicalMessage::Begin(Begin { final_lsn: Lsn(0x1_0000_0010), commit_time: 42, xid: 777 }));
    let commit = Commit { flags: 0, commit_lsn: Lsn(10), end_lsn: Lsn(20), commit_time: -1 };
    round_trip(LogicalMessage::Commit(commit));
    round_trip(LogicalMessage::Origin(Origin { commit_lsn: Lsn(5), name: "node_a" }));
    let columns = vec![
        RelationColumn { flags: 1, name: "id", type_oid: 23, type_modifier: -1 },
        RelationColumn { flags: 0, name: "body", type_oid: 25, type_modifier: -1 },
    ];
    for xid in [None, Some(9)] {
        round_trip(LogicalMessage::Relation(Relation {
            xid,
            id: 16384,
            namespace: "public",
            name: "t",
            replica_identity: ReplicaIdentity::Full,
            columns: columns.clone(),
        }));
        round_trip(LogicalMessage::Type(Type { xid, id: 90000, namespace: "public", name: "mood" }));
        round_trip(LogicalMessage::Insert(Insert { xid, relation: 1, new: tuple.clone() }));
        round_trip(LogicalMessage::Update(Update { xid, relation: 1, old: None, new: tuple.clone() }));
        round_trip(LogicalMessage::Update(Update {
            xid,
            relation: 1,
            old: Some(OldTuple::Full(tuple.clone())),
            new: tuple.clone(),
        }));
        round_trip(LogicalMessage::Delete(Delete { xid, relation: 1, old: OldTuple::Key(tuple.clone()) }));
        round_trip(LogicalMessage::Truncate(Truncate { xid, options: 3, relations: vec![1, 2] }));
        round_trip(LogicalMessage::Message(Message { xid, flags: 1, lsn: Lsn(3), prefix: "app", content: b"hi\0" }));
    }
    round_trip(LogicalMessage::StreamStart(StreamStart { xid: 5, first_segment: 1 }));
    round_trip(LogicalMessage::StreamStop);
    round_trip(LogicalMessage::StreamCommit(StreamCommit { xid: 5, commit }));
    round_trip(LogicalMessage::StreamAbort(StreamAbort { xid: 5, subxid: 6 }));
}

#[test]
fn truncate_flags() {
    let t = Truncate { xid: None, options: 1, relations: vec![1] };
    assert!(t.cascade() && !t.restart_identity());
    let t = Truncate { xid: None, options: 2, relations: vec![1] };
    assert!(!t.cascade() && t.restart_identity());
}

#[test]
fn decoder_follows_streams_and_refuses_what_it_cannot_read() {
    let mut v1 = Decoder::new(1).unwrap();
    assert_eq!(
        v1.decode(b"S\0\0\0\x05\x01"),
        Err(Error::Unsupported("pgoutput streaming message under protocol version 1"))
    );
    assert!(matches!(Decoder::new(3), Err(Error::Unsupported(_))));
    assert!(matches!(Decoder::new(0), Err(Error::Unsupported(_))));

    let mut v2 = Decoder::new(2).unwrap();
    v2.decode(b"S\0\0\0\x05\x01").unwrap();
    assert!(v2.in_stream());
    // Inside the chunk an Insert carries its xid first.
    let mut ins = vec![b'I', 0, 0, 0, 5, 0, 0, 0, 1, b'N', 0, 1, b'n'];
    let LogicalMessage::Insert(i) = v2.decode(&ins).unwrap() else { panic!() };
    assert_eq!((i.xid, i.relation), (Some(5), 1));
    assert!(v2.decode(b"S\0\0\0\x05\x00").is_err()); // nested start
    v2.decode(b"E").unwrap();
    assert!(!v2.in_stream());
    ins.drain(1..5);
    let LogicalMessage::Insert(i) = v2.decode(&ins).unwrap() else { panic!() };
    assert_eq!(i.xid, None);
    assert!(v2.decode(b"E").is_err());
}

#[test]
fn malformed_messages_are_errors() {
    assert_eq!(LogicalMessage::parse(b"", false), Err(Error::Truncated("pgoutput message type")));
    assert_eq!(LogicalMessage::parse(b"Z", false), Err(Error::UnknownTag { side: "pgoutput", tag: b'Z' }));
    assert_eq!(LogicalMessage::parse(b"I\0\0\0\x01N\0\x01x", false), Err(Error::Invalid("TupleData column kind")));
    assert_eq!(
        LogicalMessage::parse(b"I\0\0\0\x01N\0\x01t\xff\xff\xff\xff", false),
        Err(Error::Invalid("TupleData value length"))
    );
    assert!(LogicalMessage::parse(b"I\0\0\0\x01X\0\0", false).is_err());
    assert!(LogicalMessage::parse(b"I\0\0\0\x01N\0\xff", false).is_err()); // 65535 columns, 0 bytes
    assert!(matches!(LogicalMessage::parse(b"b", false), Err(Error::Unsupported(_))));
    assert_eq!(LogicalMessage::parse(b"E\0", false), Err(Error::TrailingBytes("pgoutput message")));
}
