//! QUERY events: what a statement logged as text (BEGIN/COMMIT, DDL, statement-format DML,
//! account and privilege statements, FLUSH, ...) means for cached results. Names are parsed
//! conservatively: when unsure, the whole database (or everything) is reported changed.
//! A statement that cannot change any table's rows changes nothing cached (FLUSH LOGS /
//! TABLES / STATUS / HOSTS, ANALYZE, OPTIMIZE, GRANT, CREATE USER, SET PASSWORD); what
//! changes only privileges, stored programs or a table's keys is reported as such
//! ([`Change::Privileges`], [`Change::Routines`], [`Change::Keys`]) so a cache of rows can
//! keep its data. docs/invalidation.md has the whole table.

use sql_source::Change;

/// What a QUERY event means for the stream.
#[derive(Debug, PartialEq)]
pub(crate) enum QueryAction {
    /// Starts a transaction (BEGIN).
    Begin,
    /// Starts an XA transaction (`XA START`, as MySQL logs it; MariaDB marks its GTID event).
    XaStart,
    /// Ends a transaction (COMMIT, ROLLBACK, XA COMMIT ... ONE PHASE).
    End,
    /// Changes nothing cached (SAVEPOINT, FLUSH TABLES, dummy events, ...).
    Ignore,
    /// `XA END xid`: the XA transaction being logged is `xid` (prepared next).
    XaEnd(String),
    /// `XA COMMIT xid` of a transaction prepared earlier: its changes become visible now.
    XaCommit(String),
    /// `XA ROLLBACK xid` of a transaction prepared earlier: its changes never happen.
    XaRollback(String),
    /// `FLUSH PRIVILEGES`: reloads the grant tables (changes privileges only if they were
    /// written directly since the last reload; the decoder knows).
    FlushPrivileges,
    /// Privileges or accounts may have lost something (the statement, for logs).
    Privileges(String),
    /// Stored programs were defined or dropped (the statement, for logs).
    Routines(String),
    /// DDL: these tables/databases/everything may have changed (definitions and rows).
    Changes(Vec<Change>),
    /// A statement wrote rows of these tables (statement-format DML): their triggers and
    /// cascading foreign keys may have changed more (the binlog shows neither).
    Writes(Vec<Change>),
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

/// Classifies the statement of a QUERY event logged in database `db`.
pub(crate) fn classify(db: &str, sql: &str) -> QueryAction {
    classify_tokens(db, sql, lex(sql), 0)
}

/// The XA transaction id of `XA <verb> xid ...` as the server logs it (`X'62',X'',1`): the
/// text after the verb up to the first blank (MariaDB and MySQL log it normalized, so
/// `XA END` and `XA COMMIT` of one transaction spell it the same).
fn xid(sql: &str) -> String {
    let mut words = sql.trim_start().splitn(3, char::is_whitespace);
    let _ = (words.next(), words.next());
    words.next().unwrap_or("").split_whitespace().next().unwrap_or("").to_string()
}

/// [`classify`] of `sql`'s tokens `toks`; `depth` counts the `SET STATEMENT ... FOR`
/// prefixes already taken off.
fn classify_tokens(db: &str, sql: &str, toks: Vec<Tok>, depth: u8) -> QueryAction {
    let mut p = Parser { toks, pos: 0, db };
    let unsure_change = || {
        if db.is_empty() {
            Change::All { reason: format!("unattributed statement: {}", short(sql)) }
        } else {
            Change::Database { db: db.to_string() }
        }
    };
    let unsure = || QueryAction::Changes(vec![unsure_change()]);
    let Some(Tok::Word(first)) = p.toks.first().cloned() else {
        // Empty after comments: MariaDB's dummy events for old replicas.
        return if p.toks.is_empty() { QueryAction::Ignore } else { unsure() };
    };
    p.pos = 1;
    let done = |r: Option<Vec<Change>>| r.map(QueryAction::Changes).unwrap_or_else(unsure);
    // Statement-format DML: the tables named, else the database (multi-table forms).
    let wrote = |r: Option<Vec<Change>>| QueryAction::Writes(r.unwrap_or_else(|| vec![unsure_change()]));
    match first.to_ascii_uppercase().as_str() {
        "BEGIN" => QueryAction::Begin,
        "COMMIT" => QueryAction::End,
        "ROLLBACK" if p.kw(1, "TO") => QueryAction::Ignore,
        "ROLLBACK" => QueryAction::End,
        "SAVEPOINT" | "RELEASE" => QueryAction::Ignore,
        "XA" if p.kw(1, "START") || p.kw(1, "BEGIN") => QueryAction::XaStart,
        "XA" if p.kw(1, "COMMIT") && p.find("PHASE").is_some() => QueryAction::End,
        "XA" if p.kw(1, "COMMIT") => QueryAction::XaCommit(xid(sql)),
        "XA" if p.kw(1, "ROLLBACK") => QueryAction::XaRollback(xid(sql)),
        "XA" if p.kw(1, "END") => QueryAction::XaEnd(xid(sql)),
        "XA" => QueryAction::Ignore,
        // FLUSH LOGS / TABLES / STATUS / HOSTS / ...: no row changes. PRIVILEGES reloads
        // the grant tables, which matters only if something wrote them directly.
        "FLUSH" if p.find("PRIVILEGES").is_some() => QueryAction::FlushPrivileges,
        // OPTIMIZE rebuilds and ANALYZE counts: the rows stay what they were.
        "FLUSH" | "ANALYZE" | "CHECK" | "CHECKSUM" | "OPTIMIZE" => QueryAction::Ignore,
        // Added privileges cannot make a cached result wrong (errors are never cached);
        // removed ones can.
        "GRANT" => QueryAction::Ignore,
        "REVOKE" => QueryAction::Privileges(short_tokens(&p)),
        // MariaDB's `SET STATEMENT var = value [, ...] FOR <statement>` is logged as written:
        // what changed is the statement after FOR (a DDL, or DML in statement format).
        "SET" if p.kw(1, "STATEMENT") => match p.find("FOR") {
            Some(i) if depth < 4 => classify_tokens(db, sql, p.toks.split_off(i), depth + 1),
            _ => unsure(),
        },
        // A new default role changes what the user's next sessions may read (their cached
        // results are keyed by user, not role); a password only who may log in.
        "SET" if p.kw(1, "DEFAULT") => QueryAction::Privileges(short_tokens(&p)),
        "SET" => QueryAction::Ignore,
        // A logged DO (statement format) is there for a side effect: a function that writes.
        "DO" => wrote(None),
        "TRUNCATE" => {
            p.eat("TABLE");
            done(p.table().map(|t| vec![t]))
        }
        // REPAIR may drop rows it cannot read.
        "REPAIR" => {
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
        "RENAME" if p.kw(1, "USER") || p.kw(1, "ROLE") => QueryAction::Privileges(short_tokens(&p)),
        verb @ ("DROP" | "CREATE" | "ALTER") => match account(&p, verb) {
            Some(action) => action,
            None => ddl(&mut p, &first).unwrap_or_else(unsure),
        },
        "INSERT" | "REPLACE" => {
            while ["LOW_PRIORITY", "DELAYED", "HIGH_PRIORITY", "IGNORE", "INTO"].iter().any(|w| p.eat(w)) {}
            wrote(p.table().map(|t| vec![t]))
        }
        "UPDATE" => {
            while ["LOW_PRIORITY", "IGNORE"].iter().any(|w| p.eat(w)) {}
            let t = p.table();
            // A single-table UPDATE continues with SET (after an optional alias).
            let single = p.kw(p.pos, "SET") || (p.ident().is_some() && p.kw(p.pos, "SET"));
            wrote(t.filter(|_| single).map(|t| vec![t]))
        }
        "DELETE" => {
            while ["LOW_PRIORITY", "QUICK", "IGNORE"].iter().any(|w| p.eat(w)) {}
            if !p.eat("FROM") {
                return wrote(None);
            }
            let t = p.table();
            let single =
                p.pos >= p.toks.len() || ["WHERE", "ORDER", "LIMIT", "RETURNING"].iter().any(|w| p.kw(p.pos, w));
            wrote(t.filter(|_| single).map(|t| vec![t]))
        }
        "LOAD" => match p.find("INTO").map(|i| (i, p.kw(i, "TABLE"))) {
            Some((i, true)) => {
                p.pos = i + 1;
                wrote(p.table().map(|t| vec![t]))
            }
            _ => wrote(None),
        },
        _ => unsure(),
    }
}

/// CREATE / DROP / ALTER of a user or role (None: another object). Creating an account
/// adds; dropping or replacing one, or changing a default role, can take privileges away.
fn account(p: &Parser<'_>, verb: &str) -> Option<QueryAction> {
    let replace = p.kw(1, "OR") && p.kw(2, "REPLACE");
    let at = if replace { 3 } else { 1 };
    if !(p.kw(at, "USER") || p.kw(at, "ROLE")) {
        return None;
    }
    let changed = QueryAction::Privileges(short_tokens(p));
    Some(match verb {
        "CREATE" if !replace => QueryAction::Ignore,
        // ALTER USER changes how an account logs in (password, TLS, limits, lock), except
        // MySQL's DEFAULT ROLE clause.
        "ALTER" if p.find("ROLE").is_none() => QueryAction::Ignore,
        _ => changed,
    })
}

/// The statement's first words, for logs (the tokens, not the text: no literal, such as a
/// password, is shown).
fn short_tokens(p: &Parser<'_>) -> String {
    let words: Vec<&str> = p
        .toks
        .iter()
        .take(8)
        .map(|t| match t {
            Tok::Word(w) | Tok::Quoted(w) => w.as_str(),
            _ => "?",
        })
        .collect();
    words.join(" ")
}

/// ALTER TABLE specifications that change only keys, indexes or constraints (no row): the
/// first words of each comma-separated specification.
fn keys_only(p: &Parser<'_>, from: usize) -> bool {
    let toks = &p.toks[from..];
    if toks.is_empty() {
        return false;
    }
    let (mut depth, mut start) = (0usize, 0usize);
    let mut specs: Vec<&[Tok]> = Vec::new();
    for (i, t) in toks.iter().enumerate() {
        match t {
            Tok::Punct('(') => depth += 1,
            Tok::Punct(')') => depth = depth.saturating_sub(1),
            Tok::Punct(',') if depth == 0 => {
                specs.push(&toks[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    specs.push(&toks[start..]);
    let word = |spec: &[Tok], i: usize, w: &str| matches!(spec.get(i), Some(Tok::Word(x)) if x.eq_ignore_ascii_case(w));
    specs.iter().all(|spec| {
        let mut i = 1;
        if word(spec, 0, "ADD") {
            if word(spec, 1, "CONSTRAINT") {
                // ADD CONSTRAINT [name] ...
                i = if matches!(spec.get(2), Some(Tok::Word(w)) if !["PRIMARY", "UNIQUE", "FOREIGN", "CHECK"]
                    .iter()
                    .any(|k| w.eq_ignore_ascii_case(k)))
                    || matches!(spec.get(2), Some(Tok::Quoted(_)))
                {
                    3
                } else {
                    2
                };
            }
            ["INDEX", "KEY", "UNIQUE", "FULLTEXT", "SPATIAL", "PRIMARY", "FOREIGN"].iter().any(|w| word(spec, i, w))
        } else if word(spec, 0, "DROP") {
            ["INDEX", "KEY", "PRIMARY", "FOREIGN", "CONSTRAINT"].iter().any(|w| word(spec, 1, w))
        } else if word(spec, 0, "RENAME") || word(spec, 0, "ALTER") {
            word(spec, 1, "INDEX") || word(spec, 1, "KEY")
        } else {
            // ALGORITHM [=] x, LOCK [=] x: how, not what.
            word(spec, 0, "ALGORITHM") || word(spec, 0, "LOCK")
        }
    })
}

/// DROP / CREATE / ALTER of tables, views, sequences, indexes, databases and stored
/// programs; None: unsure.
fn ddl(p: &mut Parser<'_>, verb: &str) -> Option<QueryAction> {
    let create = verb.eq_ignore_ascii_case("CREATE");
    let alter = verb.eq_ignore_ascii_case("ALTER");
    let mut replace = false;
    if create && p.eat("OR") {
        replace = p.eat("REPLACE");
    }
    // Modifiers before the object kind. ALTER IGNORE TABLE deletes the rows that break a new
    // unique key: never "keys only".
    let mut ignore = false;
    loop {
        ignore |= p.kw(p.pos, "IGNORE");
        let skipped = ["TEMPORARY", "ONLINE", "OFFLINE", "IGNORE", "UNIQUE", "FULLTEXT", "SPATIAL", "AGGREGATE"]
            .iter()
            .any(|w| p.eat(w));
        let assigned = ["ALGORITHM", "DEFINER", "SQL"].iter().any(|w| p.kw(p.pos, w));
        if assigned {
            // ALGORITHM = x, DEFINER = user@host, SQL SECURITY x: skip to the next keyword we know.
            while p.pos < p.toks.len()
                && !["VIEW", "TRIGGER", "FUNCTION", "PROCEDURE", "EVENT", "PACKAGE", "AGGREGATE"]
                    .iter()
                    .any(|w| p.kw(p.pos, w))
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
    let changes = |c: Vec<Change>| Some(QueryAction::Changes(c));
    match kind.as_str() {
        "TABLE" | "VIEW" | "SEQUENCE" | "TABLES" => {
            p.skip_if_exists();
            if alter {
                let first = p.table()?;
                if kind == "TABLE" && !ignore && keys_only(p, p.pos) {
                    let Change::Table { db, table } = first else { return None };
                    return Some(QueryAction::Changes(vec![Change::Keys { db, table }]));
                }
                let mut out = vec![first];
                let after_name = p.pos;
                // ALTER TABLE t RENAME [TO|AS] u (not RENAME COLUMN/INDEX/KEY).
                while let Some(i) = p.find("RENAME") {
                    p.pos = i;
                    if ["COLUMN", "INDEX", "KEY"].iter().any(|w| p.kw(p.pos, w)) {
                        continue;
                    }
                    let _ = p.eat("TO") || p.eat("AS");
                    out.push(p.table()?);
                }
                // Every other table the statement names: EXCHANGE PARTITION p WITH TABLE t,
                // CONVERT TABLE t TO PARTITION p, CONVERT PARTITION p TO TABLE t change t too.
                p.pos = after_name;
                while let Some(i) = p.find("TABLE") {
                    p.pos = i;
                    out.push(p.table()?);
                }
                changes(out)
            } else if create {
                changes(vec![p.table()?])
            } else {
                changes(p.tables()?)
            }
        }
        // A table's keys: the rows stay.
        "INDEX" | "KEY" => {
            p.skip_if_exists();
            p.ident()?;
            p.pos = p.find("ON")?;
            let Change::Table { db, table } = p.table()? else { return None };
            changes(vec![Change::Keys { db, table }])
        }
        "DATABASE" | "SCHEMA" => {
            p.skip_if_exists();
            let db = p.ident().or_else(|| (!p.db.is_empty()).then(|| p.db.to_string()))?;
            // A new database holds nothing cached; ALTER DATABASE changes defaults for new
            // tables (except the old UPGRADE DATA DIRECTORY NAME, which renames it).
            let kept = (create && !replace) || (alter && p.find("UPGRADE").is_none());
            if kept {
                Some(QueryAction::Ignore)
            } else {
                changes(vec![Change::Database { db }])
            }
        }
        // Routines and triggers change no stored rows (results using stored functions are
        // never cached), but what later writes do: said as such.
        "TRIGGER" | "FUNCTION" | "PROCEDURE" | "EVENT" | "PACKAGE" => {
            p.eat("BODY");
            p.skip_if_exists();
            let name = match (p.ident(), p.eat_punct('.')) {
                (Some(db), true) => format!("{db}.{}", p.ident().unwrap_or_default()),
                (Some(name), false) => name,
                (None, _) => String::new(),
            };
            Some(QueryAction::Routines(format!("{} {kind} {name}", verb.to_ascii_uppercase()).trim_end().to_string()))
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

    fn keys(db: &str, table: &str) -> Change {
        Change::Keys { db: db.into(), table: table.into() }
    }

    fn db(name: &str) -> Change {
        Change::Database { db: name.into() }
    }

    /// What a DDL (or an unsure statement) reports changed.
    fn changes(db: &str, sql: &str) -> Vec<Change> {
        match classify(db, sql) {
            QueryAction::Changes(c) => c,
            other => panic!("{sql}: {other:?}"),
        }
    }

    /// What a statement-format write reports written (its triggers and cascades are the
    /// decoder's to add).
    fn writes(db: &str, sql: &str) -> Vec<Change> {
        match classify(db, sql) {
            QueryAction::Writes(c) => c,
            other => panic!("{sql}: {other:?}"),
        }
    }

    fn is_privileges(db: &str, sql: &str) -> bool {
        matches!(classify(db, sql), QueryAction::Privileges(_))
    }

    #[test]
    fn transaction_control() {
        assert_eq!(classify("d", "BEGIN"), QueryAction::Begin);
        assert_eq!(classify("d", "COMMIT"), QueryAction::End);
        assert_eq!(classify("d", "ROLLBACK"), QueryAction::End);
        assert_eq!(classify("d", "ROLLBACK TO SAVEPOINT a"), QueryAction::Ignore);
        assert_eq!(classify("d", "# Dummy event replacing event type 160"), QueryAction::Ignore);
        // XA as MariaDB 10.11 logs it: the prepared transaction's rows come before its
        // XA COMMIT, which the decoder answers with them again.
        assert_eq!(classify("d", "XA START X'62',X'',1"), QueryAction::XaStart);
        assert_eq!(classify("d", "XA END X'62',X'',1"), QueryAction::XaEnd("X'62',X'',1".into()));
        assert_eq!(classify("d", "XA COMMIT X'62',X'',1"), QueryAction::XaCommit("X'62',X'',1".into()));
        assert_eq!(classify("d", "XA ROLLBACK X'62',X'',1"), QueryAction::XaRollback("X'62',X'',1".into()));
        assert_eq!(classify("d", "XA COMMIT X'62',X'',1 ONE PHASE"), QueryAction::End);
        assert_eq!(classify("d", "XA PREPARE X'62',X'',1"), QueryAction::Ignore);
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
        assert_eq!(changes("", "DROP DATABASE shop"), vec![db("shop")]);
        assert_eq!(changes("d", "CREATE OR REPLACE DATABASE shop"), vec![db("shop")]);
        assert_eq!(changes("d", "/*!40000 ALTER TABLE `t` DISABLE KEYS */"), vec![t("d", "t")]);
        // A table named like an account keyword is a table.
        assert_eq!(changes("d", "DROP TABLE user"), vec![t("d", "user")]);
        assert_eq!(changes("d", "ALTER TABLE role ADD COLUMN c INT"), vec![t("d", "role")]);
        assert_eq!(changes("d", "CREATE TABLE `user` (id INT)"), vec![t("d", "user")]);
    }

    /// Every table an ALTER names counts (issue 42): partition exchanges and conversions
    /// change (or drop, or create) the other table too.
    #[test]
    fn alter_counts_every_table_it_names() {
        assert_eq!(changes("d", "ALTER TABLE p EXCHANGE PARTITION p0 WITH TABLE t"), vec![t("d", "p"), t("d", "t")]);
        assert_eq!(
            changes("d", "ALTER TABLE p EXCHANGE PARTITION p0 WITH TABLE o.t WITHOUT VALIDATION"),
            vec![t("d", "p"), t("o", "t")]
        );
        assert_eq!(
            changes("d", "ALTER TABLE p CONVERT TABLE t TO PARTITION p2 VALUES LESS THAN (300)"),
            vec![t("d", "p"), t("d", "t")]
        );
        assert_eq!(changes("d", "ALTER TABLE p CONVERT PARTITION p1 TO TABLE `t`"), vec![t("d", "p"), t("d", "t")]);
        assert_eq!(
            changes("d", "ALTER TABLE p RENAME TO q, EXCHANGE PARTITION p0 WITH TABLE t"),
            vec![t("d", "p"), t("d", "q"), t("d", "t")]
        );
    }

    /// Statements that change no row of any table change nothing cached; what changes only
    /// privileges, stored programs or keys says so (issue 42).
    #[test]
    fn statements_that_change_no_rows() {
        for sql in [
            "FLUSH TABLES",
            "FLUSH LOGS",
            "FLUSH STATUS",
            "FLUSH HOSTS",
            "FLUSH USER_RESOURCES",
            "FLUSH TABLES t WITH READ LOCK",
            "ANALYZE TABLE t",
            "ANALYZE TABLE t PERSISTENT FOR ALL",
            "OPTIMIZE TABLE t",
            "OPTIMIZE NO_WRITE_TO_BINLOG TABLE a, b",
            "CHECK TABLE t",
            "GRANT SELECT ON *.* TO u",
            "GRANT r TO u",
            "CREATE USER IF NOT EXISTS u",
            "CREATE USER u IDENTIFIED BY 'x'",
            "CREATE ROLE r",
            "ALTER USER u IDENTIFIED BY 'y'",
            "ALTER USER u ACCOUNT LOCK",
            "SET PASSWORD FOR 'u'@'%'='*315789F42668AD9A365B9681221355649873020A'",
            "CREATE DATABASE IF NOT EXISTS x",
            "CREATE DATABASE x",
            "ALTER DATABASE x CHARACTER SET utf8mb4",
            "SAVEPOINT s",
            "RELEASE SAVEPOINT s",
        ] {
            assert_eq!(classify("d", sql), QueryAction::Ignore, "{sql}");
        }
        assert_eq!(classify("d", "FLUSH PRIVILEGES"), QueryAction::FlushPrivileges);
        assert_eq!(classify("d", "FLUSH LOGS, PRIVILEGES"), QueryAction::FlushPrivileges);
        for sql in [
            "REVOKE SELECT ON *.* FROM u",
            "REVOKE r FROM u",
            "DROP USER IF EXISTS u",
            "DROP ROLE r",
            "RENAME USER u1 TO u2",
            "CREATE OR REPLACE USER u IDENTIFIED BY 'secret'",
            "CREATE OR REPLACE ROLE r",
            "SET DEFAULT ROLE 'r1' FOR 'u1'@'%'",
            "ALTER USER u DEFAULT ROLE r",
        ] {
            assert!(is_privileges("d", sql), "{sql}: {:?}", classify("d", sql));
        }
        // Logs show the statement's words, never its literals (a password).
        assert_eq!(
            classify("d", "CREATE OR REPLACE USER u IDENTIFIED BY 'secret'"),
            QueryAction::Privileges("CREATE OR REPLACE USER u IDENTIFIED BY ?".into())
        );
        assert_eq!(
            classify("", "CREATE DEFINER=`sqlcached`@`%` TRIGGER IF NOT EXISTS x.tr AFTER INSERT ON x.t SET @a=1"),
            QueryAction::Routines("CREATE TRIGGER x.tr".into())
        );
        for sql in [
            "CREATE DEFINER=`sqlcached`@`%` TRIGGER x.tr AFTER INSERT ON x.t FOR EACH ROW SET @a=1",
            "DROP TRIGGER x.tr",
            "CREATE DEFINER=`u`@`%` EVENT x.ev ON SCHEDULE EVERY 1 DAY DO SELECT 1",
            "DROP EVENT IF EXISTS ev",
            "CREATE FUNCTION f() RETURNS INT RETURN 1",
            "CREATE AGGREGATE FUNCTION g(x INT) RETURNS INT BEGIN RETURN 1; END",
            "CREATE OR REPLACE PROCEDURE p() BEGIN END",
            "ALTER PROCEDURE p COMMENT 'x'",
            "DROP FUNCTION IF EXISTS f",
            "CREATE PACKAGE pk AS FUNCTION f() RETURNS INT; END",
        ] {
            assert!(matches!(classify("", sql), QueryAction::Routines(_)), "{sql}: {:?}", classify("", sql));
        }
        // Keys and indexes only: the rows stay.
        assert_eq!(changes("d", "CREATE UNIQUE INDEX i ON t (a)"), vec![keys("d", "t")]);
        assert_eq!(changes("d", "DROP INDEX i ON o.t"), vec![keys("o", "t")]);
        assert_eq!(changes("d", "CREATE OR REPLACE INDEX i ON t (a)"), vec![keys("d", "t")]);
        for sql in [
            "ALTER TABLE t ADD INDEX i (a, b(10))",
            "ALTER TABLE t ADD UNIQUE KEY u (a), ALGORITHM=INPLACE, LOCK=NONE",
            "ALTER TABLE t DROP INDEX i, ADD FULLTEXT INDEX f (v)",
            "ALTER TABLE t ADD CONSTRAINT fk FOREIGN KEY (p) REFERENCES p (id) ON DELETE CASCADE",
            "ALTER TABLE t ADD CONSTRAINT PRIMARY KEY (id)",
            "ALTER TABLE t DROP FOREIGN KEY fk",
            "ALTER TABLE t RENAME INDEX a TO b",
            "ALTER ONLINE TABLE t ADD KEY (a)",
        ] {
            assert_eq!(changes("d", sql), vec![keys("d", "t")], "{sql}");
        }
        // ALTER IGNORE deletes the rows a new unique key refuses; anything else changes rows.
        for sql in [
            "ALTER IGNORE TABLE t ADD UNIQUE KEY u (a)",
            "ALTER TABLE t ADD INDEX i (a), ADD COLUMN c INT",
            "ALTER TABLE t ADD COLUMN c INT",
            "ALTER TABLE t MODIFY v INT",
            "ALTER TABLE t FORCE",
        ] {
            assert_eq!(changes("d", sql), vec![t("d", "t")], "{sql}");
        }
        // REPAIR may drop rows it cannot read.
        assert_eq!(changes("d", "REPAIR TABLE t"), vec![t("d", "t")]);
    }

    #[test]
    fn statement_dml() {
        assert_eq!(writes("d", "INSERT INTO t (a) VALUES (1)"), vec![t("d", "t")]);
        assert_eq!(writes("d", "UPDATE o.t SET a=1 WHERE id=2"), vec![t("o", "t")]);
        assert_eq!(writes("d", "DELETE FROM t WHERE id=2"), vec![t("d", "t")]);
        assert_eq!(writes("d", "REPLACE INTO t VALUES (1)"), vec![t("d", "t")]);
        assert_eq!(writes("d", "UPDATE a JOIN b ON a.x=b.x SET a.y=1"), vec![db("d")]);
        assert_eq!(writes("d", "DELETE a FROM a JOIN b"), vec![db("d")]);
        assert_eq!(writes("d", "LOAD DATA INFILE 'f' INTO TABLE t"), vec![t("d", "t")]);
        assert_eq!(writes("d", "DO f(1)"), vec![db("d")]);
    }

    #[test]
    fn set_statement_for_is_its_statement() {
        let pre = "SET STATEMENT max_statement_time = 10, lock_wait_timeout = 5 FOR ";
        assert_eq!(changes("d", &format!("{pre}ALTER TABLE t ADD COLUMN c INT")), vec![t("d", "t")]);
        assert_eq!(changes("d", &format!("{pre}DROP TABLE o.t")), vec![t("o", "t")]);
        assert_eq!(writes("d", &format!("{pre}UPDATE t SET a = 1")), vec![t("d", "t")]);
        assert_eq!(classify("d", &format!("{pre}SAVEPOINT s")), QueryAction::Ignore);
        assert_eq!(changes("d", "SET STATEMENT x = 1"), vec![db("d")]);
        // Nested prefixes (MariaDB refuses them) are taken off a few times, then unsure.
        let nested = format!("{}UPDATE t SET a = 1", "SET STATEMENT x = 1 FOR ".repeat(10));
        assert_eq!(changes("d", &nested), vec![db("d")]);
    }

    /// Property: any text classifies without a panic, and a statement that starts (after an
    /// optional `SET STATEMENT ... FOR`) with a verb that writes rows is never taken for one
    /// that does not: whatever follows the verb, something is reported changed (unless the
    /// verb's object is an account, `DROP USER` / `ALTER ROLE`: privileges, not rows).
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
            "ROLE",
            "VIEW",
            "INDEX",
            "ADD",
            "KEY",
            "IGNORE",
            "EXCHANGE",
            "PARTITION",
            "WITH",
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
            let toks = lex(&format!("{verb} {tail}"));
            let account = matches!(verb, "DROP" | "ALTER")
                && matches!(toks.get(1), Some(Tok::Word(w)) if w == "USER" || w == "ROLE");
            match classify("d", &sql) {
                QueryAction::Changes(c) | QueryAction::Writes(c) => assert!(!c.is_empty(), "{sql}"),
                QueryAction::Privileges(_) | QueryAction::Ignore if account => {}
                other => panic!("{sql}: {other:?}"),
            }
        }
    }

    #[test]
    fn unsure_is_conservative() {
        assert!(matches!(writes("", "INSERT INTO t VALUES (1)")[0], Change::All { .. }));
        assert_eq!(changes("d", "CALL p()"), vec![db("d")]);
        assert!(matches!(changes("", "CALL p()")[0], Change::All { .. }));
    }
}
