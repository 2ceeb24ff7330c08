//! Property tests: parse(compose(x)) == x over generated messages of every kind, in both
//! directions, for the startup packets, the walsender stream and pgoutput; and the framing
//! reader finds each message of a concatenated stream whatever the chunking.

use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;
use protocol_postgres::backend::{ErrorFields, NegotiateProtocolVersion, Notification, ParameterStatus};
use protocol_postgres::replication::pgoutput::*;
use protocol_postgres::replication::stream::*;
use protocol_postgres::*;

/// Strings the protocol carries NUL-terminated: anything but NUL.
fn cstring() -> impl Strategy<Value = Vec<u8>> {
    vec(1u8..=255, 0..12)
}

/// Names pgoutput carries (UTF-8, no NUL).
fn name() -> impl Strategy<Value = String> {
    "[a-zA-Z_ é😀]{0,10}"
}

fn blob() -> impl Strategy<Value = Vec<u8>> {
    vec(any::<u8>(), 0..24)
}

fn frontend(
    kind: u8,
    s: &[Vec<u8>],
    blobs: &[Option<Vec<u8>>],
    i16s: &[i16],
    n: i32,
    u: u32,
) -> FrontendMessage<'static> {
    // Leak to get 'static borrows: bounded by the number of proptest cases.
    let s: &'static [Vec<u8>] = Box::leak(s.to_vec().into_boxed_slice());
    let blobs: &'static [Option<Vec<u8>>] = Box::leak(blobs.to_vec().into_boxed_slice());
    let params: Vec<Option<&[u8]>> = blobs.iter().map(|b| b.as_deref()).collect();
    let target = if n % 2 == 0 { Target::Statement } else { Target::Portal };
    match kind % 14 {
        0 => FrontendMessage::Query(&s[0]),
        1 => FrontendMessage::Parse(Parse { name: &s[0], query: &s[1], param_types: vec![u; i16s.len()] }),
        2 => FrontendMessage::Bind(Bind {
            portal: &s[0],
            statement: &s[1],
            param_formats: i16s.to_vec(),
            params,
            result_formats: i16s.iter().rev().copied().collect(),
        }),
        3 => FrontendMessage::Describe(Named { target, name: &s[2] }),
        4 => FrontendMessage::Execute(Execute { portal: &s[0], max_rows: n }),
        5 => FrontendMessage::Close(Named { target, name: &s[1] }),
        6 => FrontendMessage::Sync,
        7 => FrontendMessage::Flush,
        8 => FrontendMessage::CopyData(blobs.first().and_then(|b| b.as_deref()).unwrap_or(&s[0])),
        9 => FrontendMessage::CopyDone,
        10 => FrontendMessage::CopyFail(&s[1]),
        11 => FrontendMessage::FunctionCall(FunctionCall {
            function: u,
            arg_formats: i16s.to_vec(),
            args: params,
            result_format: n as i16,
        }),
        12 => FrontendMessage::Terminate,
        _ => FrontendMessage::Password(&s[2]),
    }
}

