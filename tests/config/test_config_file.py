"""`--config FILE` (TOML): every flag can live in the file under its long name, the
command line overrides it, bad files are refused naming file, line and key, and
`--check-config` validates what the settings point at. Real sqlcached processes; the
settings are compared through `stats settings`."""
import socket
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness.servers import Server, free_port, sqlcached_bin, stats_settings  # noqa: E402


def start(argv, port):
    return Server([sqlcached_bin(), *argv], port)


# Each flag as given on the command line and as the same setting in TOML.
def cases(tmp):
    return [
        (["-m", "96"], "memory-limit = 96"),
        (["-c", "77"], "conn-limit = 77"),
        (["-t", "3"], "threads = 3"),
        (["-R", "7"], "max-reqs-per-event = 7"),
        (["-C"], "disable-cas = true"),
        (["-b", "99"], "listen-backlog = 99"),
        (["-B", "ascii"], 'protocol = "ascii"'),
        (["-I", "2m"], 'max-item-size = "2m"'),
        (["-F"], "disable-flush-all = true"),
        (["-D", "/"], 'prefix-delimiter = "/"'),
        (["-A"], "enable-shutdown = true"),
        (["-M"], "disable-evictions = true"),
        (["-vv"], "verbose = 2"),
        (["-o", "idle_timeout=33,hashpower=20"], "extended = { idle_timeout = 33, hashpower = 20 }"),
        (["-f", "1.5", "-n", "64", "-L"], "slab-growth-factor = 1.5\nslab-min-size = 64\nenable-largepages = true"),
        (["--data-dir", str(tmp / "d1"), "--durability", "sync", "--flush-interval-ms", "7", "--disk-limit", "64m"],
         f'data-dir = "{tmp / "d2"}"\ndurability = "sync"\nflush-interval-ms = 7\ndisk-limit = "64m"'),
    ]


def test_every_flag_in_the_file_gives_the_same_settings(tmp_path):
    for i, (flags, toml) in enumerate(cases(tmp_path)):
        port = free_port()
        with start(["-l", "127.0.0.1", "-p", str(port), *flags], port) as a:
            want = stats_settings(a.port)
        cfg = tmp_path / f"c{i}.toml"
        port = free_port()
        cfg.write_text(f'listen = ["127.0.0.1"]\nport = {port}\n{toml}\n')
        with start(["--config", str(cfg)], port) as b:
            got = stats_settings(b.port)
        for k in ("pid", "time", "uptime", "tcpport", "rusage_user", "rusage_system"):
            want.pop(k, None)
            got.pop(k, None)
        assert len(want) > 20 and len(got) > 20
        diff = {k: (want.get(k), got.get(k)) for k in set(want) | set(got) if want.get(k) != got.get(k)}
        # The two data dirs differ by name only.
        diff.pop("data_dir", None)
        assert not diff, (flags, diff)


def test_command_line_overrides_the_file(tmp_path):
    file_port, cli_port = free_port(), free_port()
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'port = {file_port}\nlisten = ["127.0.0.2"]\nmemory-limit = 32\nthreads = 2\nverbose = 2\n')
    with start(["--config", str(cfg), "-p", str(cli_port), "-l", "127.0.0.1", "-m", "48"], cli_port) as s:
        st = stats_settings(s.port)
        assert st["maxbytes"] == str(48 * 1024 * 1024)
        assert st["num_threads"] == "2"  # from the file
        assert st["tcpport"] == str(cli_port)
        assert st["verbosity"] == "2"
        # -l replaced the file's listen list rather than adding to it.
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.2", cli_port), timeout=1).close()


@pytest.mark.parametrize(
    "text,needle",
    [
        ("port = 1\n\nbogus = 2\n", "line 3: bogus: invalid option '--bogus'"),
        ('port = "abc"\n', "line 1: port: Invalid value for -p: 'abc'"),
        ("help = true\n", "line 1: help: not a setting"),
        ("threads = 0\n", "line 1: threads: Number of threads must be greater than 0"),
        ("[mysql]\nlisten = 1\n", "line 1: mysql: a table is not a value for this setting"),
        ("port = \n", "line 1:"),
        ('durability = "sync"\n', "give --data-dir too"),
        # A setting nothing would use is refused, not ignored.
        ('pg-listen = "127.0.0.1:6432"\npg-backend = "127.0.0.1:5432"\npg-query-cache = "off"\n'
         'pg-query-cache-size = "1m"\n', "--pg-query-cache is off"),
        ('pg-query-cache-max-lag = 10\n', "give --pg-listen too"),
    ],
)
def test_bad_files_are_refused_with_file_line_and_key(tmp_path, text, needle):
    cfg = tmp_path / "bad.toml"
    cfg.write_text(text)
    p = subprocess.run([sqlcached_bin(), "--config", str(cfg)], capture_output=True, text=True, timeout=30)
    assert p.returncode == 64, p
    combination = needle.startswith(("give --", "--pg-query-cache is off"))  # checked after the whole file
    assert needle in p.stderr and (combination or str(cfg) in p.stderr), p.stderr


def test_missing_file():
    p = subprocess.run([sqlcached_bin(), "--config", "/nonexistent.toml"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 64 and "--config /nonexistent.toml: No such file" in p.stderr


def test_check_config(tmp_path):
    ok = tmp_path / "ok.toml"
    ok.write_text(f'data-dir = "{tmp_path / "data"}"\n')
    p = subprocess.run([sqlcached_bin(), "--config", str(ok), "--check-config"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p
    assert "ok:   settings parse" in p.stdout and "--data-dir" in p.stdout
    assert not (tmp_path / "data").exists()  # checking creates nothing
    bad = tmp_path / "bad.toml"
    dead = free_port()
    bad.write_text(
        f'mysql-listen = "127.0.0.1:{free_port()}"\nmysql-backend = "127.0.0.1:{dead}"\n'
        f'data-dir = "{tmp_path / "no" / "such" / "dir"}"\ncontainers = "{tmp_path / "missing.toml"}"\n'
    )
    p = subprocess.run([sqlcached_bin(), "--config", str(bad), "--check-config"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 78, p
    fails = [line for line in p.stdout.splitlines() if line.startswith("FAIL:")]
    assert any("--mysql-backend" in f and "refused" in f for f in fails), p.stdout
    assert any("--containers" in f for f in fails), p.stdout
    assert any("--data-dir" in f for f in fails), p.stdout
    assert any("--mysql-user" in f for f in fails), p.stdout


def test_shipped_example_is_valid(tmp_path):
    """dist/sqlcached.toml (the annotated example) parses and checks."""
    example = Path(__file__).resolve().parents[2] / "dist" / "sqlcached.toml"
    p = subprocess.run(
        [sqlcached_bin(), "--config", str(example), "--data-dir", str(tmp_path / "d"), "--check-config"],
        capture_output=True, text=True, timeout=30,
    )
    assert p.returncode == 0, (p.stdout, p.stderr)
    assert "ok:   settings parse" in p.stdout
