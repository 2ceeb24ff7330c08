#!/usr/bin/env bash
# bench/querycache-pg.sh: the PostgreSQL query cache (issue 41 item 6) against PostgreSQL 15
# direct and pgpool-II's in-memory query cache, in one run. A benchmark, not a test: it
# asserts nothing and is not part of CI.
#
#   bench/querycache-pg.sh                                # 2 workloads x 4 client counts x 4 configs
#                                                         # x 3 reps x (3 + 10 + 1) s: about 23 minutes
#   DURATION=3 REPS=1 THREADS="1 16" bench/querycache-pg.sh                # a quick check
#   WORKLOADS=point CONFIGS="direct sqlcached pgpool" bench/querycache-pg.sh
#
# One throw-away PostgreSQL 15 (scripts/postgres.sh; datadir under bench/results), a database
# `bench` initialized by `pgbench -i -s SCALE` (pgbench_accounts: 100,000 x SCALE rows) and
# owned by a role `bench` that logs in by trust on loopback (a member of scripts/postgres.sh's
# trust_login group: no SCRAM work in anyone's CPU figures), and in front of it, all up at once:
#   sqlcached : sqlcached --pg-listen, -t SERVER_THREADS, + PROXY_ARGS (default: the query cache
#               on the database `bench`, its own slot and publication)
#   floor     : a second sqlcached --pg-listen with FLOOR_ARGS (default --pg-query-cache off):
#               the cache-less front, i.e. what relaying alone costs (the report warns if the
#               floor served hits)
#   pgpool    : pgpool-II 4.3 (scripts/pgpool.sh: raw mode, memory_cache_enabled = on,
#               memqcache_method = shmem, PGPOOL_CACHE_SIZE, memqcache_auto_cache_invalidation
#               on, PGPOOL_AUTH=trust, num_init_children = the most clients + 8)
#   direct    : PostgreSQL itself
# For each rep, workload, client count and config (the config order rotates per rep): a
# background writer (pgbench -c 1 -R WRITE_RATE bench/querycache-pg-writer.sql: one UPDATE of
# a pgbench_accounts row per transaction, skewed as the point select; WRITER=direct sends it
# straight to PostgreSQL, as issue 41 says, WRITER=through through the config under test),
# then one pgbench run of WARMUP + DURATION + 1 s (-M QUERY_MODE, -j = CPUs of the load,
# per-transaction log): the first WARMUP seconds fill the caches and are not counted, then
# counters and CPU are read at the start and the end of a DURATION-second window, and
# everything reported comes from that window (connection setup and teardown fall outside it).
# Workloads:
#   select-only : pgbench's builtin select-only script (-S): SELECT abalance FROM
#                 pgbench_accounts WHERE aid = :aid, aid uniform over all rows
#   point       : bench/querycache-pg-point.sql: SELECT abalance, filler (about 100 bytes) by
#                 primary key, aid from random_exponential(SKEW = 138.6: 75 % of the reads on 1 %
#                 of the rows, as sysbench's default special distribution in bench/querycache.sh)
# Reported per point (medians over REPS; ratios are the median and min-max of the per-rep
# ratios, taken between configs of the same rep):
#   qps     transactions (= queries) completed in the window / its length (pgbench's log)
#   p99     99th percentile of those transactions' latency, ms
#   hit %   pgpool: Δnum_cache_hits / (Δnum_cache_hits + Δnum_selects) of SHOW pool_cache;
#           sqlcached and floor: from `stats` on the memcached port, Δhits / (Δhits + Δmisses)
#           with hits = pg_qcache_hits (or pg_query_cache_hits, pg_cache_hits: the first
#           present) and misses = its prefix's _misses, else _inserts + _not_cached;
#           SQ_HITS_STAT / SQ_MISS_STATS (names, the latter summed) override. "-" where the
#           figures do not exist (a front without its cache)
#   CPU µs/query: user + system CPU over the window / the window's queries, from /proc:
#           postgres = the postmaster and all its children (backends, autovacuum, walwriter...:
#           utime + stime + cutime + cstime of every live process of the tree, so backends that
#           ended are counted once, by their parent); pgpool = its main process and all its
#           children the same way; sqlcached and floor = their process (all threads). The
#           writer's updates are in postgres's figure in every config alike.
# Pinning (PIN=split, the default on this 2-CPU machine): PostgreSQL (postmaster and every
# backend), sqlcached, floor and pgpool on SERVER_CPUS (0), pgbench and the writer on
# LOAD_CPUS (1): the load never takes the servers' CPU, and every config's server side has the
# same one CPU (a proxy competes with PostgreSQL for it, which is the deployment where the proxy
# shares the database host). PIN=none pins nothing (nproc pgbench threads).
# Goals (issue 41, point select at 16 clients): sqlcached >= 2x direct with >= 90 % hits,
# sqlcached CPU per query (~ per hit at ~100 % hits) <= 0.5x postgres's per select, sqlcached
# >= 1.5x pgpool; the report evaluates them. pgpool's hits under WRITER=direct include stale
# answers (its cache never sees those writes): bench/freshness_pg.py counts them.
# Freshness (FRESHNESS=1, the default; 0 skips it): after the measured part, the freshness
# checker (bench/freshness_pg.py, tests/pgcache/freshness.py's cases: triggers, cascades, rules,
# partitions, savepoints, two-phase commit, search_path, direct and bulk writes, a race) runs
# against the same pgpool-II and sqlcached, with PostgreSQL itself as the truth: the stale and
# wrong reads of each, case by case, in the report (about 15 s per cache).
# Output: a markdown table on stdout and bench/results/querycache-pg-<ts>.md, raw per-point
# lines in .log.
#
# Environment: THREADS ("1 4 16 64") DURATION (10) WARMUP (3) REPS (3) WORKLOADS ("select-only
#   point") CONFIGS ("direct sqlcached pgpool floor") SCALE (1) WRITE_RATE (65) WRITER (direct)
#   QUERY_MODE (prepared: pgbench -M simple|extended|prepared) SKEW (138.6) PIN (split)
#   SERVER_CPUS (0) LOAD_CPUS (1) SERVER_THREADS (2, sqlcached -t) PROXY_ARGS FLOOR_ARGS
#   PGPOOL_CACHE_SIZE (64MB) SHARED_BUFFERS (128MB) SQ_HITS_STAT SQ_MISS_STATS
#   SQLCACHED_BIN (target/release/sqlcached, built if missing) KEEP=1 keeps the work dir.
#   FRESHNESS (1: run the freshness checker at the end; needs python3 with psycopg).
# Needs: postgresql-15 (pgbench, psql), pgpool2, taskset (util-linux).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
# shellcheck source=bench/lib.sh
source "$HERE/lib.sh" # port_open, pick_port, stop_pids
if [[ "${1:-}" == -h || "${1:-}" == --help ]]; then
  sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | grep '^#' | sed 's/^# \{0,1\}//'
  exit 0
