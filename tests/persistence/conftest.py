"""Fixtures for the persistence tests: sqlcached with a --data-dir in the test's tmp dir,
its stderr in a log file so that restarts can be checked for what they said."""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1]))
from harness.servers import start_sqlcached  # noqa: E402


class Persistent:
    """Starts sqlcached on one data dir (and, across restarts, one port); stops whatever
    is still running at the end of the test."""

    def __init__(self, tmp_path: Path):
        self.tmp = tmp_path
        self.dir = tmp_path / "data"
        self.log = tmp_path / "sqlcached.log"
        self.servers = []

    def start(self, *flags: str, dir=None, log=None, wait=True, env=None):
        s = start_sqlcached("--data-dir", str(dir or self.dir), *flags, log=str(log or self.log), wait=wait,
                            env=env)
        self.servers.append(s)
        return s

    def restart(self, server, wait=True, env=None):
        s = server.restart(wait=wait, env=env)
        self.servers.append(s)
        return s

    def stop_all(self):
        for s in self.servers:
            if s.proc.poll() is None:
                s.sigkill()


@pytest.fixture
def persistent(tmp_path):
    p = Persistent(tmp_path)
    try:
        yield p
    finally:
        p.stop_all()


# An LD_PRELOAD shim that moves a process's wall clock (CLOCK_REALTIME, gettimeofday,
# time) forward by $SHIFT_CLOCK_SECONDS: a restart "100 s later" without waiting 100 s.
# The monotonic clock is left alone.
CLOCK_SHIM_C = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>

static long shift(void) {
    static long s = -1;
    if (s < 0) { const char *e = getenv("SHIFT_CLOCK_SECONDS"); s = e ? atol(e) : 0; }
    return s;
}
int clock_gettime(clockid_t id, struct timespec *ts) {
    static int (*real)(clockid_t, struct timespec *);
    if (!real) real = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
    int rc = real(id, ts);
    if (rc == 0 && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE)) ts->tv_sec += shift();
    return rc;
}
int gettimeofday(struct timeval *tv, void *tz) {
    struct timespec ts;
    int rc = clock_gettime(CLOCK_REALTIME, &ts);
    if (rc == 0 && tv) { tv->tv_sec = ts.tv_sec; tv->tv_usec = ts.tv_nsec / 1000; }
    (void)tz;
    return rc;
}
time_t time(time_t *t) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (t) *t = ts.tv_sec;
    return ts.tv_sec;
}
"""


@pytest.fixture(scope="session")
def shifted_clock(tmp_path_factory):
    """shifted_clock(seconds) -> env for a server whose wall clock runs `seconds` ahead."""
    d = tmp_path_factory.mktemp("clockshim")
    src, lib = d / "shim.c", d / "libshiftclock.so"
    src.write_text(CLOCK_SHIM_C)
    cc = shutil.which("cc") or shutil.which("gcc")
    assert cc, "a C compiler is needed to build the clock shim"
    subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", str(lib), str(src), "-ldl"], check=True)

    def env(seconds: int) -> dict:
        return {"LD_PRELOAD": str(lib), "SHIFT_CLOCK_SECONDS": str(int(seconds))}

    return env
