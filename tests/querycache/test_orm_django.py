"""Django's ORM with its `mysql` backend through the proxy (issue 13, item 7): one scripted
workload of a small web application (tests/querycache/django_app: models, two views, a router)
run on MariaDB directly and through a proxy per transaction policy
(--query-cache-in-transactions never / read-only / until-write) must give identical results.

Django runs in autocommit by default: plain ORM reads are outside transactions; inside
`transaction.atomic()` (and every request with ATOMIC_REQUESTS) it turns autocommit off, so
the proxy sees those reads inside a transaction. Steps: schema_editor, bulk_create (INSERT ...
RETURNING on MariaDB), get / filter / exclude / order_by / slicing / values_list,
select_related and prefetch_related, aggregates and annotations, a string and a composite
primary key, CRUD with save / QuerySet.update(F()) / delete (cascades), get_or_create,
atomic blocks rolled back by an exception, nested atomic (savepoints, an IntegrityError in
one), requests through django.test.Client with ATOMIC_REQUESTS, and a write made directly
on MariaDB (binlog). Each write is followed by a read that must show it (asserted here, and
identical to direct).

Django reaches MariaDB through PyMySQL installed as MySQLdb (pure Python, already a test
dependency): PyMySQL reports a mysqlclient-compatible version_info that satisfies Django's
check; its submodules are aliased too (install_pymysql_as_mysqldb), so the rest of the test
process keeps one pymysql. Hits per step come from the proxy's Qcache_hits: autocommit
reads are served from the cache under every policy, reads inside atomic blocks and requests
only under until-write (Django has no START TRANSACTION READ ONLY).
"""
import importlib
import json
import sys

import pytest

from conftest import start_proxy
from harness.mysqlproxy import connect
from qchelpers import check_workload, poll_read, q, until_hit

django = pytest.importorskip("django", reason="Django missing: pip install -r tests/requirements.txt")
pymysql = pytest.importorskip("pymysql", reason="PyMySQL missing: pip install -r tests/requirements.txt")


def install_pymysql_as_mysqldb():
    """pymysql.install_as_MySQLdb(), and every pymysql submodule registered under MySQLdb's name
    too. Without the latter, Django's `from MySQLdb.converters import ...` loads second copies
    of pymysql's submodules (converters, err, constants) and the import rebinds `pymysql.err`
    to the copy, whose exception classes are not the ones PyMySQL raises: `except
    pymysql.err.MySQLError` in later test modules of the same process would stop catching."""
    for name in ("constants.CLIENT", "constants.FIELD_TYPE", "constants.ER", "converters", "err", "cursors"):
        importlib.import_module("pymysql." + name)
    pymysql.install_as_MySQLdb()
    for name in [n for n in sys.modules if n.startswith("pymysql.")]:
        sys.modules.setdefault("MySQLdb" + name[len("pymysql"):], sys.modules[name])


install_pymysql_as_mysqldb()

POLICIES = ("never", "read-only", "until-write")
AUTHORS, POSTS = 20, 60
TAGS = ("db", "go", "py", "rs", "web")


def alias_of(policy):
    """The DATABASES alias (and database name suffix) of a policy's proxy."""
    return policy.replace("-", "_")


