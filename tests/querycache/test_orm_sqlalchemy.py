"""SQLAlchemy 2.x ORM through the proxy (issue 13, item 7): one scripted workload of a small
web application, run on MariaDB directly and through a proxy per transaction policy
(--query-cache-in-transactions never / read-only / until-write), must give identical results.

The sessions are SQLAlchemy's defaults on PyMySQL: autocommit off, so every ORM read runs
inside a transaction (the proxy sees AUTOCOMMIT off in the reply status). Models: users (a
unique email), posts (FK to users), tags (a string primary key) and post_tags (a composite
key); steps: bulk inserts, session.get, select() with where / order_by / limit, lazy,
selectin and joined relationship loading, updates / inserts / deletes with commit and
rollback, savepoints (session.begin_nested, an IntegrityError inside one), ORM bulk UPDATE /
DELETE, a write made directly on MariaDB (binlog), reads on an AUTOCOMMIT engine and in
`START TRANSACTION READ ONLY` sessions. Every write + commit is followed by a read in a new
session that must show it (asserted inside the workload, and identical to direct).

Hits per step are read from the proxy's Qcache_hits: repeated session reads are served from
the cache only under until-write; read-only transactions under read-only and until-write;
AUTOCOMMIT reads under every policy.
"""

import pytest

from conftest import start_proxy
from harness.mysqlproxy import connect
from qchelpers import check_workload, poll_read, q, until_hit

sa = pytest.importorskip("sqlalchemy", reason="SQLAlchemy missing: pip install -r tests/requirements.txt")
from sqlalchemy import ForeignKey, String, delete, event, func, insert, select, update  # noqa: E402
from sqlalchemy.exc import IntegrityError  # noqa: E402
from sqlalchemy.orm import (DeclarativeBase, Mapped, Session, joinedload, mapped_column,  # noqa: E402
                            relationship, selectinload)

POLICIES = ("never", "read-only", "until-write")
USERS, POSTS = 20, 60
TAGS = ("db", "go", "py", "rs", "web")


class Base(DeclarativeBase):
    pass


class User(Base):
    __tablename__ = "users"
    id: Mapped[int] = mapped_column(primary_key=True)
    email: Mapped[str] = mapped_column(String(120), unique=True)
    name: Mapped[str] = mapped_column(String(64))
    karma: Mapped[int] = mapped_column(default=0)
    posts: Mapped[list["Post"]] = relationship(back_populates="author", order_by="Post.id")


class Post(Base):
    __tablename__ = "posts"
    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), index=True)
    title: Mapped[str] = mapped_column(String(100))
    score: Mapped[int] = mapped_column(default=0)
    author: Mapped[User] = relationship(back_populates="posts")
    tags: Mapped[list["PostTag"]] = relationship(order_by="PostTag.tag_code", cascade="all, delete-orphan")


class Tag(Base):
    __tablename__ = "tags"
    code: Mapped[str] = mapped_column(String(16), primary_key=True)
    label: Mapped[str] = mapped_column(String(64))


class PostTag(Base):
    __tablename__ = "post_tags"
    post_id: Mapped[int] = mapped_column(ForeignKey("posts.id"), primary_key=True)
    tag_code: Mapped[str] = mapped_column(ForeignKey("tags.code"), primary_key=True)
    weight: Mapped[int] = mapped_column(default=1)


def user_row(u):
    """A user as a plain tuple (compared across runs)."""
    return (u.id, u.email, u.name, u.karma)


def post_row(p):
    """A post as a plain tuple."""
    return (p.id, p.user_id, p.title, p.score)


class Ctx:
    """One target of the workload: an engine (sessions in transactions, the default), the same
    on AUTOCOMMIT, one whose transactions start READ ONLY, and a PyMySQL connection straight to
    MariaDB for writes "by another application"."""

    def __init__(self, port, mariadb, database):
        url = f"mysql+pymysql://{mariadb.user}:{mariadb.password}@127.0.0.1:{port}/{database}"
        self.engine = sa.create_engine(url, pool_size=2, max_overflow=0)
        self.autocommit = self.engine.execution_options(isolation_level="AUTOCOMMIT")
        self.ro_engine = sa.create_engine(url, pool_size=1, max_overflow=0)
        event.listen(self.ro_engine, "begin", lambda conn: conn.exec_driver_sql("START TRANSACTION READ ONLY"))
        self.side = connect(mariadb.port, database)

    def close(self):
        """Dispose of the pools and the direct connection."""
        self.engine.dispose()
        self.ro_engine.dispose()
        self.side.close()


