"""The freshness checker for PostgreSQL query caches (issue 41 item 4): adversarial writes
against a cache in front of a real PostgreSQL, and a count of the reads it answered stale.

A **stale read** is a read that started after a write's commit was acknowledged (for a write
made directly on PostgreSQL, plus the WAL bound, 100 ms: issue 41 item 3) and returned data
older than that commit. A **wrong read** returned data that was never the committed state the
reader could see: another schema's rows, a value rolled back (ROLLBACK TO, ROLLBACK), a result
that matches nothing. The truth is read directly from PostgreSQL right after each checked read
(the checker is sequential, so nothing commits in between).

Used by tests/pgcache/test_freshness_pg.py (pgpool-II now, sqlcached's front once it caches)
and bench/freshness_pg.py (both side by side):

    from freshness import CASES, Target, run_case, race

    target = pgpool_target(pool, "fc")            # or sqlcached_target(px, "fc")
    result = run_case(target, direct_dsn, "trigger", via="proxy", iterations=3)
    result.stale, result.wrong, result.checks, result.hits, result.examples

Each case (CASES, below) builds its own tables in a schema of its own (a fresh name per run, so
a cache never holds results of an earlier run), and per iteration: makes a row of its own
(directly on PostgreSQL, before anything reads it), primes the cache with the reads it will
check (each read twice in each protocol: psycopg's simple query with the value inlined, the
extended protocol's unnamed statement, and a named prepared statement), makes its write
`via` the cache ("proxy": through the target, the checked reads may start as soon as the
write is acknowledged) or `direct` (straight to PostgreSQL: reads start WAL_BOUND later), then
reads again through the cache, on the writer's session and on another. `race` adds
concurrency: writers (through the cache and direct) and readers at once, as
tests/querycache/test_freshness.py does for MySQL.

A target is anything that makes psycopg connections through a cache and may count its hits:
the query-cache implementer plugs sqlcached in with `sqlcached_target` (its `stats` names:
SQLCACHED_HIT_STATS) or a Target of their own.
"""
import dataclasses
import random
import threading
import time
import uuid
from typing import Callable, Optional

import psycopg

WAL_BOUND = 0.1  # s: a direct write may take this long to reach the cache (issue 41 item 3)
PROTOCOLS = ("simple", "extended", "prepared")
# sqlcached's hit counters for its PostgreSQL cache, the first present wins (the names the
# cache will have are not fixed yet; SQLCACHED_HIT_STATS in bench/querycache-pg.sh too).
SQLCACHED_HIT_STATS = ("pg_qcache_hits", "pg_query_cache_hits", "pg_cache_hits")


@dataclasses.dataclass
class Target:
    """A query cache under test: `dsn(database)` connects through it; `hits()` is its hit
    counter (None: it has none); `direct_bound` is how long after a direct write's commit a
    read may still be stale."""
    name: str
    dsn: Callable[[], str]
    hits: Callable[[], Optional[int]] = lambda: None
    direct_bound: float = WAL_BOUND

    def connect(self):
        return psycopg.connect(self.dsn(), autocommit=True)


def pgpool_target(pool, database) -> Target:
    """pgpool-II (tests/harness/pgpool.py) as a target; hits from SHOW pool_cache."""
    return Target("pgpool", lambda: pool.dsn(database=database),
                  lambda: pool.cache(database=database)["num_cache_hits"])


def sqlcached_hits(stats: dict) -> Optional[int]:
    """sqlcached's PostgreSQL cache hits from its `stats` (None: no such figure)."""
    for name in SQLCACHED_HIT_STATS:
        if name in stats:
            return int(stats[name])
    return None


def sqlcached_target(px, database) -> Target:
    """sqlcached's PostgreSQL front (tests/harness/pgproxy.py) as a target."""
    return Target("sqlcached", lambda: px.dsn(database=database), lambda: sqlcached_hits(px.stats()))


