//! QUERY events: what a statement logged as text (BEGIN/COMMIT, DDL, statement-format DML)
//! means for cached results. Names are parsed conservatively: when unsure, the whole
//! database (or everything) is reported changed.

use crate::change::Change;

/// What a QUERY event means for the stream.
#[derive(Debug, PartialEq)]
pub(crate) enum QueryAction {
    /// Starts a transaction (BEGIN, XA START).
    Begin,
    /// Ends a transaction (COMMIT, ROLLBACK).
    End,
    /// Changes nothing cached (SAVEPOINT, FLUSH TABLES, dummy events, ...).
    Ignore,
    /// These tables/databases/everything may have changed.
    Changes(Vec<Change>),
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Word(String),
    Quoted(String),
    Str,
    Punct(char),
}

fn lex(sql: &str) -> Vec<Tok> {
    let b = sql.as_bytes();
    let (mut i, mut out) = (0, Vec::new());
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c == b'#' || (c == b'-' && b.get(i + 1) == Some(&b'-')) {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            // Executable comments (/*! ... */, /*M! ... */) are code: drop only the markers.
            let rest = &b[i + 2..];
            let exec = rest.first() == Some(&b'!') || rest.starts_with(b"M!");
            if exec {
                i += if rest[0] == b'!' { 3 } else { 4 };
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
            } else {
                i += 2;
                while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                    i += 1;
                }
                i += 2;
            }
        } else if c == b'*' && b.get(i + 1) == Some(&b'/') {
            i += 2; // end of an executable comment
        } else if c == b'`' {
            let mut s = Vec::new();
            i += 1;
            while i < b.len() {
                if b[i] == b'`' {
                    if b.get(i + 1) == Some(&b'`') {
                        s.push(b'`');
                        i += 2;
                        continue;
                    }
                    break;
                }
                s.push(b[i]);
                i += 1;
            }
            i += 1;
            out.push(Tok::Quoted(String::from_utf8_lossy(&s).into_owned()));
        } else if c == b'\'' || c == b'"' {
            i += 1;
            while i < b.len() && b[i] != c {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            out.push(Tok::Str);
        } else if c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c >= 0x80 {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'$' || b[i] >= 0x80) {
                i += 1;
            }
            out.push(Tok::Word(String::from_utf8_lossy(&b[start..i]).into_owned()));
        } else {
            out.push(Tok::Punct(c as char));
            i += 1;
        }
    }
    out
}

struct Parser<'a> {
    toks: Vec<Tok>,
    pos: usize,
    db: &'a str,
}

impl Parser<'_> {
    fn kw(&self, at: usize, word: &str) -> bool {
        matches!(self.toks.get(at), Some(Tok::Word(w)) if w.eq_ignore_ascii_case(word))
    }

    /// Consumes `word` if it is next.
    fn eat(&mut self, word: &str) -> bool {
        let hit = self.kw(self.pos, word);
        self.pos += hit as usize;
        hit
    }

    fn eat_punct(&mut self, c: char) -> bool {
        let hit = self.toks.get(self.pos) == Some(&Tok::Punct(c));
        self.pos += hit as usize;
        hit
    }

    fn ident(&mut self) -> Option<String> {
        let s = match self.toks.get(self.pos)? {
            Tok::Word(w) | Tok::Quoted(w) => w.clone(),
            _ => return None,
        };
        self.pos += 1;
        Some(s)
    }

    /// `[db.]name` as a table change; None if it is not a name or no database is known.
    fn table(&mut self) -> Option<Change> {
        let first = self.ident()?;
        if self.eat_punct('.') {
            let table = self.ident()?;
            return Some(Change::Table { db: first, table });
        }
        (!self.db.is_empty()).then(|| Change::Table { db: self.db.to_string(), table: first })
    }

    /// A comma-separated list of table names.
    fn tables(&mut self) -> Option<Vec<Change>> {
        let mut out = vec![self.table()?];
        while self.eat_punct(',') {
            out.push(self.table()?);
        }
        Some(out)
    }

    fn skip_if_exists(&mut self) {
        if self.kw(self.pos, "IF") {
            self.pos += 1;
            self.eat("NOT");
            self.eat("EXISTS");
        }
    }

    /// Skips to the first top-level `word` and returns the position after it.
    fn find(&self, word: &str) -> Option<usize> {
        (self.pos..self.toks.len()).find(|&i| self.kw(i, word)).map(|i| i + 1)
    }
}

