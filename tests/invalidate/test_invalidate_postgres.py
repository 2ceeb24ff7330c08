"""--invalidate=postgres:SCHEMA.TABLE=TEMPLATE: plain memcached keys dropped when PostgreSQL's
WAL (logical replication, a slot and a publication sqlcached makes) shows their rows changed.

Real PostgreSQL 15 (scripts/postgres.sh: wal_level=logical) and real sqlcached processes:
- UPDATE, INSERT, DELETE made straight on PostgreSQL drop the keys of the before and after
  images (REPLICA IDENTITY FULL: a changed email drops the old key); TRUNCATE flushes;
  `wal_*` figures in `stats` (slot, wal_status, lag);
- a rule naming a column the WAL does not carry the old value of (not in the key, identity
  DEFAULT), a missing column, a role without REPLICATION, `wal_level=replica`: the start
  stops (exit 78) or --check-config fails, each with its fix;
- kill -9 of sqlcached with --data-dir: rows changed while it was down are invalidated after
  the restart (the slot resumes at the confirmed position); PostgreSQL restarted and killed
  under a running sqlcached: the stream comes back and invalidations go on;
- the slot dropped under a running sqlcached: recreated, plain keys flushed, said in the log;
- --pg-drop-slot drops the slot and the publication.
"""
import itertools
import os
import subprocess
import time

import pytest

from harness.mysqlproxy import stats
from harness.postgres import start_postgres
from harness.servers import free_port, sqlcached_argv, start_sqlcached
from inv_helpers import mc, wait_gone

_n = itertools.count(1)
EX_CONFIG = 78


@pytest.fixture(scope="module")
def pg():
    with start_postgres() as pg:
        pg.sql("""
CREATE TABLE users (id int PRIMARY KEY, email text, name text);
ALTER TABLE users REPLICA IDENTITY FULL;
CREATE TABLE orders (id int PRIMARY KEY, total int);
CREATE TABLE plain (id int PRIMARY KEY, email text);
""")
        yield pg


def pg_args(pg, slot):
    return ["--pg-backend", f"{pg.host}:{pg.port}", "--pg-user", pg.user, "--pg-database", "postgres",
            "--pg-backend-sslmode", "disable", "--pg-slot", slot, "--pg-publication", slot]


def env(pg):
    return {"SQLCACHED_PG_PASSWORD": pg.password}


def start(pg, *rules, slot=None, extra=(), log=None, wait=True):
    slot = slot or f"inv_{os.getpid()}_{next(_n)}"
    args = pg_args(pg, slot)
    for r in rules:
        args += ["--invalidate", r]
    srv = start_sqlcached(*args, *extra, log=log, env=env(pg))
    srv.slot = slot
    if wait:
        wait_connected(srv)
    return srv


def wait_connected(srv, timeout=20):
    deadline = time.monotonic() + timeout
    while stats(srv.port).get("wal_connected") != 1:
        assert time.monotonic() < deadline, "the WAL never flowed"
        time.sleep(0.05)


def drop(pg, slot):
    pg.sql(f"SELECT pg_drop_replication_slot('{slot}') FROM pg_replication_slots WHERE slot_name = '{slot}';"
           f"DROP PUBLICATION IF EXISTS {slot};")


USERS = ["postgres:public.users=user:{id}", "postgres:public.users=user_by_email:{email|lower}"]


