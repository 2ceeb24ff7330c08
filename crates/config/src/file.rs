//! `--config FILE`: every command-line setting can live in a TOML file, under its long
//! flag name:
//!
//! ```toml
//! port = 11211
//! listen = ["127.0.0.1", "::1"]
//! memory-limit = 1024
//! enable-shutdown = true
//! verbose = 1
//! extended = { idle_timeout = 30 }
//! data-dir = "/var/lib/sqlcached"
//! mysql-backend = "127.0.0.1:3306"
//! ```
//!
//! The file is turned into command-line tokens (`--port=11211`, `--enable-shutdown`, ...)
//! and parsed by the same code as the command line, so every flag is a key and the two can
//! never disagree. Flags given on the command line override the file's. A key that is not
//! a flag, or a value the flag refuses, is an error naming the file, line and key.

use std::borrow::Cow;

use toml::de::{DeTable, DeValue};

/// One key of the file as command-line tokens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The key, as written.
    pub key: String,
    /// 1-based line of the key.
    pub line: usize,
    /// The tokens it stands for (`--key=value`, repeated for arrays; none for `false`).
    pub tokens: Vec<String>,
}

/// Parse the text of a config file into entries, in file order.
pub fn parse(text: &str) -> Result<Vec<Entry>, String> {
    let table = DeTable::parse(text).map_err(|e| {
        let line = e.span().map(|s| line_of(text, s.start));
        match line {
            Some(l) => format!("line {l}: {}", e.message()),
            None => e.message().to_string(),
        }
    })?;
    let mut entries = Vec::new();
    for (key, value) in table.get_ref().iter() {
        let line = line_of(text, key.span().start);
        let key = key.get_ref().to_string();
        let tokens = tokens(&key, value.get_ref()).map_err(|e| format!("line {line}: {key}: {e}"))?;
        entries.push(Entry { key, line, tokens });
    }
    entries.sort_by_key(|e| e.line);
    Ok(entries)
}

/// Read and parse a config file; errors name the file.
pub fn read(path: &str) -> Result<Vec<Entry>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("--config {path}: {e}"))?;
    parse(&text).map_err(|e| format!("--config {path}: {e}"))
}

fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())].iter().filter(|&&b| b == b'\n').count() + 1
}

/// The tokens for one key.
fn tokens(key: &str, value: &DeValue<'_>) -> Result<Vec<String>, String> {
    if key.is_empty() || key.starts_with('-') {
        return Err("not a setting (keys are long flag names without the dashes)".into());
    }
    // `verbose = N` is N times `-v`.
    if key == "verbose" {
        return match value {
            DeValue::Integer(_) => Ok(vec!["--verbose".to_string(); scalar(value)?.parse::<usize>().unwrap_or(0)]),
            DeValue::Boolean(b) => Ok(if *b { vec!["--verbose".into()] } else { vec![] }),
            _ => Err("takes a number (1 = -v, 2 = -vv)".into()),
        };
    }
    if key == "invalidate" {
        if let DeValue::Array(items) = value {
            return items
                .iter()
                .map(|t| invalidate_rule(t.get_ref()))
                .collect::<Result<Vec<_>, _>>()
                .map(|v| v.concat());
        }
    }
    match value {
        DeValue::Boolean(true) => Ok(vec![format!("--{key}")]),
        DeValue::Boolean(false) => Ok(vec![]),
        DeValue::Array(items) => {
            items.iter().map(|v| Ok(format!("--{key}={}", scalar(v.get_ref())?))).collect::<Result<_, String>>()
        }
        // memcached's `-o a=1,b=2` as a table.
        DeValue::Table(t) if key == "extended" => {
            let opts: Result<Vec<String>, String> =
                t.iter().map(|(k, v)| Ok(format!("{}={}", k.get_ref(), scalar(v.get_ref())?))).collect();
            Ok(vec![format!("--{key}={}", opts?.join(","))])
        }
        DeValue::Table(_) => Err("a table is not a value for this setting".into()),
        v => Ok(vec![format!("--{key}={}", scalar(v)?)]),
    }
}