/// Words that make a statement change accounts or privileges (cached results are per user).
const ACCOUNT: &[&str] = &["USER", "ROLE"];

/// Classifies the statement of a QUERY event logged in database `db`.
pub(crate) fn classify(db: &str, sql: &str) -> QueryAction {
    classify_tokens(db, sql, lex(sql), 0)
}

/// [`classify`] of `sql`'s tokens `toks`; `depth` counts the `SET STATEMENT ... FOR`
/// prefixes already taken off.
fn classify_tokens(db: &str, sql: &str, toks: Vec<Tok>, depth: u8) -> QueryAction {
    let mut p = Parser { toks, pos: 0, db };
    let unsure = || {
        if db.is_empty() {
            QueryAction::Changes(vec![Change::All { reason: format!("unattributed statement: {}", short(sql)) }])
        } else {
            QueryAction::Changes(vec![Change::Database { db: db.to_string() }])
        }
    };
    let all = |why: &str| QueryAction::Changes(vec![Change::All { reason: format!("{why}: {}", short(sql)) }]);
    let Some(Tok::Word(first)) = p.toks.first().cloned() else {
        // Empty after comments: MariaDB's dummy events for old replicas.
        return if p.toks.is_empty() { QueryAction::Ignore } else { unsure() };
    };
    p.pos = 1;
    let done = |r: Option<Vec<Change>>| r.map(QueryAction::Changes).unwrap_or_else(unsure);
    match first.to_ascii_uppercase().as_str() {
        "BEGIN" => QueryAction::Begin,
        "COMMIT" => QueryAction::End,
        "ROLLBACK" if p.kw(1, "TO") => QueryAction::Ignore,
        "ROLLBACK" => QueryAction::End,
        "SAVEPOINT" | "RELEASE" => QueryAction::Ignore,
        "XA" if p.kw(1, "START") || p.kw(1, "BEGIN") => QueryAction::Begin,
        "XA" if p.kw(1, "COMMIT") => all("XA COMMIT of a prepared transaction"),
        "XA" => QueryAction::Ignore,
        "FLUSH" if p.find("PRIVILEGES").is_some() => all("privileges reloaded"),
        "FLUSH" | "ANALYZE" | "CHECK" | "CHECKSUM" => QueryAction::Ignore,
        // Added privileges cannot make a cached result wrong (errors are never cached);
        // removed ones can.
        "GRANT" => QueryAction::Ignore,
        "REVOKE" => all("privileges changed"),
        "CREATE" if !p.kw(1, "OR") && ACCOUNT.iter().any(|w| p.kw(1, w)) => QueryAction::Ignore,
        // MariaDB's `SET STATEMENT var = value [, ...] FOR <statement>` is logged as written:
        // what changed is the statement after FOR (a DDL, or DML in statement format).
        "SET" if p.kw(1, "STATEMENT") => match p.find("FOR") {
            Some(i) if depth < 4 => classify_tokens(db, sql, p.toks.split_off(i), depth + 1),
            _ => unsure(),
        },
        "SET" if p.kw(1, "PASSWORD") || p.kw(1, "DEFAULT") => all("privileges changed"),
        "SET" => QueryAction::Ignore,
        // A logged DO (statement format) is there for a side effect: a function that writes.
        "DO" => unsure(),
        "TRUNCATE" => {
            p.eat("TABLE");
            done(p.table().map(|t| vec![t]))
        }
        "OPTIMIZE" | "REPAIR" => {
            p.eat("NO_WRITE_TO_BINLOG");
            p.eat("LOCAL");
            p.eat("TABLE");
            done(p.tables())
        }
        "RENAME" if p.eat("TABLE") || p.eat("TABLES") => {
            let mut out = Vec::new();
            loop {
                let Some(from) = p.table() else { return unsure() };
                if !p.eat("TO") {
                    return unsure();
                }
                let Some(to) = p.table() else { return unsure() };
                out.extend([from, to]);
                if !p.eat_punct(',') {
                    break;
                }
            }
            QueryAction::Changes(out)
        }
        "RENAME" if ACCOUNT.iter().any(|w| p.kw(1, w)) => all("accounts changed"),
        "DROP" | "CREATE" | "ALTER" if (1..5).any(|i| ACCOUNT.iter().any(|w| p.kw(i, w))) => all("accounts changed"),
        "DROP" | "CREATE" | "ALTER" => ddl(&mut p, &first).map(QueryAction::Changes).unwrap_or_else(unsure),
        "INSERT" | "REPLACE" => {
            while ["LOW_PRIORITY", "DELAYED", "HIGH_PRIORITY", "IGNORE", "INTO"].iter().any(|w| p.eat(w)) {}
            done(p.table().map(|t| vec![t]))
        }
        "UPDATE" => {
            while ["LOW_PRIORITY", "IGNORE"].iter().any(|w| p.eat(w)) {}
            let t = p.table();
            // A single-table UPDATE continues with SET (after an optional alias).
            let single = p.kw(p.pos, "SET") || (p.ident().is_some() && p.kw(p.pos, "SET"));
            done(t.filter(|_| single).map(|t| vec![t]))
        }
        "DELETE" => {
            while ["LOW_PRIORITY", "QUICK", "IGNORE"].iter().any(|w| p.eat(w)) {}
            if !p.eat("FROM") {
                return unsure();
            }
            let t = p.table();
            let single =
                p.pos >= p.toks.len() || ["WHERE", "ORDER", "LIMIT", "RETURNING"].iter().any(|w| p.kw(p.pos, w));
            done(t.filter(|_| single).map(|t| vec![t]))
        }
        "LOAD" => match p.find("INTO").map(|i| (i, p.kw(i, "TABLE"))) {
            Some((i, true)) => {
                p.pos = i + 1;
                done(p.table().map(|t| vec![t]))
            }
            _ => unsure(),
        },
        _ => unsure(),
    }
}