@dataclasses.dataclass
class Result:
    """What one case found: reads checked, stale and wrong ones (with a few examples), the
    target's hits during the case (None: not counted), an error that stopped it."""
    case: str
    via: str
    checks: int = 0
    stale: int = 0
    wrong: int = 0
    hits: Optional[int] = None
    error: Optional[str] = None
    examples: list = dataclasses.field(default_factory=list)
    stale_by: dict = dataclasses.field(default_factory=dict)  # race: stale reads per way of writing

    def note(self, kind, text, by=None):
        if kind == "stale":
            self.stale += 1
            if by:
                self.stale_by[by] = self.stale_by.get(by, 0) + 1
        else:
            self.wrong += 1
        if len(self.examples) < 6:
            self.examples.append(f"{kind}: {text}")


def read(conn, protocol, sql, params):
    """Rows of `sql` with `params` through `conn` in one of PROTOCOLS, as a list of tuples."""
    if protocol == "simple":  # the values inlined by psycopg: a Query message
        cur = psycopg.ClientCursor(conn)
        cur.execute(sql, params)
    elif protocol == "extended":  # Parse/Bind/Execute of the unnamed statement
        cur = conn.execute(sql, params, prepare=False)
    else:  # a named prepared statement, executed again by name
        cur = conn.execute(sql, params, prepare=True)
    return [tuple(r) for r in cur.fetchall()]


@dataclasses.dataclass
class Tracked:
    """A read the case checks: its text, parameters, and every committed result it had."""
    sql: str
    params: tuple
    history: list


class Run:
    """One case against one target: its schema `s`, a reader `r` and a writer `w` through the
    cache, `d` directly on PostgreSQL."""

    def __init__(self, target: Target, direct_dsn: str, case: str, via: str, protocols=PROTOCOLS):
        self.target = target
        self.via = via
        self.protocols = protocols
        self.s = f"fc_{case}_{uuid.uuid4().hex[:8]}"
        self.result = Result(case, via)
        self.d = psycopg.connect(direct_dsn, autocommit=True)
        self.direct_dsn = direct_dsn
        self.r = target.connect()
        self.w = target.connect()

    def close(self):
        for c in (self.r, self.w):
            c.close()
        try:
            # a transaction left prepared (a case stopped by an error) holds its locks: first
            for (gid,) in self.d.execute("SELECT gid FROM pg_prepared_xacts WHERE gid LIKE %s", (self.s + "%",)).fetchall():
                self.d.execute(f"ROLLBACK PREPARED '{gid}'")
            self.d.execute(f"DROP SCHEMA IF EXISTS {self.s} CASCADE")
            self.d.execute(f"DROP SCHEMA IF EXISTS {self.s}_a CASCADE")
            self.d.execute(f"DROP SCHEMA IF EXISTS {self.s}_b CASCADE")
        finally:
            self.d.close()

    def direct(self, *stmts):
        """Setup writes straight to PostgreSQL (not checked)."""
        for st in stmts:
            self.d.execute(st.format(s=self.s))

    def conn(self, via):
        return self.w if via == "proxy" else self.d

    def write(self, via, *stmts):
        """The checked write: statements in order on the writer (through the cache) or directly;
        returns the acknowledgement time (after the last one returned)."""
        c = self.conn(via)
        for st in stmts:
            c.execute(st.format(s=self.s))
        return time.monotonic()

    def truth(self, t: Tracked, conn=None):
        return read(conn or self.d, "extended", t.sql, t.params)

    def track(self, sql, params):
        """A read to check: primed through the cache (twice per protocol) and its truth noted."""
        t = Tracked(sql.format(s=self.s), tuple(params), [])
        t.history.append(self.truth(t))
        for p in self.protocols:
            for _ in range(2):
                read(self.r, p, t.sql, t.params)
        return t

    def classify(self, t: Tracked, got, want, conn_name, protocol, started_after):
        self.result.checks += 1
        if got == want:
            return
        what = (f"{t.sql} {t.params} on the {conn_name} session ({protocol}), {started_after}: "
                f"read {got}, the committed result was {want}")
        if got in t.history:
            self.result.note("stale", what)
        else:
            self.result.note("wrong", what)

    def check(self, tracked, via, ack, sessions=None):
        """Every tracked read through the cache, in every protocol, once the write acknowledged
        at `ack` must be visible (ack + the target's bound for direct writes)."""
        bound = self.target.direct_bound if via == "direct" else 0.0
        delay = ack + bound - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        sessions = sessions or ([("reader", self.r), ("writer", self.w)] if via == "proxy" else [("reader", self.r)])
        for t in tracked:
            want = self.truth(t)
            for name, c in sessions:
                for p in self.protocols:
                    got = read(c, p, t.sql, t.params)
                    self.classify(t, got, want, name, p, f"{via} write acknowledged {bound * 1000:.0f} ms before")
            if want not in t.history:
                t.history.append(want)
            # (the truth is read again after the cached reads: nothing commits in between)
            if self.truth(t) != want:
                raise RuntimeError(f"{t.sql}: the committed result changed during the check")

    def expect_own(self, t: Tracked, conn, want, what):
        """A read inside the writer's open transaction must see its own uncommitted write."""
        for p in self.protocols:
            got = read(conn, p, t.sql, t.params)
            self.result.checks += 1
            if got != want:
                kind = "stale" if got in t.history else "wrong"
                self.result.note(kind, f"{t.sql} {t.params} ({p}) inside the writer's transaction after {what}: "
                                       f"read {got}, its own write made it {want}")


