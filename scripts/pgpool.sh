#!/usr/bin/env bash
# A throw-away pgpool-II (Debian's pgpool2, 4.3) with its in-memory query cache on, in front of
# one PostgreSQL (e.g. scripts/postgres.sh's), for side-by-side benchmarks and freshness checks.
#
#   scripts/pgpool.sh start DIR PORT BACKEND_PORT [BACKEND_HOST]
#                                     # writes DIR/pgpool.conf (+ pool_hba.conf, pool_passwd,
#                                     # pcp.conf), starts pgpool on 127.0.0.1:PORT in front of
#                                     # BACKEND_HOST (127.0.0.1):BACKEND_PORT, waits until a login
#                                     # through it works, prints PGPOOL=host=127.0.0.1 port=PORT
#                                     # and pid=N
#   scripts/pgpool.sh stop DIR        # fast shutdown (SIGINT to its own pid from DIR/pgpool.pid),
#                                     # waits for the exit (SIGKILL after 30 s)
#   scripts/pgpool.sh status DIR      # exit 0 if it runs and answers
#   scripts/pgpool.sh psql DIR [ARGS] # psql through pgpool as $PGPOOL_USER (e.g. -c 'SHOW pool_cache')
#
# The configuration (DIR/pgpool.conf; read pgpool-II's "In Memory Query Cache" chapter,
# /usr/share/doc/pgpool2/runtime-in-memory-query-cache.html):
#   backend_clustering_mode = 'raw'   one backend, no replication and no load balancing: pgpool
#                                     only pools and caches (streaming_replication mode with one
#                                     node would add its replication-delay checks for nothing;
#                                     native replication mode would route writes differently)
#   memory_cache_enabled = on, memqcache_method = 'shmem', memqcache_total_size
#   ($PGPOOL_CACHE_SIZE, 64MB: pgpool's default), memqcache_max_num_cache (1000000),
#   memqcache_cache_block_size (1MB), memqcache_maxcache (400kB: a result larger is not cached),
#   memqcache_expire ($PGPOOL_CACHE_EXPIRE, 0 = entries live until invalidated),
#   memqcache_auto_cache_invalidation = on (a write *through this pgpool* drops the cached
#   results of the tables it names; nothing else does: writes straight to PostgreSQL, through
#   another pgpool, by triggers, cascades or rules leave them stale), memqcache_oiddir in DIR.
#   num_init_children ($PGPOOL_CHILDREN, 80): pgpool serves one client per child process, and a
#   client beyond that number waits in the listen queue (it is not refused); max_pool = 1
#   (one user and database per child). Health checks, streaming-replication checks, the
#   watchdog, failover on backend errors, and TLS are off; the PCP port listens on DIR's
#   socket only.
# Authentication ($PGPOOL_AUTH), for the SCRAM-SHA-256 roles of scripts/postgres.sh:
#   scram     (default) pool_hba.conf asks clients for SCRAM-SHA-256 over TCP and the socket;
#             pool_passwd holds each of $PGPOOL_USERS with $PGPOOL_PASSWORD in pgpool's TEXT
#             form (pgpool must know the password to do SCRAM with the client and again with
#             PostgreSQL: it cannot relay SCRAM). DIR is its owner's alone.
#   cleartext no pool_hba.conf, no pool_passwd: allow_clear_text_frontend_auth = on makes
#             pgpool ask the client for its password in clear text and log in to PostgreSQL
#             with it (SCRAM there); nothing is stored, but the password crosses loopback in
#             clear (acceptable on 127.0.0.1 for a bench, not on a network).
#   trust     pool_hba.conf trusts every client on 127.0.0.1 and the socket (pgpool still logs
#             in to PostgreSQL with pool_passwd's password): the cheapest login, for benches.
# Environment: PGPOOL_USER (sqlcached, used by `psql` and the readiness login),
#   PGPOOL_PASSWORD (sqlcached-test), PGPOOL_USERS ("$PGPOOL_USER ${PGPOOL_USER}_app"),
#   PGPOOL_AUTH, PGPOOL_CHILDREN, PGPOOL_CACHE_SIZE, PGPOOL_CACHE_EXPIRE, PGPOOL_BIN
#   (/usr/sbin/pgpool), PGPOOL_EXTRA_CONF (more pgpool.conf lines, appended: later ones win),
#   PGPOOL_LOG_MIN (log_min_messages, warning), PGPOOL_DB (postgres: `psql`'s database).
# Files in DIR: pgpool.conf, pool_hba.conf, pool_passwd, pcp.conf, pgpool.pid, pgpool.log,
# pgpool_status, oiddir/, the sockets. Runs as the caller (root included); stopped by its own pid.
set -euo pipefail

