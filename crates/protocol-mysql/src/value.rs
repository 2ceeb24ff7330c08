//! Column types and binary-protocol values (prepared statement parameters and binary rows).
//!
//! | type | binary form |
//! |------|-------------|
//! | TINY | 1 byte |
//! | SHORT, YEAR | 2 bytes |
//! | LONG, INT24 | 4 bytes |
//! | LONGLONG | 8 bytes |
//! | FLOAT / DOUBLE | 4 / 8 bytes IEEE 754 |
//! | DATE, DATETIME, TIMESTAMP | length byte 0, 4, 7 or 11, then y(2) m d [h m s [µs(4)]] |
//! | TIME | length byte 0, 8 or 12, then neg(1) days(4) h m s [µs(4)] |
//! | NULL | nothing (NULLs are in the null bitmap) |
//! | everything else (DECIMAL, strings, BLOBs, JSON, BIT, ENUM, SET, GEOMETRY, ...) | length-encoded string |

use crate::error::Error;
use crate::lenenc::write_lenenc_str;
use crate::reader::Reader;

/// A MySQL column / parameter type (`enum_field_types`); unknown codes are kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ColumnType {
    /// `MYSQL_TYPE_DECIMAL` (0x00, old).
    Decimal,
    /// `MYSQL_TYPE_TINY` (0x01).
    Tiny,
    /// `MYSQL_TYPE_SHORT` (0x02).
    Short,
    /// `MYSQL_TYPE_LONG` (0x03).
    Long,
    /// `MYSQL_TYPE_FLOAT` (0x04).
    Float,
    /// `MYSQL_TYPE_DOUBLE` (0x05).
    Double,
    /// `MYSQL_TYPE_NULL` (0x06).
    Null,
    /// `MYSQL_TYPE_TIMESTAMP` (0x07).
    Timestamp,
    /// `MYSQL_TYPE_LONGLONG` (0x08).
    LongLong,
    /// `MYSQL_TYPE_INT24` (0x09).
    Int24,
    /// `MYSQL_TYPE_DATE` (0x0a).
    Date,
    /// `MYSQL_TYPE_TIME` (0x0b).
    Time,
    /// `MYSQL_TYPE_DATETIME` (0x0c).
    DateTime,
    /// `MYSQL_TYPE_YEAR` (0x0d).
    Year,
    /// `MYSQL_TYPE_NEWDATE` (0x0e, internal).
    NewDate,
    /// `MYSQL_TYPE_VARCHAR` (0x0f).
    VarChar,
    /// `MYSQL_TYPE_BIT` (0x10).
    Bit,
    /// `MYSQL_TYPE_TIMESTAMP2` (0x11, internal).
    Timestamp2,
    /// `MYSQL_TYPE_DATETIME2` (0x12, internal).
    DateTime2,
    /// `MYSQL_TYPE_TIME2` (0x13, internal).
    Time2,
    /// `MYSQL_TYPE_TYPED_ARRAY` (0x14, replication only).
    TypedArray,
    /// `MYSQL_TYPE_VECTOR` (0xf2, MySQL 9).
    Vector,
    /// `MYSQL_TYPE_INVALID` (0xf3).
    Invalid,
    /// `MYSQL_TYPE_BOOL` (0xf4, placeholder).
    Bool,
    /// `MYSQL_TYPE_JSON` (0xf5).
    Json,
    /// `MYSQL_TYPE_NEWDECIMAL` (0xf6).
    NewDecimal,
    /// `MYSQL_TYPE_ENUM` (0xf7).
    Enum,
    /// `MYSQL_TYPE_SET` (0xf8).
    Set,
    /// `MYSQL_TYPE_TINY_BLOB` (0xf9).
    TinyBlob,
    /// `MYSQL_TYPE_MEDIUM_BLOB` (0xfa).
    MediumBlob,
    /// `MYSQL_TYPE_LONG_BLOB` (0xfb).
    LongBlob,
    /// `MYSQL_TYPE_BLOB` (0xfc).
    Blob,
    /// `MYSQL_TYPE_VAR_STRING` (0xfd).
    VarString,
    /// `MYSQL_TYPE_STRING` (0xfe).
    String,
    /// `MYSQL_TYPE_GEOMETRY` (0xff).
    Geometry,
    /// Any other code.
    Unknown(u8),
}

