"""libmemcached's conformance checker `memccapable` (package libmemcached-tools) must pass
all of its tests against sqlcached: 27 ascii + 27 binary = 54 by default.

memccapable prints one line per test: `<ascii|binary> <name>   [pass]` (or `[FAIL]`,
`[skip]`; an error message such as `Errno: 104 ...` can come before the bracket, even on
its own line), then `All tests passed` or `N of M tests failed`. It flushes the server."""
import re
import shutil
import subprocess

import pytest

from harness.servers import start_memcached, start_sqlcached

EXPECTED_TESTS = 54
TEST_LINE = re.compile(r"^(ascii|binary) (\S(?:.*?\S)?)\s{2,}")
RESULT = re.compile(r"\[(pass|FAIL|skip)\]")


def parse(output: str):
    """Return [(test name, result or None)] in the order memccapable ran them."""
    results, current = [], None
    for line in output.splitlines():
        m = TEST_LINE.match(line)
        if m:
            current = [f"{m.group(1)} {m.group(2)}", None]
            results.append(current)
            line = line[m.end():]
        r = RESULT.search(line)
        if r and current is not None and current[1] is None:
            current[1] = r.group(1)
    return [tuple(x) for x in results]


def run_memccapable(port: int, *extra: str):
    exe = shutil.which("memccapable")
    if exe is None:
        pytest.fail("memccapable not installed: apt-get install -y libmemcached-tools")
    proc = subprocess.run([exe, "-h", "127.0.0.1", "-p", str(port), "-t", "5", *extra],
                          capture_output=True, text=True, timeout=120)
    out = proc.stdout + proc.stderr
    return proc.returncode, out, parse(out)


def check(label, rc, out, results):
    failed = [name for name, res in results if res != "pass"]
    passed = [name for name, res in results if res == "pass"]
    summary = out.strip().splitlines()[-1] if out.strip() else "(no output)"
    assert len(passed) == EXPECTED_TESTS and not failed and rc == 0, (
        f"{label}: {len(passed)}/{EXPECTED_TESTS} memccapable tests passed, rc={rc}, "
        f"summary: {summary!r}\nfailing or unfinished: {failed}\n"
        f"--- memccapable output ---\n{out}")
    assert "All tests passed" in out, summary


def test_memccapable_reference_memcached():
    """Sanity check of the parser and the tool against the real memcached."""
    with start_memcached() as mc:
        check("memcached", *run_memccapable(mc.port))


def test_memccapable_sqlcached(sqlcached):
    check("sqlcached", *run_memccapable(sqlcached.port))


def test_parse_handles_interleaved_errors():
    out = ("ascii version                           [pass]\n"
           "binary get                              Errno: 104 Connection reset by peer\n"
           "[FAIL]\n"
           "binary getq                             [skip]\n"
           "2 of 41 tests failed\n")
    assert parse(out) == [("ascii version", "pass"), ("binary get", "FAIL"),
                          ("binary getq", "skip")]
