"""Worker rotation (crates/server/src/rotate.rs): when the process may run on fewer CPUs
than it has worker threads, a thread named `rotate` gives busy workers turns of about a
millisecond (the kernel alone switches busy threads every 4 ms tick: issue 11's p99). It
runs only then, is said at start, is shown in `stats settings` as `worker_rotation_us`, and
sleeps in 10 ms steps while the server is idle."""
import os
import time
from pathlib import Path

import pytest

from harness.servers import Server, free_port, sqlcached_argv, stats_settings


def rotate_switches(pid):
    """Voluntary context switches of the `rotate` thread (None: no such thread)."""
    for task in Path(f"/proc/{pid}/task").iterdir():
        if (task / "comm").read_text().strip() == "rotate":
            for line in (task / "status").read_text().splitlines():
                if line.startswith("voluntary_ctxt_switches"):
                    return int(line.split()[1])
    return None


@pytest.mark.parametrize("threads", [2, 1])
def test_rotation_only_when_workers_outnumber_the_cpus(tmp_path, threads):
    port = free_port()
    cpu = min(os.sched_getaffinity(0))  # a CPU this machine lets us use (not always 0)
    argv = ["taskset", "-c", str(cpu), *sqlcached_argv(port, "-t", str(threads))]
    log = tmp_path / "sqlcached.log"
    with Server(argv, port, log=str(log)) as s:
        got = stats_settings(port)["worker_rotation_us"]
        before = rotate_switches(s.proc.pid)
        time.sleep(1.0)
        after = rotate_switches(s.proc.pid)
        text = s.run_log()
    if threads == 2:
        assert got == "1000"
        assert "2 worker threads share 1 CPU(s): busy workers take turns of about 1 ms" in text, text
        # Idle: one look every 10 ms, not the 1 ms tick.
        assert before is not None and after - before <= 150, (before, after)
    else:
        assert got == "0"
        assert "take turns" not in text, text
        assert before is None
