//! What a concern's `--help` table is made of: each flag's module declares its group
//! ([`Section`]) beside the flags it parses; `help.rs` lays every group out.

/// One entry: the flags as shown (`-p, --port=<num>`) and what they do (one paragraph,
/// wrapped when printed).
pub struct Opt(pub &'static str, pub &'static str);

/// A titled group of entries.
pub struct Section {
    /// The group's title (a sub-section of OPTIONS in the man page).
    pub title: &'static str,
    /// Its entries.
    pub options: &'static [Opt],
}
