#!/usr/bin/env bash
# A throw-away PostgreSQL 15 for tests: Debian's binaries from /usr/lib/postgresql/15/bin, a
# data directory in DIR, on 127.0.0.1:PORT and a unix socket in DIR, wal_level=logical (a
# logical replication slot can be created), TLS on with a CA made here, password logins.
#
#   scripts/postgres.sh start DIR PORT   # initializes DIR on first use, starts, prints
#                                        # SQLCACHED_POSTGRES=postgres://user:password@127.0.0.1:PORT/postgres
#   scripts/postgres.sh stop DIR         # fast shutdown (SIGINT to its own pid), waits for the exit
#   scripts/postgres.sh status DIR       # exit 0 if it answers
#   scripts/postgres.sh psql DIR [ARGS]  # psql as the bootstrap superuser over the socket
#
# Roles (made at every start, idempotent):
#   $POSTGRES_USER (default sqlcached)          SUPERUSER, password $POSTGRES_PASSWORD (default
#                                               sqlcached-test), SCRAM-SHA-256
#   ${POSTGRES_USER}_app                        a plain LOGIN role (no superuser, no
#                                               REPLICATION), same password, SCRAM-SHA-256
#   groups md5_login, password_login, trust_login  (NOLOGIN) a role made a member of one logs
#                                               in over TCP with md5, cleartext password or
#                                               trust instead of SCRAM (pg_hba.conf `+group`)
# The bootstrap superuser `postgres` is reachable only through the socket in DIR (trust; the
# directory is its owner's alone).
#
# Server options: wal_level=logical, max_replication_slots/max_wal_senders 32,
# max_connections 200, shared_buffers 32MB, max_prepared_transactions 16 (two-phase commit:
# PREPARE TRANSACTION works; the freshness checker's two-phase cases need it).
# Environment: POSTGRES_USER, POSTGRES_PASSWORD, POSTGRES_EXTRA_ARGS (more `-c name=value`
# options, e.g. "-c wal_level=replica" or "-c max_prepared_transactions=0": later options win),
# POSTGRES_SSL=0 (no TLS).
# Files in DIR: data/ (PGDATA), postgres.log, ca.crt (the CA that signed server.crt, for
# sslmode=verify-ca/verify-full; the certificate names localhost and 127.0.0.1).
# As root the server runs as the `postgres` system user (Debian's package makes it; created
# here if missing) through runuser, and DIR is given to that user; otherwise as the caller.
set -euo pipefail

cmd=${1:-}
dir=${2:-}
port=${3:-}
user=${POSTGRES_USER:-sqlcached}
password=${POSTGRES_PASSWORD:-sqlcached-test}
bin=${POSTGRES_BIN:-/usr/lib/postgresql/15/bin}

usage() {
    echo "usage: $0 start DIR PORT | stop DIR | status DIR | psql DIR [ARGS]" >&2
    exit 2
}

[ -n "$cmd" ] && [ -n "$dir" ] || usage

ensure_installed() {
    if [ ! -x "$bin/postgres" ]; then
        echo "postgres.sh: installing postgresql-15" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends postgresql-15 postgresql-client-15 >/dev/null
    fi
    # Debian's package starts a system cluster; tests never use it.
    if command -v systemctl >/dev/null 2>&1; then systemctl stop postgresql >/dev/null 2>&1 || true; fi
    if [ "$(id -u)" = 0 ] && ! id postgres >/dev/null 2>&1; then
        useradd --system --home-dir /var/lib/postgresql --shell /bin/bash postgres
    fi
}

# Runs a command as the server's user.
as_owner() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

pid_of() { head -1 "$dir/data/postmaster.pid" 2>/dev/null || true; }

alive() {
    [ -d "$dir/data" ] && as_owner "$bin/pg_isready" -q -h "$dir" -p "$(port_of)" -t 1 >/dev/null 2>&1
}

# The port the server was started on (postmaster.pid's 4th line), else the one given.
port_of() { sed -n 4p "$dir/data/postmaster.pid" 2>/dev/null | grep . || echo "${port:-5432}"; }

psql_admin() {
    as_owner "$bin/psql" -X -q -v ON_ERROR_STOP=1 -h "$dir" -p "$(port_of)" -U postgres -d postgres "$@"
}

make_certs() {
    # ECDSA P-256 CA and server certificate (as tests/harness/certs.py), made once per DIR.
    [ -f "$dir/server.key" ] && return 0
    local t
    t=$(mktemp -d)
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$t/ca.key" -out "$t/ca.crt" \
        -days 3650 -subj "/CN=sqlcached test postgres CA" >/dev/null 2>&1
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$t/server.key" -out "$t/server.csr" \
        -subj "/CN=localhost" >/dev/null 2>&1
    printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >"$t/server.ext"
    openssl x509 -req -in "$t/server.csr" -CA "$t/ca.crt" -CAkey "$t/ca.key" -CAcreateserial \
        -out "$t/server.crt" -days 3650 -extfile "$t/server.ext" >/dev/null 2>&1
    cp "$t/ca.crt" "$t/server.crt" "$t/server.key" "$dir/"
    rm -rf "$t"
    chmod 644 "$dir/ca.crt" "$dir/server.crt"
    chmod 600 "$dir/server.key"
    if [ "$(id -u)" = 0 ]; then chown postgres: "$dir/server.key" "$dir/server.crt" "$dir/ca.crt"; fi
}