@dataclasses.dataclass
class Case:
    """One adversarial case: `setup` SQL ({s} = the run's schema), `step(run, via, i)` per
    iteration, the `vias` it runs with, what it is about, and the PROTOCOLS it reads with."""
    name: str
    doc: str
    vias: tuple
    setup: str
    step: Callable
    protocols: tuple = PROTOCOLS


CASES = {}


def case(name, doc, setup, vias=("proxy", "direct"), protocols=PROTOCOLS):
    def deco(fn):
        CASES[name] = Case(name, doc, vias, setup, fn, protocols)
        return fn
    return deco


@case("update", "UPDATE of a row read by primary key",
      "CREATE TABLE {s}.kv (id int PRIMARY KEY, v int NOT NULL)")
def _update(run, via, i):
    run.direct(f"INSERT INTO {{s}}.kv VALUES ({i}, 0)")
    t = run.track("SELECT id, v FROM {s}.kv WHERE id = %s", (i,))
    run.check([t], via, run.write(via, f"UPDATE {{s}}.kv SET v = v + 1 WHERE id = {i}"))


@case("insert_delete", "INSERT and DELETE of rows counted by a range read",
      "CREATE TABLE {s}.rows (id int PRIMARY KEY, grp int NOT NULL); CREATE INDEX ON {s}.rows (grp)")
def _insert_delete(run, via, i):
    run.direct(f"INSERT INTO {{s}}.rows VALUES ({i * 10}, {i})")
    t = run.track("SELECT count(*), sum(id) FROM {s}.rows WHERE grp = %s", (i,))
    run.check([t], via, run.write(via, f"INSERT INTO {{s}}.rows VALUES ({i * 10 + 1}, {i})"))
    run.check([t], via, run.write(via, f"DELETE FROM {{s}}.rows WHERE id = {i * 10}"))


@case("trigger", "a write to t fires a trigger that updates u: cached reads of u",
      """CREATE TABLE {s}.t (id int PRIMARY KEY, v int NOT NULL);
      CREATE TABLE {s}.u (id int PRIMARY KEY, v int NOT NULL);
      CREATE FUNCTION {s}.copy_to_u() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN INSERT INTO {s}.u VALUES (NEW.id, NEW.v) ON CONFLICT (id) DO UPDATE SET v = EXCLUDED.v; RETURN NEW; END $$;
      CREATE TRIGGER t_to_u AFTER INSERT OR UPDATE ON {s}.t FOR EACH ROW EXECUTE FUNCTION {s}.copy_to_u()""")
def _trigger(run, via, i):
    run.direct(f"INSERT INTO {{s}}.t VALUES ({i}, 0)")
    t = run.track("SELECT v FROM {s}.u WHERE id = %s", (i,))
    run.check([t], via, run.write(via, f"UPDATE {{s}}.t SET v = v + 1 WHERE id = {i}"))


@case("cascade_delete", "DELETE of a parent row removes its children (ON DELETE CASCADE): cached reads of the child",
      """CREATE TABLE {s}.parent (id int PRIMARY KEY);
      CREATE TABLE {s}.child (id int PRIMARY KEY, parent_id int NOT NULL REFERENCES {s}.parent ON DELETE CASCADE);
      CREATE INDEX ON {s}.child (parent_id)""")