def test_rows_tables_and_figures(pg):
    pg.sql("TRUNCATE users; INSERT INTO users VALUES (1, 'Ann@x.org', 'Ann'), (2, 'bob@x.org', 'Bob');")
    srv = start(pg, *USERS, "postgres:public.orders=order:{id}")
    try:
        for k in ["user:1", "user_by_email:ann@x.org", "user_by_email:new@x.org", "user:2",
                  "user_by_email:bob@x.org", "order:7", "unrelated"]:
            assert mc(srv.port, f"set {k} 0 0 1", b"v") == b"STORED\r\n"
        pg.sql("UPDATE users SET email = 'new@x.org' WHERE id = 1;")
        assert wait_gone(srv.port, "user_by_email:ann@x.org") is not None, "the old email's key stayed"
        for k, there in [("user:1", False), ("user_by_email:new@x.org", False), ("user:2", True),
                         ("user_by_email:bob@x.org", True), ("order:7", True), ("unrelated", True)]:
            assert (mc(srv.port, f"get {k}") != b"END\r\n") == there, k
        pg.sql("INSERT INTO orders VALUES (7, 100);")
        assert wait_gone(srv.port, "order:7") is not None
        pg.sql("DELETE FROM users WHERE id = 2;")
        assert wait_gone(srv.port, "user_by_email:bob@x.org") is not None
        assert mc(srv.port, "get unrelated") != b"END\r\n"
        s = stats(srv.port)
        assert s["invalidate:postgres:public.users:keys"] == 5, s
        assert s["wal_feeds"] == 1 and s["wal_slot"] == srv.slot
        deadline = time.monotonic() + 15
        while stats(srv.port).get("wal_status") != "reserved":
            assert time.monotonic() < deadline, stats(srv.port).get("wal_status")
            time.sleep(0.2)
        assert "binlog_feeds" not in s
        # TRUNCATE: a change of the whole table, every plain key flushed (the default).
        pg.sql("TRUNCATE orders;")
        assert wait_gone(srv.port, "unrelated") is not None
    finally:
        srv.stop()
        drop(pg, srv.slot)


def test_wrong_rules_and_prerequisites_are_named(pg, tmp_path):
    slot = f"bad_{os.getpid()}"
    cases = [
        ("postgres:public.users=user:{nope}", "has no column nope"),
        ("postgres:public.missing=m:{id}", "public.missing: no such table"),
        ("postgres:public.plain=e:{email}", "REPLICA IDENTITY FULL"),
    ]
    for rule, said in cases:
        p = subprocess.run(sqlcached_argv(free_port(), *pg_args(pg, slot), "--invalidate", rule),
                           capture_output=True, text=True, timeout=60, env={**os.environ, **env(pg)})
        assert p.returncode == EX_CONFIG and said in p.stderr, (rule, p.returncode, p.stderr)
        p = subprocess.run(sqlcached_argv(free_port(), *pg_args(pg, slot), "--invalidate", rule, "--check-config"),
                           capture_output=True, text=True, timeout=60, env={**os.environ, **env(pg)})
        assert p.returncode == EX_CONFIG and said in p.stdout, (rule, p.stdout)
    # A role without REPLICATION: named with its fix.
    pg.sql(f"DROP ROLE IF EXISTS norepl; CREATE ROLE norepl LOGIN PASSWORD 'pw';")
    args = pg_args(pg, slot)
    args[args.index("--pg-user") + 1] = "norepl"
    p = subprocess.run(sqlcached_argv(free_port(), *args, "--invalidate", "postgres:public.users=user:{id}", "--check-config"),
                       capture_output=True, text=True, timeout=60,
                       env={**os.environ, "SQLCACHED_PG_PASSWORD": "pw"})
    assert p.returncode == EX_CONFIG and "ALTER ROLE norepl REPLICATION" in p.stdout, p.stdout
    # A good rule: --check-config says what it checked.
    p = subprocess.run(sqlcached_argv(free_port(), *pg_args(pg, slot), "--invalidate", "postgres:public.users=user:{id}",
                                      "--check-config"), capture_output=True, text=True, timeout=60,
                       env={**os.environ, **env(pg)})
    assert p.returncode == 0 and "wal_level logical" in p.stdout, p.stdout


def test_wal_level_replica_is_named():
    with start_postgres(extra_args="-c wal_level=replica") as pg:
        pg.sql("CREATE TABLE users (id int PRIMARY KEY);")
        p = subprocess.run(sqlcached_argv(free_port(), *pg_args(pg, "s"), "--invalidate", "postgres:public.users=user:{id}",
                                          "--check-config"), capture_output=True, text=True, timeout=60,
                           env={**os.environ, **env(pg)})
        assert p.returncode == EX_CONFIG and "wal_level is replica, not logical" in p.stdout, p.stdout