proptest! {
    #[test]
    fn frontend_messages(kind in any::<u8>(), s in vec(cstring(), 3), blobs in vec(option::of(blob()), 0..6),
                         i16s in vec(any::<i16>(), 0..6), n in any::<i32>(), u in any::<u32>()) {
        let m = frontend(kind, &s, &blobs, &i16s, n, u);
        let mut wire = Vec::new();
        m.write(&mut wire);
        let (frame, used) = parse_frame(&wire, u32::MAX).unwrap().unwrap();
        prop_assert_eq!(used, wire.len());
        prop_assert_eq!(FrontendMessage::parse(frame).unwrap(), m);
    }

    #[test]
    fn backend_messages(kind in any::<u8>(), s in vec(cstring(), 3), blobs in vec(option::of(blob()), 0..6),
                        i16s in vec(any::<i16>(), 0..6), n in any::<i32>(), u in any::<u32>(), salt in any::<[u8; 4]>()) {
        let row: Vec<Option<&[u8]>> = blobs.iter().map(|b| b.as_deref()).collect();
        let mut row_wire = Vec::new();
        DataRow::write(&mut row_wire, &row);
        let field = FieldDescription {
            name: &s[0], table_oid: u, column: n as i16, type_oid: u ^ 1, type_size: -1, type_modifier: n, format: 1,
        };
        let key = [&s[1][..], b"abcd"].concat();
        let m = match kind % 24 {
            0 => BackendMessage::Authentication(match u % 10 {
                0 => Authentication::Ok,
                1 => Authentication::CleartextPassword,
                2 => Authentication::Md5Password { salt },
                3 => Authentication::Sasl(s.iter().filter(|m| !m.is_empty()).map(|m| &m[..]).collect()),
                4 => Authentication::SaslContinue(&s[1]),
                5 => Authentication::SaslFinal(&s[2]),
                6 => Authentication::GssContinue(&s[0]),
                7 => Authentication::Gss,
                8 => Authentication::Sspi,
                _ => Authentication::KerberosV5,
            }),
            1 => BackendMessage::BackendKeyData(BackendKeyData { process_id: u, secret_key: &key }),
            2 => BackendMessage::ParameterStatus(ParameterStatus { name: &s[0], value: &s[1] }),
            3 => BackendMessage::ReadyForQuery([TransactionStatus::Idle, TransactionStatus::InTransaction,
                                               TransactionStatus::Failed][u as usize % 3]),
            4 => BackendMessage::RowDescription(RowDescription { fields: vec![field; i16s.len()] }),
            5 => BackendMessage::DataRow(DataRow::parse(&row_wire[5..]).unwrap()),
            6 => BackendMessage::CommandComplete(&s[0]),
            7 => BackendMessage::EmptyQueryResponse,
            8 | 9 => {
                let fields = s.iter().enumerate().filter(|(i, _)| *i as u32 != u % 4)
                    .map(|(i, v)| ([b'S', b'C', b'M'][i], &v[..])).collect();
                let f = ErrorFields { fields };
                if kind % 24 == 8 { BackendMessage::ErrorResponse(f) } else { BackendMessage::NoticeResponse(f) }
            }
            10 => BackendMessage::ParseComplete,
            11 => BackendMessage::BindComplete,
            12 => BackendMessage::CloseComplete,
            13 => BackendMessage::NoData,
            14 => BackendMessage::ParameterDescription(ParameterDescription { types: vec![u; i16s.len()] }),
            15 => BackendMessage::PortalSuspended,
            16..=18 => {
                let c = CopyResponse { format: (u % 2) as u8, column_formats: i16s.clone() };
                match kind % 24 { 16 => BackendMessage::CopyInResponse(c), 17 => BackendMessage::CopyOutResponse(c),
                                  _ => BackendMessage::CopyBothResponse(c) }
            }
            19 => BackendMessage::CopyData(&s[2]),
            20 => BackendMessage::CopyDone,
            21 => BackendMessage::NotificationResponse(Notification { process_id: u, channel: &s[0], payload: &s[1] }),
            22 => BackendMessage::NegotiateProtocolVersion(NegotiateProtocolVersion {
                newest_minor: u, unrecognized: s.iter().map(|v| &v[..]).collect() }),
            _ => BackendMessage::FunctionCallResponse(row.first().copied().flatten()),
        };
        let mut wire = Vec::new();
        m.write(&mut wire);
        let (frame, used) = parse_frame(&wire, u32::MAX).unwrap().unwrap();
        prop_assert_eq!(used, wire.len());
        prop_assert_eq!(BackendMessage::parse(frame).unwrap(), m);
    }

    #[test]
    fn startup_packets(params in vec((vec(1u8..=255, 1..8), cstring()), 0..6), pid in any::<u32>(),
                       key in vec(any::<u8>(), 4..=256), kind in 0u8..4) {
        let p = match kind {
            0 => StartupPacket::Startup(StartupMessage {
                version: ProtocolVersion::V3_0,
                params: params.iter().map(|(n, v)| (&n[..], &v[..])).collect(),
            }),
            1 => StartupPacket::SslRequest,
            2 => StartupPacket::GssEncRequest,
            _ => StartupPacket::Cancel(CancelRequest { process_id: pid, secret_key: &key }),
        };
        let mut wire = Vec::new();
        p.write(&mut wire);
        let (body, used) = parse_startup_frame(&wire).unwrap().unwrap();
        prop_assert_eq!(used, wire.len());
        prop_assert_eq!(StartupPacket::parse(body).unwrap(), p);
    }

    #[test]
    fn walsender_stream(a in any::<u64>(), b in any::<u64>(), c in any::<u64>(), t in any::<i64>(), flag in any::<bool>(),
                        data in blob(), x in any::<[u32; 4]>()) {
        for m in [
            ServerMessage::XLogData(XLogData { wal_start: Lsn(a), wal_end: Lsn(b), send_time: t, data: &data }),
            ServerMessage::PrimaryKeepalive(PrimaryKeepalive { wal_end: Lsn(a), send_time: t, reply_requested: flag }),
        ] {
            let mut out = Vec::new();
            m.write(&mut out);
            prop_assert_eq!(ServerMessage::parse(&out).unwrap(), m);
        }
        for m in [
            ClientMessage::StandbyStatusUpdate(StandbyStatusUpdate {
                written: Lsn(a), flushed: Lsn(b), applied: Lsn(c), send_time: t, reply_requested: flag }),
            ClientMessage::HotStandbyFeedback(HotStandbyFeedback {
                send_time: t, xmin: x[0], xmin_epoch: x[1], catalog_xmin: x[2], catalog_xmin_epoch: x[3] }),
        ] {
            let mut out = Vec::new();
            m.write_copy_data(&mut out);
            let (frame, _) = parse_frontend_frame(&out).unwrap().unwrap();
            let FrontendMessage::CopyData(payload) = FrontendMessage::parse(frame).unwrap() else { panic!() };
            prop_assert_eq!(ClientMessage::parse(payload).unwrap(), m);
        }
        prop_assert_eq!(Lsn(a).to_string().parse::<Lsn>().unwrap(), Lsn(a));
    }

    #[test]
    fn pgoutput_messages(kind in 0u8..14, names in vec(name(), 4), cols in vec((0u8..4, blob()), 0..8),
                         old in 0u8..3, xid in option::of(any::<u32>()), u in any::<u32>(), l in any::<u64>(),
                         t in any::<i64>(), flags in any::<u8>()) {
        let tuple = TupleData { columns: cols.iter().map(|(k, v)| match k {
            0 => Column::Null, 1 => Column::UnchangedToast, 2 => Column::Text(v), _ => Column::Binary(v) }).collect() };
        let old_tuple = match old { 0 => None, 1 => Some(OldTuple::Key(tuple.clone())), _ => Some(OldTuple::Full(tuple.clone())) };
        let commit = Commit { flags, commit_lsn: Lsn(l), end_lsn: Lsn(l.wrapping_add(1)), commit_time: t };
        let m = match kind {
            0 => LogicalMessage::Begin(Begin { final_lsn: Lsn(l), commit_time: t, xid: u }),
            1 => LogicalMessage::Commit(commit),
            2 => LogicalMessage::Origin(Origin { commit_lsn: Lsn(l), name: &names[0] }),
            3 => LogicalMessage::Relation(Relation {
                xid, id: u, namespace: &names[0], name: &names[1],
                replica_identity: [ReplicaIdentity::Default, ReplicaIdentity::Nothing, ReplicaIdentity::Full,
                                   ReplicaIdentity::Index][flags as usize % 4],
                columns: cols.iter().map(|(k, _)| RelationColumn {
                    flags: *k % 2, name: &names[2], type_oid: u, type_modifier: t as i32 }).collect(),
            }),
            4 => LogicalMessage::Type(Type { xid, id: u, namespace: &names[2], name: &names[3] }),
            5 => LogicalMessage::Insert(Insert { xid, relation: u, new: tuple.clone() }),
            6 => LogicalMessage::Update(Update { xid, relation: u, old: old_tuple, new: tuple.clone() }),
            7 => LogicalMessage::Delete(Delete { xid, relation: u,
                old: old_tuple.unwrap_or(OldTuple::Key(tuple.clone())) }),
            8 => LogicalMessage::Truncate(Truncate { xid, options: flags, relations: vec![u; cols.len()] }),
            9 => LogicalMessage::Message(Message { xid, flags, lsn: Lsn(l), prefix: &names[1],
                content: cols.first().map(|(_, v)| &v[..]).unwrap_or(b"") }),
            10 => LogicalMessage::StreamStart(StreamStart { xid: u, first_segment: flags }),
            11 => LogicalMessage::StreamStop,
            12 => LogicalMessage::StreamCommit(StreamCommit { xid: u, commit }),
            _ => LogicalMessage::StreamAbort(StreamAbort { xid: u, subxid: u.wrapping_add(1) }),
        };
        let mut out = Vec::new();
        m.write(&mut out);
        prop_assert_eq!(LogicalMessage::parse(&out, m.stream_xid().is_some()).unwrap(), m);
    }

    /// A stream of messages cut into arbitrary chunks: the reader sees exactly the messages
    /// sent, never a partial one as complete.
    #[test]
    fn framing_over_chunks(msgs in vec((any::<u8>(), blob()), 1..10), cuts in vec(1usize..40, 1..20)) {
        let mut wire = Vec::new();
        for (tag, body) in &msgs {
            write_frame(&mut wire, *tag, body);
        }
        let mut buf = Vec::new();
        let mut got = Vec::new();
        let mut fed = 0;
        let mut cuts = cuts.into_iter().cycle();
        while got.len() < msgs.len() {
            let n = cuts.next().unwrap().min(wire.len() - fed);
            buf.extend_from_slice(&wire[fed..fed + n]);
            fed += n;
            while let Some((f, used)) = parse_frame(&buf, u32::MAX).unwrap() {
                got.push((f.tag, f.body.to_vec()));
                buf.drain(..used);
            }
            prop_assert!(fed < wire.len() || got.len() == msgs.len());
        }
        prop_assert_eq!(got, msgs);
    }
}

#[test]
fn command_rows_from_tags() {
    assert_eq!(command_rows(b"INSERT 0 5"), Some(5));
    assert_eq!(command_rows(b"SELECT 3"), Some(3));
    assert_eq!(command_rows(b"UPDATE 0"), Some(0));
    assert_eq!(command_rows(b"CREATE TABLE"), None);
    assert_eq!(command_rows(b"SELECT x"), None);
}
