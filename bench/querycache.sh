#!/usr/bin/env bash
# bench/querycache.sh: the transparent MySQL query cache (issue 5) against MariaDB with its own
# query cache OFF and ON. A benchmark, not a test: asserts nothing, not part of CI.
#
#   bench/querycache.sh                                   # 2 workloads x 5 thread counts x 3 configs,
#                                                         # 10 s each: about 6 minutes
#   DURATION=5 THREADS="1 4 16" WORKLOADS=oltp_point_select bench/querycache.sh
#
# What it does, in one run: starts a throw-away MariaDB (scripts/mariadb.sh, datadir on /work,
# started with --query-cache-type=1 --query-cache-size=$QC_SIZE so the query cache can be switched
# at run time, and a buffer pool that holds the tables), `sysbench oltp_common prepare`s TABLES
# tables of TABLE_SIZE rows, starts sqlcached -t SERVER_THREADS with --mysql-listen in front of
# it, starts a background writer (bench/querycache_writer.lua: WRITE_RATE `UPDATE sbtestN SET
# k=k+1 WHERE id=<rand>`/s directly on MariaDB, as seed 004), and then for each workload and
# thread count runs sysbench against, back to back:
#   off   : MariaDB directly, query cache off  (SET GLOBAL query_cache_type=OFF, query_cache_size=0)
#   on    : MariaDB directly, query cache on   (query_cache_size=$QC_SIZE, query_cache_type=ON)
#   proxy : sqlcached's MySQL port (MariaDB's query cache off)
# Workloads: oltp_point_select, and oltp_read_only (point, range, sum, order and distinct range
# selects) with --skip_trx=on for all three configs (reads in a read-write transaction go to the
# backend unless PROXY_ARGS="--query-cache-in-transactions until-write"; MariaDB's cache would
# serve them; SKIP_TRX=off keeps sysbench's BEGIN/COMMIT). sysbench's default skewed distribution
# (--rand-type=special), --db-ps-mode=$PS_MODE (auto: server-side prepared statements).
# Reported per point: qps, p95 latency (sysbench), hit ratio over the point's run:
#   MariaDB QC: ΔQcache_hits / (ΔQcache_hits + ΔCom_select)
#   sqlcached : ΔQcache_hits / (ΔQcache_hits + ΔQcache_inserts + ΔQcache_not_cached), from `stats`
# and CPU µs per query of mariadbd and sqlcached (/proc/PID/stat over the measured run / queries):
# issue 11 item 7 asks the proxy's CPU per hit to be at most half MariaDB's per point select.
# Output: a markdown table on stdout and bench/results/querycache-<ts>.md (raw lines in .log),
# with proxy/off and proxy/on ratios. Goals (issue 5): point_select proxy >= off at every thread
# count and >= 3x on at 16 threads; read_only proxy >= 3x off; hit ratio >= 90%.
#
# Environment: THREADS ("1 2 4 8 16") DURATION (10 s) WARMUP (2 s, an unmeasured run before each point) WORKLOADS ("oltp_point_select
#   oltp_read_only") CONFIGS ("off on proxy") TABLES (4) TABLE_SIZE (100000) WRITE_RATE (65)
#   SERVER_THREADS (4, sqlcached -t: its default) PROXY_CACHE_SIZE (256m) QC_SIZE (64M) PS_MODE (auto)
#   SKIP_TRX (on) BUFFER_POOL (512M) SQLCACHED_BIN (target/release/sqlcached, built if missing)
#   SB_ARGS (more sysbench options for every run, e.g. "--range_selects=off": oltp_read_only's
#   transactions of 10 point selects only)
#   PROXY_ARGS (more sqlcached flags, e.g. "--query-cache-type OFF") WAIT_BINLOG (1; 0 = do not wait for sqlcached's binlog follower: the proxy then caches
#   nothing, which measures its passthrough) KEEP=1 keeps the work dir.
# Everything shares the machine's CPUs (no pinning: MariaDB, sqlcached and sysbench all need
# cores, and pinning on 2 CPUs would mostly measure the pinning).
# Needs: mariadbd (scripts/mariadb.sh installs it), sysbench (Debian; installed if missing).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
# shellcheck source=bench/lib.sh
source "$HERE/lib.sh"   # port_open, pick_port, stop_pids, sysbench_setup
if [[ "${1:-}" == -h || "${1:-}" == --help ]]; then
  sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | grep '^#' | sed 's/^# \{0,1\}//'
  exit 0
