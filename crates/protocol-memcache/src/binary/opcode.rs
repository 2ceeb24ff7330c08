//! Command opcodes of the binary protocol, as memcached 1.6.18 dispatches them.

use super::status::Status;

/// A binary-protocol command that memcached 1.6.18 implements (`protocol_binary.h`).
///
/// Opcodes absent here (the range/TAP commands 0x30.., and `0x1b`, which some drafts call
/// "verbosity": memcached 1.6.18 neither defines nor implements it) are unknown commands:
/// memcached answers them with [`Status::UnknownCommand`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Opcode {
    /// `0x00` get a key; a miss answers "Not found".
    Get = 0x00,
    /// `0x01` store unconditionally (extras: flags, expiration).
    Set = 0x01,
    /// `0x02` store only if the key is absent.
    Add = 0x02,
    /// `0x03` store only if the key is present.
    Replace = 0x03,
    /// `0x04` delete a key.
    Delete = 0x04,
    /// `0x05` increment a counter (extras: delta, initial, expiration).
    Increment = 0x05,
    /// `0x06` decrement a counter.
    Decrement = 0x06,
    /// `0x07` answer, then close the connection.
    Quit = 0x07,
    /// `0x08` invalidate all items, now or at the optional expiration.
    Flush = 0x08,
    /// `0x09` quiet [`Opcode::Get`]: misses are not answered.
    GetQ = 0x09,
    /// `0x0a` no operation; answers, which also ends a run of quiet commands.
    Noop = 0x0a,
    /// `0x0b` server version string.
    Version = 0x0b,
    /// `0x0c` get, the reply carrying the key.
    GetK = 0x0c,
    /// `0x0d` quiet [`Opcode::GetK`].
    GetKQ = 0x0d,
    /// `0x0e` append the value to an existing item.
    Append = 0x0e,
    /// `0x0f` prepend the value to an existing item.
    Prepend = 0x0f,
    /// `0x10` statistics, one reply per entry and an empty one at the end.
    Stat = 0x10,
    /// `0x11` quiet [`Opcode::Set`].
    SetQ = 0x11,
    /// `0x12` quiet [`Opcode::Add`].
    AddQ = 0x12,
    /// `0x13` quiet [`Opcode::Replace`].
    ReplaceQ = 0x13,
    /// `0x14` quiet [`Opcode::Delete`].
    DeleteQ = 0x14,
    /// `0x15` quiet [`Opcode::Increment`].
    IncrementQ = 0x15,
    /// `0x16` quiet [`Opcode::Decrement`].
    DecrementQ = 0x16,
    /// `0x17` quiet [`Opcode::Quit`]: closes without answering.
    QuitQ = 0x17,
    /// `0x18` quiet [`Opcode::Flush`].
    FlushQ = 0x18,
    /// `0x19` quiet [`Opcode::Append`].
    AppendQ = 0x19,
    /// `0x1a` quiet [`Opcode::Prepend`].
    PrependQ = 0x1a,
    /// `0x1c` update an item's expiration (extras: expiration).
    Touch = 0x1c,
    /// `0x1d` get and touch.
    Gat = 0x1d,
    /// `0x1e` quiet [`Opcode::Gat`].
    GatQ = 0x1e,
    /// `0x20` list SASL mechanisms. memcached without `-S` answers the SASL commands
    /// "Unknown command" (the whole frame consumed) and keeps the connection.
    SaslListMechs = 0x20,
    /// `0x21` start SASL authentication (key: mechanism, value: data).
    SaslAuth = 0x21,
    /// `0x22` continue SASL authentication.
    SaslStep = 0x22,
    /// `0x23` get and touch, the reply carrying the key.
    GatK = 0x23,
    /// `0x24` quiet [`Opcode::GatK`].
    GatKQ = 0x24,
}

