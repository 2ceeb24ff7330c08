"""The man page (dist/man.sh: help2man on `sqlcached --help`), as `man -l` renders it: the
usual sections, and an OPTIONS entry for every long flag `--help` lists. help2man only finds
options laid out the GNU way (a `Usage:` line, options indented with their descriptions);
before, the page was one run-on paragraph."""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness.servers import sqlcached_bin  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def need(tool):
    if shutil.which(tool) is None:
        if os.environ.get("CI"):
            pytest.fail(f"{tool} is missing: .ci/run must install it")
        pytest.skip(f"{tool} is missing (apt-get install help2man man-db)")


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    need("help2man")
    need("man")
    out = tmp_path_factory.mktemp("man")
    p = subprocess.run(["bash", "dist/man.sh", sqlcached_bin(), str(out)], cwd=ROOT, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    gz = Path(p.stdout.strip())
    env = dict(os.environ, MANWIDTH="100", MAN_KEEP_FORMATTING="", MANPAGER="cat", PAGER="cat", LC_ALL="C.UTF-8")
    r = subprocess.run(["man", "-l", str(gz)], capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 0, r.stderr
    # Bold/underline by overstriking, should a man setup still emit it.
    return re.sub(r".\x08", "", r.stdout)


def sections(text):
    """{SECTION: [lines]} of a rendered page: headings are upper-case lines at column 0."""
    out, current = {}, None
    for line in text.splitlines():
        if re.fullmatch(r"[A-Z][A-Z ]+", line):
            current = line.strip()
            out[current] = []
        elif current:
            out[current].append(line)
    return out


def help_long_flags():
    """Every long flag `--help` shows at an option's place (an entry's flags, column 2)."""
    text = subprocess.run([sqlcached_bin(), "--help"], capture_output=True, text=True, check=True).stdout
    flags = []
    for line in text.splitlines():
        m = re.match(r"  (-\S.*?)(?:  |$)", line)
        if m:
            flags += [f for f in re.findall(r"--[a-z][a-z0-9-]*", m.group(1)) if f not in flags]
    return flags


def test_man_page_has_its_sections(page):
    s = sections(page)
    for name in ("NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "ENVIRONMENT", "EXAMPLES", "SEE ALSO"):
        assert name in s, f"no {name} section in:\n{page[:3000]}"
    assert re.search(r"sqlcached \\?- persistent memcached-compatible cache and MySQL query cache",
                     " ".join(s["NAME"])), s["NAME"]
    assert "sqlcached [OPTION]..." in " ".join(s["SYNOPSIS"]).replace("  ", " "), s["SYNOPSIS"]
    description = " ".join(x.strip() for x in s["DESCRIPTION"])
    assert "memory-only memcached" in description and "--data-dir" in description, description
    # Each group of options is a sub-section of OPTIONS.
    subsections = [x.strip().rstrip(":") for x in s["OPTIONS"] if re.match(r"   \S", x)]
    for title in ("memcached's options", "Persistence (docs/persistence.md)", "MySQL query cache (docs/querycache.md)"):
        assert title in subsections, subsections
    assert any("SQLCACHED_MYSQL_PASSWORD" in x for x in s["ENVIRONMENT"])
    assert any("sqlcached -l 127.0.0.1" in x for x in s["EXAMPLES"])


def test_every_long_flag_has_an_options_entry(page):
    options = sections(page)["OPTIONS"]
    # An entry's tag is rendered at column 7, its description below it (or beside it) at 14.
    tags = [x.strip() for x in options if re.match(r" {7}-", x)]
    entries = {f for t in tags for f in re.findall(r"--[a-z][a-z0-9-]*", t.split("  ")[0])}
    flags = help_long_flags()
    assert len(flags) > 50, flags
    missing = [f for f in flags if f not in entries]
    assert not missing, f"--help flags without an OPTIONS entry: {missing}\n" + "\n".join(options[:80])
    # And one entry per flag: an entry holds one flag (with its short form), never two.
    assert len(tags) >= len(flags), (len(tags), len(flags))
