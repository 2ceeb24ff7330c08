//! Where the values of one execution of a statement come from: its literals (slots of
//! the digest) and a prepared statement's parameters.

use crate::ast::SlotRef;
use crate::lexer::{Slot, SlotValue};
use crate::types::Param;

/// Where the values of a statement come from.
pub(crate) struct Values<'a> {
    pub text: &'a [u8],
    pub slots: &'a [Slot],
    pub params: &'a [Param],
}

impl Values<'_> {
    /// An integer literal's or integer parameter's value (negated for `- ?`).
    pub(crate) fn int(&self, r: SlotRef) -> Option<i64> {
        let v = match self.slots.get(r.slot as usize)?.value {
            SlotValue::Int(v) => v,
            SlotValue::Param(n) => match self.params.get(n as usize)? {
                Param::Int(v) => *v,
                Param::UInt(u) => i64::try_from(*u).ok()?,
                _ => return None,
            },
            SlotValue::Other => return None,
        };
        if r.neg {
            v.checked_neg()
        } else {
            Some(v)
        }
    }

    /// A literal's text as written (None for a parameter).
    pub(crate) fn text(&self, r: SlotRef) -> Option<Vec<u8>> {
        let s = self.slots.get(r.slot as usize)?;
        if matches!(s.value, SlotValue::Param(_)) {
            return None;
        }
        let mut v = Vec::new();
        if r.neg {
            v.push(b'-');
        }
        v.extend_from_slice(&self.text[s.start as usize..s.end as usize]);
        Some(v)
    }
}