cmd=${1:-}
dir=${2:-}
port=${3:-}
backend_port=${4:-}
backend_host=${5:-127.0.0.1}
user=${PGPOOL_USER:-sqlcached}
password=${PGPOOL_PASSWORD:-sqlcached-test}
users=${PGPOOL_USERS:-"$user ${user}_app"}
auth=${PGPOOL_AUTH:-scram}
children=${PGPOOL_CHILDREN:-80}
cache_size=${PGPOOL_CACHE_SIZE:-64MB}
cache_expire=${PGPOOL_CACHE_EXPIRE:-0}
bin=${PGPOOL_BIN:-/usr/sbin/pgpool}
psql_bin=${PSQL_BIN:-/usr/lib/postgresql/15/bin/psql}

usage() {
    echo "usage: $0 start DIR PORT BACKEND_PORT [BACKEND_HOST] | stop DIR | status DIR | psql DIR [ARGS]" >&2
    exit 2
}

[ -n "$cmd" ] && [ -n "$dir" ] || usage

ensure_installed() {
    if [ ! -x "$bin" ]; then
        echo "pgpool.sh: installing pgpool2" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends pgpool2 >/dev/null
    fi
    # Debian's package may start a system pgpool on 5433; ours never uses it.
    if command -v systemctl >/dev/null 2>&1; then systemctl stop pgpool2 >/dev/null 2>&1 || true; fi
}

pid_of() { tr -d '\0' 2>/dev/null <"$dir/pgpool.pid" | head -1 || true; }
port_of() { sed -n "s/^port = \([0-9]*\)$/\1/p" "$dir/pgpool.conf" 2>/dev/null | head -1; }

# psql through pgpool over TCP (sslmode=disable: pgpool's TLS is off).
psql_pool() {
    PGPASSWORD=$password PGCONNECT_TIMEOUT=5 "$psql_bin" -X -q -v ON_ERROR_STOP=1 \
        "host=127.0.0.1 port=$(port_of) user=$user dbname=${PGPOOL_DB:-postgres} sslmode=disable" "$@"
}

alive() {
    local pid
    pid=$(pid_of)
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && psql_pool -tA -c "SHOW pool_version" >/dev/null 2>&1
}

write_conf() {
    local hba pass
    case "$auth" in
    scram) hba=on; pass="'pool_passwd'"; method=scram-sha-256 ;;
    trust) hba=on; pass="'pool_passwd'"; method=trust ;;
    cleartext) hba=off; pass="''"; method="" ;;
    *) echo "pgpool.sh: PGPOOL_AUTH must be scram, cleartext or trust (got $auth)" >&2; exit 2 ;;
    esac
    cat >"$dir/pgpool.conf" <<CONF
