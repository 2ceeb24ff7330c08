#!/usr/bin/env bash
# A throw-away MariaDB for tests: Debian's mariadbd in DIR, on 127.0.0.1:PORT and a unix
# socket DIR/mysqld.sock, binlog on (ROW, server-id 1), a password user for the tests.
#
#   scripts/mariadb.sh start DIR PORT   # initializes DIR on first use, starts, prints
#                                       # SQLCACHED_MARIADB=host:port:user:password
#   scripts/mariadb.sh stop DIR         # clean shutdown (waits for the process to exit)
#   scripts/mariadb.sh status DIR       # exit 0 if it answers
#
# Environment: MARIADB_USER (default sqlcached), MARIADB_PASSWORD (default
# sqlcached-test), MARIADB_EXTRA_ARGS (more mariadbd options, e.g. query cache settings).
# Runs as the current user (root here: --user=root); the MariaDB root
# account is reachable only through the socket (unix_socket auth), the test user with
# its password from anywhere. Installs mariadb-server if mariadbd is missing.
set -euo pipefail

cmd=${1:-}
dir=${2:-}
port=${3:-}
user=${MARIADB_USER:-sqlcached}
password=${MARIADB_PASSWORD:-sqlcached-test}

usage() {
    echo "usage: $0 start DIR PORT | stop DIR | status DIR" >&2
    exit 2
}

[ -n "$cmd" ] && [ -n "$dir" ] || usage

find_bin() {
    for b in "$@"; do
        if command -v "$b" >/dev/null 2>&1; then command -v "$b"; return 0; fi
        for d in /usr/sbin /usr/bin /usr/local/sbin /usr/local/bin; do
            if [ -x "$d/$b" ]; then echo "$d/$b"; return 0; fi
        done
    done
    return 1
}

ensure_installed() {
    if ! find_bin mariadbd >/dev/null || ! find_bin mariadb-install-db >/dev/null; then
        echo "mariadb.sh: installing mariadb-server" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends mariadb-server mariadb-client >/dev/null
    fi
    # Debian's package starts a system server; tests never use it.
    if command -v systemctl >/dev/null 2>&1; then systemctl stop mariadb >/dev/null 2>&1 || true; fi
}

sock() { echo "$dir/mysqld.sock"; }

client() {
    "$(find_bin mariadb mysql)" --no-defaults --protocol=socket --socket="$(sock)" -uroot "$@"
}

alive() {
    [ -S "$(sock)" ] && "$(find_bin mariadb-admin mysqladmin)" --no-defaults --protocol=socket \
        --socket="$(sock)" -uroot --connect-timeout=1 ping >/dev/null 2>&1
}

case "$cmd" in
start)
    [ -n "$port" ] || usage
    ensure_installed
    # Its own tmpdir: servers started side by side (parallel tests) each name their temporary
    # tables after their pid, and one bootstrap was seen failing on another's /tmp files.
    mkdir -p "$dir/tmp"
    dir=$(cd "$dir" && pwd)
    if alive; then
        echo "mariadb.sh: already running in $dir" >&2
    else
        if [ ! -d "$dir/data/mysql" ]; then
            rm -rf "$dir/data"
            "$(find_bin mariadb-install-db mysql_install_db)" --no-defaults --datadir="$dir/data" --user="$(id -un)" \
                --auth-root-authentication-method=socket --skip-test-db --skip-name-resolve --tmpdir="$dir/tmp" \
                >"$dir/install.log" 2>&1 || { cat "$dir/install.log" >&2; exit 1; }
        fi
        # setsid: the server outlives this script and ignores the caller's signals.
        setsid "$(find_bin mariadbd mysqld)" --no-defaults \
            --datadir="$dir/data" --user="$(id -un)" \
            --port="$port" --bind-address=127.0.0.1 --socket="$(sock)" \
            --pid-file="$dir/mysqld.pid" --log-error="$dir/error.log" --tmpdir="$dir/tmp" \
            --log-bin="$dir/data/binlog" --binlog-format=ROW --binlog-row-metadata=FULL --server-id=1 \
            --skip-name-resolve --innodb-buffer-pool-size=64M --innodb-log-file-size=16M \
            --innodb-flush-log-at-trx-commit=1 --max-connections=200 \
            --character-set-server=utf8mb4 --collation-server=utf8mb4_bin ${MARIADB_EXTRA_ARGS:-} \
            </dev/null >/dev/null 2>&1 &
        for _ in $(seq 1 200); do
            alive && break
            if [ -f "$dir/error.log" ] && grep -q "\[ERROR\] Aborting" "$dir/error.log"; then
                cat "$dir/error.log" >&2
                exit 1
            fi
            sleep 0.05
        done
        alive || { echo "mariadb.sh: server did not start; $dir/error.log:" >&2; tail -30 "$dir/error.log" >&2; exit 1; }
    fi
    # The test user (a real password: no skip-grant-tables).
    client <<SQL
CREATE USER IF NOT EXISTS '$user'@'%' IDENTIFIED BY '$password';
CREATE USER IF NOT EXISTS '$user'@'localhost' IDENTIFIED BY '$password';
GRANT ALL PRIVILEGES ON *.* TO '$user'@'%' WITH GRANT OPTION;
GRANT ALL PRIVILEGES ON *.* TO '$user'@'localhost' WITH GRANT OPTION;
FLUSH PRIVILEGES;
SQL
    echo "SQLCACHED_MARIADB=127.0.0.1:$port:$user:$password"
    echo "socket=$(sock)"
    ;;
stop)
    dir=$(cd "$dir" 2>/dev/null && pwd) || exit 0
    pid=$(cat "$dir/mysqld.pid" 2>/dev/null || true)
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid"
        for _ in $(seq 1 600); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.05
        done
        if kill -0 "$pid" 2>/dev/null; then
            echo "mariadb.sh: server $pid did not stop in 30 s; killing it" >&2
            kill -KILL "$pid" || true
        fi
    fi
    ;;
status)
    alive
    ;;
*)
    usage
    ;;
esac