def _cascade_delete(run, via, i):
    run.direct(f"INSERT INTO {{s}}.parent VALUES ({i})",
               f"INSERT INTO {{s}}.child SELECT {i} * 10 + k, {i} FROM generate_series(0, 2) k")
    t = run.track("SELECT count(*) FROM {s}.child WHERE parent_id = %s", (i,))
    run.check([t], via, run.write(via, f"DELETE FROM {{s}}.parent WHERE id = {i}"))


@case("cascade_update", "UPDATE of a parent's key rewrites its children (ON UPDATE CASCADE): cached reads of the child",
      """CREATE TABLE {s}.parent (id int PRIMARY KEY);
      CREATE TABLE {s}.child (id int PRIMARY KEY, parent_id int NOT NULL REFERENCES {s}.parent ON UPDATE CASCADE)""")
def _cascade_update(run, via, i):
    run.direct(f"INSERT INTO {{s}}.parent VALUES ({i})", f"INSERT INTO {{s}}.child VALUES ({i}, {i})")
    t = run.track("SELECT parent_id FROM {s}.child WHERE id = %s", (i,))
    run.check([t], via, run.write(via, f"UPDATE {{s}}.parent SET id = id + 1000000 WHERE id = {i}"))


@case("rule", "CREATE RULE ... DO ALSO: an UPDATE of t also updates u: cached reads of u",
      """CREATE TABLE {s}.t (id int PRIMARY KEY, v int NOT NULL);
      CREATE TABLE {s}.u (id int PRIMARY KEY, v int NOT NULL);
      CREATE RULE t_also_u AS ON UPDATE TO {s}.t DO ALSO UPDATE {s}.u SET v = NEW.v WHERE id = NEW.id""")
def _rule(run, via, i):
    run.direct(f"INSERT INTO {{s}}.t VALUES ({i}, 0)", f"INSERT INTO {{s}}.u VALUES ({i}, 0)")
    t = run.track("SELECT v FROM {s}.u WHERE id = %s", (i,))
    run.check([t], via, run.write(via, f"UPDATE {{s}}.t SET v = v + 1 WHERE id = {i}"))


@case("partition", "a write to a partition read through the parent, and a write through the parent read in the partition",
      """CREATE TABLE {s}.p (id int NOT NULL, v int NOT NULL) PARTITION BY RANGE (id);
      CREATE TABLE {s}.p_lo PARTITION OF {s}.p FOR VALUES FROM (0) TO (1000000);
      CREATE TABLE {s}.p_hi PARTITION OF {s}.p FOR VALUES FROM (1000000) TO (MAXVALUE)""")
def _partition(run, via, i):
    run.direct(f"INSERT INTO {{s}}.p VALUES ({i}, 0)")
    parent = run.track("SELECT v FROM {s}.p WHERE id = %s", (i,))
    part = run.track("SELECT v FROM {s}.p_lo WHERE id = %s", (i,))
    run.check([parent, part], via, run.write(via, f"UPDATE {{s}}.p_lo SET v = v + 1 WHERE id = {i}"))
    run.check([parent, part], via, run.write(via, f"UPDATE {{s}}.p SET v = v + 1 WHERE id = {i}"))


@case("partition_attach", "a partition attached, then detached: reads of the parent",
      """CREATE TABLE {s}.pa (id int NOT NULL, v int NOT NULL) PARTITION BY RANGE (id);
      CREATE TABLE {s}.pa_1 PARTITION OF {s}.pa FOR VALUES FROM (0) TO (1000);
      INSERT INTO {s}.pa SELECT g, 0 FROM generate_series(1, 10) g;
      CREATE TABLE {s}.pa_2 (id int NOT NULL, v int NOT NULL);
      INSERT INTO {s}.pa_2 SELECT g, 0 FROM generate_series(1000, 1004) g""")
def _partition_attach(run, via, i):
    t = run.track("SELECT count(*) FROM {s}.pa WHERE id > %s", (-i,))
    run.check([t], via, run.write(via, "ALTER TABLE {s}.pa ATTACH PARTITION {s}.pa_2 FOR VALUES FROM (1000) TO (2000)"))
    run.check([t], via, run.write(via, "ALTER TABLE {s}.pa DETACH PARTITION {s}.pa_2"))