write_hba() {
    cat >"$dir/data/pg_hba.conf" <<'HBA'
# scripts/postgres.sh: the socket (in a directory only the owner can enter) trusts its owner;
# TCP needs a password: SCRAM-SHA-256 unless the role is in one of the groups below.
local   all          all                           trust
local   replication  all                           trust
host    all          +trust_login     127.0.0.1/32 trust
host    replication  +trust_login     127.0.0.1/32 trust
host    all          +md5_login       127.0.0.1/32 md5
host    replication  +md5_login       127.0.0.1/32 md5
host    all          +password_login  127.0.0.1/32 password
host    replication  +password_login  127.0.0.1/32 password
host    all          all              127.0.0.1/32 scram-sha-256
host    replication  all              127.0.0.1/32 scram-sha-256
host    all          all              ::1/128      scram-sha-256
host    replication  all              ::1/128      scram-sha-256
HBA
}

case "$cmd" in
start)
    [ -n "$port" ] || usage
    ensure_installed
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    if [ "$(id -u)" = 0 ]; then
        chown postgres: "$dir"
        chmod 700 "$dir"
        if ! runuser -u postgres -- test -w "$dir"; then
            echo "postgres.sh: the postgres user cannot reach $dir (a parent directory is closed to it)" >&2
            exit 1
        fi
    fi
    if alive; then
        echo "postgres.sh: already running in $dir" >&2
    else
        if [ ! -f "$dir/data/PG_VERSION" ]; then
            rm -rf "$dir/data"
            as_owner "$bin/initdb" -D "$dir/data" -U postgres --auth=trust --encoding=UTF8 --locale=C.UTF-8 \
                >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; exit 1; }
        fi
        write_hba
        [ "$(id -u)" = 0 ] && chown postgres: "$dir/data/pg_hba.conf"
        ssl_args=()
        if [ "${POSTGRES_SSL:-1}" != 0 ]; then
            make_certs
            ssl_args=(-c ssl=on -c "ssl_cert_file=$dir/server.crt" -c "ssl_key_file=$dir/server.key")
        fi
        rm -f "$dir/postgres.log"
        # setsid: the server outlives this script and ignores the caller's signals.
        # shellcheck disable=SC2086
        as_owner setsid "$bin/postgres" -D "$dir/data" -p "$port" \
            -c listen_addresses=127.0.0.1 -c "unix_socket_directories=$dir" \
            -c wal_level=logical -c max_replication_slots=32 -c max_wal_senders=32 \
            -c max_connections=200 -c shared_buffers=32MB -c password_encryption=scram-sha-256 \
            -c max_prepared_transactions=16 \
            -c log_min_messages=warning -c logging_collector=off "${ssl_args[@]}" ${POSTGRES_EXTRA_ARGS:-} \
            </dev/null >>"$dir/postgres.log" 2>&1 &
        for _ in $(seq 1 300); do
            alive && break
            if grep -qE "FATAL|PANIC" "$dir/postgres.log" 2>/dev/null && ! kill -0 "$(pid_of)" 2>/dev/null; then
                break
            fi
            sleep 0.05
        done
        alive || { echo "postgres.sh: server did not start; $dir/postgres.log:" >&2; tail -30 "$dir/postgres.log" >&2; exit 1; }
    fi
    psql_admin >/dev/null <<SQL
DO \$\$
BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'trust_login') THEN CREATE ROLE trust_login NOLOGIN; END IF;
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'md5_login') THEN CREATE ROLE md5_login NOLOGIN; END IF;
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'password_login') THEN CREATE ROLE password_login NOLOGIN; END IF;
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '$user') THEN CREATE ROLE "$user" LOGIN SUPERUSER; END IF;
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '${user}_app') THEN CREATE ROLE "${user}_app" LOGIN; END IF;
END
\$\$;
SET password_encryption = 'scram-sha-256';
ALTER ROLE "$user" WITH LOGIN SUPERUSER PASSWORD '$password';
ALTER ROLE "${user}_app" WITH LOGIN NOSUPERUSER NOREPLICATION PASSWORD '$password';
SQL
    echo "SQLCACHED_POSTGRES=postgres://$user:$password@127.0.0.1:$port/postgres"
    echo "socket=$dir"
    if [ -f "$dir/ca.crt" ] && [ "${POSTGRES_SSL:-1}" != 0 ]; then echo "ca=$dir/ca.crt"; fi
    ;;
stop)
    dir=$(cd "$dir" 2>/dev/null && pwd) || exit 0
    pid=$(pid_of)
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
        # SIGINT: PostgreSQL's fast shutdown (clients are disconnected, a checkpoint is written).
        kill -INT "$pid"
        for _ in $(seq 1 600); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.05
        done
        if kill -0 "$pid" 2>/dev/null; then
            echo "postgres.sh: server $pid did not stop in 30 s; killing it" >&2
            kill -KILL "$pid" || true
        fi
    fi
    ;;
status)
    dir=$(cd "$dir" 2>/dev/null && pwd) || exit 1
    alive
    ;;
psql)
    dir=$(cd "$dir" && pwd)
    shift 2
    psql_admin "$@"
    ;;
*)
    usage
    ;;
esac
