"""The unchanged C client pylibmc (libmemcached) with binary SASL (`username=`, `password=`)
against sqlcached -S and, with the same users, the real memcached 1.6.18 -S (Cyrus sasldb):
the right password authenticates and the client works, a wrong one fails with libmemcached's
AUTHENTICATION FAILURE, a client without credentials gets nothing.

The pylibmc wheel bundles its own libsasl2, which looks for its mechanism plugins where the
wheel was built; SASL_PATH points it at Debian's (libsasl2-modules). It must be set before
the library initialises SASL, so each client runs in a fresh interpreter."""
import glob
import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("pylibmc", reason="pip install -r tests/requirements.txt")

from harness.servers import start_memcached, start_sqlcached  # noqa: E402

SASLPASSWD = shutil.which("saslpasswd2") or "/usr/sbin/saslpasswd2"
PLUGINS = next(iter(glob.glob("/usr/lib/*/sasl2/libplain.so*")), None)

pytestmark = pytest.mark.skipif(not (os.path.exists(SASLPASSWD) and PLUGINS),
                                reason="sasl2-bin and libsasl2-modules are needed")

CLIENT = textwrap.dedent("""
    import json, sys, pylibmc
    port, user, password = sys.argv[1], sys.argv[2], sys.argv[3]
    kw = {"username": user, "password": password} if user else {}
    c = pylibmc.Client(["127.0.0.1:" + port], binary=True, **kw)
    out = {}
    try:
        c.set("sasl-key", "value-" + port)
        out["get"] = c.get("sasl-key")
        out["incr"] = (c.set("n", 41), c.incr("n"))[1]
        out["multi"] = sorted(c.get_multi(["sasl-key", "n", "missing"]).items())
    except pylibmc.Error as e:
        out["error"] = str(e).split(": ", 1)[-1]
    print(json.dumps(out))
""")


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    d = tmp_path_factory.mktemp("sasl")
    db = d / "sasldb2"
    subprocess.run([SASLPASSWD, "-p", "-c", "-a", "memcached", "-f", str(db), "-u", socket.gethostname(), "alice"],
                   input=b"secret", check=True, timeout=30)
    os.chmod(db, 0o644)
    (d / "memcached.conf").write_text(f"mech_list: plain\nsasldb_path: {db}\n")
    (d / "pwdb").write_text("alice:secret\n")
    mc = start_memcached("-S", env={"SASL_CONF_PATH": str(d)})
    sq = start_sqlcached("-S", env={"MEMCACHED_SASL_PWDB": str(d / "pwdb")})
    yield {"memcached": mc, "sqlcached": sq}
    mc.stop()
    sq.stop()


def run_client(port, user, password):
    env = dict(os.environ, SASL_PATH=os.path.dirname(PLUGINS))
    p = subprocess.run([sys.executable, "-c", CLIENT, str(port), user, password], capture_output=True, text=True,
                       timeout=60, env=env)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


@pytest.mark.parametrize("user,password", [("alice", "secret"), ("alice", "wrong"), ("mallory", "secret"), ("", "")])
def test_pylibmc_sasl_like_memcached(servers, user, password):
    got = {name: run_client(s.port, user, password) for name, s in servers.items()}
    mc, sq = got["memcached"], got["sqlcached"]
    if user == "alice" and password == "secret":
        assert sq["get"] == f"value-{servers['sqlcached'].port}" and sq["incr"] == 42, got
        assert mc["get"] == f"value-{servers['memcached'].port}", got
    else:
        assert "error" in mc and sq.get("error") == mc["error"], got