impl Opcode {
    /// Every opcode, in numeric order.
    pub const ALL: [Opcode; 35] = [
        Opcode::Get,
        Opcode::Set,
        Opcode::Add,
        Opcode::Replace,
        Opcode::Delete,
        Opcode::Increment,
        Opcode::Decrement,
        Opcode::Quit,
        Opcode::Flush,
        Opcode::GetQ,
        Opcode::Noop,
        Opcode::Version,
        Opcode::GetK,
        Opcode::GetKQ,
        Opcode::Append,
        Opcode::Prepend,
        Opcode::Stat,
        Opcode::SetQ,
        Opcode::AddQ,
        Opcode::ReplaceQ,
        Opcode::DeleteQ,
        Opcode::IncrementQ,
        Opcode::DecrementQ,
        Opcode::QuitQ,
        Opcode::FlushQ,
        Opcode::AppendQ,
        Opcode::PrependQ,
        Opcode::Touch,
        Opcode::Gat,
        Opcode::GatQ,
        Opcode::SaslListMechs,
        Opcode::SaslAuth,
        Opcode::SaslStep,
        Opcode::GatK,
        Opcode::GatKQ,
    ];

    /// The opcode with this wire value, or `None` if memcached does not implement it.
    pub const fn from_u8(byte: u8) -> Option<Opcode> {
        Some(match byte {
            0x00 => Opcode::Get,
            0x01 => Opcode::Set,
            0x02 => Opcode::Add,
            0x03 => Opcode::Replace,
            0x04 => Opcode::Delete,
            0x05 => Opcode::Increment,
            0x06 => Opcode::Decrement,
            0x07 => Opcode::Quit,
            0x08 => Opcode::Flush,
            0x09 => Opcode::GetQ,
            0x0a => Opcode::Noop,
            0x0b => Opcode::Version,
            0x0c => Opcode::GetK,
            0x0d => Opcode::GetKQ,
            0x0e => Opcode::Append,
            0x0f => Opcode::Prepend,
            0x10 => Opcode::Stat,
            0x11 => Opcode::SetQ,
            0x12 => Opcode::AddQ,
            0x13 => Opcode::ReplaceQ,
            0x14 => Opcode::DeleteQ,
            0x15 => Opcode::IncrementQ,
            0x16 => Opcode::DecrementQ,
            0x17 => Opcode::QuitQ,
            0x18 => Opcode::FlushQ,
            0x19 => Opcode::AppendQ,
            0x1a => Opcode::PrependQ,
            0x1c => Opcode::Touch,
            0x1d => Opcode::Gat,
            0x1e => Opcode::GatQ,
            0x20 => Opcode::SaslListMechs,
            0x21 => Opcode::SaslAuth,
            0x22 => Opcode::SaslStep,
            0x23 => Opcode::GatK,
            0x24 => Opcode::GatKQ,
            _ => return None,
        })
    }

    /// The wire value.
    pub const fn as_u8(self) -> u8 {
        self as u8
    }

    /// True for the quiet variants (`...Q`), whose uninteresting replies are not sent.
    pub const fn is_quiet(self) -> bool {
        matches!(
            self,
            Opcode::GetQ
                | Opcode::GetKQ
                | Opcode::SetQ
                | Opcode::AddQ
                | Opcode::ReplaceQ
                | Opcode::DeleteQ
                | Opcode::IncrementQ
                | Opcode::DecrementQ
                | Opcode::QuitQ
                | Opcode::FlushQ
                | Opcode::AppendQ
                | Opcode::PrependQ
                | Opcode::GatQ
                | Opcode::GatKQ
        )
    }

    /// The non-quiet form (`GetKQ` → `GetK`, `SetQ` → `Set`, ...); non-quiet opcodes map to themselves.
    pub const fn base(self) -> Opcode {
        match self {
            Opcode::GetQ => Opcode::Get,
            Opcode::GetKQ => Opcode::GetK,
            Opcode::SetQ => Opcode::Set,
            Opcode::AddQ => Opcode::Add,
            Opcode::ReplaceQ => Opcode::Replace,
            Opcode::DeleteQ => Opcode::Delete,
            Opcode::IncrementQ => Opcode::Increment,
            Opcode::DecrementQ => Opcode::Decrement,
            Opcode::QuitQ => Opcode::Quit,
            Opcode::FlushQ => Opcode::Flush,
            Opcode::AppendQ => Opcode::Append,
            Opcode::PrependQ => Opcode::Prepend,
            Opcode::GatQ => Opcode::Gat,
            Opcode::GatKQ => Opcode::GatK,
            other => other,
        }
    }