/// DROP / CREATE / ALTER of tables, views, sequences, indexes and databases; None: unsure.
fn ddl(p: &mut Parser<'_>, verb: &str) -> Option<Vec<Change>> {
    let create = verb.eq_ignore_ascii_case("CREATE");
    if create && p.eat("OR") {
        p.eat("REPLACE");
    }
    // Modifiers before the object kind.
    loop {
        let skipped =
            ["TEMPORARY", "ONLINE", "OFFLINE", "IGNORE", "UNIQUE", "FULLTEXT", "SPATIAL"].iter().any(|w| p.eat(w));
        let assigned = ["ALGORITHM", "DEFINER", "SQL"].iter().any(|w| p.kw(p.pos, w));
        if assigned {
            // ALGORITHM = x, DEFINER = user@host, SQL SECURITY x: skip to the next keyword we know.
            while p.pos < p.toks.len()
                && !["VIEW", "TRIGGER", "FUNCTION", "PROCEDURE", "EVENT"].iter().any(|w| p.kw(p.pos, w))
            {
                p.pos += 1;
            }
        } else if !skipped {
            break;
        }
    }
    let kind = match p.toks.get(p.pos) {
        Some(Tok::Word(w)) => w.to_ascii_uppercase(),
        _ => return None,
    };
    p.pos += 1;
    match kind.as_str() {
        "TABLE" | "VIEW" | "SEQUENCE" | "TABLES" => {
            p.skip_if_exists();
            if verb.eq_ignore_ascii_case("ALTER") {
                let mut out = vec![p.table()?];
                // ALTER TABLE t RENAME [TO|AS] u (not RENAME COLUMN/INDEX/KEY).
                while let Some(i) = p.find("RENAME") {
                    p.pos = i;
                    if ["COLUMN", "INDEX", "KEY"].iter().any(|w| p.kw(p.pos, w)) {
                        continue;
                    }
                    let _ = p.eat("TO") || p.eat("AS");
                    out.push(p.table()?);
                }
                Some(out)
            } else if create {
                Some(vec![p.table()?])
            } else {
                p.tables()
            }
        }
        "INDEX" | "KEY" => {
            p.skip_if_exists();
            p.ident()?;
            p.pos = p.find("ON")?;
            Some(vec![p.table()?])
        }
        "DATABASE" | "SCHEMA" => {
            p.skip_if_exists();
            let db = p.ident().or_else(|| (!p.db.is_empty()).then(|| p.db.to_string()))?;
            Some(vec![Change::Database { db }])
        }
        // Routines and triggers change no stored rows; results using stored functions are
        // never cached. Report the database anyway (cheap, and safe).
        "TRIGGER" | "FUNCTION" | "PROCEDURE" | "EVENT" | "PACKAGE" if !p.db.is_empty() => {
            Some(vec![Change::Database { db: p.db.to_string() }])
        }
        _ => None,
    }
}