# ------------------------------------------------------------------ the workload's steps


def step_schema_and_bulk_insert(ctx):
    """create_all, then ORM bulk INSERTs (insert(Model) with a list of dicts) and a commit."""
    Base.metadata.create_all(ctx.engine)
    with Session(ctx.engine) as s:
        s.execute(insert(User), [{"email": f"u{i}@example.org", "name": f"user {i}", "karma": i % 7}
                                 for i in range(1, USERS + 1)])
        s.execute(insert(Tag), [{"code": c, "label": f"label {c}"} for c in TAGS])
        s.execute(insert(Post), [{"user_id": 1 + i % USERS, "title": f"post {i}", "score": (i * 37) % 100}
                                 for i in range(1, POSTS + 1)])
        s.execute(insert(PostTag), [{"post_id": p, "tag_code": TAGS[(p + k) % len(TAGS)], "weight": k + 1}
                                    for p in range(1, POSTS + 1) for k in range(p % 3)])
        s.commit()
    with Session(ctx.engine) as s:
        return [s.scalar(select(func.count()).select_from(m)) for m in (User, Post, Tag, PostTag)]


def read_page(s, uid):
    """What one "page" of the app reads for user uid, inside session s."""
    u = s.get(User, uid)
    by_email = s.scalars(select(User).where(User.email == f"u{uid}@example.org")).one()
    recent = s.scalars(select(Post).where(Post.user_id == uid).order_by(Post.score.desc(), Post.id).limit(3)).all()
    lazy = [post_row(p) for p in u.posts]  # lazy load
    tag = s.get(Tag, "py")
    pt = s.get(PostTag, (uid, TAGS[(uid + 1) % len(TAGS)]))
    return [user_row(u), user_row(by_email), [post_row(p) for p in recent], lazy, (tag.code, tag.label),
            None if pt is None else (pt.post_id, pt.tag_code, pt.weight)]


def read_lists(s):
    """Eager loading: selectinload of users' posts, joinedload of posts' authors and tags."""
    users = s.scalars(select(User).options(selectinload(User.posts)).where(User.id <= 5).order_by(User.id)).all()
    posts = s.scalars(select(Post).options(joinedload(Post.author), selectinload(Post.tags))
                      .where(Post.score >= 50).order_by(Post.id).limit(10)).unique().all()
    return ([(u.id, [p.id for p in u.posts]) for u in users],
            [(p.id, p.author.email, [(t.tag_code, t.weight) for t in p.tags]) for p in posts])


def step_session_reads(ctx):
    """The same pages read in 4 new sessions (each commits, as a request would): the later
    rounds are what a cache can answer; every round must equal the first."""
    rounds = []
    for _ in range(4):
        with Session(ctx.engine) as s:
            rounds.append([read_page(s, uid) for uid in (1, 2, 3, 7)] + [read_lists(s)])
            s.commit()
    assert all(r == rounds[0] for r in rounds), "the same reads differ between sessions"
    return rounds[0]


def step_update_insert_delete(ctx):
    """Each write + commit, then a read in a new session that must show it (its old answer
    was read, and may be cached, just before)."""
    out = []
    with Session(ctx.engine) as s:
        read_page(s, 1)
        u = s.get(User, 1)
        u.name = "renamed"
        u.karma += 10
        s.commit()
    with Session(ctx.engine) as s:
        u = s.get(User, 1)
        assert (u.name, u.karma) == ("renamed", 1 + 10), user_row(u)
        out.append(read_page(s, 1))
    with Session(ctx.engine) as s:
        before = [p.id for p in s.get(User, 2).posts]
        s.add(Post(user_id=2, title="new post", score=99))
        s.commit()
    with Session(ctx.engine) as s:
        after = [post_row(p) for p in s.get(User, 2).posts]
        assert [p[0] for p in after][:-1] == before and after[-1][2:] == ("new post", 99), after
        top = s.scalars(select(Post).where(Post.user_id == 2).order_by(Post.score.desc(), Post.id).limit(3)).all()
        assert post_row(top[0])[2] == "new post"
        out.append([after, [post_row(p) for p in top]])
    with Session(ctx.engine) as s:
        victim = s.get(Post, 3)
        s.delete(victim)  # its post_tags go with it (cascade delete-orphan)
        s.commit()
    with Session(ctx.engine) as s:
        assert s.get(Post, 3) is None
        out.append([p.id for p in s.get(User, 3).posts])
        out.append(s.scalar(select(func.count()).select_from(PostTag).where(PostTag.post_id == 3)))
    return out