fi

THREADS=${THREADS:-"1 4 16 64"}
DURATION=${DURATION:-10}
WARMUP=${WARMUP:-3}
REPS=${REPS:-3}
WORKLOADS=${WORKLOADS:-"select-only point"}
CONFIGS=${CONFIGS:-"direct sqlcached pgpool floor"}
SCALE=${SCALE:-1}
WRITE_RATE=${WRITE_RATE:-65}
WRITER=${WRITER:-direct}
QUERY_MODE=${QUERY_MODE:-prepared}
SKEW=${SKEW:-138.6}
PIN=${PIN:-split}
SERVER_CPUS=${SERVER_CPUS:-0}
LOAD_CPUS=${LOAD_CPUS:-1}
SERVER_THREADS=${SERVER_THREADS:-2}
# The cache follows the benchmark's database (on by default with --pg-listen, but for
# --pg-database, default postgres: without it every read of `bench` is relayed); the floor is
# the same front with its cache off.
PROXY_ARGS=${PROXY_ARGS:---pg-database bench --pg-slot bench_qc --pg-publication bench_qc}
FLOOR_ARGS=${FLOOR_ARGS:---pg-query-cache off}
PGPOOL_CACHE_SIZE=${PGPOOL_CACHE_SIZE:-64MB}
SHARED_BUFFERS=${SHARED_BUFFERS:-128MB}
SQLCACHED_BIN=${SQLCACHED_BIN:-$ROOT/target/release/sqlcached}
PGBIN=${POSTGRES_BIN:-/usr/lib/postgresql/15/bin}

log() { echo "[querycache-pg $(date +%H:%M:%S)] $*" >&2; }
die() { log "error: $*"; exit 1; }

[[ "$REPS" =~ ^[0-9]+$ && "$REPS" -ge 1 && "$REPS" -le 20 ]] || die "REPS must be 1..20"
[[ "$DURATION" =~ ^[0-9]+$ && "$DURATION" -ge 1 ]] || die "DURATION must be a whole number of seconds >= 1"
[[ "$WARMUP" =~ ^[0-9]+$ ]] || die "WARMUP must be a whole number of seconds"
[[ "$WRITER" == direct || "$WRITER" == through ]] || die "WRITER must be direct or through"
for c in $CONFIGS; do
  [[ " direct sqlcached pgpool floor " == *" $c "* ]] || die "unknown config $c (direct sqlcached pgpool floor)"