fn short(sql: &str) -> String {
    sql.chars().take(80).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(db: &str, table: &str) -> Change {
        Change::Table { db: db.into(), table: table.into() }
    }

    fn changes(db: &str, sql: &str) -> Vec<Change> {
        match classify(db, sql) {
            QueryAction::Changes(c) => c,
            other => panic!("{sql}: {other:?}"),
        }
    }

    #[test]
    fn transaction_control() {
        assert_eq!(classify("d", "BEGIN"), QueryAction::Begin);
        assert_eq!(classify("d", "COMMIT"), QueryAction::End);
        assert_eq!(classify("d", "ROLLBACK"), QueryAction::End);
        assert_eq!(classify("d", "ROLLBACK TO SAVEPOINT a"), QueryAction::Ignore);
        assert_eq!(classify("d", "# Dummy event replacing event type 160"), QueryAction::Ignore);
        assert!(
            matches!(classify("d", "XA COMMIT 'x'"), QueryAction::Changes(c) if matches!(c[0], Change::All { .. }))
        );
    }

    #[test]
    fn ddl_names() {
        assert_eq!(changes("d", "TRUNCATE TABLE `t1`"), vec![t("d", "t1")]);
        assert_eq!(changes("d", "truncate x.`we``ird`"), vec![t("x", "we`ird")]);
        assert_eq!(
            changes("d", "DROP TABLE IF EXISTS `a`,`o`.`b` /* generated by server */"),
            vec![t("d", "a"), t("o", "b")]
        );
        assert_eq!(changes("d", "ALTER TABLE a ADD COLUMN c INT, RENAME TO b"), vec![t("d", "a"), t("d", "b")]);
        assert_eq!(changes("d", "ALTER TABLE a RENAME COLUMN x TO y"), vec![t("d", "a")]);
        assert_eq!(
            changes("d", "RENAME TABLE a TO b, o.c TO d"),
            vec![t("d", "a"), t("d", "b"), t("o", "c"), t("d", "d")]
        );
        assert_eq!(changes("d", "CREATE OR REPLACE TABLE n (id int)"), vec![t("d", "n")]);
        assert_eq!(
            changes("d", "CREATE ALGORITHM=UNDEFINED DEFINER=`r`@`%` SQL SECURITY DEFINER VIEW v AS SELECT 1"),
            vec![t("d", "v")]
        );
        assert_eq!(changes("d", "CREATE UNIQUE INDEX i ON t (a)"), vec![t("d", "t")]);
        assert_eq!(changes("d", "DROP INDEX i ON o.t"), vec![t("o", "t")]);
        assert_eq!(changes("", "DROP DATABASE shop"), vec![Change::Database { db: "shop".into() }]);
        assert_eq!(changes("d", "/*!40000 ALTER TABLE `t` DISABLE KEYS */"), vec![t("d", "t")]);
    }

    #[test]
    fn statement_dml() {
        assert_eq!(changes("d", "INSERT INTO t (a) VALUES (1)"), vec![t("d", "t")]);
        assert_eq!(changes("d", "UPDATE o.t SET a=1 WHERE id=2"), vec![t("o", "t")]);
        assert_eq!(changes("d", "DELETE FROM t WHERE id=2"), vec![t("d", "t")]);
        assert_eq!(changes("d", "UPDATE a JOIN b ON a.x=b.x SET a.y=1"), vec![Change::Database { db: "d".into() }]);
        assert_eq!(changes("d", "DELETE a FROM a JOIN b"), vec![Change::Database { db: "d".into() }]);
        assert_eq!(changes("d", "LOAD DATA INFILE 'f' INTO TABLE t"), vec![t("d", "t")]);
    }

    #[test]
    fn set_statement_for_is_its_statement() {
        let pre = "SET STATEMENT max_statement_time = 10, lock_wait_timeout = 5 FOR ";
        assert_eq!(changes("d", &format!("{pre}ALTER TABLE t ADD COLUMN c INT")), vec![t("d", "t")]);
        assert_eq!(changes("d", &format!("{pre}DROP TABLE o.t")), vec![t("o", "t")]);
        assert_eq!(changes("d", &format!("{pre}UPDATE t SET a = 1")), vec![t("d", "t")]);
        assert_eq!(classify("d", &format!("{pre}SAVEPOINT s")), QueryAction::Ignore);
        assert_eq!(changes("d", "SET STATEMENT x = 1"), vec![Change::Database { db: "d".into() }]);
        // Nested prefixes (MariaDB refuses them) are taken off a few times, then unsure.
        let nested = format!("{}UPDATE t SET a = 1", "SET STATEMENT x = 1 FOR ".repeat(10));
        assert_eq!(changes("d", &nested), vec![Change::Database { db: "d".into() }]);
    }

    /// Property: any text classifies without a panic, and a statement that starts (after an
    /// optional `SET STATEMENT ... FOR`) with a verb that writes is never taken for one that
    /// does not (Ignore, Begin, End): whatever follows the verb, something is reported changed.
    #[test]
    fn any_text_classifies_and_writes_are_never_ignored() {
        const WORDS: &[&str] = &[
            "INSERT",
            "UPDATE",
            "DELETE",
            "REPLACE",
            "DROP",
            "ALTER",
            "CREATE",
            "TRUNCATE",
            "RENAME",
            "TABLE",
            "SET",
            "STATEMENT",
            "FOR",
            "INTO",
            "FROM",
            "WHERE",
            "IF",
            "EXISTS",
            "USER",
            "VIEW",
            "t",
            "o.t",
            "`a``b`",
            "'s'",
            "\"q\\\"\"",
            "/*!50100",
            "*/",
            "/*",
            "--",
            "#",
            "\n",
            ",",
            ";",
            "(",
            ")",
            "=",
            ".",
            "é",
            "",
        ];
        const WRITES: &[&str] = &["INSERT", "UPDATE", "DELETE", "REPLACE", "DROP", "ALTER", "TRUNCATE", "RENAME TABLE"];
        let mut rng = crate::test_rng::Rng(0x9E37_79B9_7F4A_7C15);
        for _ in 0..50_000 {
            let n = rng.below(12);
            let tail: Vec<&str> = (0..n).map(|_| WORDS[rng.below(WORDS.len())]).collect();
            let tail = tail.join(" ");
            let _ = classify(["", "d"][rng.below(2)], &tail);
            let verb = WRITES[rng.below(WRITES.len())];
            let prefix = if rng.below(3) == 0 { "SET STATEMENT x = 1 FOR " } else { "" };
            let sql = format!("{prefix}{verb} {tail}");
            match classify("d", &sql) {
                QueryAction::Changes(c) => assert!(!c.is_empty(), "{sql}"),
                other => panic!("{sql}: {other:?}"),
            }
        }
    }

    #[test]
    fn unsure_is_conservative() {
        assert!(matches!(changes("", "INSERT INTO t VALUES (1)")[0], Change::All { .. }));
        assert_eq!(changes("d", "CALL p()"), vec![Change::Database { db: "d".into() }]);
        assert_eq!(changes("d", "DO f(1)"), vec![Change::Database { db: "d".into() }]);
        assert!(matches!(changes("d", "REVOKE SELECT ON *.* FROM u")[0], Change::All { .. }));
        assert_eq!(classify("d", "GRANT SELECT ON *.* TO u"), QueryAction::Ignore);
        assert_eq!(classify("d", "CREATE USER IF NOT EXISTS u"), QueryAction::Ignore);
        assert!(matches!(changes("d", "CREATE OR REPLACE USER u")[0], Change::All { .. }));
        assert!(matches!(changes("d", "DROP USER IF EXISTS u")[0], Change::All { .. }));
    }
}