fi

THREADS=${THREADS:-"1 2 4 8 16"}
DURATION=${DURATION:-10}
WARMUP=${WARMUP:-2}
WORKLOADS=${WORKLOADS:-"oltp_point_select oltp_read_only"}
CONFIGS=${CONFIGS:-"off on proxy"}
TABLES=${TABLES:-4}
TABLE_SIZE=${TABLE_SIZE:-100000}
WRITE_RATE=${WRITE_RATE:-65}
SERVER_THREADS=${SERVER_THREADS:-4}
PROXY_CACHE_SIZE=${PROXY_CACHE_SIZE:-256m}
QC_SIZE=${QC_SIZE:-64M}
PS_MODE=${PS_MODE:-auto}
SKIP_TRX=${SKIP_TRX:-on}
SB_ARGS=${SB_ARGS:-}
BUFFER_POOL=${BUFFER_POOL:-512M}
SQLCACHED_BIN=${SQLCACHED_BIN:-$ROOT/target/release/sqlcached}

log() { echo "[querycache] $*" >&2; }
die() { log "error: $*"; exit 1; }

sysbench_setup querycache   # TS RESULTS OUT RAW WORK; sysbench installed
if [[ ! -x "$SQLCACHED_BIN" ]]; then
  (cd "$ROOT" && cargo build --release -p sqlcached) || die "building sqlcached failed"
fi
"$SQLCACHED_BIN" --help 2>&1 | grep -q -- --mysql-listen || die "$SQLCACHED_BIN has no --mysql-listen"
cp "$SQLCACHED_BIN" "$WORK/sqlcached"   # a private copy: a rebuild during the run cannot swap it
BIN_SHA=$(sha256sum "$WORK/sqlcached" | cut -c1-12)

