"""The Debian package (dist/build-deb.sh, cargo-deb) installs with dpkg -i, ships the binary,
the example config as a conffile, the man page and a systemd unit that passes
`systemd-analyze verify`; its control text is whole (a short description, an extended one,
the project's maintainer), and the script builds where CARGO_TARGET_DIR says.
Runs as root (it installs into this machine, then purges the package)."""
import os
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
        pytest.skip(f"{tool} is missing (apt-get install help2man / cargo install cargo-deb)")


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    if os.geteuid() != 0:
        pytest.skip("dpkg -i needs root")
    for tool in ("help2man", "cargo-deb", "dpkg", "systemd-analyze"):
        need(tool)
    # A target directory of its own (CARGO_TARGET_DIR) holding the built binary: the binary,
    # the man page and the .deb must all be found and written there.
    target = tmp_path_factory.mktemp("target")
    (target / "release").mkdir()
    shutil.copy2(sqlcached_bin(), target / "release" / "sqlcached")
    out = subprocess.run(["bash", "dist/build-deb.sh", "--no-build"], cwd=ROOT, capture_output=True, text=True,
                         timeout=600, env=dict(os.environ, CARGO_TARGET_DIR=str(target)))
    assert out.returncode == 0, out.stderr
    deb = Path(out.stdout.strip().splitlines()[-1])
    assert deb.is_absolute() and deb.parent == target / "debian", deb
    assert (target / "release" / "sqlcached.1.gz").exists()
    p = subprocess.run(["dpkg", "-i", str(deb)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    try:
        yield deb
    finally:
        subprocess.run(["dpkg", "--purge", "sqlcached"], capture_output=True, timeout=120)


def test_package_contents_and_metadata(installed):
    info = subprocess.run(["dpkg-deb", "-I", str(installed)], capture_output=True, text=True).stdout
    assert "Package: sqlcached" in info and "Section: database" in info
    field = lambda name: subprocess.run(["dpkg-deb", "-f", str(installed), name], capture_output=True,
                                        text=True).stdout.rstrip("\n")
    assert field("Maintainer") == "sqlcached maintainers <maintainers@users.noreply.a-seed-cf1da744.example>"
    short, *extended = field("Description").split("\n")
    assert short == "persistent memcached-compatible cache and MySQL query cache", short
    assert len(extended) >= 3 and extended[-1].rstrip().endswith("they were built from change."), extended
    conffiles = subprocess.run(["dpkg-query", "--showformat=${Conffiles}", "-W", "sqlcached"],
                               capture_output=True, text=True).stdout
    assert "/etc/sqlcached/sqlcached.toml" in conffiles
    v = subprocess.run(["/usr/bin/sqlcached", "-V"], capture_output=True, text=True)
    assert v.returncode == 0 and v.stdout.startswith("sqlcached ")
    man = subprocess.run(["man", "-w", "sqlcached"], capture_output=True, text=True)
    assert man.returncode == 0 and "sqlcached.1" in man.stdout
    # The installed file itself (man -l): `man sqlcached` may show a formatted copy man-db cached
    # from an earlier install (/var/cache/man/cat1), which a package dated the same day does not replace.
    page = subprocess.run(["man", "-l", man.stdout.strip()], capture_output=True, text=True,
                          env=dict(os.environ, MANPAGER="cat"))
    assert "OPTIONS" in page.stdout and "--data-dir" in page.stdout, page.stdout[:2000]


def test_unit_passes_systemd_analyze_verify(installed):
    unit = "/usr/lib/systemd/system/sqlcached.service"
    assert Path(unit).exists()
    p = subprocess.run(["systemd-analyze", "verify", unit], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    text = Path(unit).read_text()
    for hardening in ("DynamicUser=yes", "StateDirectory=sqlcached", "ProtectSystem=strict", "NoNewPrivileges=yes"):
        assert hardening in text


def test_installed_config_checks(installed, tmp_path):
    """The shipped /etc/sqlcached/sqlcached.toml is what the unit starts with: it must pass
    --check-config (the unit's ExecStartPre)."""
    p = subprocess.run(["/usr/bin/sqlcached", "--config", "/etc/sqlcached/sqlcached.toml",
                        "--data-dir", str(tmp_path / "d"), "--check-config"], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