@case("inheritance", "a write to an inheriting table (INHERITS) read through its parent",
      """CREATE TABLE {s}.ip (id int NOT NULL, v int NOT NULL);
      CREATE TABLE {s}.ic () INHERITS ({s}.ip)""")
def _inheritance(run, via, i):
    run.direct(f"INSERT INTO {{s}}.ic VALUES ({i}, 0)")
    t = run.track("SELECT v FROM {s}.ip WHERE id = %s", (i,))
    run.check([t], via, run.write(via, f"UPDATE {{s}}.ic SET v = v + 1 WHERE id = {i}"))
    run.check([t], via, run.write(via, f"INSERT INTO {{s}}.ic VALUES ({i}, 100)"))


@case("savepoint", "ROLLBACK TO SAVEPOINT undoes a write, the rest commits; a whole ROLLBACK leaves nothing; "
      "the writer reads its own uncommitted writes inside its transaction",
      "CREATE TABLE {s}.kv (id int PRIMARY KEY, v int NOT NULL)")
def _savepoint(run, via, i):
    run.direct(f"INSERT INTO {{s}}.kv VALUES ({i}, 0)")
    t = run.track("SELECT v FROM {s}.kv WHERE id = %s", (i,))
    c = run.conn(via)
    c.execute("BEGIN")
    c.execute("SAVEPOINT a")
    c.execute(f"UPDATE {run.s}.kv SET v = -999 WHERE id = {i}")
    if via == "proxy":
        run.expect_own(t, c, [(-999,)], "UPDATE ... SET v = -999")
    c.execute("ROLLBACK TO SAVEPOINT a")
    if via == "proxy":
        run.expect_own(t, c, [(0,)], "ROLLBACK TO SAVEPOINT")
    c.execute(f"UPDATE {run.s}.kv SET v = v + 1 WHERE id = {i}")
    c.execute("COMMIT")
    run.check([t], via, time.monotonic())
    c.execute("BEGIN")
    c.execute(f"UPDATE {run.s}.kv SET v = -998 WHERE id = {i}")
    if via == "proxy":
        run.expect_own(t, c, [(-998,)], "UPDATE ... SET v = -998")
    c.execute("ROLLBACK")
    run.check([t], via, time.monotonic())


@case("two_phase", "PREPARE TRANSACTION, a read while it is prepared, COMMIT PREPARED from another session",
      "CREATE TABLE {s}.kv (id int PRIMARY KEY, v int NOT NULL)")
def _two_phase(run, via, i):
    run.direct(f"INSERT INTO {{s}}.kv VALUES ({i}, 0)")
    t = run.track("SELECT v FROM {s}.kv WHERE id = %s", (i,))
    gid = f"{run.s}_{i}"
    c = run.conn(via)
    c.execute("BEGIN")
    c.execute(f"UPDATE {run.s}.kv SET v = v + 1 WHERE id = {i}")
    c.execute(f"PREPARE TRANSACTION '{gid}'")
    # prepared, not committed: the old value is right, and a cache may take it now
    run.check([t], via, time.monotonic())
    other = run.target.connect() if via == "proxy" else psycopg.connect(run.direct_dsn, autocommit=True)
    try:
        other.execute(f"COMMIT PREPARED '{gid}'")
        ack = time.monotonic()
    finally:
        other.close()
    run.check([t], via, ack)


@case("search_path", "the same statement text (simple, extended, a named prepared statement) under two "
      "search_paths: each schema's own rows", "", vias=("none",))