# scripts/pgpool.sh: one backend, raw mode, the in-memory query cache on (see the script's header).
backend_clustering_mode = 'raw'
listen_addresses = '127.0.0.1'
port = $port
socket_dir = '$dir'
pcp_listen_addresses = ''
pcp_port = $((port + 1))
pcp_socket_dir = '$dir'
wd_ipc_socket_dir = '$dir'
pid_file_name = '$dir/pgpool.pid'
logdir = '$dir'
log_destination = 'stderr'
log_min_messages = ${PGPOOL_LOG_MIN:-warning}
backend_hostname0 = '$backend_host'
backend_port0 = $backend_port
backend_weight0 = 1
backend_flag0 = 'DISALLOW_TO_FAILOVER'
num_init_children = $children
max_pool = 1
reserved_connections = 0
listen_backlog_multiplier = 4
load_balance_mode = off
health_check_period = 0
sr_check_period = 0
use_watchdog = off
failover_on_backend_error = off
ssl = off
enable_pool_hba = $hba
pool_passwd = $pass
allow_clear_text_frontend_auth = $([ "$auth" = cleartext ] && echo on || echo off)
memory_cache_enabled = on
memqcache_method = 'shmem'
memqcache_total_size = $cache_size
memqcache_max_num_cache = 1000000
memqcache_cache_block_size = 1MB
memqcache_maxcache = 400kB
memqcache_expire = $cache_expire
memqcache_auto_cache_invalidation = on
memqcache_oiddir = '$dir/oiddir'
CONF
    if [ -n "${PGPOOL_EXTRA_CONF:-}" ]; then printf '%s\n' "$PGPOOL_EXTRA_CONF" >>"$dir/pgpool.conf"; fi
    : >"$dir/pool_passwd"
    if [ "$auth" != cleartext ]; then
        for u in $users; do printf '%s:TEXT%s\n' "$u" "$password" >>"$dir/pool_passwd"; done
    fi
    {
        echo "# scripts/pgpool.sh ($auth)"
        if [ -n "$method" ]; then
            echo "local all all $method"
            echo "host  all all 127.0.0.1/32 $method"
        fi
    } >"$dir/pool_hba.conf"
    # PCP (pgpool's admin port) is unused here; pgpool wants the file to exist.
    echo "# scripts/pgpool.sh: no PCP users" >"$dir/pcp.conf"
    chmod 600 "$dir/pool_passwd" "$dir/pgpool.conf" "$dir/pcp.conf" "$dir/pool_hba.conf"
}

case "$cmd" in
start)
    [ -n "$port" ] && [ -n "$backend_port" ] || usage
    ensure_installed
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    chmod 700 "$dir"
    if alive; then
        echo "pgpool.sh: already running in $dir" >&2
    else
        rm -rf "$dir/oiddir"
        mkdir -p "$dir/oiddir"
        write_conf
        rm -f "$dir/pgpool.log" "$dir/pgpool.pid"
        # -n: stay in the foreground (setsid detaches it from the caller's signals); -D: forget
        # backend states saved by an earlier run (pgpool_status), so a backend once seen down
        # is not skipped for ever.
        setsid "$bin" -n -D -f "$dir/pgpool.conf" -F "$dir/pcp.conf" -a "$dir/pool_hba.conf" \
            </dev/null >>"$dir/pgpool.log" 2>&1 &
        for _ in $(seq 1 200); do
            alive && break
            # a start that failed: pgpool exited (its pid file is never written or gone)
            if ! kill -0 "$!" 2>/dev/null; then break; fi
            sleep 0.05
        done
        if ! alive; then
            echo "pgpool.sh: pgpool did not start (or a login through it fails); $dir/pgpool.log:" >&2
            tail -30 "$dir/pgpool.log" >&2
            pid=$(pid_of)
            if [ -n "$pid" ]; then kill -INT "$pid" 2>/dev/null || true; fi
            kill -INT "$!" 2>/dev/null || true
            exit 1
        fi
    fi
    echo "PGPOOL=host=127.0.0.1 port=$(port_of)"
    echo "pid=$(pid_of)"
    ;;
stop)
    dir=$(cd "$dir" 2>/dev/null && pwd) || exit 0
    pid=$(pid_of)
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
        # SIGINT: pgpool's fast shutdown (clients disconnected, children stopped).
        kill -INT "$pid"
        for _ in $(seq 1 600); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.05
        done
        if kill -0 "$pid" 2>/dev/null; then
            echo "pgpool.sh: pgpool $pid did not stop in 30 s; killing it" >&2
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
    psql_pool "$@"
    ;;
*)
    usage
    ;;
esac