    /// The quiet form of this command, if it has one (`Get` → `GetQ`); quiet opcodes map to themselves.
    pub const fn quiet(self) -> Option<Opcode> {
        Some(match self.base() {
            Opcode::Get => Opcode::GetQ,
            Opcode::GetK => Opcode::GetKQ,
            Opcode::Set => Opcode::SetQ,
            Opcode::Add => Opcode::AddQ,
            Opcode::Replace => Opcode::ReplaceQ,
            Opcode::Delete => Opcode::DeleteQ,
            Opcode::Increment => Opcode::IncrementQ,
            Opcode::Decrement => Opcode::DecrementQ,
            Opcode::Quit => Opcode::QuitQ,
            Opcode::Flush => Opcode::FlushQ,
            Opcode::Append => Opcode::AppendQ,
            Opcode::Prepend => Opcode::PrependQ,
            Opcode::Gat => Opcode::GatQ,
            Opcode::GatK => Opcode::GatKQ,
            _ => return None,
        })
    }

    /// True for `GetK`, `GetKQ`, `GatK`, `GatKQ`: hits and misses echo the key in the reply.
    pub const fn returns_key(self) -> bool {
        matches!(self, Opcode::GetK | Opcode::GetKQ | Opcode::GatK | Opcode::GatKQ)
    }

    /// True if memcached sends no reply with this status for this opcode.
    ///
    /// Checked against memcached 1.6.18: quiet gets (`GetQ`, `GetKQ`, `GatQ`, `GatKQ`) drop
    /// misses ([`Status::KeyNotFound`]) but send hits; the other quiet commands drop success
    /// ([`Status::NoError`]) but send every error; `QuitQ` sends nothing at all. Non-quiet
    /// opcodes always reply. Malformed-request replies ([`super::ParseError`]) are always sent.
    pub const fn suppresses_reply(self, status: Status) -> bool {
        match self {
            Opcode::QuitQ => true,
            Opcode::GetQ | Opcode::GetKQ | Opcode::GatQ | Opcode::GatKQ => {
                matches!(status, Status::KeyNotFound)
            }
            _ => self.is_quiet() && matches!(status, Status::NoError),
        }
    }

    /// memcached's name for the command, e.g. `"GETKQ"` (for logs).
    pub const fn name(self) -> &'static str {
        match self {
            Opcode::Get => "GET",
            Opcode::Set => "SET",
            Opcode::Add => "ADD",
            Opcode::Replace => "REPLACE",
            Opcode::Delete => "DELETE",
            Opcode::Increment => "INCREMENT",
            Opcode::Decrement => "DECREMENT",
            Opcode::Quit => "QUIT",
            Opcode::Flush => "FLUSH",
            Opcode::GetQ => "GETQ",
            Opcode::Noop => "NOOP",
            Opcode::Version => "VERSION",
            Opcode::GetK => "GETK",
            Opcode::GetKQ => "GETKQ",
            Opcode::Append => "APPEND",
            Opcode::Prepend => "PREPEND",
            Opcode::Stat => "STAT",
            Opcode::SetQ => "SETQ",
            Opcode::AddQ => "ADDQ",
            Opcode::ReplaceQ => "REPLACEQ",
            Opcode::DeleteQ => "DELETEQ",
            Opcode::IncrementQ => "INCREMENTQ",
            Opcode::DecrementQ => "DECREMENTQ",
            Opcode::QuitQ => "QUITQ",
            Opcode::FlushQ => "FLUSHQ",
            Opcode::AppendQ => "APPENDQ",
            Opcode::PrependQ => "PREPENDQ",
            Opcode::Touch => "TOUCH",
            Opcode::Gat => "GAT",
            Opcode::GatQ => "GATQ",
            Opcode::SaslListMechs => "SASL_LIST_MECHS",
            Opcode::SaslAuth => "SASL_AUTH",
            Opcode::SaslStep => "SASL_STEP",
            Opcode::GatK => "GATK",
            Opcode::GatKQ => "GATKQ",
        }
    }
}

