"""What the five seed replays share: where results go, progress lines, markdown tables, plots,
and the real servers (memcached, sqlcached, MariaDB) started by the test harness's helpers.

Each replay (`bench/seeds/e000_*.py` ... `e004_*.py`) is a script with `main(quick: bool)`,
run by `bench/seeds/run.sh` (or alone: `python3 bench/seeds/e002_store_fetch.py --quick`).
It writes `bench/results/seeds/<name>.md` (a table + how it was scaled) and `<name>.png`;
`run.sh --publish` copies the PNGs to `docs/seeds/`.

Servers come from `tests/harness` (the same code the test suite uses):

    from common import harness
    mc = harness.servers.start_memcached("-m", "64")         # Debian's memcached 1.6.18
    sc = harness.servers.start_sqlcached("-m", "64", "--data-dir", d)
    with harness.mariadb.start_mariadb(extra_args="--innodb-buffer-pool-size=8M") as db: ...
"""
import os
import sys
import time
from pathlib import Path
from types import SimpleNamespace

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
RESULTS = Path(os.environ.get("SEEDS_RESULTS", ROOT / "bench" / "results" / "seeds"))
sys.path.insert(0, str(ROOT / "tests"))

from harness import mariadb as _mariadb  # noqa: E402
from harness import mysqlproxy as _mysqlproxy  # noqa: E402
from harness import servers as _servers  # noqa: E402

#: The test harness's server helpers: `harness.servers`, `harness.mariadb`, `harness.mysqlproxy`.
harness = SimpleNamespace(servers=_servers, mariadb=_mariadb, mysqlproxy=_mysqlproxy)

_T0 = time.monotonic()


def progress(exp: str, msg: str) -> None:
    """One progress line on stderr: elapsed time since the run started, experiment, step."""
    el = int(time.monotonic() - _T0)
    print(f"[seeds {el // 60:02d}:{el % 60:02d}] {exp}: {msg}", file=sys.stderr, flush=True)


def md_table(headers, rows) -> str:
    """A markdown table; numbers right-aligned, floats with at most 2 decimals."""

    def cell(v):
        """One value as table text."""
        if isinstance(v, float):
            return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.2f}"
        if isinstance(v, int):
            return f"{v:,}"
        return str(v)

    align = ["---:" if rows and isinstance(rows[0][i], (int, float)) else "---" for i in range(len(headers))]
    out = ["| " + " | ".join(headers) + " |", "| " + " | ".join(align) + " |"]
    out += ["| " + " | ".join(cell(v) for v in r) + " |" for r in rows]
    return "\n".join(out)


def write_report(name: str, title: str, body: str) -> Path:
    """Writes RESULTS/<name>.md (title, machine line, body) and returns its path."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    head = f"# {title}\n\n{machine()}\n\n"
    path = RESULTS / f"{name}.md"
    path.write_text(head + body.rstrip() + "\n")
    return path


def machine() -> str:
    """One line saying where the numbers come from."""
    cpus = os.cpu_count()
    mem = 0
    try:
        with open("/proc/meminfo") as f:
            mem = int(f.readline().split()[1]) // 1024
    except OSError:
        pass
    return (f"Measured {time.strftime('%Y-%m-%d %H:%M')} on {cpus} CPUs / {mem} MiB RAM, "
            f"every process (servers, MariaDB, clients) sharing them; sqlcached {sqlcached_id()}.")


def sqlcached_id() -> str:
    """The sqlcached binary's sha256 prefix (which build made these numbers)."""
    import hashlib

    try:
        return hashlib.sha256(Path(_servers.sqlcached_bin()).read_bytes()).hexdigest()[:12]
    except OSError:
        return "(missing)"


def figure(ncols: int = 1, width: float = 6.4, height: float = 3.6):
    """A matplotlib (Agg) figure with ncols axes side by side: (fig, [ax, ...])."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, ncols, figsize=(width * ncols, height), squeeze=False)
    return fig, list(axes[0])


def save_plot(fig, name: str) -> Path:
    """Saves RESULTS/<name>.png (small: 100 dpi, tight) and closes the figure."""
    import matplotlib.pyplot as plt

    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.png"
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def parse_args(doc: str):
    """The replays' common command line: --quick (a smoke-sized run, seconds not minutes)."""
    import argparse

    p = argparse.ArgumentParser(description=doc.strip().splitlines()[0])
    p.add_argument("--quick", action="store_true", help="tiny sizes: checks the script works, numbers mean nothing")
    return p.parse_args()
