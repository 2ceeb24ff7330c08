//! Transactions the backend does not need to see yet.
//!
//! A plain `BEGIN` costs a backend round trip, and so does its `COMMIT`, even when every
//! read in between is answered from the cache (sysbench's `oltp_read_only`, an ORM's
//! read-only request). InnoDB takes a transaction's read view at its first read, not at
//! `BEGIN`, so sending the `BEGIN` later, just before the transaction's first statement
//! that needs the backend, cannot be observed. The proxy therefore:
//!
//! - answers a plain `BEGIN` / `START TRANSACTION [READ ONLY]` itself, outside a
//!   transaction with autocommit on, when the cache may answer reads in the transaction
//!   (`--query-cache-in-transactions`), and keeps it *deferred*: it goes to the backend
//!   with the first command that does (pipelined with it when that command is a read);
//! - answers `COMMIT` / `ROLLBACK` itself when the backend has no transaction open (the
//!   `BEGIN` is still deferred, or under autocommit=0 nothing reached the backend since its
//!   last reply said no transaction was open): there the backend's answer is a no-op OK;
//! - answers `COMMIT` / `ROLLBACK` at once, sending it to the backend and reading its reply
//!   only afterwards, when everything the transaction sent to the backend (after its deferred
//!   `BEGIN`, or under autocommit=0 from the read that opened it) was a cacheable read: it has
//!   no write to make durable and holds no lock, so its end only closes a read view, and the
//!   next command reaches the backend after it.
//!
//! The OK it answers with is the backend's own: learned, per connection, from the last
//! time the same statement went to the backend in the same session state (same variables,
//! database, autocommit), and used only if it was the plain 7-byte OK (no warnings, no
//! session-tracking data). So the first transaction of each connection always goes through.
//! `WITH CONSISTENT SNAPSHOT`, `READ WRITE`, `AND CHAIN`, `RELEASE`, savepoints, XA and a
//! `BEGIN` inside an open transaction (an implicit commit) are always forwarded.

use protocol_mysql::command::{COM_QUERY, COM_STMT_EXECUTE};
use protocol_mysql::{parse_packet, write_packet};
use querycache::session::SERVER_STATUS_IN_TRANS;

use super::CacheConn;

/// A transaction statement the proxy may answer itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxnWord {
    /// `BEGIN [WORK]`, `START TRANSACTION`, or `START TRANSACTION READ ONLY` (`read_only`).
    Begin {
        /// Started `READ ONLY`.
        read_only: bool,
    },
    /// `COMMIT [WORK]` or `ROLLBACK [WORK]`.
    End,
}

/// Which statement `sql` is, if it is one of [`TxnWord`]'s, exactly (case-insensitive,
/// surrounding blanks and one trailing `;` allowed; a comment or anything else: `None`).
pub fn txn_word(sql: &[u8]) -> Option<TxnWord> {
    // On every short COM_QUERY: no allocation, at most five words looked at.
    if sql.len() > 64 {
        return None;
    }
    let sql = sql.trim_ascii();
    let sql = sql.strip_suffix(b";").unwrap_or(sql);
    let mut w: [&[u8]; 4] = [b""; 4];
    let mut n = 0;
    for word in sql.split(u8::is_ascii_whitespace).filter(|w| !w.is_empty()) {
        *w.get_mut(n)? = word;
        n += 1;
    }
    let is = |i: usize, s: &str| w[i].eq_ignore_ascii_case(s.as_bytes());
    let end = is(0, "COMMIT") || is(0, "ROLLBACK");
    let begin = Some(TxnWord::Begin { read_only: false });
    match n {
        1 if is(0, "BEGIN") => begin,
        1 if end => Some(TxnWord::End),
        2 if is(0, "BEGIN") && is(1, "WORK") || is(0, "START") && is(1, "TRANSACTION") => begin,
        2 if end && is(1, "WORK") => Some(TxnWord::End),
        4 if is(0, "START") && is(1, "TRANSACTION") && is(2, "READ") && is(3, "ONLY") => {
            Some(TxnWord::Begin { read_only: true })
        }
        _ => None,
    }
}

/// What the proxy answered itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Local {
    /// A `BEGIN`, now deferred.
    Begin,
    /// A `COMMIT` or `ROLLBACK` of a transaction the backend never saw.
    End,
    /// A `COMMIT` or `ROLLBACK` of a transaction that only read: this packet is to be sent
    /// to the backend now and its reply read before the next command's.
    EndSent(Vec<u8>),
}