def step_rollback(ctx):
    """A flushed, read-back and rolled-back change: visible inside its transaction only."""
    with Session(ctx.engine) as s:
        before = user_row(s.get(User, 4))
        s.get(User, 4).karma = 1000
        s.flush()
        inside = s.scalar(select(User.karma).where(User.id == 4))
        assert inside == 1000, inside
        s.add(Post(user_id=4, title="never", score=1))
        s.flush()
        n_inside = s.scalar(select(func.count()).select_from(Post).where(Post.user_id == 4))
        s.rollback()
    with Session(ctx.engine) as s:
        after = user_row(s.get(User, 4))
        n_after = s.scalar(select(func.count()).select_from(Post).where(Post.user_id == 4))
    assert after == before and n_after == n_inside - 1, (before, after, n_inside, n_after)
    return [before, inside, n_inside, after, n_after]


def step_savepoints(ctx):
    """session.begin_nested(): one savepoint rolled back, one released, one that fails on the
    unique email (IntegrityError) and is rolled back while the outer transaction goes on."""
    with Session(ctx.engine) as s:
        s.get(User, 5)
        s.get(User, 6)
        sp = s.begin_nested()
        s.get(User, 5).name = "rolled back"
        s.flush()
        sp.rollback()
        with s.begin_nested():
            s.get(User, 6).name = "kept"
        failed = None
        try:
            with s.begin_nested():
                s.add(User(email="u7@example.org", name="duplicate"))
        except IntegrityError as e:
            failed = e.orig.args[0]
        s.get(User, 8).karma = 88
        s.commit()
    with Session(ctx.engine) as s:
        got = [user_row(s.get(User, i)) for i in (5, 6, 7, 8)]
        n = s.scalar(select(func.count()).select_from(User))
    assert [g[2] for g in got[:2]] == ["user 5", "kept"] and got[3][3] == 88 and n == USERS, got
    assert failed == 1062, failed  # ER_DUP_ENTRY
    return [got, n, failed]


def step_bulk_update_delete(ctx):
    """ORM bulk UPDATE by WHERE, bulk UPDATE by primary key (executemany), bulk DELETE."""
    with Session(ctx.engine) as s:
        s.scalar(select(func.sum(User.karma)))
        r1 = s.execute(update(User).where(User.karma < 3).values(karma=User.karma + 100)).rowcount
        s.execute(update(User), [{"id": i, "name": f"bulk {i}"} for i in (9, 10, 11)])
        r2 = s.execute(delete(PostTag).where(PostTag.weight == 2)).rowcount
        s.commit()
    with Session(ctx.engine) as s:
        agg = s.execute(select(func.count(), func.sum(User.karma), func.max(User.karma))).one()
        names = s.scalars(select(User.name).where(User.id.in_([9, 10, 11])).order_by(User.id)).all()
        left = s.scalar(select(func.count()).select_from(PostTag).where(PostTag.weight == 2))
    assert names == ["bulk 9", "bulk 10", "bulk 11"] and left == 0, (names, left)
    return [r1, r2, tuple(agg), names]


def step_direct_write(ctx):
    """Another application updates a user straight on MariaDB: new sessions through the
    proxy see it once the binlog invalidation arrived (polled, at most 5 s)."""
    with Session(ctx.engine) as s:
        old = user_row(s.get(User, 12))
    q(ctx.side, "UPDATE users SET name = 'written directly', karma = karma + 1 WHERE id = 12")
    def read():
        with Session(ctx.engine) as s:
            return user_row(s.get(User, 12))

    new = poll_read(read, lambda r: r[2] == "written directly")
    assert new == (old[0], old[1], "written directly", old[3] + 1), (old, new)
    return [old, new]