done
for w in $WORKLOADS; do
  [[ "$w" == select-only || "$w" == point ]] || die "unknown workload $w (select-only point)"
done
case "$PIN" in
  split) SRV_PIN=(taskset -c "$SERVER_CPUS"); LD_PIN=(taskset -c "$LOAD_CPUS")
    LOAD_JOBS=$(echo "$LOAD_CPUS" | tr ',' '\n' | wc -l) ;;
  none) SRV_PIN=(); LD_PIN=(); LOAD_JOBS=$(nproc) ;;
  *) die "PIN must be split or none" ;;
esac
[[ -x "$PGBIN/pgbench" ]] || die "$PGBIN/pgbench missing (Debian postgresql-15)"
command -v /usr/sbin/pgpool >/dev/null || [[ " $CONFIGS " != *" pgpool "* ]] ||
  die "pgpool missing (Debian pgpool2)"

TS=$(date +%Y%m%d-%H%M%S)
RESULTS=$ROOT/bench/results
OUT=$RESULTS/querycache-pg-$TS.md
RAW=$RESULTS/querycache-pg-$TS.log
WORK=$RESULTS/work-querycache-pg-$TS # on /work, not tmpfs: PostgreSQL fsyncs there
mkdir -p "$RESULTS" "$WORK"
: >"$RAW"
if [[ ! -x "$SQLCACHED_BIN" ]]; then
  (cd "$ROOT" && cargo build --release -p sqlcached) || die "building sqlcached failed"
fi
"$SQLCACHED_BIN" --help 2>&1 | grep -q -- --pg-listen || die "$SQLCACHED_BIN has no --pg-listen"
cp "$SQLCACHED_BIN" "$WORK/sqlcached" # a private copy: a rebuild during the run cannot swap it
BIN_SHA=$(sha256sum "$WORK/sqlcached" | cut -c1-12)