# ---- processes (only ours, by pid)
DB_DIR=$WORK/mariadb
PID_SQ="" PID_W=""
cleanup() {
  stop_pids $PID_W $PID_SQ
  bash "$ROOT/scripts/mariadb.sh" stop "$DB_DIR" >/dev/null 2>&1 || true
  if [[ "${KEEP:-0}" != 1 ]]; then rm -rf "$WORK"; else log "kept $WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM


DB_PORT=$(pick_port)
log "starting MariaDB in $DB_DIR on 127.0.0.1:$DB_PORT"
MARIADB_EXTRA_ARGS="--query-cache-type=1 --query-cache-size=$QC_SIZE --innodb-buffer-pool-size=$BUFFER_POOL" \
  bash "$ROOT/scripts/mariadb.sh" start "$DB_DIR" "$DB_PORT" >"$WORK/mariadb.start" 2>&1 ||
  { cat "$WORK/mariadb.start" >&2; die "mariadb did not start"; }
DB_USER=${MARIADB_USER:-sqlcached}
DB_PASS=${MARIADB_PASSWORD:-sqlcached-test}
DB_VERSION=$(mariadbd --version 2>/dev/null | awk '{print $3}' || true)
sql() { mariadb --no-defaults --protocol=socket --socket="$DB_DIR/mysqld.sock" -uroot -N -B "$@"; }
status_var() { sql -e "SHOW GLOBAL STATUS LIKE '$1'" | awk '{print $2}'; }

sb_cmd() { # SB = the sysbench command with connection and table options for host:port $1
  SB=(sysbench --db-driver=mysql --mysql-host="${1%:*}" --mysql-port="${1#*:}" --mysql-user="$DB_USER"
    --mysql-password="$DB_PASS" --mysql-db=sbtest --tables="$TABLES" --table-size="$TABLE_SIZE")
}

log "preparing $TABLES tables x $TABLE_SIZE rows"
sql -e "CREATE DATABASE sbtest"
sb_cmd "127.0.0.1:$DB_PORT"
"${SB[@]}" --threads=2 oltp_common prepare >"$WORK/prepare.out" 2>&1 ||
  { tail -20 "$WORK/prepare.out" >&2; die "sysbench prepare failed"; }

SQ_PORT=$(pick_port)
MY_PORT=$(pick_port)
while [[ "$MY_PORT" == "$SQ_PORT" ]]; do MY_PORT=$(pick_port); done
SQLCACHED_MYSQL_PASSWORD=$DB_PASS "$WORK/sqlcached" -l 127.0.0.1 -p "$SQ_PORT" -U 0 -t "$SERVER_THREADS" \
  --mysql-listen "127.0.0.1:$MY_PORT" --mysql-backend "127.0.0.1:$DB_PORT" --mysql-user "$DB_USER" \
  --query-cache-size "$PROXY_CACHE_SIZE" ${PROXY_ARGS:-} >"$WORK/sqlcached.log" 2>&1 &
PID_SQ=$!

sq_stats() { # all `stats` lines as NAME VALUE
  exec 3<>"/dev/tcp/127.0.0.1/$SQ_PORT" || return 1
  printf 'stats\r\nquit\r\n' >&3
  tr -d '\r' <&3 | awk '$1 == "STAT" {print $2, $3}'
  exec 3<&-
}
sq_stat() { sq_stats | awk -v n="$1" '$1 == n {print $2}'; }

binlog_ok() { [[ "${WAIT_BINLOG:-1}" == 0 || "$(sq_stat binlog_connected)" == 1 ]]; }
for _ in $(seq 1 400); do
  kill -0 "$PID_SQ" 2>/dev/null || { cat "$WORK/sqlcached.log" >&2; die "sqlcached exited"; }
  port_open "$SQ_PORT" && port_open "$MY_PORT" && binlog_ok && break
  sleep 0.05
done
binlog_ok || { cat "$WORK/sqlcached.log" >&2; die "binlog follower not connected (stats binlog_connected)"; }
log "sqlcached $BIN_SHA pid $PID_SQ: memcached :$SQ_PORT, mysql :$MY_PORT"

# The proxy learns a table's schema on its first read of it. Read each table through the proxy
# until that read is a hit, so the writer's changes are key-level invalidations from the start
# (else a run whose CONFIGS begin with `off` counts ~1,500 table-level ones while nothing is cached).
for t in $(seq 1 "$TABLES"); do
  for _ in $(seq 1 40); do
    h0=$(sq_stat Qcache_hits)
    mariadb --no-defaults --protocol=tcp -h 127.0.0.1 -P "$MY_PORT" -u"$DB_USER" -p"$DB_PASS" -N -B sbtest \
      -e "SELECT c FROM sbtest$t WHERE id = 1" >/dev/null 2>&1 || true
    [[ "$(sq_stat Qcache_hits)" != "$h0" ]] && break
    sleep 0.05
  done
done

log "background writer: $WRITE_RATE updates/s directly on MariaDB"
"${SB[@]}" --threads=1 --rate="$WRITE_RATE" --time=0 --events=0 --report-interval=0 \
  "$HERE/querycache_writer.lua" run >"$WORK/writer.out" 2>&1 &
PID_W=$!
UPDATES0=$(status_var Com_update)

set_qc() { # off | on
  if [[ "$1" == on ]]; then
    sql -e "SET GLOBAL query_cache_size = $(numfmt --from=iec "$QC_SIZE"); SET GLOBAL query_cache_type = ON"
  else
    sql -e "SET GLOBAL query_cache_type = OFF; SET GLOBAL query_cache_size = 0"
  fi
}

counters() { # config -> "hits misses"
  if [[ "$1" == proxy ]]; then
    sq_stats | awk '$1 == "Qcache_hits" {h = $2} $1 == "Qcache_inserts" || $1 == "Qcache_not_cached" {m += $2}
      END {print h + 0, m + 0}'
  else
    echo "$(status_var Qcache_hits) $(status_var Com_select)"
  fi
}

cpu_ticks() { # pid -> its user + system CPU so far, in clock ticks (/proc/PID/stat fields 14, 15)
  awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat" 2>/dev/null || echo 0
}
TICK_US=$((1000000 / $(getconf CLK_TCK)))
per_query() { # ticks before, ticks after, queries -> µs of CPU per query ("-" without queries)
  awk -v a="$1" -v b="$2" -v n="$3" -v u="$TICK_US" 'BEGIN { if (n > 0) printf "%.1f", (b - a) * u / n; else print "-" }'
}
PID_DB=$(cat "$DB_DIR/mysqld.pid")

declare -A QPS P95 HIT DBCPU SQCPU
point() { # workload threads config
  local w=$1 t=$2 c=$3 addr out extra=() b a db0 sq0 db1 sq1
  addr="127.0.0.1:$DB_PORT"
  [[ "$c" == proxy ]] && addr="127.0.0.1:$MY_PORT"
  set_qc "$([[ "$c" == on ]] && echo on || echo off)"
  [[ "$w" == oltp_read_only ]] && extra=(--skip_trx="$SKIP_TRX")
  # shellcheck disable=SC2206 # SB_ARGS is a list of options, split on blanks on purpose
  extra+=($SB_ARGS)
  sb_cmd "$addr"
  if [[ "$WARMUP" -gt 0 ]]; then # sysbench 1.0 has no --warmup-time: an unmeasured run first
    timeout --kill-after=5 $((WARMUP + 60)) "${SB[@]}" --threads="$t" --time="$WARMUP" --db-ps-mode="$PS_MODE" \
      "${extra[@]}" "$w" run >/dev/null 2>&1 || die "sysbench warmup failed ($w, $t threads, $c)"
  fi
  b=$(counters "$c")
  db0=$(cpu_ticks "$PID_DB") sq0=$(cpu_ticks "$PID_SQ")
  out=$(timeout --kill-after=5 $((DURATION + 60)) "${SB[@]}" --threads="$t" --time="$DURATION" --db-ps-mode="$PS_MODE" \
    --percentile=95 --report-interval=0 "${extra[@]}" "$w" run 2>&1) ||
    { echo "$out" | tail -20 >&2; die "sysbench failed ($w, $t threads, $c)"; }
  db1=$(cpu_ticks "$PID_DB") sq1=$(cpu_ticks "$PID_SQ")
  a=$(counters "$c")
  echo "$out" >"$WORK/$w-$t-$c.out"
  local qps p95 errs hit nq dbus squs
  qps=$(sed -n 's/^ *queries: .*(\([0-9.]*\) per sec.)/\1/p' <<<"$out" | head -1)
  p95=$(awk '/95th percentile:/ {print $3}' <<<"$out")
  errs=$(sed -n 's/^ *ignored errors: *\([0-9]*\).*/\1/p' <<<"$out" | head -1)
  hit=$(awk -v b="$b" -v a="$a" 'BEGIN { split(b, x, " "); split(a, y, " "); h = y[1] - x[1]; m = y[2] - x[2];
    if (h + m > 0) printf "%.1f", 100 * h / (h + m); else print "-" }')
  # CPU per query: each process's CPU over the measured run / the queries sysbench completed
  # (the proxy's includes its binlog follower and the writer's invalidations).
  nq=$(sed -n 's/^ *queries: *\([0-9]*\).*/\1/p' <<<"$out" | head -1)
  dbus=$(per_query "$db0" "$db1" "${nq:-0}") squs=$(per_query "$sq0" "$sq1" "${nq:-0}")
  [[ "$c" == proxy ]] || squs=-
  QPS[$w/$t/$c]=$qps P95[$w/$t/$c]=$p95 HIT[$w/$t/$c]=$hit DBCPU[$w/$t/$c]=$dbus SQCPU[$w/$t/$c]=$squs
  echo "workload=$w threads=$t config=$c qps=$qps p95_ms=$p95 hit_pct=$hit errors=${errs:-na}" \
    "mariadb_cpu_us_per_q=$dbus sqlcached_cpu_us_per_q=$squs" | tee -a "$RAW" >&2
}

START=$(date +%s)
for w in $WORKLOADS; do
  for t in $THREADS; do
    for c in $CONFIGS; do point "$w" "$t" "$c"; done
  done
done
ELAPSED=$(($(date +%s) - START))
WRITES=$(($(status_var Com_update) - UPDATES0))
kill -TERM "$PID_W" 2>/dev/null || true

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a != "" && b > 0) printf "%.2f", a / b; else print "-" }'; }
cell() { # workload threads config
  local k="$1/$2/$3"
  [[ -n "${QPS[$k]:-}" ]] || { echo "- | - | -"; return; }
  awk -v q="${QPS[$k]}" -v p="${P95[$k]}" -v h="${HIT[$k]}" 'BEGIN { printf "%.0f | %s | %s", q, p, h }'
}

