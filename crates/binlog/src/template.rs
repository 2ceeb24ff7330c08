//! Key templates (`config::template::KeyTemplate`, where their syntax lives) rendered from
//! the row images of a MariaDB/MySQL change: a placeholder takes the column's value as the
//! binlog gives it (integers in decimal, strings and DECIMALs as their bytes, other types in
//! the text form the decoder gives them).

use config::template::KeyTemplate;

use sql_source::{TableSchema, Value};

/// The key `template` names for one row image of a table with `schema` (columns matched
/// case-insensitively, as MySQL does); None if a placeholder's column is missing or NULL,
/// or the result is not a valid memcached key.
pub fn render_key(template: &KeyTemplate, schema: &TableSchema, row: &[Value]) -> Option<Vec<u8>> {
    template.render(|name| {
        let i = schema.columns.iter().position(|c| c.eq_ignore_ascii_case(name))?;
        row.get(i)?.text_bytes()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each kind of value renders as the binlog gives it; NULL and missing columns name no key.
    #[test]
    fn renders_row_images() {
        let schema =
            TableSchema { columns: vec!["id".into(), "Email".into(), "at".into(), "n".into()], primary_key: vec![0] };
        let row = [
            Value::Int(-42),
            Value::Bytes(b"Ann@Example.com".to_vec()),
            Value::Other("2026-11-26".into()),
            Value::Null,
        ];
        let r =
            |t: &str| render_key(&KeyTemplate::parse(t).unwrap(), &schema, &row).map(|k| String::from_utf8(k).unwrap());
        assert_eq!(r("u:{id}:{email|lower}:{AT}").as_deref(), Some("u:-42:ann@example.com:2026-11-26"));
        assert_eq!(r("n:{n}"), None);
        assert_eq!(r("n:{missing}"), None);
        let big = [Value::UInt(u64::MAX)];
        let one = TableSchema { columns: vec!["id".into()], primary_key: vec![0] };
        assert_eq!(
            render_key(&KeyTemplate::parse("k{id}").unwrap(), &one, &big),
            Some(b"k18446744073709551615".to_vec())
        );
    }
}