impl From<Opcode> for u8 {
    fn from(op: Opcode) -> u8 {
        op as u8
    }
}

impl TryFrom<u8> for Opcode {
    /// The unknown byte.
    type Error = u8;

    fn try_from(byte: u8) -> Result<Opcode, u8> {
        Opcode::from_u8(byte).ok_or(byte)
    }
}

impl core::fmt::Display for Opcode {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_u8_round_trips_every_byte() {
        let mut known = 0;
        for byte in 0..=u8::MAX {
            match Opcode::from_u8(byte) {
                Some(op) => {
                    known += 1;
                    assert_eq!(op.as_u8(), byte);
                    assert_eq!(u8::from(op), byte);
                    assert_eq!(Opcode::try_from(byte), Ok(op));
                }
                None => assert_eq!(Opcode::try_from(byte), Err(byte)),
            }
        }
        assert_eq!(known, Opcode::ALL.len());
        for pair in Opcode::ALL.windows(2) {
            assert!(pair[0] < pair[1]);
        }
    }

    #[test]
    fn not_implemented_by_memcached() {
        // 0x1b ("verbosity" in some drafts), 0x1f, and the range commands are unknown.
        for byte in [0x1b, 0x1f, 0x25, 0x30, 0x3c, 0x40, 0x80, 0xff] {
            assert_eq!(Opcode::from_u8(byte), None, "{byte:#x}");
        }
    }

    #[test]
    fn quiet_and_base() {
        let quiet: Vec<Opcode> = Opcode::ALL.into_iter().filter(|o| o.is_quiet()).collect();
        assert_eq!(quiet.len(), 14);
        for op in Opcode::ALL {
            let base = op.base();
            assert!(!base.is_quiet(), "{op}");
            assert_eq!(base.base(), base);
            if op.is_quiet() {
                assert_ne!(base, op);
                assert_eq!(base.quiet(), Some(op));
                assert_eq!(op.quiet(), Some(op));
            } else {
                assert_eq!(base, op);
            }
        }
        assert_eq!(Opcode::GetKQ.base(), Opcode::GetK);
        assert_eq!(Opcode::GatKQ.base(), Opcode::GatK);
        assert_eq!(Opcode::Touch.quiet(), None);
        assert_eq!(Opcode::Stat.quiet(), None);
        assert_eq!(Opcode::Noop.quiet(), None);
    }

    #[test]
    fn returns_key() {
        let with_key: Vec<Opcode> = Opcode::ALL.into_iter().filter(|o| o.returns_key()).collect();
        assert_eq!(with_key, [Opcode::GetK, Opcode::GetKQ, Opcode::GatK, Opcode::GatKQ]);
    }

    #[test]
    fn suppressed_replies() {
        use Status::*;
        for op in [Opcode::GetQ, Opcode::GetKQ, Opcode::GatQ, Opcode::GatKQ] {
            assert!(op.suppresses_reply(KeyNotFound));
            assert!(!op.suppresses_reply(NoError));
        }
        for op in [
            Opcode::SetQ,
            Opcode::AddQ,
            Opcode::ReplaceQ,
            Opcode::DeleteQ,
            Opcode::IncrementQ,
            Opcode::DecrementQ,
            Opcode::FlushQ,
            Opcode::AppendQ,
            Opcode::PrependQ,
        ] {
            assert!(op.suppresses_reply(NoError), "{op}");
            for err in [KeyNotFound, KeyExists, ValueTooLarge, ItemNotStored, NonNumeric] {
                assert!(!op.suppresses_reply(err), "{op} {err:?}");
            }
        }
        assert!(Opcode::QuitQ.suppresses_reply(NoError));
        for op in Opcode::ALL.into_iter().filter(|o| !o.is_quiet()) {
            assert!(!op.suppresses_reply(NoError));
            assert!(!op.suppresses_reply(KeyNotFound));
        }
    }

    #[test]
    fn names() {
        assert_eq!(Opcode::GetKQ.to_string(), "GETKQ");
        assert_eq!(Opcode::SaslListMechs.name(), "SASL_LIST_MECHS");
    }
}