const TYPES: [(u8, ColumnType); 35] = [
    (0x00, ColumnType::Decimal),
    (0x01, ColumnType::Tiny),
    (0x02, ColumnType::Short),
    (0x03, ColumnType::Long),
    (0x04, ColumnType::Float),
    (0x05, ColumnType::Double),
    (0x06, ColumnType::Null),
    (0x07, ColumnType::Timestamp),
    (0x08, ColumnType::LongLong),
    (0x09, ColumnType::Int24),
    (0x0a, ColumnType::Date),
    (0x0b, ColumnType::Time),
    (0x0c, ColumnType::DateTime),
    (0x0d, ColumnType::Year),
    (0x0e, ColumnType::NewDate),
    (0x0f, ColumnType::VarChar),
    (0x10, ColumnType::Bit),
    (0x11, ColumnType::Timestamp2),
    (0x12, ColumnType::DateTime2),
    (0x13, ColumnType::Time2),
    (0x14, ColumnType::TypedArray),
    (0xf2, ColumnType::Vector),
    (0xf3, ColumnType::Invalid),
    (0xf4, ColumnType::Bool),
    (0xf5, ColumnType::Json),
    (0xf6, ColumnType::NewDecimal),
    (0xf7, ColumnType::Enum),
    (0xf8, ColumnType::Set),
    (0xf9, ColumnType::TinyBlob),
    (0xfa, ColumnType::MediumBlob),
    (0xfb, ColumnType::LongBlob),
    (0xfc, ColumnType::Blob),
    (0xfd, ColumnType::VarString),
    (0xfe, ColumnType::String),
    (0xff, ColumnType::Geometry),
];

impl ColumnType {
    /// The type for a wire code.
    pub fn from_u8(code: u8) -> Self {
        TYPES.iter().find(|(c, _)| *c == code).map_or(ColumnType::Unknown(code), |(_, t)| *t)
    }

    /// The wire code.
    pub fn code(self) -> u8 {
        if let ColumnType::Unknown(c) = self {
            return c;
        }
        TYPES.iter().find(|(_, t)| *t == self).map_or(0, |(c, _)| *c)
    }
}

/// A type as sent with prepared statement parameters: type code and unsigned flag
/// (2 bytes on the wire: the code, then `0x80` if unsigned).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FieldType {
    /// The column type.
    pub column_type: ColumnType,
    /// Whether an integer is unsigned.
    pub unsigned: bool,
}

impl FieldType {
    /// A signed (or non-integer) type.
    pub fn new(column_type: ColumnType) -> Self {
        FieldType { column_type, unsigned: false }
    }

    /// An unsigned integer type.
    pub fn unsigned(column_type: ColumnType) -> Self {
        FieldType { column_type, unsigned: true }
    }

    /// Parses the 2-byte parameter type form.
    pub fn from_bytes([code, flags]: [u8; 2]) -> Self {
        FieldType { column_type: ColumnType::from_u8(code), unsigned: flags & 0x80 != 0 }
    }

    /// The 2-byte parameter type form.
    pub fn to_bytes(self) -> [u8; 2] {
        [self.column_type.code(), if self.unsigned { 0x80 } else { 0 }]
    }
}

/// A DATE, DATETIME or TIMESTAMP value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct DateTime {
    /// Year.
    pub year: u16,
    /// Month (1-12, 0 in zero dates).
    pub month: u8,
    /// Day.
    pub day: u8,
    /// Hour.
    pub hour: u8,
    /// Minute.
    pub minute: u8,
    /// Second.
    pub second: u8,
    /// Microseconds.
    pub micros: u32,
}

/// A TIME value (a duration, possibly negative, possibly over 24 hours).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Time {
    /// Whether the duration is negative.
    pub negative: bool,
    /// Days.
    pub days: u32,
    /// Hours.
    pub hours: u8,
    /// Minutes.
    pub minutes: u8,
    /// Seconds.
    pub seconds: u8,
    /// Microseconds.
    pub micros: u32,
}