@pytest.fixture(scope="module")
def proxies(mariadb, tmp_path_factory):
    """One proxy per policy, and Django configured with a database alias for MariaDB directly
    ("default", database dj_direct) and one per proxy (database dj_<policy>)."""
    from django.conf import settings

    if settings.configured:
        pytest.fail("Django settings were configured before this module: it needs its own")
    out = {}
    try:
        for policy in POLICIES:
            log = tmp_path_factory.mktemp(policy) / "sqlcached.log"
            out[policy] = start_proxy(mariadb, "--query-cache-in-transactions", policy, log=log)

        def db(port, name):
            """A DATABASES entry for the test account on 127.0.0.1:port."""
            mariadb.sql(f"CREATE DATABASE {name}")
            return {"ENGINE": "django.db.backends.mysql", "NAME": name, "USER": mariadb.user,
                    "PASSWORD": mariadb.password, "HOST": "127.0.0.1", "PORT": str(port),
                    "ATOMIC_REQUESTS": False, "OPTIONS": {"connect_timeout": 10}}

        databases = {"default": db(mariadb.port, "dj_direct")}
        for policy, px in out.items():
            databases[alias_of(policy)] = db(px.mysql_port, f"dj_{alias_of(policy)}")
        settings.configure(DATABASES=databases, INSTALLED_APPS=["django_app"], DATABASE_ROUTERS=["django_app.AliasRouter"],
                           ROOT_URLCONF="django_app.urls", ALLOWED_HOSTS=["testserver"], MIDDLEWARE=[],
                           SECRET_KEY="sqlcached-tests", USE_TZ=False, DEFAULT_AUTO_FIELD="django.db.models.AutoField")
        django.setup()
        yield out
    finally:
        from django.db import connections

        connections.close_all()
        for px in out.values():
            px.stop()


# ------------------------------------------------------------------ the workload's steps


def step_schema_and_bulk_create(alias):
    """Tables through schema_editor, rows through bulk_create."""
    from django.db import connections
    from django_app.models import MODELS, Author, Post, PostTag, Tag

    with connections[alias].schema_editor() as editor:
        for m in MODELS:
            editor.create_model(m)
    authors = Author.objects.bulk_create([Author(email=f"u{i}@example.org", name=f"user {i}", karma=i % 7)
                                          for i in range(1, AUTHORS + 1)])
    Tag.objects.bulk_create([Tag(code=c, label=f"label {c}") for c in TAGS])
    posts = Post.objects.bulk_create([Post(author_id=1 + i % AUTHORS, title=f"post {i}", score=(i * 37) % 100)
                                      for i in range(1, POSTS + 1)])
    PostTag.objects.bulk_create([PostTag(post_id=p, tag_id=TAGS[(p + k) % len(TAGS)], weight=k + 1)
                                 for p in range(1, POSTS + 1) for k in range(p % 3)])
    # MariaDB returns the new ids (INSERT ... RETURNING): through the proxy too.
    return [[a.id for a in authors], [p.id for p in posts], [m.objects.count() for m in MODELS]]


def read_page(author_id):
    """One page of reads for an author (filter / exclude / slicing / values_list, a string
    and a composite primary key, select_related, prefetch_related, aggregates)."""
    from django.db.models import Avg, Count, Max, Sum
    from django_app.models import Author, Post, PostTag, Tag

    a = Author.objects.get(pk=author_id)
    by_email = Author.objects.get(email=f"u{author_id}@example.org")
    top = [p.row() for p in Post.objects.filter(author=a).order_by("-score", "id")[:3]]
    others = list(Post.objects.exclude(author=a).filter(score__gte=90).values_list("id", "score")[:5])
    tag = Tag.objects.get(pk="py")
    pt = PostTag.objects.filter(pk=(author_id, TAGS[(author_id + 1) % len(TAGS)])).first()
    joined = [(p.id, p.author.email) for p in Post.objects.select_related("author").filter(score__lt=10)[:5]]
    prefetched = [(x.id, [p.id for p in x.posts.all()]) for x in Author.objects.prefetch_related("posts").filter(id__lte=3)]
    agg = Post.objects.filter(author=a).aggregate(n=Count("id"), total=Sum("score"), best=Max("score"), avg=Avg("score"))
    ranked = list(Author.objects.annotate(n=Count("posts")).order_by("-n", "id").values_list("id", "n")[:3])
    return [a.row(), by_email.row(), top, others, (tag.code, tag.label), pt and pt.row(), joined, prefetched,
            sorted((k, float(v) if v is not None else None) for k, v in agg.items()), ranked]


def step_autocommit_reads(alias):
    """The same pages read 4 times outside transactions (Django's autocommit)."""
    rounds = [[read_page(i) for i in (1, 2, 3)] for _ in range(4)]
    assert all(r == rounds[0] for r in rounds), "the same reads differ between rounds"
    return rounds[0]