# ---- processes (only ours, by pid)
PG_DIR=$WORK/postgres
PP_DIR=$WORK/pgpool
PID_SQ="" PID_FL="" PID_W="" PID_B=""
cleanup() {
  stop_pids $PID_B $PID_W $PID_SQ $PID_FL
  bash "$ROOT/scripts/pgpool.sh" stop "$PP_DIR" >/dev/null 2>&1 || true
  bash "$ROOT/scripts/postgres.sh" stop "$PG_DIR" >/dev/null 2>&1 || true
  if [[ "${KEEP:-0}" != 1 ]]; then rm -rf "$WORK"; else log "kept $WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

MAX_T=0
for t in $THREADS; do ((t > MAX_T)) && MAX_T=$t; done
PGPOOL_CHILDREN=$((MAX_T + 8))
DB_PORT=$(pick_port)
log "starting PostgreSQL in $PG_DIR on 127.0.0.1:$DB_PORT (${SRV_PIN[*]:-unpinned})"
POSTGRES_EXTRA_ARGS="-c max_connections=$((2 * MAX_T + PGPOOL_CHILDREN + 40)) -c shared_buffers=$SHARED_BUFFERS" \
  "${SRV_PIN[@]}" bash "$ROOT/scripts/postgres.sh" start "$PG_DIR" "$DB_PORT" >"$WORK/postgres.start" 2>&1 ||
  { cat "$WORK/postgres.start" >&2; die "postgres did not start"; }
PG_USER=${POSTGRES_USER:-sqlcached}
PG_PASS=${POSTGRES_PASSWORD:-sqlcached-test}
admin() { bash "$ROOT/scripts/postgres.sh" psql "$PG_DIR" "$@"; }
PID_PG=$(head -1 "$PG_DIR/data/postmaster.pid")
PG_VERSION=$(admin -tA -c "SHOW server_version" | tr -d ' ')
admin -c "DO \$\$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'bench') THEN
  CREATE ROLE bench LOGIN; END IF; END \$\$; GRANT trust_login TO bench"
admin -c "CREATE DATABASE bench OWNER bench"
conninfo() { echo "host=127.0.0.1 port=$1 user=bench dbname=bench sslmode=disable"; }

log "pgbench -i -s $SCALE"
"$PGBIN/pgbench" -i -q -s "$SCALE" "$(conninfo "$DB_PORT")" >"$WORK/init.out" 2>&1 ||
  { tail -20 "$WORK/init.out" >&2; die "pgbench -i failed"; }
NACCOUNTS=$((100000 * SCALE))

# sqlcached's fronts: NAME PORT_VAR PID_VAR ARGS...
start_front() {
  local name=$1 mport pport pid
  shift
  mport=$(pick_port)
  pport=$(pick_port)
  while [[ "$pport" == "$mport" ]]; do pport=$(pick_port); done
  # shellcheck disable=SC2068 # ARGS are flags split on purpose
  SQLCACHED_PG_PASSWORD=$PG_PASS "${SRV_PIN[@]}" "$WORK/sqlcached" -l 127.0.0.1 -p "$mport" -U 0 \
    -t "$SERVER_THREADS" --pg-listen "127.0.0.1:$pport" --pg-backend "127.0.0.1:$DB_PORT" \
    --pg-user "$PG_USER" $@ >"$WORK/$name.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 200); do
    kill -0 "$pid" 2>/dev/null || { cat "$WORK/$name.log" >&2; die "$name exited"; }
    port_open "$mport" && port_open "$pport" && break
    sleep 0.05
  done
  port_open "$pport" || die "$name did not listen on $pport"
  FRONT_M=$mport FRONT_P=$pport FRONT_PID=$pid
}
# shellcheck disable=SC2086
if [[ " $CONFIGS " == *" sqlcached "* ]]; then
  start_front sqlcached $PROXY_ARGS
  SQ_M=$FRONT_M SQ_P=$FRONT_P PID_SQ=$FRONT_PID
  log "sqlcached $BIN_SHA pid $PID_SQ: memcached :$SQ_M, postgres :$SQ_P${PROXY_ARGS:+ ($PROXY_ARGS)}"
fi
# shellcheck disable=SC2086
if [[ " $CONFIGS " == *" floor "* ]]; then
  start_front floor $FLOOR_ARGS
  FL_M=$FRONT_M FL_P=$FRONT_P PID_FL=$FRONT_PID
  log "floor (sqlcached${FLOOR_ARGS:+ $FLOOR_ARGS}) pid $PID_FL: memcached :$FL_M, postgres :$FL_P"
fi
PID_PP=""
if [[ " $CONFIGS " == *" pgpool "* ]]; then
  PP_PORT=$(pick_port)
  PGPOOL_AUTH=trust PGPOOL_USER=bench PGPOOL_USERS=bench PGPOOL_CHILDREN=$PGPOOL_CHILDREN \
    PGPOOL_CACHE_SIZE=$PGPOOL_CACHE_SIZE "${SRV_PIN[@]}" bash "$ROOT/scripts/pgpool.sh" start "$PP_DIR" "$PP_PORT" "$DB_PORT" \
    >"$WORK/pgpool.start" 2>&1 || { cat "$WORK/pgpool.start" >&2; die "pgpool did not start"; }
  PID_PP=$(sed -n 's/^pid=//p' "$WORK/pgpool.start")
  PP_VERSION=$(/usr/sbin/pgpool --version 2>&1 | awk '{print $3}')
  log "pgpool-II $PP_VERSION pid $PID_PP on :$PP_PORT ($PGPOOL_CHILDREN children, cache $PGPOOL_CACHE_SIZE)"
fi

port_of() { # config -> the port its clients use
  case "$1" in
    direct) echo "$DB_PORT" ;; sqlcached) echo "$SQ_P" ;; floor) echo "$FL_P" ;; pgpool) echo "$PP_PORT" ;;
  esac
}

# ---- counters
sq_stats() { # memcached port -> all `stats` lines as NAME VALUE
  exec 3<>"/dev/tcp/127.0.0.1/$1" || return 1
  printf 'stats\r\nquit\r\n' >&3
  tr -d '\r' <&3 | awk '$1 == "STAT" {print $2, $3}'
  exec 3<&-
}
# "hits misses" of a sqlcached front from its stats ("- -" when it has no cache figures).
sq_counters() {
  sq_stats "$1" | awk -v hs="${SQ_HITS_STAT:-}" -v ms="${SQ_MISS_STATS:-}" '
    { v[$1] = $2 }
    END {
      if (hs != "") { if (!(hs in v)) { print "- -"; exit } h = v[hs]; n = split(ms, m, " ")
        for (i = 1; i <= n; i++) miss += v[m[i]]; print h + 0, miss + 0; exit }
      split("pg_qcache pg_query_cache pg_cache", p, " ")
      for (i = 1; i <= 3; i++) {
        if (!((p[i] "_hits") in v)) continue
        if ((p[i] "_misses") in v) miss = v[p[i] "_misses"]
        else miss = v[p[i] "_inserts"] + v[p[i] "_not_cached"]
        print v[p[i] "_hits"] + 0, miss + 0; exit
      }
      print "- -"
    }'
}
counters() { # config -> "hits misses" ("- -": no cache figures)
  case "$1" in
    sqlcached) sq_counters "$SQ_M" ;;
    floor) sq_counters "$FL_M" ;;
    pgpool) PGPOOL_USER=bench PGPOOL_DB=bench bash "$ROOT/scripts/pgpool.sh" psql "$PP_DIR" -tA -F ' ' -c "SHOW pool_cache" |
      awk 'NF {print $1, $2; exit}' ;;
    *) echo "- -" ;;
  esac
}