/// A binary-protocol value, borrowed from the payload.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value<'a> {
    /// SQL NULL.
    Null,
    /// A signed integer (TINY, SHORT, YEAR, INT24, LONG, LONGLONG).
    Int(i64),
    /// An unsigned integer (the same types with the unsigned flag).
    UInt(u64),
    /// A FLOAT.
    Float(f32),
    /// A DOUBLE.
    Double(f64),
    /// DATE, DATETIME or TIMESTAMP.
    DateTime(DateTime),
    /// TIME.
    Time(Time),
    /// Any length-encoded type: DECIMAL (as text), strings, BLOBs, JSON, BIT, ...
    Bytes(&'a [u8]),
}

/// Parses the binary form of one non-NULL value of type `ty` at the start of `buf`;
/// returns the value and the bytes used. [`ColumnType::Null`] uses no bytes.
pub fn parse_binary_value(ty: FieldType, buf: &[u8]) -> Result<(Value<'_>, usize), Error> {
    let mut r = Reader::new(buf);
    let u = ty.unsigned;
    let v = match ty.column_type {
        ColumnType::Null => Value::Null,
        ColumnType::Tiny | ColumnType::Bool => {
            let b = r.u8("TINY value")?;
            if u {
                Value::UInt(u64::from(b))
            } else {
                Value::Int(i64::from(b as i8))
            }
        }
        ColumnType::Short | ColumnType::Year => {
            let b = r.u16("SHORT value")?;
            if u {
                Value::UInt(u64::from(b))
            } else {
                Value::Int(i64::from(b as i16))
            }
        }
        ColumnType::Long | ColumnType::Int24 => {
            let b = r.u32("LONG value")?;
            if u {
                Value::UInt(u64::from(b))
            } else {
                Value::Int(i64::from(b as i32))
            }
        }
        ColumnType::LongLong => {
            let b = r.u64("LONGLONG value")?;
            if u {
                Value::UInt(b)
            } else {
                Value::Int(b as i64)
            }
        }
        ColumnType::Float => Value::Float(f32::from_bits(r.u32("FLOAT value")?)),
        ColumnType::Double => Value::Double(f64::from_bits(r.u64("DOUBLE value")?)),
        ColumnType::Date | ColumnType::DateTime | ColumnType::Timestamp | ColumnType::NewDate => {
            let len = r.u8("DATETIME length")?;
            let mut d = DateTime::default();
            if !matches!(len, 0 | 4 | 7 | 11) {
                return Err(Error::Invalid("DATETIME length"));
            }
            if len >= 4 {
                d.year = r.u16("DATETIME year")?;
                d.month = r.u8("DATETIME month")?;
                d.day = r.u8("DATETIME day")?;
            }
            if len >= 7 {
                d.hour = r.u8("DATETIME hour")?;
                d.minute = r.u8("DATETIME minute")?;
                d.second = r.u8("DATETIME second")?;
            }
            if len == 11 {
                d.micros = r.u32("DATETIME microseconds")?;
            }
            Value::DateTime(d)
        }
        ColumnType::Time => {
            let len = r.u8("TIME length")?;
            let mut t = Time::default();
            if !matches!(len, 0 | 8 | 12) {
                return Err(Error::Invalid("TIME length"));
            }
            if len >= 8 {
                t.negative = r.u8("TIME sign")? != 0;
                t.days = r.u32("TIME days")?;
                t.hours = r.u8("TIME hours")?;
                t.minutes = r.u8("TIME minutes")?;
                t.seconds = r.u8("TIME seconds")?;
            }
            if len == 12 {
                t.micros = r.u32("TIME microseconds")?;
            }
            Value::Time(t)
        }
        _ => Value::Bytes(r.lenenc_str("length-encoded value")?),
    };
    Ok((v, r.pos()))
}