def step_atomic_reads(alias):
    """The same pages read in 4 transaction.atomic() blocks."""
    from django.db import transaction

    rounds = []
    for _ in range(4):
        with transaction.atomic(using=alias):
            rounds.append([read_page(i) for i in (4, 5, 6)])
    assert all(r == rounds[0] for r in rounds), "the same reads differ between transactions"
    return rounds[0]


def request(method, url):
    """One request through django.test.Client: (status, JSON body)."""
    from django.test import Client

    r = getattr(Client(), method)(url)
    return r.status_code, json.loads(r.content)


def step_atomic_requests(alias):
    """ATOMIC_REQUESTS on: each request is one transaction. Pages read 4 times, then a write
    request, then the page again: it shows the write (it was cached just before)."""
    from django.db import connections

    connections[alias].settings_dict["ATOMIC_REQUESTS"] = True
    try:
        pages = [request("get", f"/author/{i}/") for _ in range(4) for i in (7, 8)]
        assert all(p == pages[i % 2] for i, p in enumerate(pages)), pages
        bumped = request("post", "/author/7/karma/")
        after = request("get", "/author/7/")
    finally:
        connections[alias].settings_dict["ATOMIC_REQUESTS"] = False
    assert bumped == after and after[1]["author"][3] == pages[0][1]["author"][3] + 1, (pages[0], bumped, after)
    return [pages[:2], after]


def step_crud(alias):
    """create / save / QuerySet.update(F()) / delete (cascading to post tags) / get_or_create,
    each committed (autocommit) and then read back: the read must show it."""
    from django.db.models import F
    from django_app.models import Author, Post, PostTag

    out = []
    read_page(9)
    p = Post.objects.create(author_id=9, title="new post", score=99)  # INSERT ... RETURNING
    top = read_page(9)[2]
    assert top[0] == (p.id, 9, "new post", 99), top
    out.append(top)
    a = Author.objects.get(pk=10)
    a.name = "renamed"
    a.save()
    assert Author.objects.get(pk=10).name == "renamed"
    n = Author.objects.filter(karma__lt=3).update(karma=F("karma") + 100)
    out.append([n, sorted(Author.objects.values_list("id", "karma"))])
    before = PostTag.objects.filter(post_id=5).count()
    Post.objects.filter(pk=5).delete()
    assert not Post.objects.filter(pk=5).exists() and PostTag.objects.filter(post_id=5).count() == 0
    obj, created = Author.objects.get_or_create(email="new@example.org", defaults={"name": "new"})
    again, created2 = Author.objects.get_or_create(email="new@example.org", defaults={"name": "other"})
    assert created and not created2 and again.row() == obj.row()
    out.append([before, obj.row(), Author.objects.count()])
    return out


def step_rollback(alias):
    """An atomic block that wrote and then raised: nothing of it is visible afterwards."""
    from django.db import transaction
    from django_app.models import Author, Post

    before = read_page(11)
    with pytest.raises(RuntimeError):
        with transaction.atomic(using=alias):
            Author.objects.filter(pk=11).update(name="never")
            Post.objects.create(author_id=11, title="never", score=100)
            inside = read_page(11)
            assert inside[0][2] == "never" and inside[2][0][2] == "never", inside
            raise RuntimeError("roll back")
    after = read_page(11)
    assert after == before, (before, after)
    return after


def step_nested_atomic(alias):
    """Nested atomic blocks are savepoints: one rolled back by an IntegrityError (duplicate
    email) while the outer transaction goes on, one kept, one rolled back by set_rollback."""
    from django.db import IntegrityError, transaction
    from django.db.models import F
    from django_app.models import Author

    with transaction.atomic(using=alias):
        read_page(12)
        Author.objects.filter(pk=12).update(name="outer")
        failed = None
        try:
            with transaction.atomic(using=alias):
                Author.objects.create(email="u13@example.org", name="duplicate")
        except IntegrityError as e:
            failed = e.args[0]
        with transaction.atomic(using=alias):
            Author.objects.filter(pk=13).update(karma=F("karma") + 1000)
        with transaction.atomic(using=alias):
            Author.objects.filter(pk=14).update(name="rolled back")
            transaction.set_rollback(True, using=alias)
    got = [Author.objects.get(pk=i).row() for i in (12, 13, 14)]
    assert failed == 1062 and got[0][2] == "outer" and got[1][3] >= 1000 and got[2][2] == "user 14", (failed, got)
    return [failed, got, Author.objects.count()]