def step_autocommit_reads(ctx):
    """Reads on the AUTOCOMMIT engine (outside transactions), 4 rounds."""
    rounds = []
    for _ in range(4):
        with Session(ctx.autocommit) as s:
            rounds.append([read_page(s, uid) for uid in (13, 14)])
    assert all(r == rounds[0] for r in rounds)
    return rounds[0]


def step_read_only_transactions(ctx):
    """Sessions whose transactions begin with START TRANSACTION READ ONLY, 4 rounds."""
    rounds = []
    for _ in range(4):
        with Session(ctx.ro_engine) as s:
            rounds.append([read_page(s, uid) for uid in (15, 16)] + [read_lists(s)])
            s.commit()
    assert all(r == rounds[0] for r in rounds)
    return rounds[0]


def step_final_state(ctx):
    """Everything, in one read: the final state of all tables."""
    with Session(ctx.engine) as s:
        return [[user_row(u) for u in s.scalars(select(User).order_by(User.id))],
                [post_row(p) for p in s.scalars(select(Post).order_by(Post.id))],
                s.execute(select(PostTag.post_id, PostTag.tag_code, PostTag.weight)
                          .order_by(PostTag.post_id, PostTag.tag_code)).all()]


STEPS = [step_schema_and_bulk_insert, step_session_reads, step_update_insert_delete, step_rollback,
         step_savepoints, step_bulk_update_delete, step_direct_write, step_autocommit_reads,
         step_read_only_transactions, step_final_state]


def until_tables_known(px, database):
    """Through proxy px, read each table (autocommit) until a read is a hit: the proxy looks a
    table up (information_schema) on its first cacheable read and caches nothing of it before,
    so without this the first steps would measure that lookup, not the policy."""
    c = px.connect(database)
    try:
        for m in (User, Post, Tag, PostTag):
            until_hit(px, c, f"SELECT COUNT(*) FROM {m.__tablename__}")
    finally:
        c.close()


def run_workload(ctx, px=None, database=None):
    """{step name: result} and, through proxy px, {step name: Qcache_hits during the step}
    (after the first step, the proxy is given time to learn the new tables)."""
    results, hits = {}, {}
    for step in STEPS:
        before = px.counters()["Qcache_hits"] if px else 0
        results[step.__name__] = step(ctx)
        hits[step.__name__] = px.counters()["Qcache_hits"] - before if px else 0
        if px and step is step_schema_and_bulk_insert:
            until_tables_known(px, database)
    return results, hits


# ------------------------------------------------------------------ fixtures and tests


@pytest.fixture(scope="module")
def direct(mariadb):
    """The workload's results on MariaDB directly (database orm_direct)."""
    mariadb.sql("CREATE DATABASE orm_direct")
    ctx = Ctx(mariadb.port, mariadb, "orm_direct")
    try:
        return run_workload(ctx)[0]
    finally:
        ctx.close()


# Steps whose repeated reads the cache must answer (hits > 0), per policy; the others must
# have none where the policy excludes them.
EXPECT_HITS = {
    "never": {"step_autocommit_reads"},
    "read-only": {"step_autocommit_reads", "step_read_only_transactions"},
    "until-write": {"step_autocommit_reads", "step_read_only_transactions", "step_session_reads",
                    "step_update_insert_delete"},
}
NO_HITS = {
    "never": {"step_session_reads", "step_read_only_transactions", "step_update_insert_delete"},
    "read-only": {"step_session_reads", "step_update_insert_delete"},
    "until-write": set(),
}


@pytest.mark.parametrize("policy", POLICIES)
def test_sqlalchemy_workload_identical_to_direct(mariadb, direct, policy, tmp_path):
    """The workload through a proxy with `policy`: results as on MariaDB, hits where the policy allows them."""
    db = "orm_" + policy.replace("-", "_")
    mariadb.sql(f"CREATE DATABASE {db}")
    with start_proxy(mariadb, "--query-cache-in-transactions", policy, log=tmp_path / "sqlcached.log") as px:
        ctx = Ctx(px.mysql_port, mariadb, db)
        try:
            got, hits = run_workload(ctx, px, db)
        finally:
            ctx.close()
        check_workload(policy, got, hits, direct, EXPECT_HITS[policy], NO_HITS[policy])
