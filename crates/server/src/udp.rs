//! The UDP listener (`-U`): memcached's 8-byte frame header (request id, sequence number,
//! datagram count, reserved) around a text or binary request, replies split into
//! datagrams of at most 1400 bytes.

use std::net::UdpSocket;
use std::sync::atomic::AtomicU32;
use std::sync::Arc;

use crate::session::{self, Session, Step};
use crate::shared::{ConnInfo, Peer, Shared, WorkerStats};

/// memcached's `UDP_MAX_PAYLOAD_SIZE`.
const MAX_DATAGRAM: usize = 1400;
const FRAME_HEADER: usize = 8;

/// Answer datagrams on `sock` forever.
pub fn serve(sock: UdpSocket, shared: Arc<Shared>, worker: Arc<WorkerStats>) {
    let local: Arc<str> = sock.local_addr().map(|a| format!("udp:{a}")).unwrap_or_default().into();
    let info = Arc::new(ConnInfo {
        addr: Peer::Named(local.clone()),
        listen_addr: local,
        last_cmd: AtomicU32::new(0),
        fd: std::sync::atomic::AtomicI32::new(-1),
    });
    let mut buf = vec![0u8; 65536];
    let mut out = Vec::new();
    // Writes are acknowledged only once the persistent tier allows it, as on TCP.
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    loop {
        let Ok((n, peer)) = sock.recv_from(&mut buf) else {
            continue;
        };
        if n < FRAME_HEADER {
            continue;
        }
        let (head, payload) = buf[..n].split_at(FRAME_HEADER);
        // A datagram is a connection of its own (memcached's UDP has no state between them).
        let mut session = Session::new(&shared, info.clone());
        out.clear();
        if head[4] != 0 || head[5] != 1 {
            out.extend_from_slice(b"SERVER_ERROR multi-packet request not supported\r\n");
        } else {
            let mut start = 0;
            loop {
                let (used, step) = session.run(&shared, &worker, &payload[start..], &mut out);
                start += used;
                match step {
                    Step::Pending(job) => out.extend_from_slice(&rt.block_on(job)),
                    // -R does not apply to a datagram: it is answered whole.
                    Step::Yield => {}
                    Step::Read | Step::Close => break,
                }
            }
        }
        let seq = session.ack_seq();
        let failed = match &shared.disk {
            Some(disk) if seq > 0 => rt.block_on(session::durable(disk.clone(), seq)),
            _ => None,
        };
        session.settle(&shared, failed, &mut out);
        let chunks: Vec<&[u8]> = out.chunks(MAX_DATAGRAM - FRAME_HEADER).collect();
        let total = chunks.len() as u16;
        for (seq, chunk) in chunks.iter().enumerate() {
            let mut d = Vec::with_capacity(FRAME_HEADER + chunk.len());
            d.extend_from_slice(&head[0..2]);
            d.extend_from_slice(&(seq as u16).to_be_bytes());
            d.extend_from_slice(&total.to_be_bytes());
            d.extend_from_slice(&[0, 0]);
            d.extend_from_slice(chunk);
            let _ = sock.send_to(&d, peer);
        }
    }
}