{
  echo "# Query cache: sqlcached proxy vs MariaDB query cache OFF / ON ($TS)"
  echo
  echo "MariaDB ${DB_VERSION:-?} (scripts/mariadb.sh, binlog ROW, buffer pool $BUFFER_POOL, query_cache_size $QC_SIZE when on);"
  echo "sysbench $(sysbench --version | awk '{print $2}'), $TABLES tables x $TABLE_SIZE rows, --rand-type=special (default),"
  echo "--db-ps-mode=$PS_MODE, oltp_read_only with --skip_trx=$SKIP_TRX${SB_ARGS:+, sysbench options $SB_ARGS}; $DURATION s measured after a $WARMUP s warmup run per point;"
  echo "background writer ${WRITE_RATE} updates/s directly on MariaDB ($WRITES updates in ${ELAPSED} s);"
  echo "sqlcached $BIN_SHA -t $SERVER_THREADS --query-cache-size $PROXY_CACHE_SIZE; $(nproc) CPUs shared, no pinning."
  echo "qps = sysbench queries/s; p95 in ms; hit % as described in the script header."
  echo "CPU: µs of CPU per query (user + system over the measured run / sysbench's queries) of MariaDB"
  echo "(mariadbd) and, for proxy, of sqlcached: the proxy's CPU per hit is about its figure when hit % is near 100."
  echo
  for w in $WORKLOADS; do
    echo "## $w"
    echo
    echo "| threads | off qps | p95 | hit % | on qps | p95 | hit % | proxy qps | p95 | hit % | proxy/off | proxy/on |"
    echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    for t in $THREADS; do
      echo "| $t | $(cell "$w" "$t" off) | $(cell "$w" "$t" on) | $(cell "$w" "$t" proxy) |" \
        "**$(ratio "${QPS[$w/$t/proxy]:-}" "${QPS[$w/$t/off]:-0}")** | **$(ratio "${QPS[$w/$t/proxy]:-}" "${QPS[$w/$t/on]:-0}")** |"
    done
    echo
    echo "CPU µs per query: MariaDB off / on / behind the proxy; sqlcached (proxy); sqlcached / MariaDB off"
    echo
    echo "| threads | MariaDB off | MariaDB on | MariaDB behind proxy | sqlcached | sqlcached/off |"
    echo "|---:|---:|---:|---:|---:|---:|"
    for t in $THREADS; do
      echo "| $t | ${DBCPU[$w/$t/off]:--} | ${DBCPU[$w/$t/on]:--} | ${DBCPU[$w/$t/proxy]:--} | ${SQCPU[$w/$t/proxy]:--} |" \
        "$(ratio "${SQCPU[$w/$t/proxy]:-}" "${DBCPU[$w/$t/off]:-0}") |"
    done
    echo
  done
  echo "Measured part: ${ELAPSED} s. Raw lines: \`$(basename "$RAW")\`. sqlcached stats at the end:"
  echo
  echo '```'
  sq_stats | grep -E '^(Qcache_|binlog_|mysql_)' || true
  echo '```'
} | tee "$OUT"
log "wrote $OUT"