# CPU of a process tree in clock ticks: utime + stime + cutime + cstime of ROOT and of every
# live descendant (a child that ended is in its parent's cutime/cstime once it is reaped, and in
# its own stat until then: each is counted once).
tree_ticks() {
  # through cat: a process that ends between the glob and its read is skipped (gawk would stop
  # at the missing file and print nothing: a "-" in the CPU table)
  { cat /proc/[0-9]*/stat 2>/dev/null || true; } | awk -v root="$1" '
    { pid = $1; line = $0; sub(/^.*\) /, "", line); split(line, f, " ")
      ppid[pid] = f[2]; t[pid] = f[12] + f[13] + f[14] + f[15] }
    END {
      if (!(root in t)) { print 0; exit }
      in_tree[root] = 1; changed = 1
      while (changed) { changed = 0
        for (p in ppid) if (!(p in in_tree) && (ppid[p] in in_tree)) { in_tree[p] = 1; changed = 1 } }
      for (p in in_tree) s += t[p]
      print s + 0
    }'
}
proc_ticks() { # pid -> user + system ticks of the process (all threads)
  awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat" 2>/dev/null || echo 0
}
TICK_US=$((1000000 / $(getconf CLK_TCK)))
per_query() { # ticks before, after, queries -> µs of CPU per query ("-" without queries)
  awk -v a="$1" -v b="$2" -v n="$3" -v u="$TICK_US" 'BEGIN { if (n > 0 && a != "" && b != "") printf "%.1f", (b - a) * u / n; else print "-" }'
}
proxy_pid() { case "$1" in sqlcached) echo "$PID_SQ" ;; floor) echo "$PID_FL" ;; pgpool) echo "$PID_PP" ;; *) echo "" ;; esac; }
proxy_cpu() { # config -> its proxy's ticks ("" for direct)
  case "$1" in
    sqlcached | floor) proc_ticks "$(proxy_pid "$1")" ;;
    pgpool) tree_ticks "$PID_PP" ;;
    *) echo "" ;;
  esac
}

now() { date +%s.%N; }
sleep_until() { # unix time (fractional)
  local d
  d=$(awk -v t="$1" -v n="$(now)" 'BEGIN { d = t - n; printf "%.3f", (d > 0 ? d : 0) }')
  sleep "$d"
}

# Window figures from pgbench's per-transaction logs (columns: client, transaction, latency µs,
# script, epoch s, epoch µs): FROM TO (unix s) FILES... -> "count p99_ms last_end"
window_stats() {
  local from=$1 to=$2 lat=$WORK/latencies last
  shift 2
  : >"$lat"
  last=$(awk -v a="$from" -v b="$to" -v out="$lat" '{ e = $5 + $6 / 1e6; if (e > last) last = e
    if (e >= a && e < b) print $3 > out } END { printf "%.3f", last }' "$@")
  sort -n -o "$lat" "$lat"
  awk -v last="$last" '{ x[NR] = $1 } END { if (NR == 0) { print 0, "-", last; exit }
    i = int(0.99 * NR); if (i < 1) i = 1; printf "%d %.2f %s\n", NR, x[i] / 1000, last }' "$lat"
}

