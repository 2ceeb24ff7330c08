//! memcached's per-command header rules (`dispatch_bin_command` in `proto_bin.c`).

use super::error::{Cause, Invalid, ParseError};
use super::header::{RequestHeader, HEADER_LEN, MAX_HEAD_LEN, MAX_KEY_LEN};
use super::opcode::Opcode;
use super::status::Status;

impl RequestHeader {
    /// Applies memcached 1.6.18's rules to this header; the body is not needed.
    ///
    /// In memcached's order (each checked against the real server):
    /// 1. header + extras + key > [`MAX_HEAD_LEN`] → close, no reply;
    /// 2. key + extras > body → "Unknown command", close;
    /// 3. key > 250 bytes → "Invalid arguments", close;
    /// 4. opcode not implemented → "Unknown command", skip [`RequestHeader::frame_len`]
    ///    bytes, keep the connection;
    /// 5. lengths wrong for the opcode → "Invalid arguments", close. The rules:
    ///    - `Get`/`GetQ`/`GetK`/`GetKQ`, `Delete(Q)`: no extras, a key, no value;
    ///    - `Set`/`Add`/`Replace` (+Q): 8 bytes of extras, a key, any value (even empty);
    ///    - `Append`/`Prepend` (+Q): no extras, a key, any value;
    ///    - `Increment`/`Decrement` (+Q): 20 bytes of extras, a key, no value;
    ///    - `Touch`/`Gat`/`GatQ`/`GatK`/`GatKQ`: 4 bytes of extras, a key (a value is *not*
    ///      rejected: memcached leaves those bytes to be read as the next request);
    ///    - `Flush(Q)`: no key, no value, extras of 0 or 4 bytes;
    ///    - `Stat`: no extras, optional key (a value is left to be read as the next request);
    ///    - `Noop`, `Version`, `Quit(Q)`, `SaslListMechs`: empty body;
    ///    - `SaslAuth`/`SaslStep`: no extras, a key, any value.
    ///
    /// memcached only acts once header + extras + key have arrived (rule 1 aside);
    /// [`super::parse_request`] waits for them too. The magic byte is checked by
    /// [`super::parse_header`].
    pub fn check(&self) -> Result<Opcode, ParseError> {
        let fail = |cause, action| ParseError { cause, action, opcode: self.opcode, opaque: self.opaque };
        let key = u32::from(self.key_len);
        let ext = u32::from(self.extras_len);
        let body = self.body_len;

        if self.head_len() > MAX_HEAD_LEN {
            return Err(fail(Cause::HeadTooLarge, Invalid::Close));
        }
        if key + ext > body {
            return Err(fail(Cause::BodyTooShort, Invalid::RespondAndClose(Status::UnknownCommand)));
        }
        if usize::from(self.key_len) > MAX_KEY_LEN {
            return Err(fail(Cause::KeyTooLong, Invalid::RespondAndClose(Status::InvalidArguments)));
        }
        let Some(op) = self.opcode() else {
            return Err(fail(
                Cause::UnknownOpcode,
                Invalid::RespondAndSkip { status: Status::UnknownCommand, skip: self.frame_len() },
            ));
        };

        use Opcode::*;
        let ok = match op.base() {
            Version | Noop | Quit | SaslListMechs => ext == 0 && key == 0 && body == 0,
            Flush => key == 0 && body == ext && (ext == 0 || ext == 4),
            Set | Add | Replace => ext == 8 && key != 0,
            Get | GetK | Delete => ext == 0 && key != 0 && body == key,
            Increment | Decrement => ext == 20 && key != 0 && body == key + ext,
            Append | Prepend => ext == 0 && key != 0,
            Stat => ext == 0,
            SaslAuth | SaslStep => ext == 0 && key != 0,
            Touch | Gat | GatK => ext == 4 && key != 0,
            // `base()` never returns a quiet opcode.
            GetQ | GetKQ | SetQ | AddQ | ReplaceQ | DeleteQ | IncrementQ | DecrementQ | QuitQ | FlushQ | AppendQ
            | PrependQ | GatQ | GatKQ => false,
        };
        if ok {
            Ok(op)
        } else {
            Err(fail(Cause::BadLayout, Invalid::RespondAndClose(Status::InvalidArguments)))
        }
    }