/// The backend's OK to a transaction statement, and the session state it was given in.
#[derive(Debug)]
pub(super) struct Learned {
    word: TxnWord,
    code: u8,
    autocommit: bool,
    state: Vec<u8>,
    ok: [u8; 7],
}

/// The statement about to be forwarded, whose OK is to be learned from its reply.
#[derive(Debug)]
pub(super) struct Learning {
    word: TxnWord,
    code: u8,
    autocommit: bool,
}

impl CacheConn {
    /// Answers command `packet` (body `payload`, code `code`, last sequence id `seq`) here
    /// if it is a transaction statement the backend need not see now: the reply's bytes.
    /// Otherwise `None`, and if it is one, its reply is to be learned ([`Self::learning`]).
    pub fn local_txn(&mut self, packet: &[u8], payload: &[u8], code: u8, seq: u8) -> Option<(Vec<u8>, Local)> {
        self.learning = None;
        let stmt = match code {
            COM_STMT_EXECUTE => self.stmt_id(payload).and_then(|id| self.stmts.get(&id)),
            _ => None,
        };
        let word = match code {
            COM_QUERY => txn_word(payload.get(1..)?)?,
            COM_STMT_EXECUTE => stmt?.txn?,
            _ => return None,
        };
        // Only a transaction statement gets here (the rest of every query pays nothing more).
        let prepared = stmt.map(|s| s.prepared.clone());
        let cache = self.cache.clone()?;
        let s = self.session.as_mut()?;
        let autocommit = s.autocommit();
        let (eligible, learnable) = match word {
            TxnWord::Begin { read_only } => {
                let outside = self.deferred.is_none() && !s.txn_open() && autocommit;
                let useful = s.caching_disabled().is_none() && cache.caches_in_transaction(read_only);
                (outside && useful, outside)
            }
            TxnWord::End => {
                let only_read = self.backend_reads_only && s.txn_open();
                (self.deferred.is_some() || !s.txn_open() || only_read, self.deferred.is_none())
            }
        };
        let sent = matches!(word, TxnWord::End) && self.deferred.is_none() && s.txn_open();
        let known = self
            .learned
            .iter()
            .find(|l| l.word == word && l.code == code && l.autocommit == autocommit && l.state == s.state_key());
        let ok = match known {
            Some(l) if eligible && seq == 0 => l.ok,
            _ => {
                self.learning = learnable.then_some(Learning { word, code, autocommit });
                return None;
            }
        };
        // The session takes the statement as if the backend had answered it.
        match &prepared {
            None => drop(cache.on_query(s, &payload[1..])),
            Some(p) => drop(cache.on_execute(s, p, &[], &[], true)),
        }
        cache.on_reply(s, u16::from_le_bytes([ok[3], ok[4]]), true);
        let local = match word {
            TxnWord::Begin { .. } => {
                self.deferred = Some(packet.to_vec());
                self.last_hit = None; // diagnostics now describe the BEGIN, sent before them
                Local::Begin
            }
            TxnWord::End if sent => {
                self.backend_reads_only = false;
                self.last_hit = None;
                Local::EndSent(packet.to_vec())
            }
            TxnWord::End => {
                self.deferred = None;
                // A diagnostic next must describe this statement: the backend runs it first
                // (a no-op there, as no transaction is open).
                self.last_hit = Some(packet.to_vec());
                Local::End
            }
        };
        let mut out = Vec::with_capacity(11);
        write_packet(&mut out, seq.wrapping_add(1), &ok);
        Some((out, local))
    }

    /// Whether the command being forwarded is a transaction statement whose reply
    /// [`Self::learn`] should see (relay it with a copy).
    pub fn learning(&self) -> bool {
        self.learning.is_some()
    }

    /// The reply (`reply`: its packets with headers) to the transaction statement just
    /// forwarded: kept as the OK to answer it with next time, if it is a plain OK that
    /// leaves the transaction state the statement should.
    pub fn learn(&mut self, reply: &[u8]) {
        let (Some(l), Some(s)) = (self.learning.take(), &self.session) else { return };
        let Ok(Some((p, used))) = parse_packet(reply) else { return };
        let Ok(ok) = <[u8; 7]>::try_from(p.payload) else { return };
        if used != reply.len() || ok[..3] != [0, 0, 0] || ok[5..] != [0, 0] {
            return;
        }
        let open = u16::from_le_bytes([ok[3], ok[4]]) & SERVER_STATUS_IN_TRANS != 0;
        if open != matches!(l.word, TxnWord::Begin { .. }) {
            return;
        }
        self.learned.retain(|k| !(k.word == l.word && k.code == l.code && k.autocommit == l.autocommit));
        let state = s.state_key().to_vec();
        self.learned.push(Learned { word: l.word, code: l.code, autocommit: l.autocommit, state, ok });
    }