def _search_path(run, via, i):
    if i == 0:
        for k, base in (("a", 1000), ("b", 2000)):
            run.direct(f"CREATE SCHEMA {{s}}_{k}", f"CREATE TABLE {{s}}_{k}.sp (id int PRIMARY KEY, v int NOT NULL)",
                       f"INSERT INTO {{s}}_{k}.sp SELECT g, {base} + g FROM generate_series(0, 99) g")
    sql, params = "SELECT v FROM sp WHERE id = %s", (i,)
    for order in (("a", "b"), ("b", "a")):
        for k in order:
            run.r.execute(f"SET search_path = {run.s}_{k}")
            run.d.execute(f"SET search_path = {run.s}_{k}")
            want = read(run.d, "extended", sql, params)
            for p in run.protocols:
                for _ in range(2):
                    got = read(run.r, p, sql, params)
                    run.result.checks += 1
                    if got != want:
                        run.result.note("wrong", f"{sql} {params} ({p}) with search_path {run.s}_{k}: read {got}, "
                                                 f"that schema holds {want}")
    run.r.execute("RESET search_path")
    run.d.execute("RESET search_path")


@case("bulk_update", "one UPDATE of 10,000 rows: cached point reads and a sum",
      """CREATE TABLE {s}.big (id int PRIMARY KEY, v int NOT NULL);
      INSERT INTO {s}.big SELECT g, 0 FROM generate_series(1, 10000) g""")
def _bulk_update(run, via, i):
    rnd = random.Random(i)
    ts = [run.track("SELECT v FROM {s}.big WHERE id = %s", (rnd.randint(1, 10000),)) for _ in range(4)]
    ts.append(run.track("SELECT sum(v) FROM {s}.big WHERE id <= %s", (10000 + i,)))
    run.check(ts, via, run.write(via, "UPDATE {s}.big SET v = v + 1"))


@case("truncate", "TRUNCATE of a table read by a count",
      "CREATE TABLE {s}.tt (id int NOT NULL, grp int NOT NULL)")
def _truncate(run, via, i):
    run.direct(f"INSERT INTO {{s}}.tt SELECT g, {i} FROM generate_series(1, 5) g")
    t = run.track("SELECT count(*) FROM {s}.tt WHERE grp = %s", (i,))
    run.check([t], via, run.write(via, "TRUNCATE {s}.tt"))


@case("matview", "REFRESH MATERIALIZED VIEW after its base table changed (directly): cached reads of the view",
      """CREATE TABLE {s}.base (id int PRIMARY KEY, v int NOT NULL);
      CREATE MATERIALIZED VIEW {s}.mv AS SELECT id, v FROM {s}.base""")
def _matview(run, via, i):
    run.direct(f"INSERT INTO {{s}}.base VALUES ({i}, 0)", "REFRESH MATERIALIZED VIEW {s}.mv")
    t = run.track("SELECT v FROM {s}.mv WHERE id = %s", (i,))
    run.direct(f"UPDATE {{s}}.base SET v = v + 1 WHERE id = {i}")
    run.check([t], via, run.write(via, "REFRESH MATERIALIZED VIEW {s}.mv"))


# Not with a named prepared statement: PostgreSQL itself refuses to run one whose result
# columns changed ("cached plan must not change result type").
@case("alter_table", "ALTER TABLE ADD COLUMN (with a default): cached SELECT * of the table",
      "CREATE TABLE {s}.at (id int PRIMARY KEY, v int NOT NULL)", protocols=("simple", "extended"))
def _alter_table(run, via, i):
    run.direct(f"INSERT INTO {{s}}.at (id, v) VALUES ({i}, 0)")
    t = run.track("SELECT * FROM {s}.at WHERE id = %s", (i,))
    run.check([t], via, run.write(via, f"ALTER TABLE {{s}}.at ADD COLUMN c{i} int NOT NULL DEFAULT {i}"))


def variants(names=None):
    """(case, via) pairs to run, in CASES order."""
    return [(c.name, v) for c in CASES.values() if names is None or c.name in names for v in c.vias]


def run_case(target: Target, direct_dsn: str, name: str, via: str, iterations=3, protocols=PROTOCOLS) -> Result:
    """Case `name` against `target` (`via` proxy or direct), `iterations` times. Errors of the
    case (a statement the target refused...) are in result.error, not raised."""
    c = CASES[name]
    run = Run(target, direct_dsn, name, via, tuple(p for p in protocols if p in c.protocols))
    try:
        run.direct("CREATE SCHEMA {s}")
        for st in filter(str.strip, split_sql(c.setup)):
            run.direct(st)
        h0 = target.hits()
        for i in range(iterations):
            c.step(run, via, i)
        h1 = target.hits()
        run.result.hits = None if h0 is None or h1 is None else h1 - h0
    except (psycopg.Error, RuntimeError) as e:
        run.result.error = f"{type(e).__name__}: {e}".strip()
    finally:
        run.close()
    return run.result