    /// Bytes memcached consumes for this request, header included.
    ///
    /// Usually header + body. Two memcached quirks, reproduced on purpose:
    /// - `Stat`, `Touch`, `Gat`, `GatQ`, `GatK`, `GatKQ` consume only header + extras + key;
    ///   any value bytes are then read as the next request;
    /// - an unknown opcode consumes header + extras + key, then discards `body_len` more
    ///   bytes, i.e. extras + key bytes of whatever follows.
    pub fn frame_len(&self) -> u64 {
        let head = self.head_len() as u64;
        match self.opcode().map(Opcode::base) {
            Some(Opcode::Stat | Opcode::Touch | Opcode::Gat | Opcode::GatK) => head,
            Some(_) => HEADER_LEN as u64 + u64::from(self.body_len),
            None => head + u64::from(self.body_len),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(op: u8, extras_len: u8, key_len: u16, value_len: u32) -> RequestHeader {
        RequestHeader {
            magic: 0x80,
            opcode: op,
            key_len,
            extras_len,
            body_len: u32::from(extras_len) + u32::from(key_len) + value_len,
            opaque: 42,
            ..RequestHeader::default()
        }
    }

    /// (opcode, extras_len, key_len, value_len) → valid?
    fn valid(op: Opcode, e: u8, k: u16, v: u32) -> bool {
        header(op.as_u8(), e, k, v).check().is_ok()
    }

    #[test]
    fn layouts_per_opcode() {
        use Opcode::*;
        for op in Opcode::ALL {
            let b = op.base();
            let cases: &[((u8, u16, u32), bool)] = match b {
                Version | Noop | Quit | SaslListMechs => {
                    &[((0, 0, 0), true), ((4, 0, 0), false), ((0, 1, 0), false), ((0, 0, 1), false)]
                }
                Flush => &[
                    ((0, 0, 0), true),
                    ((4, 0, 0), true),
                    ((8, 0, 0), false),
                    ((1, 0, 0), false),
                    ((0, 1, 0), false),
                    ((0, 0, 1), false),
                    ((4, 0, 1), false),
                ],
                Set | Add | Replace => &[
                    ((8, 3, 5), true),
                    ((8, 3, 0), true),
                    ((8, 250, 0), true),
                    ((0, 3, 5), false),
                    ((4, 3, 5), false),
                    ((20, 3, 5), false),
                    ((8, 0, 5), false),
                ],
                Get | GetK | Delete => &[
                    ((0, 3, 0), true),
                    ((0, 250, 0), true),
                    ((0, 0, 0), false),
                    ((4, 3, 0), false),
                    ((0, 3, 1), false),
                ],
                Increment | Decrement => &[
                    ((20, 3, 0), true),
                    ((8, 3, 0), false),
                    ((20, 0, 0), false),
                    ((20, 3, 1), false),
                    ((0, 3, 0), false),
                ],
                Append | Prepend => &[((0, 3, 1), true), ((0, 3, 0), true), ((4, 3, 1), false), ((0, 0, 1), false)],
                Stat => &[((0, 0, 0), true), ((0, 5, 0), true), ((0, 5, 9), true), ((4, 0, 0), false)],
                SaslAuth | SaslStep => &[((0, 5, 4), true), ((0, 5, 0), true), ((0, 0, 4), false), ((4, 5, 4), false)],
                Touch | Gat | GatK => {
                    &[((4, 3, 0), true), ((4, 3, 7), true), ((0, 3, 0), false), ((8, 3, 0), false), ((4, 0, 0), false)]
                }
                other => panic!("base() returned quiet {other}"),
            };
            for &((e, k, v), expect) in cases {
                assert_eq!(valid(op, e, k, v), expect, "{op} e={e} k={k} v={v}");
            }
        }
    }

    #[test]
    fn bad_layout_is_invalid_arguments_and_close() {
        let err = header(Opcode::Get.as_u8(), 4, 3, 0).check().unwrap_err();
        assert_eq!(err.cause, Cause::BadLayout);
        assert_eq!(err.action, Invalid::RespondAndClose(Status::InvalidArguments));
        assert_eq!(err.opcode, 0x00);
        assert_eq!(err.opaque, 42);
    }

    #[test]
    fn body_shorter_than_key_and_extras() {
        for op in [0x00, 0x01, 0x30, 0xff] {
            let mut h = header(op, 8, 3, 0);
            h.body_len = 10;
            let err = h.check().unwrap_err();
            assert_eq!(err.cause, Cause::BodyTooShort, "{op:#x}");
            assert_eq!(err.action, Invalid::RespondAndClose(Status::UnknownCommand));
        }
        // Checked before the key length: a 251-byte key with a short body.
        let mut h = header(0x00, 0, 251, 0);
        h.body_len = 10;
        assert_eq!(h.check().unwrap_err().cause, Cause::BodyTooShort);
    }

    #[test]
    fn key_too_long_even_for_unknown_opcodes() {
        for op in [0x00, 0x01, 0x10, 0x30, 0x1b] {
            let err = header(op, 0, 251, 0).check().unwrap_err();
            assert_eq!(err.cause, Cause::KeyTooLong, "{op:#x}");
            assert_eq!(err.action, Invalid::RespondAndClose(Status::InvalidArguments));
        }
        assert!(header(0x00, 0, 250, 0).check().is_ok());
    }

    #[test]
    fn head_too_large_closes_silently() {
        // 24 + 16360 = 16384 fits: the key is read, then rejected as too long.
        let h = header(0x00, 0, 16360, 0);
        assert_eq!(h.check().unwrap_err().cause, Cause::KeyTooLong);
        let h = header(0x00, 0, 16361, 0);
        let err = h.check().unwrap_err();
        assert_eq!(err.cause, Cause::HeadTooLarge);
        assert_eq!(err.action, Invalid::Close);
        let h = header(0x01, 8, 16353, 1);
        assert_eq!(h.check().unwrap_err().cause, Cause::HeadTooLarge);
        let h = header(0x01, 255, 16106, 0);
        assert_eq!(h.check().unwrap_err().cause, Cause::HeadTooLarge);
        // Even when the body is too short for the key.
        let mut h = header(0x00, 0, 20000, 0);
        h.body_len = 0;
        assert_eq!(h.check().unwrap_err().cause, Cause::HeadTooLarge);
    }

    #[test]
    fn unknown_opcode_skips_with_memcached_overshoot() {
        for op in [0x1b, 0x1f, 0x25, 0x30, 0x80, 0xff] {
            let h = header(op, 2, 3, 4);
            let err = h.check().unwrap_err();
            assert_eq!(err.cause, Cause::UnknownOpcode);
            // header + extras + key, then body_len (9) more.
            assert_eq!(err.action, Invalid::RespondAndSkip { status: Status::UnknownCommand, skip: 24 + 5 + 9 });
            assert!(!err.closes());
        }
        let h = header(0x30, 0, 0, 0);
        assert_eq!(h.frame_len(), 24);
    }

    #[test]
    fn frame_len_quirks() {
        assert_eq!(header(Opcode::Set.as_u8(), 8, 3, 5).frame_len(), 24 + 16);
        assert_eq!(header(Opcode::Append.as_u8(), 0, 3, 5).frame_len(), 24 + 8);
        assert_eq!(header(Opcode::Get.as_u8(), 0, 3, 0).frame_len(), 27);
        assert_eq!(header(Opcode::Stat.as_u8(), 0, 3, 9).frame_len(), 27);
        for op in [Opcode::Touch, Opcode::Gat, Opcode::GatQ, Opcode::GatK, Opcode::GatKQ] {
            assert_eq!(header(op.as_u8(), 4, 3, 9).frame_len(), 31, "{op}");
        }
        let mut h = header(Opcode::Set.as_u8(), 8, 3, 0);
        h.body_len = u32::MAX;
        assert_eq!(h.frame_len(), 24 + u64::from(u32::MAX));
    }
}