    /// The deferred `BEGIN`'s packet, taken: the caller sends it before the command it is
    /// forwarding (and reads its reply with [`crate::conn::Conn`]'s `own_reply`).
    pub fn take_deferred(&mut self) -> Option<Vec<u8>> {
        let begin = self.deferred.take()?;
        self.backend_reads_only = self.planned_read;
        Some(begin)
    }

    /// Whether the command being forwarded is a cacheable read (a deferred `BEGIN` may be
    /// pipelined with it: were the `BEGIN` refused, the read would have changed nothing).
    pub fn planned_read(&self) -> bool {
        self.planned_read
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The words, as a plain (allocating) model of what [`txn_word`] accepts.
    fn model(sql: &[u8]) -> Option<TxnWord> {
        let text = std::str::from_utf8(sql).ok()?.trim_matches(|c: char| c.is_ascii_whitespace());
        let text = text.strip_suffix(';').unwrap_or(text).to_ascii_uppercase();
        match text.split_ascii_whitespace().collect::<Vec<_>>().as_slice() {
            ["BEGIN"] | ["BEGIN", "WORK"] | ["START", "TRANSACTION"] => Some(TxnWord::Begin { read_only: false }),
            ["START", "TRANSACTION", "READ", "ONLY"] => Some(TxnWord::Begin { read_only: true }),
            ["COMMIT"] | ["COMMIT", "WORK"] | ["ROLLBACK"] | ["ROLLBACK", "WORK"] => Some(TxnWord::End),
            _ => None,
        }
    }

    /// Property: on random texts made of the words that matter, separators and noise (and
    /// random bytes), [`txn_word`] never panics and agrees with the model.
    #[test]
    fn agrees_with_the_model_on_random_texts() {
        const PARTS: [&str; 16] = [
            "BEGIN",
            "begin",
            "WORK",
            "START",
            "transaction",
            "READ",
            "only",
            "COMMIT",
            "rollback",
            ";",
            " ",
            "\t",
            "\n",
            "x",
            "/*",
            "\u{e9}",
        ];
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..200_000 {
            let mut sql = Vec::new();
            for _ in 0..next() % 8 {
                let r = next();
                if r % 10 == 0 {
                    sql.push((r >> 8) as u8); // any byte, invalid UTF-8 included
                } else {
                    sql.extend_from_slice(PARTS[(r >> 8) as usize % PARTS.len()].as_bytes());
                    if r % 3 == 0 {
                        sql.push(b' ');
                    }
                }
            }
            let want = if sql.len() > 64 { None } else { model(&sql) };
            assert_eq!(txn_word(&sql), want, "{:?}", String::from_utf8_lossy(&sql));
        }
    }

    #[test]
    fn transaction_words_are_exact() {
        let begin = Some(TxnWord::Begin { read_only: false });
        for sql in ["BEGIN", "begin", " BEGIN ; ", "BEGIN WORK", "start   transaction", "START TRANSACTION;"] {
            assert_eq!(txn_word(sql.as_bytes()), begin, "{sql}");
        }
        assert_eq!(txn_word(b"START TRANSACTION READ ONLY"), Some(TxnWord::Begin { read_only: true }));
        for sql in ["COMMIT", "commit work", "ROLLBACK", "rollback;"] {
            assert_eq!(txn_word(sql.as_bytes()), Some(TxnWord::End), "{sql}");
        }
        for sql in [
            "START TRANSACTION WITH CONSISTENT SNAPSHOT",
            "START TRANSACTION READ WRITE",
            "COMMIT AND CHAIN",
            "ROLLBACK TO SAVEPOINT a",
            "COMMIT RELEASE",
            "BEGIN /* x */",
            "BEGIN; SELECT 1",
            "BEGIN;;",
            "START TRANSACTION READ ONLY, WITH CONSISTENT SNAPSHOT",
            "SELECT 1",
            "COMMIT WORK NOW",
            "XA BEGIN 'x'",
            "SAVEPOINT a",
            "",
        ] {
            assert_eq!(txn_word(sql.as_bytes()), None, "{sql}");
        }
    }
}