/// Appends the binary form of `value` as type `ty`; [`Value::Null`] writes nothing (NULLs
/// live in the null bitmap).
///
/// Integers are written at the type's width (truncating like a C cast); a value whose kind
/// does not fit the type (for example [`Value::Bytes`] for a LONG) is an error and nothing
/// is written. Dates and times use their shortest form.
pub fn write_binary_value(out: &mut Vec<u8>, ty: FieldType, value: &Value<'_>) -> Result<(), Error> {
    let int = match *value {
        Value::Int(i) => Some(i as u64),
        Value::UInt(u) => Some(u),
        _ => None,
    };
    match (ty.column_type, value) {
        (_, Value::Null) | (ColumnType::Null, _) => {}
        (ColumnType::Tiny | ColumnType::Bool, _) if int.is_some() => out.push(int.unwrap_or(0) as u8),
        (ColumnType::Short | ColumnType::Year, _) if int.is_some() => {
            out.extend_from_slice(&(int.unwrap_or(0) as u16).to_le_bytes())
        }
        (ColumnType::Long | ColumnType::Int24, _) if int.is_some() => {
            out.extend_from_slice(&(int.unwrap_or(0) as u32).to_le_bytes())
        }
        (ColumnType::LongLong, _) if int.is_some() => out.extend_from_slice(&int.unwrap_or(0).to_le_bytes()),
        (ColumnType::Float, Value::Float(f)) => out.extend_from_slice(&f.to_bits().to_le_bytes()),
        (ColumnType::Double, Value::Double(f)) => out.extend_from_slice(&f.to_bits().to_le_bytes()),
        (ColumnType::Date | ColumnType::DateTime | ColumnType::Timestamp | ColumnType::NewDate, Value::DateTime(d)) => {
            let len = if d.micros != 0 {
                11
            } else if d.hour != 0 || d.minute != 0 || d.second != 0 {
                7
            } else if *d != DateTime::default() {
                4
            } else {
                0
            };
            out.push(len);
            if len >= 4 {
                out.extend_from_slice(&d.year.to_le_bytes());
                out.extend_from_slice(&[d.month, d.day]);
            }
            if len >= 7 {
                out.extend_from_slice(&[d.hour, d.minute, d.second]);
            }
            if len == 11 {
                out.extend_from_slice(&d.micros.to_le_bytes());
            }
        }
        (ColumnType::Time, Value::Time(t)) => {
            let len = if t.micros != 0 {
                12
            } else if *t != Time::default() {
                8
            } else {
                0
            };
            out.push(len);
            if len >= 8 {
                out.push(u8::from(t.negative));
                out.extend_from_slice(&t.days.to_le_bytes());
                out.extend_from_slice(&[t.hours, t.minutes, t.seconds]);
            }
            if len == 12 {
                out.extend_from_slice(&t.micros.to_le_bytes());
            }
        }
        (
            ColumnType::Tiny
            | ColumnType::Bool
            | ColumnType::Short
            | ColumnType::Year
            | ColumnType::Long
            | ColumnType::Int24
            | ColumnType::LongLong
            | ColumnType::Float
            | ColumnType::Double
            | ColumnType::Date
            | ColumnType::DateTime
            | ColumnType::Timestamp
            | ColumnType::NewDate
            | ColumnType::Time,
            _,
        ) => return Err(Error::Invalid("value for its type")),
        (_, Value::Bytes(b)) => write_lenenc_str(out, b),
        _ => return Err(Error::Invalid("value for its type")),
    }
    Ok(())
}

/// Length of a null bitmap for `n` values whose first bit is at `offset` (0 for
/// parameters, 2 for binary rows).
pub fn null_bitmap_len(n: usize, offset: usize) -> usize {
    n.saturating_add(offset).saturating_add(7) / 8
}

/// Whether value `i` is NULL in `bitmap` (bits start at `offset`); out of range is not NULL.
pub fn is_null(bitmap: &[u8], i: usize, offset: usize) -> bool {
    let bit = i.saturating_add(offset);
    bitmap.get(bit / 8).is_some_and(|b| b & (1 << (bit % 8)) != 0)
}

