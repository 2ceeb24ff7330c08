//! The persistent tier's flags (`--data-dir`, `--durability`, ... see docs/persistence.md):
//! where items are kept on disk, when a write counts as durable, and how much of `-m` the
//! disk tier's block cache may take.

use crate::parse_size;
use crate::usage::{Opt, Section};

/// Smallest `--disk-cache`.
pub const MIN_DISK_CACHE: u64 = 1 << 20;

/// Settings of the persistent tier.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PersistenceConfig {
    /// `--data-dir`: where the tier lives; none means memory only.
    pub data_dir: Option<String>,
    /// `--durability sync` (fsync before acknowledging) or async (the default).
    pub durability_sync: bool,
    /// `--flush-interval-ms`: async mode's longest time between fsyncs.
    pub flush_interval_ms: u64,
    /// `--disk-limit`: bound on bytes in the disk tier (0: none).
    pub disk_limit: u64,
    /// `--disk-cache`: most bytes of `-m` fjall's block cache (reads of items not in
    /// memory) may take; none: the tier's default share (`tier_disk::Shares`).
    pub disk_cache: Option<u64>,
    /// `--data-dir-recover`: move a damaged data directory aside and start empty.
    pub data_dir_recover: bool,
    /// A flag that needs `--data-dir` was given (named for the error).
    needs_dir: Option<&'static str>,
}

impl Default for PersistenceConfig {
    fn default() -> Self {
        PersistenceConfig {
            data_dir: None,
            durability_sync: false,
            flush_interval_ms: 100,
            disk_limit: 0,
            disk_cache: None,
            data_dir_recover: false,
            needs_dir: None,
        }
    }
}

/// The long flags this module parses that take a value.
pub const FLAGS: &[&str] = &["data-dir", "durability", "flush-interval-ms", "disk-limit", "disk-cache"];

/// The long flags this module parses that take none.
pub const SWITCHES: &[&str] = &["data-dir-recover"];

fn size(flag: &str, v: &str) -> Result<u64, String> {
    parse_size(v).map(|n| n as u64).ok_or(format!("Invalid value for --{flag}: '{v}'"))
}

impl PersistenceConfig {
    /// Applies one flag of [`FLAGS`] with its value, or one of [`SWITCHES`] (value `None`).
    pub fn set(&mut self, flag: &str, v: Option<&str>) -> Result<(), String> {
        let v = v.unwrap_or("");
        match flag {
            "data-dir" => {
                self.data_dir = Some(v.to_string());
                return Ok(());
            }
            "durability" => {
                self.durability_sync = match v {
                    "sync" => true,
                    "async" => false,
                    other => return Err(format!("--durability must be sync or async, not '{other}'")),
                }
            }
            "flush-interval-ms" => {
                self.flush_interval_ms =
                    v.trim().parse().map_err(|_| format!("Invalid value for --flush-interval-ms: '{v}'"))?;
                if self.flush_interval_ms == 0 {
                    return Err("--flush-interval-ms must be at least 1".into());
                }
            }
            "disk-limit" => self.disk_limit = size(flag, v)?,
            "disk-cache" => {
                let bytes = size(flag, v)?;
                self.disk_cache = Some(bytes);
                if bytes < MIN_DISK_CACHE {
                    return Err(format!("--disk-cache must be at least 1m, not '{v}'"));
                }
            }
            "data-dir-recover" => self.data_dir_recover = true,
            other => return Err(format!("--{other} is not a persistence flag")),
        }
        self.needs_dir.get_or_insert(FLAGS.iter().chain(SWITCHES).find(|f| **f == flag).copied().unwrap_or("?"));
        Ok(())
    }

    /// Checks once every flag is applied: the tier's flags need `--data-dir`.
    pub fn validate(&self) -> Result<(), String> {
        match self.needs_dir {
            Some(flag) if self.data_dir.is_none() => {
                Err(format!("--{flag} applies to the persistent tier: give --data-dir too"))
            }
            _ => Ok(()),
        }
    }
}

/// The `--help` section of these flags.
pub const HELP: Section = Section {
    title: "Persistence (docs/persistence.md)",
    options: &[
        Opt(
            "--data-dir=<dir>",
            "keep items on disk below memory: restarts warm, data may exceed -m (without it: memory only)",
        ),
        Opt(
            "--durability=<mode>",
            "async (default): acknowledged once the OS has the write (survives a crash of sqlcached), \
             fsynced at least every --flush-interval-ms; sync: acknowledged only after fsync (group commit)",
        ),
        Opt("--flush-interval-ms=<n>", "async mode's longest time between fsyncs (default: 100)"),
        Opt("--disk-limit=<size>", "bound the disk tier (k/m/g suffix); oldest-written items go first"),
        Opt(
            "--disk-cache=<size>",
            "the part of -m for reading items back from disk (fjall's block cache; default: 1/8 of -m, \
             1m to 256m; at most half of -m)",
        ),
        Opt("--data-dir-recover", "if the data directory is damaged, move it aside and start empty"),
    ],
};

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(flags: &[(&str, Option<&str>)]) -> Result<PersistenceConfig, String> {
        let mut c = PersistenceConfig::default();
        for (f, v) in flags {
            c.set(f, *v)?;
        }
        c.validate()?;
        Ok(c)
    }

    #[test]
    fn sizes_and_their_bounds() {
        let c = parse(&[("data-dir", Some("/d")), ("disk-cache", Some("16m")), ("disk-limit", Some("1g"))]).unwrap();
        assert_eq!((c.disk_cache, c.disk_limit), (Some(16 << 20), 1 << 30));
        assert_eq!(PersistenceConfig::default().disk_cache, None);
        for (flag, v) in [
            ("disk-cache", "512k"),
            ("disk-cache", "lots"),
            ("disk-cache", "0"),
            ("disk-limit", "-1"),
            ("durability", "maybe"),
            ("flush-interval-ms", "0"),
        ] {
            let e = parse(&[("data-dir", Some("/d")), (flag, Some(v))]).unwrap_err();
            assert!(e.contains(flag), "{flag}={v}: {e}");
        }
    }

    #[test]
    fn tier_flags_need_a_data_dir() {
        for flag in FLAGS.iter().chain(SWITCHES).filter(|f| **f != "data-dir") {
            let v = match *flag {
                "durability" => Some("sync"),
                "flush-interval-ms" => Some("50"),
                "data-dir-recover" => None,
                _ => Some("2m"),
            };
            let e = parse(&[(flag, v)]).unwrap_err();
            assert!(e.starts_with(&format!("--{flag} applies to the persistent tier")), "{e}");
            assert!(parse(&[(flag, v), ("data-dir", Some("/d"))]).is_ok(), "{flag}");
        }
    }

    /// Any value for any flag: no panic, and what is accepted is within bounds.
    #[test]
    fn arbitrary_values_never_panic() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let alphabet = b"0123456789kKmMgGtx -+._sycanf";
        for _ in 0..20_000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let flag = FLAGS[(seed % FLAGS.len() as u64) as usize];
            let v: String = (0..(seed >> 8) % 12)
                .map(|i| alphabet[((seed >> (i * 5 % 60)) % alphabet.len() as u64) as usize] as char)
                .collect();
            let mut c = PersistenceConfig::default();
            if c.set(flag, Some(&v)).is_ok() {
                assert!(c.disk_cache.is_none_or(|b| b >= MIN_DISK_CACHE) && c.flush_interval_ms >= 1, "{flag}={v:?}");
            }
        }
    }
}