/// One `[[invalidate]]` table (`table`, `keys`, optional `hash = "md5"`, optional
/// `backend = "mysql"|"postgres"`) as one `--invalidate=[postgres:]DB.TABLE=TEMPLATE` per
/// key; a plain string is already such a value.
fn invalidate_rule(v: &DeValue<'_>) -> Result<Vec<String>, String> {
    let t = match v {
        DeValue::Table(t) => t,
        DeValue::String(s) => return Ok(vec![format!("--invalidate={s}")]),
        _ => return Err("each rule is a table: [[invalidate]] table = \"db.t\" keys = [\"k:{id}\"]".into()),
    };
    let (mut table, mut keys, mut md5, mut prefix) = (None, Vec::new(), false, "");
    for (k, v) in t.iter() {
        match (k.get_ref().as_ref(), v.get_ref()) {
            ("table", DeValue::String(s)) => table = Some(s.to_string()),
            ("keys", DeValue::Array(a)) => {
                for k in a.iter() {
                    match k.get_ref() {
                        DeValue::String(s) => keys.push(s.to_string()),
                        _ => return Err("keys: each key template is a string".into()),
                    }
                }
            }
            ("keys", DeValue::String(s)) => keys.push(s.to_string()),
            ("hash", DeValue::String(s)) if s.as_ref() == "md5" => md5 = true,
            ("hash", DeValue::String(s)) if s.as_ref() == "none" => md5 = false,
            ("hash", _) => return Err("hash: \"md5\" (the key is the MD5 of the template's text) or \"none\"".into()),
            ("backend", DeValue::String(s)) if s.as_ref() == "postgres" => prefix = "postgres:",
            ("backend", DeValue::String(s)) if s.as_ref() == "mysql" => prefix = "",
            ("backend", _) => {
                return Err("backend: \"mysql\" (--mysql-backend's binlog, the default) or \"postgres\" \
                            (--pg-backend's WAL)"
                    .into())
            }
            (other, _) => return Err(format!("[[invalidate]]: unknown field '{other}' (table, keys, hash, backend)")),
        }
    }
    let table = table.ok_or("[[invalidate]]: table = \"db.table\" is missing")?;
    if keys.is_empty() {
        return Err(format!("[[invalidate]] {table}: keys = [...] is missing or empty"));
    }
    Ok(keys
        .iter()
        .map(|k| {
            if md5 {
                format!("--invalidate={prefix}{table}=md5({k})")
            } else {
                format!("--invalidate={prefix}{table}={k}")
            }
        })
        .collect())
}

/// A scalar value as the text a flag takes.
fn scalar(v: &DeValue<'_>) -> Result<String, String> {
    Ok(match v {
        DeValue::String(s) => s.to_string(),
        DeValue::Integer(i) => {
            let digits: Cow<'_, str> = Cow::Borrowed(i.as_str());
            if i.radix() == 10 {
                digits.replace('_', "")
            } else {
                i64::from_str_radix(&digits.replace('_', ""), i.radix())
                    .map_err(|e| format!("bad integer: {e}"))?
                    .to_string()
            }
        }
        DeValue::Float(f) => f.as_str().replace('_', ""),
        DeValue::Boolean(b) => b.to_string(),
        DeValue::Datetime(_) => return Err("a date is not a value for this setting".into()),
        DeValue::Array(_) | DeValue::Table(_) => return Err("expected a single value".into()),
    })
}