declare -A QPS P99 HIT PGCPU PXCPU
ANY_FAILED=0
point() { # rep workload clients config
  local rep=$1 w=$2 t=$3 c=$4 port wport logd script=() jobs total t0 a b c0 c1 pg0 pg1 px0 px1 st
  local qps p99 hit nq last errs writes k
  port=$(port_of "$c")
  wport=$DB_PORT
  [[ "$WRITER" == through ]] && wport=$port
  logd=$WORK/log-$rep-$w-$t-$c
  mkdir -p "$logd"
  if [[ "$w" == select-only ]]; then script=(-b select-only); else script=(-f "$HERE/querycache-pg-point.sql"); fi
  jobs=$((t < LOAD_JOBS ? t : LOAD_JOBS))
  total=$((WARMUP + DURATION + 1))
  # the writer: one client, WRITE_RATE transactions/s, logged (its count in the window)
  "${LD_PIN[@]}" "$PGBIN/pgbench" -n -c 1 -j 1 -R "$WRITE_RATE" -T "$total" -M "$QUERY_MODE" \
    -D "naccounts=$NACCOUNTS" -D "skew=$SKEW" -f "$HERE/querycache-pg-writer.sql" -l --log-prefix="$logd/writer" \
    "$(conninfo "$wport")" >"$logd/writer.out" 2>&1 &
  PID_W=$!
  "${LD_PIN[@]}" "$PGBIN/pgbench" -n -c "$t" -j "$jobs" -T "$total" -M "$QUERY_MODE" \
    -D "naccounts=$NACCOUNTS" -D "skew=$SKEW" "${script[@]}" -l --log-prefix="$logd/bench" \
    "$(conninfo "$port")" >"$logd/bench.out" 2>&1 &
  PID_B=$!
  t0=$(now)
  a=$(awk -v t="$t0" -v w="$WARMUP" 'BEGIN { printf "%.3f", t + w }')
  b=$(awk -v t="$a" -v d="$DURATION" 'BEGIN { printf "%.3f", t + d }')
  sleep_until "$a"
  c0=$(counters "$c") pg0=$(tree_ticks "$PID_PG") px0=$(proxy_cpu "$c")
  a=$(now)
  sleep_until "$b"
  c1=$(counters "$c") pg1=$(tree_ticks "$PID_PG") px1=$(proxy_cpu "$c")
  b=$(now)
  st=0
  wait "$PID_B" || st=$?
  PID_B=""
  wait "$PID_W" 2>/dev/null || log "warning: the writer failed: $(tail -3 "$logd/writer.out")"
  PID_W=""
  if [[ $st != 0 ]] || ! grep -q '^tps = ' "$logd/bench.out"; then
    tail -15 "$logd/bench.out" >&2
    die "pgbench failed (exit $st; rep $rep, $w, $t clients, $c)"
  fi
  read -r nq p99 last <<<"$(window_stats "$a" "$b" "$logd"/bench*)"
  # the run must cover the whole window (a slow connection phase would shorten it)
  if awk -v l="$last" -v b="$b" 'BEGIN { exit !(l < b - 0.2) }'; then
    log "warning: the last transaction ended at $last, before the window's end $b (rep $rep, $w, $t, $c)"
  fi
  writes=$(window_stats "$a" "$b" "$logd"/writer* | awk '{print $1}')
  errs=$(sed -n 's/^number of failed transactions: *\([0-9]*\).*/\1/p' "$logd/bench.out" | head -1)
  [[ "${errs:-0}" == 0 ]] || ANY_FAILED=1
  qps=$(awk -v n="$nq" -v a="$a" -v b="$b" 'BEGIN { printf "%.0f", n / (b - a) }')
  hit=$(awk -v x="$c0" -v y="$c1" 'BEGIN { split(x, p, " "); split(y, q, " ");
    if (p[1] == "-" || q[1] == "-" || p[1] == "" || q[1] == "") { print "-"; exit }
    h = q[1] - p[1]; m = q[2] - p[2]; if (h + m > 0) printf "%.1f", 100 * h / (h + m); else print "-" }')
  k=$w/$t/$c/$rep
  QPS[$k]=$qps P99[$k]=$p99 HIT[$k]=$hit PGCPU[$k]=$(per_query "$pg0" "$pg1" "$nq") PXCPU[$k]=$(per_query "$px0" "$px1" "$nq")
  [[ "$c" == direct ]] && PXCPU[$k]=-
  echo "rep=$rep workload=$w clients=$t config=$c qps=$qps p99_ms=$p99 hit_pct=$hit failed=${errs:-na}" \
    "postgres_cpu_us_per_q=${PGCPU[$k]} proxy_cpu_us_per_q=${PXCPU[$k]} window_s=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", b - a }')" \
    "writes_in_window=$writes" | tee -a "$RAW" >&2
  [[ "${KEEP:-0}" == 1 ]] || rm -rf "$logd"
}

# ---- the run
log "background writer: $WRITE_RATE updates/s ($WRITER); $REPS reps x ($WORKLOADS) x clients ($THREADS) x ($CONFIGS)"
read -r -a CFG <<<"$CONFIGS"
START=$(date +%s)
for rep in $(seq 1 "$REPS"); do
  for w in $WORKLOADS; do
    for t in $THREADS; do
      for i in "${!CFG[@]}"; do # the order rotates per rep
        point "$rep" "$w" "$t" "${CFG[$(((i + rep - 1) % ${#CFG[@]}))]}"
      done
    done
  done
done
ELAPSED=$(($(date +%s) - START))