/// Appends a null bitmap for `values` with bits starting at `offset`.
pub(crate) fn write_null_bitmap(out: &mut Vec<u8>, values: &[Value<'_>], offset: usize) {
    let start = out.len();
    out.resize(start + null_bitmap_len(values.len(), offset), 0);
    for (i, v) in values.iter().enumerate() {
        if matches!(v, Value::Null) {
            let bit = i + offset;
            out[start + bit / 8] |= 1 << (bit % 8);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_codes_round_trip() {
        for code in 0..=255u8 {
            assert_eq!(ColumnType::from_u8(code).code(), code);
        }
        assert_eq!(ColumnType::from_u8(0xfd), ColumnType::VarString);
        assert_eq!(ColumnType::from_u8(0x20), ColumnType::Unknown(0x20));
        let t = FieldType::unsigned(ColumnType::LongLong);
        assert_eq!(t.to_bytes(), [0x08, 0x80]);
        assert_eq!(FieldType::from_bytes(t.to_bytes()), t);
    }

    fn round_trip(ty: FieldType, v: Value<'_>, len: usize) {
        let mut out = Vec::new();
        write_binary_value(&mut out, ty, &v).unwrap();
        assert_eq!(out.len(), len, "{ty:?} {v:?}");
        let (back, used) = parse_binary_value(ty, &out).unwrap();
        assert_eq!((back, used), (v, len));
        for cut in 0..len {
            assert!(parse_binary_value(ty, &out[..cut]).is_err());
        }
    }

    #[test]
    fn all_binary_forms() {
        use ColumnType::{
            Blob, Date, Double, Float, Int24, Json, Long, LongLong, NewDecimal, Null, Short, Timestamp, Tiny,
            VarString, Year,
        };
        round_trip(FieldType::new(Tiny), Value::Int(-5), 1);
        round_trip(FieldType::unsigned(Tiny), Value::UInt(250), 1);
        round_trip(FieldType::new(Short), Value::Int(-30000), 2);
        round_trip(FieldType::new(Year), Value::Int(2024), 2);
        round_trip(FieldType::new(Int24), Value::Int(-70000), 4);
        round_trip(FieldType::unsigned(Long), Value::UInt(u64::from(u32::MAX)), 4);
        round_trip(FieldType::new(LongLong), Value::Int(i64::MIN), 8);
        round_trip(FieldType::unsigned(LongLong), Value::UInt(u64::MAX), 8);
        round_trip(FieldType::new(Float), Value::Float(1.5), 4);
        round_trip(FieldType::new(Double), Value::Double(-2.25), 8);
        round_trip(FieldType::new(NewDecimal), Value::Bytes(b"12.340"), 7);
        round_trip(FieldType::new(VarString), Value::Bytes(&[b'x'; 300]), 303);
        round_trip(FieldType::new(Blob), Value::Bytes(b""), 1);
        round_trip(FieldType::new(Json), Value::Bytes(b"{}"), 3);
        let date = DateTime { year: 2024, month: 2, day: 29, ..DateTime::default() };
        round_trip(FieldType::new(Date), Value::DateTime(date), 5);
        round_trip(FieldType::new(ColumnType::DateTime), Value::DateTime(DateTime::default()), 1);
        let dt = DateTime { hour: 23, minute: 59, second: 58, ..date };
        round_trip(FieldType::new(Timestamp), Value::DateTime(dt), 8);
        round_trip(FieldType::new(ColumnType::DateTime), Value::DateTime(DateTime { micros: 123456, ..dt }), 12);
        round_trip(FieldType::new(ColumnType::Time), Value::Time(Time::default()), 1);
        let t = Time { negative: true, days: 3, hours: 4, minutes: 5, seconds: 6, micros: 0 };
        round_trip(FieldType::new(ColumnType::Time), Value::Time(t), 9);
        round_trip(FieldType::new(ColumnType::Time), Value::Time(Time { micros: 7, ..t }), 13);
        round_trip(FieldType::new(Null), Value::Null, 0);
    }

    #[test]
    fn mismatches_and_bad_lengths() {
        let mut out = Vec::new();
        assert!(write_binary_value(&mut out, FieldType::new(ColumnType::Long), &Value::Bytes(b"1")).is_err());
        assert!(write_binary_value(&mut out, FieldType::new(ColumnType::Blob), &Value::Int(1)).is_err());
        assert!(out.is_empty());
        assert!(parse_binary_value(FieldType::new(ColumnType::Date), &[5, 0, 0, 0, 0, 0]).is_err());
        assert!(parse_binary_value(FieldType::new(ColumnType::Time), &[3, 0, 0, 0]).is_err());
    }

    #[test]
    fn bitmaps() {
        assert_eq!(
            (null_bitmap_len(0, 0), null_bitmap_len(1, 2), null_bitmap_len(6, 2), null_bitmap_len(7, 2)),
            (0, 1, 1, 2)
        );
        let vals = [Value::Int(1), Value::Null, Value::Null];
        let mut out = Vec::new();
        write_null_bitmap(&mut out, &vals, 2);
        assert_eq!(out, [0b11000]);
        assert!(!is_null(&out, 0, 2) && is_null(&out, 1, 2) && is_null(&out, 2, 2) && !is_null(&out, 99, 2));
    }
}