/// Take `--config FILE` / `--config=FILE` and `--check-config` out of the command line.
/// Returns (config file, check only, the other arguments in order).
pub fn split_args(args: Vec<String>) -> Result<(Option<String>, bool, Vec<String>), String> {
    let (mut file, mut check, mut rest) = (None, false, Vec::new());
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        if a == "--" {
            rest.push(a);
            rest.extend(it.by_ref());
            break;
        } else if a == "--config" {
            file = Some(it.next().ok_or("--config needs a file")?);
        } else if let Some(f) = a.strip_prefix("--config=") {
            file = Some(f.to_string());
        } else if a == "--check-config" {
            check = true;
        } else {
            rest.push(a);
        }
    }
    Ok((file, check, rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(text: &str) -> Vec<String> {
        parse(text).unwrap().into_iter().flat_map(|e| e.tokens).collect()
    }

    #[test]
    fn values_become_flags() {
        assert_eq!(toks("port = 1\nenable-shutdown = true\ndisable-cas = false"), ["--port=1", "--enable-shutdown"]);
        assert_eq!(toks("listen = [\"a\", \"b\"]"), ["--listen=a", "--listen=b"]);
        assert_eq!(toks("verbose = 2"), ["--verbose", "--verbose"]);
        assert_eq!(toks("extended = { idle_timeout = 30 }"), ["--extended=idle_timeout=30"]);
        assert_eq!(
            toks("memory-limit = 0x10\nslab-growth-factor = 1.25"),
            ["--memory-limit=16", "--slab-growth-factor=1.25"]
        );
    }

    #[test]
    fn invalidate_tables() {
        let text = "[[invalidate]]\ntable = \"shop.users\"\nkeys = [\"user:{id}\", \"e:{email}\"]\n\n\
                    [[invalidate]]\ntable = \"test.c\"\nkeys = [\"SELECT a FROM c where id={id}\"]\nhash = \"md5\"\n";
        assert_eq!(
            toks(text),
            [
                "--invalidate=shop.users=user:{id}",
                "--invalidate=shop.users=e:{email}",
                "--invalidate=test.c=md5(SELECT a FROM c where id={id})"
            ]
        );
        assert!(parse("[[invalidate]]\ntable = \"a.b\"\nkey = [\"x\"]").unwrap_err().contains("unknown field 'key'"));
        let pg = toks("[[invalidate]]\nbackend = \"postgres\"\ntable = \"public.u\"\nkeys = [\"u:{id}\"]");
        assert_eq!(pg, ["--invalidate=postgres:public.u=u:{id}"]);
        assert!(parse("[[invalidate]]\nbackend = \"oracle\"\ntable = \"a.b\"\nkeys = [\"x\"]").is_err());
        assert!(parse("[[invalidate]]\nkeys = [\"x\"]").unwrap_err().contains("table"));
        assert!(parse("[[invalidate]]\ntable = \"a.b\"\nkeys = [\"x\"]\nhash = \"sha1\"").is_err());
    }

    #[test]
    fn errors_name_the_line() {
        assert_eq!(
            parse("port = 1\n\nx = { a = 1 }").unwrap_err(),
            "line 3: x: a table is not a value for this setting"
        );
        assert!(parse("port = \n").unwrap_err().starts_with("line 1:"));
        let e = parse("a = 1\nb = 1979-05-27").unwrap_err();
        assert!(e.starts_with("line 2: b:"), "{e}");
    }

    #[test]
    fn split_takes_config_flags_out() {
        let a = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let (f, c, r) = split_args(a(&["-p", "1", "--config", "x.toml", "--check-config", "-v"])).unwrap();
        assert_eq!((f.as_deref(), c, r), (Some("x.toml"), true, a(&["-p", "1", "-v"])));
        let (f, _, _) = split_args(a(&["--config=y.toml"])).unwrap();
        assert_eq!(f.as_deref(), Some("y.toml"));
        assert!(split_args(a(&["--config"])).is_err());
    }

    /// Any text: parse never panics, and every token it makes is a long flag.
    #[test]
    fn arbitrary_text_never_panics() {
        let mut seed = 0x9e3779b97f4a7c15u64;
        let alphabet = b"ab=-[]{}\"'#\n .,0x1_2eE+:truefalse";
        for _ in 0..20_000 {
            let len = (seed % 40) as usize;
            let mut s = Vec::with_capacity(len);
            for _ in 0..len {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                s.push(alphabet[(seed % alphabet.len() as u64) as usize]);
            }
            if let Ok(entries) = parse(&String::from_utf8_lossy(&s)) {
                for e in entries {
                    assert!(e.tokens.iter().all(|t| t.starts_with("--")), "{:?}", e.tokens);
                }
            }
        }
    }
}
