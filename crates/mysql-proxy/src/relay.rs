//! Forwarding one backend reply to the client, packet-exact, while the [`Reply`] state
//! machine finds its end. Complete packets go out with one write per read from the backend.

use std::io;

use protocol_mysql::parse_packet;

use crate::errors;
use crate::wire::Wire;
use protocol_mysql::reply::{Reply, Step};

/// Where the reply's bytes go besides the client.
pub enum Sink<'a> {
    /// Straight to the client.
    Stream,
    /// To the client, and appended here (a cache fill).
    Copy(&'a mut Vec<u8>),
}

/// Why relaying stopped early.
#[derive(Debug)]
pub enum RelayError {
    /// The backend connection broke; the client was sent an ERR (unless it broke too).
    Backend(io::Error),
    /// Writing to (or reading from) the client failed.
    Client(io::Error),
}

/// Relays the reply to a command whose last packet had sequence id `cmd_seq`.
/// `before_end` runs once the reply is complete, before its last bytes reach the client
/// (the session applies invalidations there: nobody sees an OK before they are done), and
/// at the end of each intermediate result of a multi-result reply, before it is sent.
pub async fn relay_reply(
    server: &mut Wire,
    client: &mut Wire,
    reply: &mut Reply,
    mut sink: Sink<'_>,
    cmd_seq: u8,
    backend_name: &str,
    before_end: &mut (dyn FnMut(&Reply) + Send),
) -> Result<(), RelayError> {
    let mut last_seq = cmd_seq;
    loop {
        let mut step = Step::More;
        let mut scanned = 0;
        let intermediate;
        {
            let buf = server.buffered();
            let results = reply.results_ended;
            while let Ok(Some((p, used))) = parse_packet(&buf[scanned..]) {
                last_seq = p.seq;
                step = reply.feed(p.payload);
                scanned += used;
                if step != Step::More || reply.results_ended != results {
                    break;
                }
            }
            intermediate = reply.results_ended != results;
            if step == Step::Done || intermediate {
                before_end(reply);
            }
            if scanned > 0 {
                let bytes = &buf[..scanned];
                if let Sink::Copy(v) = &mut sink {
                    v.extend_from_slice(bytes);
                }
                client.write(bytes).await.map_err(RelayError::Client)?;
            }
        }
        server.consume(scanned);
        match step {
            Step::Done => return Ok(()),
            Step::Infile => relay_infile(client, server).await?,
            // Stopped at an intermediate result's end: the next packets may be buffered.
            Step::More if intermediate => {}
            Step::More => {
                if let Err(e) = server.fill().await {
                    let msg = format!("Lost connection to MySQL backend {backend_name} during query ({e})");
                    let err = errors::err41(last_seq.wrapping_add(1), errors::BACKEND_LOST, b"08S01", &msg);
                    let _ = client.write(&err).await;
                    return Err(RelayError::Backend(e));
                }
            }
        }
    }
}

/// Reads one backend reply to the end and drops it (a command the proxy sent on its own).
pub async fn drain_reply(server: &mut Wire, reply: &mut Reply) -> Result<(), RelayError> {
    loop {
        let mut scanned = 0;
        let mut step = Step::More;
        while let Ok(Some((p, used))) = parse_packet(&server.buffered()[scanned..]) {
            step = reply.feed(p.payload);
            scanned += used;
            if step != Step::More {
                break;
            }
        }
        server.consume(scanned);
        match step {
            Step::Done => return Ok(()),
            Step::Infile => {
                // Never asked for by a replayed SELECT; refuse it with the empty packet.
                server.write(&[0, 0, 0, 2]).await.map_err(RelayError::Backend)?;
            }
            Step::More => server.fill().await.map_err(RelayError::Backend)?,
        }
    }
}

/// LOAD DATA LOCAL INFILE: forwards the client's file packets up to the empty one.
async fn relay_infile(client: &mut Wire, server: &mut Wire) -> Result<(), RelayError> {
    loop {
        let (len, empty) = loop {
            match parse_packet(client.buffered()) {
                Ok(Some((p, used))) => break (used, p.payload.is_empty()),
                _ => client.fill().await.map_err(RelayError::Client)?,
            }
        };
        server.write(&client.buffered()[..len]).await.map_err(RelayError::Backend)?;
        client.consume(len);
        if empty {
            return Ok(());
        }
    }
}