def split_sql(text):
    """Statements of a setup script: split on ';' outside $$ bodies."""
    out, cur, in_body = [], [], False
    for part in text.split("$$"):
        if in_body:
            cur.append("$$" + part + "$$")
        else:
            pieces = part.split(";")
            cur.append(pieces[0])
            for p in pieces[1:]:
                out.append("".join(cur))
                cur = [p]
        in_body = not in_body
    out.append("".join(cur))
    return [s.strip() for s in out if s.strip()]


def race(target: Target, direct_dsn: str, seconds=3.0, rows=20, readers=3, seed=41) -> Result:
    """Concurrent writers and readers: rows 1..rows/2 written through the cache, the others
    directly, each row by one writer (its version only grows); readers through the cache
    (random row, random protocol). A read is stale if it returns a version older than the last
    one acknowledged before it started (direct rows: before it started minus the bound)."""
    s = f"fc_race_{uuid.uuid4().hex[:8]}"
    res = Result("race", "both")
    d = psycopg.connect(direct_dsn, autocommit=True)
    d.execute(f"CREATE SCHEMA {s}")
    d.execute(f"CREATE TABLE {s}.rc (id int PRIMARY KEY, ver bigint NOT NULL)")
    d.execute(f"INSERT INTO {s}.rc SELECT g, 0 FROM generate_series(1, {rows}) g")
    acks = {i: [(0.0, 0)] for i in range(1, rows + 1)}  # row -> [(ack time, version)]
    lock, stop, errors = threading.Lock(), threading.Event(), []
    master = random.Random(seed)

    def writer(via, ids, rnd):
        c = target.connect() if via == "proxy" else psycopg.connect(direct_dsn, autocommit=True)
        ver = {i: 0 for i in ids}
        try:
            while not stop.is_set():
                i = rnd.choice(ids)
                ver[i] += 1
                c.execute(f"UPDATE {s}.rc SET ver = %s WHERE id = %s", (ver[i], i))
                with lock:
                    acks[i].append((time.monotonic(), ver[i]))
                time.sleep(rnd.random() * 0.01)
        except Exception as e:  # noqa: BLE001 - reported in the result
            errors.append(f"{via} writer: {e!r}")
            stop.set()
        finally:
            c.close()

    proxy_rows = set(range(1, rows // 2 + 1))

    def reader(rnd):
        c = target.connect()
        try:
            while not stop.is_set():
                i = rnd.randint(1, rows)
                p = rnd.choice(PROTOCOLS)
                t0 = time.monotonic()
                bound = 0.0 if i in proxy_rows else target.direct_bound
                with lock:
                    floor = max(v for (at, v) in acks[i] if at <= t0 - bound)
                (got,), = read(c, p, f"SELECT ver FROM {s}.rc WHERE id = %s", (i,))
                with lock:
                    res.checks += 1
                if got < floor:
                    by = "proxy" if i in proxy_rows else "direct"
                    with lock:
                        res.note("stale", f"row {i} ({by} writes, {p}): read version {got}, version {floor} was "
                                          "acknowledged before the read started", by)
        except Exception as e:  # noqa: BLE001
            errors.append(f"reader: {e!r}")
            stop.set()
        finally:
            c.close()

    ths = [threading.Thread(target=writer, args=("proxy", sorted(proxy_rows), random.Random(master.random()))),
           threading.Thread(target=writer, args=("direct", sorted(set(acks) - proxy_rows), random.Random(master.random())))]
    ths += [threading.Thread(target=reader, args=(random.Random(master.random()),)) for _ in range(readers)]
    h0 = target.hits()
    for t in ths:
        t.start()
    stop.wait(seconds)
    stop.set()
    for t in ths:
        t.join(30)
    h1 = target.hits()
    res.hits = None if h0 is None or h1 is None else h1 - h0
    if errors:
        res.error = "; ".join(errors[:3])
    d.execute(f"DROP SCHEMA {s} CASCADE")
    d.close()
    return res