def test_kill9_restart_resumes_from_the_slot(pg, tmp_path):
    pg.sql("TRUNCATE users; INSERT INTO users VALUES (10, 'k@x.org', 'K');")
    data = tmp_path / "data"
    srv = start(pg, *USERS, extra=["--data-dir", str(data)])
    slot = srv.slot
    try:
        assert mc(srv.port, "set user:10 0 0 1", b"v") == b"STORED\r\n"
        time.sleep(1.5)  # the key is on disk
        srv.sigkill()
        pg.sql("UPDATE users SET name = 'changed while down' WHERE id = 10;")
        srv = start(pg, *USERS, slot=slot, extra=["--data-dir", str(data)], wait=False)
        assert wait_gone(srv.port, "user:10", timeout=20) is not None, "a change made while down was missed"
        # PostgreSQL restarted, then killed, under the running sqlcached: it follows again.
        for how in ("restart", "kill"):
            assert mc(srv.port, "set user:10 0 0 1", b"v") == b"STORED\r\n"
            if how == "restart":
                pg.restart()
            else:
                pg.kill()
                pg.start()
            wait_connected(srv, timeout=30)
            time.sleep(2.5)  # past the hold of the last invalidation
            assert mc(srv.port, "set user:10 0 0 1", b"v") == b"STORED\r\n"
            pg.sql(f"UPDATE users SET name = '{how}' WHERE id = 10;")
            assert wait_gone(srv.port, "user:10", timeout=10) is not None, how
        assert stats(srv.port)["wal_reconnects"] >= 2
    finally:
        srv.stop()
        drop(pg, slot)


def test_dropped_slot_is_recreated_and_flushes(pg, tmp_path):
    log = tmp_path / "log"
    srv = start(pg, *USERS, log=log)
    try:
        assert mc(srv.port, "set unrelated 0 0 1", b"v") == b"STORED\r\n"
        # The walsender ended and the slot dropped before the follower is back (it retries in 100 ms).
        pg.sql(f"""DO $$ BEGIN
  FOR i IN 1..1000 LOOP
    PERFORM pg_terminate_backend(active_pid) FROM pg_replication_slots
      WHERE slot_name = '{srv.slot}' AND active_pid IS NOT NULL;
    BEGIN
      PERFORM pg_drop_replication_slot('{srv.slot}');
      RETURN;
    EXCEPTION WHEN object_in_use THEN PERFORM pg_sleep(0.002);
    END;
  END LOOP;
  RAISE EXCEPTION 'the slot stayed in use';
END $$;""")
        assert wait_gone(srv.port, "unrelated", timeout=10) is not None, "nothing flushed after the slot was lost"
        wait_connected(srv)
        assert "was dropped: created it again" in log.read_text()
        assert stats(srv.port)["wal_slot_recreated"] == 1
    finally:
        srv.stop()
        drop(pg, srv.slot)


def test_pg_drop_slot_command(pg):
    srv = start(pg, *USERS)
    slot = srv.slot
    busy = subprocess.run(sqlcached_argv(free_port(), *pg_args(pg, slot), "--pg-drop-slot"), capture_output=True, text=True,
                          timeout=60, env={**os.environ, **env(pg)})
    assert busy.returncode != 0 and "stop it first" in busy.stdout, busy.stdout
    srv.stop()
    p = subprocess.run(sqlcached_argv(free_port(), *pg_args(pg, slot), "--pg-drop-slot"), capture_output=True, text=True,
                       timeout=60, env={**os.environ, **env(pg)})
    assert p.returncode == 0 and f"dropped replication slot {slot}" in p.stdout, p.stdout + p.stderr
    assert pg.sql(f"SELECT count(*) FROM pg_replication_slots WHERE slot_name = '{slot}';").strip() == "0"
    assert pg.sql(f"SELECT count(*) FROM pg_publication WHERE pubname = '{slot}';").strip() == "0"
