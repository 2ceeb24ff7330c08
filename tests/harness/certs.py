"""Test certificates made with the real `openssl` command: a CA, a server certificate for
localhost/127.0.0.1 signed by it, a client certificate signed by it, and a second
("rogue") CA with its own client certificate, which a server trusting only the first CA must
refuse. ECDSA P-256 keys, PEM files; DER copies of the server key for ssl_keyformat=2."""
import os
import subprocess
from pathlib import Path


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def _ca(d: Path, name: str) -> None:
    _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
             "-keyout", f"{name}.key", "-out", f"{name}.crt", "-days", "3650",
             "-subj", f"/CN=sqlcached test {name}", cwd=d)


def _leaf(d: Path, name: str, ca: str, cn: str, ext: str) -> None:
    _openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
             "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={cn}", cwd=d)
    (d / f"{name}.ext").write_text(ext)
    _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.crt", "-CAkey", f"{ca}.key",
             "-CAcreateserial", "-out", f"{name}.crt", "-days", "3650", "-extfile", f"{name}.ext", cwd=d)


def make_certs(d: Path) -> dict:
    """Write the certificates into `d`; returns their paths by name (ca, server_crt,
    server_key, server_key_der, client_crt, client_key, rogue_ca, rogue_crt, rogue_key,
    other_key: a key that matches no certificate)."""
    d.mkdir(parents=True, exist_ok=True)
    _ca(d, "ca")
    _ca(d, "rogue_ca")
    _leaf(d, "server", "ca", "localhost",
          "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
    _leaf(d, "client", "ca", "sqlcached-client", "extendedKeyUsage=clientAuth\n")
    _leaf(d, "rogue", "rogue_ca", "rogue-client", "extendedKeyUsage=clientAuth\n")
    # A server certificate from the CA for another name only (verify-full must refuse it
    # for 127.0.0.1, verify-ca accept it).
    _leaf(d, "elsewhere", "ca", "db.internal", "subjectAltName=DNS:db.internal\nextendedKeyUsage=serverAuth\n")
    _openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "other.key", cwd=d)
    _openssl("pkcs8", "-topk8", "-nocrypt", "-in", "server.key", "-outform", "DER", "-out", "server.key.der", cwd=d)
    for f in d.iterdir():
        os.chmod(f, 0o644)
    return {
        "ca": str(d / "ca.crt"),
        "server_crt": str(d / "server.crt"),
        "server_key": str(d / "server.key"),
        "server_key_der": str(d / "server.key.der"),
        "client_crt": str(d / "client.crt"),
        "client_key": str(d / "client.key"),
        "rogue_ca": str(d / "rogue_ca.crt"),
        "rogue_crt": str(d / "rogue.crt"),
        "rogue_key": str(d / "rogue.key"),
        "other_key": str(d / "other.key"),
        "elsewhere_crt": str(d / "elsewhere.crt"),
        "elsewhere_key": str(d / "elsewhere.key"),
    }


def client_context(certs: dict, cert: str = "", key: str = "", min_version=None, max_version=None):
    """A client TLS context trusting the test CA (hostname `localhost` or 127.0.0.1), with
    an optional client certificate and version bounds."""
    import ssl
    ctx = ssl.create_default_context(cafile=certs["ca"])
    if cert:
        ctx.load_cert_chain(cert, key)
    if min_version is not None:
        ctx.minimum_version = min_version
    if max_version is not None:
        ctx.maximum_version = max_version
    return ctx


def proxy_tls_args(certs: dict) -> list:
    """The flags that make sqlcached's MySQL proxy offer TLS with the test server certificate."""
    return ["--mysql-tls-cert", certs["server_crt"], "--mysql-tls-key", certs["server_key"]]