def step_direct_write(alias):
    """Another application updates an author straight on MariaDB: Django's next reads (through
    the proxy) show it once the binlog invalidation arrived (polled, at most 5 s)."""
    from django.db import connections
    from django_app.models import Author

    old = Author.objects.get(pk=15).row()
    direct = connections["default"].settings_dict  # MariaDB itself
    side = connect(int(direct["PORT"]), connections[alias].settings_dict["NAME"])
    try:
        q(side, "UPDATE django_app_author SET name = 'written directly', karma = karma + 1 WHERE id = 15")
    finally:
        side.close()
    new = poll_read(lambda: Author.objects.get(pk=15).row(), lambda r: r[2] == "written directly")
    assert new == (old[0], old[1], "written directly", old[3] + 1), (old, new)
    return [old, new]


def step_final_state(alias):
    """Everything, in one read: the final state of all tables."""
    from django_app.models import Author, Post, PostTag

    return [[a.row() for a in Author.objects.order_by("id")], [p.row() for p in Post.objects.all()],
            [t.row() for t in PostTag.objects.order_by("post_id", "tag_id")]]


STEPS = [step_schema_and_bulk_create, step_autocommit_reads, step_atomic_reads, step_atomic_requests, step_crud,
         step_rollback, step_nested_atomic, step_direct_write, step_final_state]

def until_tables_known(px, database):
    """Through proxy px, read each table (autocommit) until a read is a hit: the proxy looks a
    table up on its first cacheable read and caches nothing of it before."""
    c = px.connect(database)
    try:
        for t in ("author", "post", "tag", "posttag"):
            until_hit(px, c, f"SELECT COUNT(*) FROM django_app_{t}")
    finally:
        c.close()


def run_workload(alias, px=None):
    """{step name: result} on database `alias` and, through proxy px, {step name: Qcache_hits
    during the step}."""
    from django.db import connections
    from django_app import ALIAS

    token = ALIAS.set(alias)
    results, hits = {}, {}
    try:
        for step in STEPS:
            before = px.counters()["Qcache_hits"] if px else 0
            results[step.__name__] = step(alias)
            hits[step.__name__] = px.counters()["Qcache_hits"] - before if px else 0
            if px and step is step_schema_and_bulk_create:
                until_tables_known(px, connections[alias].settings_dict["NAME"])
    finally:
        ALIAS.reset(token)
        connections[alias].close()
    return results, hits


# ------------------------------------------------------------------ tests


@pytest.fixture(scope="module")
def direct(proxies):
    """The workload's results on MariaDB directly (alias "default")."""
    return run_workload("default")[0]


EXPECT_HITS = {
    "never": {"step_autocommit_reads"},
    "read-only": {"step_autocommit_reads"},
    "until-write": {"step_autocommit_reads", "step_atomic_reads", "step_atomic_requests"},
}
NO_HITS = {
    "never": {"step_atomic_reads", "step_atomic_requests"},
    "read-only": {"step_atomic_reads", "step_atomic_requests"},
    "until-write": set(),
}


@pytest.mark.parametrize("policy", POLICIES)
def test_django_workload_identical_to_direct(proxies, direct, policy):
    """The workload through the proxy with `policy`: results as on MariaDB, hits where the policy allows them."""
    px = proxies[policy]
    got, hits = run_workload(alias_of(policy), px)
    check_workload(policy, got, hits, direct, EXPECT_HITS[policy], NO_HITS[policy])