# ---- the report
median() { # values ("-" ignored) -> median, or "-"
  printf '%s\n' "$@" | { grep -v '^-*$' || true; } | sort -g | awk '{ x[NR] = $1 } END {
    if (NR == 0) { print "-"; exit } if (NR % 2) print x[(NR + 1) / 2]; else print (x[NR / 2] + x[NR / 2 + 1]) / 2 }'
}
vals() { # array-name workload clients config -> its values over the reps
  local -n arr=$1
  local r
  for r in $(seq 1 "$REPS"); do echo "${arr[$2/$3/$4/$r]:--}"; done
}
med() { median $(vals "$@"); }
# A/B between configs of the same rep: median (min-max) of the per-rep ratios
ratio() { # ARRAY_A CONFIG_A ARRAY_B CONFIG_B workload clients
  local -n ra=$1 rb=$3
  local r xs=()
  for r in $(seq 1 "$REPS"); do
    xs+=("$(awk -v a="${ra[$5/$6/$2/$r]:-}" -v b="${rb[$5/$6/$4/$r]:-}" \
      'BEGIN { if (a != "" && a != "-" && b != "" && b != "-" && b > 0) printf "%.3f", a / b; else print "-" }')")
  done
  printf '%s\n' "${xs[@]}" | { grep -v '^-$' || true; } | sort -g | awk '{ x[NR] = $1 } END {
    if (NR == 0) { print "-"; exit }
    m = (NR % 2) ? x[(NR + 1) / 2] : (x[NR / 2] + x[NR / 2 + 1]) / 2
    if (NR == 1) printf "%.2f", m; else printf "%.2f (%.2f-%.2f)", m, x[1], x[NR] }'
}
fmt0() { awk -v x="$1" 'BEGIN { if (x == "-") print "-"; else printf "%.0f", x }'; }
has() { [[ " $CONFIGS " == *" $1 "* ]]; }
cell() { # workload clients config -> "qps | p99 | hit" or "- | - | -"
  has "$3" || { echo "- | - | -"; return; }
  echo "$(fmt0 "$(med QPS "$1" "$2" "$3")") | $(med P99 "$1" "$2" "$3") | $(med HIT "$1" "$2" "$3")"
}
goal() { # value op bound -> met / not met / -
  awk -v v="${1%% *}" -v op="$2" -v b="$3" 'BEGIN { if (v == "-" || v == "") { print "-"; exit }
    ok = (op == ">=") ? (v >= b) : (v <= b); print ok ? "met" : "**not met**" }'
}
FLOOR_HITS=0
for k in "${!HIT[@]}"; do
  [[ "$k" == */floor/* && "${HIT[$k]}" != - && "${HIT[$k]}" != 0.0 ]] && FLOOR_HITS=1
done
WRITES_AT_END=$(admin -tA -d bench -c "SELECT n_tup_upd FROM pg_stat_user_tables WHERE relname = 'pgbench_accounts'" | tr -d ' ')

{
  echo "# PostgreSQL query cache: sqlcached vs PostgreSQL direct vs pgpool-II ($TS)"
  echo
  echo "PostgreSQL $PG_VERSION (scripts/postgres.sh, shared_buffers $SHARED_BUFFERS); pgbench scale $SCALE"
  echo "($NACCOUNTS accounts), -M $QUERY_MODE, $DURATION s measured after $WARMUP s of warmup in the same run"
  echo "per point, $REPS rep(s), config order rotated per rep; background writer $WRITE_RATE updates/s ($WRITER)"
  echo "(pgbench_accounts updates by the end: ${WRITES_AT_END:-?}); logins by trust (role bench)."
  echo "sqlcached $BIN_SHA -t $SERVER_THREADS --pg-listen${PROXY_ARGS:+ $PROXY_ARGS}; floor: the same binary${FLOOR_ARGS:+ with $FLOOR_ARGS}"
  echo "(no cache)${PID_PP:+; pgpool-II $PP_VERSION raw mode, shmem query cache $PGPOOL_CACHE_SIZE, $PGPOOL_CHILDREN children}."
  if [[ "$PIN" == split ]]; then
    echo "Pinning: PostgreSQL, sqlcached, floor and pgpool on CPU $SERVER_CPUS; pgbench (-j $LOAD_JOBS) and the writer on CPU $LOAD_CPUS ($(nproc) CPUs)."
  else
    echo "No pinning ($(nproc) CPUs shared; pgbench -j $LOAD_JOBS)."
  fi
  echo "qps and p99 (ms) over the window, medians over reps; ratios: median (min-max) of per-rep ratios."
  echo "hit %: pgpool from SHOW pool_cache, sqlcached from its stats (\"-\": no such figures: its cache is off)."
  [[ "$FLOOR_HITS" == 0 ]] || echo "**Warning: the floor served hits: it is not cache-less; set FLOOR_ARGS to turn its cache off.**"
  [[ "$ANY_FAILED" == 0 ]] || echo "**Warning: some runs had failed transactions (see the raw lines).**"
  [[ "$WRITER" == direct ]] && has pgpool &&
    echo "pgpool's hits include stale answers: the writer's direct updates never reach its cache (bench/freshness_pg.py counts them)."
  echo
  for w in $WORKLOADS; do
    echo "## $w"
    echo
    echo "| clients | direct qps | p99 | sqlcached qps | p99 | hit % | pgpool qps | p99 | hit % | floor qps | p99 | sqlcached/direct | sqlcached/pgpool | pgpool/direct | floor/direct |"
    echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    for t in $THREADS; do
      dq="$(cell "$w" "$t" direct)"
      fq="$(cell "$w" "$t" floor)"
      echo "| $t | ${dq% | *} | $(cell "$w" "$t" sqlcached) | $(cell "$w" "$t" pgpool) | ${fq% | *} |" \
        "**$(ratio QPS sqlcached QPS direct "$w" "$t")** | **$(ratio QPS sqlcached QPS pgpool "$w" "$t")** |" \
        "$(ratio QPS pgpool QPS direct "$w" "$t") | $(ratio QPS floor QPS direct "$w" "$t") |"
    done
    echo
    echo "CPU µs per query (medians): postgres = postmaster + all backends; the proxy's own beside it."
    echo
    echo "| clients | postgres direct | postgres behind sqlcached | sqlcached | postgres behind pgpool | pgpool | postgres behind floor | floor | sqlcached / postgres direct | pgpool / postgres direct |"
    echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    for t in $THREADS; do
      echo "| $t | $(med PGCPU "$w" "$t" direct) | $(med PGCPU "$w" "$t" sqlcached) | $(med PXCPU "$w" "$t" sqlcached) |" \
        "$(med PGCPU "$w" "$t" pgpool) | $(med PXCPU "$w" "$t" pgpool) | $(med PGCPU "$w" "$t" floor) | $(med PXCPU "$w" "$t" floor) |" \
        "$(ratio PXCPU sqlcached PGCPU direct "$w" "$t") | $(ratio PXCPU pgpool PGCPU direct "$w" "$t") |"
    done
    echo
  done
  if [[ " $WORKLOADS " == *" point "* && " $THREADS " == *" 16 "* ]]; then
    q2=$(ratio QPS sqlcached QPS direct point 16)
    h=$(med HIT point 16 sqlcached)
    cpu=$(ratio PXCPU sqlcached PGCPU direct point 16)
    q15=$(ratio QPS sqlcached QPS pgpool point 16)
    echo "## Goals (issue 41: point select, 16 clients)"
    echo
    echo "| goal | measured | |"
    echo "|---|---:|---|"
    echo "| sqlcached >= 2x PostgreSQL direct | $q2 | $(goal "$q2" ">=" 2) |"
    echo "| with >= 90 % hits | $h | $(goal "$h" ">=" 90) |"
    echo "| sqlcached CPU per query <= 0.5x postgres's per select (direct) | $cpu | $(goal "$cpu" "<=" 0.5) |"
    echo "| sqlcached >= 1.5x pgpool-II's query cache | $q15 | $(goal "$q15" ">=" 1.5) |"
    echo
  fi
  echo "Measured part: ${ELAPSED} s. Raw lines: \`$(basename "$RAW")\`."
  if has sqlcached; then
    echo "sqlcached stats at the end (pg_*):"
    echo
    echo '```'
    sq_stats "$SQ_M" | grep -E '^pg_' || true
    echo '```'
  fi
  if has pgpool; then
    echo "pgpool SHOW pool_cache at the end:"
    echo
    echo '```'
    PGPOOL_USER=bench PGPOOL_DB=bench bash "$ROOT/scripts/pgpool.sh" psql "$PP_DIR" -x -c "SHOW pool_cache" | grep '|' || true
    echo '```'
  fi
} | tee "$OUT"

# ---- the freshness checker against the same servers (after the measured part)
if [[ "${FRESHNESS:-1}" == 1 ]] && { has pgpool || has sqlcached; }; then
  log "the freshness checker against${PID_PP:+ pgpool-II}${PID_SQ:+ sqlcached}"
  FC_ARGS=()
  has pgpool && FC_ARGS+=(--target "pgpool=$(conninfo "$PP_PORT")")
  has sqlcached && FC_ARGS+=(--target "sqlcached=$(conninfo "$SQ_P")" --stats-port "$SQ_M")
  {
    echo
    echo "## Freshness: stale reads (bench/freshness_pg.py, the checker of tests/pgcache, against the same servers)"
    echo
    python3 "$HERE/freshness_pg.py" --direct "$(conninfo "$DB_PORT")" "${FC_ARGS[@]}" 2>&1 ||
      echo "**The freshness checker failed (above).**"
  } | tee -a "$OUT"
fi
log "wrote $OUT"
