#!/usr/bin/env bash
# bench/containers.sh: SQL containers (--containers) vs plain SQL on MariaDB and PostgreSQL,
# seed 003's table.
# A benchmark, not a test: asserts nothing, not part of CI.
#
#   bench/containers.sh                      # 100k rows, 8 s per point, 8/32/128 conns: ~4-5 min
#   DURATION=15 CONNS="8 32" bench/containers.sh
#
# What it does, in one run: starts a throw-away MariaDB (scripts/mariadb.sh, datadir on /work),
# creates bench.demo_test(c1 VARCHAR(32) PK, c2 VARCHAR(1024), c3 INT, c4 BIGINT UNSIGNED, c5 INT)
# with KEYS rows (c1 "key:%08d", c2 100 bytes), starts sqlcached A with a containers file
# (container "demo": innodb_only; "democ": caching, the default container for plain keys) and
# sqlcached B without containers (memory only), then measures, per connection count:
#   set  : loadgen `set @@demo.key:N` (100-byte values)  vs  sysbench prepared INSERT ... ODKU
#   get  : loadgen `get @@demo.key:N`                     vs  sysbench prepared SELECT c2 ... c1=?
#   cache: loadgen `get key:N` on A (caching container, memory copy warmed by a scan) vs on B
#          (memory-only sqlcached), time-sliced in one loadgen process (--addr A,B)
#   sqlite: sqlcached C with the same table in an embedded SQLite file (container "demo",
#          innodb_only, the default container for plain keys): loadgen `set key:N` / `get key:N`
#          on C vs on B, time-sliced (--addr C,B). The InnoDB plugin's real advantage was being
#          in-process; this is sqlcached's in-process backend against its own memory.
#   pg   : a throw-away PostgreSQL 15 (scripts/postgres.sh: fsync and synchronous_commit on)
#          with the same table and rows, sqlcached D with `kind = "postgres"` containers (demo
#          innodb_only, democ caching: the default container, its copy kept fresh from the WAL):
#          set/get `@@demo.key:N` vs sysbench --db-driver=pgsql's prepared INSERT ... ON
#          CONFLICT DO UPDATE / SELECT (issue 40: get >= 2x, set >= 3x at 128 connections), and
#          `get key:N` on democ (warmed by a scan) vs the innodb_only get (caching >= 2x).
# Output: a markdown table on stdout and in bench/results/containers-<ts>.md (raw lines in .log).
#
# Environment: KEYS (100000) DURATION (8 s) WARMUP (1 s) CONNS ("8 32 128") VALUE_SIZE (100)
#   REPS (1: the set, get and pg parts run their points REPS times in turn; with REPS > 1 a second table gives each
#   ratio's median and min-max over the reps)
#   SERVER_THREADS (2, sqlcached -t) POOL (8, backend pool_size) WRITERS (4) THREAD_READERS
#   THREAD_WRITERS (unset: the server's defaults, 2 and 4; per-worker connections for merged reads /
#   group commit; leave unset for binaries older than them) W_BATCH (1,
#   w_batch_size: 1 = commit before each reply, as sysbench's autocommit) LG_THREADS (1)
#   SQLCACHED_BIN (target/release/sqlcached) KEEP=1 keeps the work dir (MariaDB datadir).
#   PARTS ("set get cache sqlite pg": which of the measurements to run; bench/seeds/e003 runs "set"
#   alone for its second batch size). SQLITE_SYNC (full: PRAGMA synchronous of the SQLite
#   writer, "full" fsyncs every commit, "normal" survives a crash but not power loss).
# Needs: mariadbd (scripts/mariadb.sh installs it), PostgreSQL 15 (scripts/postgres.sh), sysbench
# (Debian, built with its pgsql driver), cargo (for loadgen).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
# shellcheck source=bench/lib.sh
source "$HERE/lib.sh"   # port_open, pick_port, stop_pids, sysbench_setup
if [[ "${1:-}" == -h || "${1:-}" == --help ]]; then
  sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | grep '^#' | sed 's/^# \{0,1\}//'
  exit 0
fi

KEYS=${KEYS:-100000}
DURATION=${DURATION:-8}
REPS=${REPS:-1}
WARMUP=${WARMUP:-1}
CONNS=${CONNS:-"8 32 128"}
PARTS=${PARTS:-"set get cache sqlite pg"}
SQLITE_SYNC=${SQLITE_SYNC:-full}
VALUE_SIZE=${VALUE_SIZE:-100}
SERVER_THREADS=${SERVER_THREADS:-2}
POOL=${POOL:-8}
WRITERS=${WRITERS:-4}
THREAD_READERS=${THREAD_READERS:-}
THREAD_WRITERS=${THREAD_WRITERS:-}
W_BATCH=${W_BATCH:-1}
LG_THREADS=${LG_THREADS:-1}
SQLCACHED_BIN=${SQLCACHED_BIN:-$ROOT/target/release/sqlcached}
LOADGEN=$ROOT/bench/loadgen/target/release/loadgen
LUA=$HERE/containers.lua

log() { echo "[containers] $*" >&2; }
die() { log "error: $*"; exit 1; }

sysbench_setup containers   # TS RESULTS OUT RAW WORK; sysbench installed
if [[ ! -x "$SQLCACHED_BIN" ]]; then
  pgrep -x cargo >/dev/null && die "$SQLCACHED_BIN missing and another cargo is running"
  (cd "$ROOT" && cargo build --release -p sqlcached)
fi
cargo build --release -q --manifest-path "$ROOT/bench/loadgen/Cargo.toml"
# a private copy: a rebuild during the run cannot swap the binary
cp "$SQLCACHED_BIN" "$WORK/sqlcached"
BIN_SHA=$(sha256sum "$WORK/sqlcached" | cut -c1-12)

# ---- processes (only ours, by pid)
DB_DIR=$WORK/mariadb
PG_DIR=$WORK/postgres
PID_A="" PID_B="" PID_C="" PID_D=""
cleanup() {
  stop_pids $PID_A $PID_B $PID_C $PID_D
  bash "$ROOT/scripts/mariadb.sh" stop "$DB_DIR" >/dev/null 2>&1 || true
  [[ -d "$PG_DIR" ]] && bash "$ROOT/scripts/postgres.sh" stop "$PG_DIR" >/dev/null 2>&1 || true
  if [[ "${KEEP:-0}" != 1 ]]; then rm -rf "$WORK"; else log "kept $WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

wait_port() { # PORT PID LOG
  for _ in $(seq 1 200); do
    port_open "$1" && return 0
    kill -0 "$2" 2>/dev/null || { cat "$3" >&2; die "server exited"; }
    sleep 0.05
  done
  die "port $1 not open after 10 s"
}

# c2 = the key's 8 digits + the same filler loadgen writes ('abc...' from offset 8)
FILLER=$(python3 -c "import sys; n=int(sys.argv[1]); print(''.join(chr(97+i%26) for i in range(n))[8:])" "$VALUE_SIZE")
has_part() { [[ " $PARTS " == *" $1 "* ]]; }

# container NAME POLICY: a [[container]] on demo_test (both TOML files below)
container() {
  cat <<TOML
[[container]]
name = "$1"
table = "demo_test"
key_column = "c1"
value_columns = "c2"
flags_column = "c3"
cas_column = "c4"
expire_column = "c5"
unique_index = "PRIMARY"
policy = "$2"
TOML
}

# networked_toml KIND URL: the containers file of a MariaDB or PostgreSQL backend (demo
# innodb_only; democ caching, the default container for plain keys)
networked_toml() {
  cat <<TOML
[backend]
kind = "$1"
url = "$2"
pool_size = $POOL
writers = $WRITERS
${THREAD_READERS:+thread_readers = $THREAD_READERS}
${THREAD_WRITERS:+thread_writers = $THREAD_WRITERS}
plugin_tables = "off"

[options]
w_batch_size = $W_BATCH
cache_ttl = 3600
plain_keys = "default_container"   # plain keys -> democ (caching), @@demo.k -> innodb_only
default_container = "democ"

$(container demo innodb_only)

$(container democ caching)
cache_ttl = 3600
TOML
}

DB_PORT="" DB_USER="" DB_PASS="" DB_VERSION="" PORT_A=""
if has_part set || has_part get || has_part cache; then
DB_PORT=$(pick_port)
log "starting MariaDB in $DB_DIR on 127.0.0.1:$DB_PORT"
bash "$ROOT/scripts/mariadb.sh" start "$DB_DIR" "$DB_PORT" >"$WORK/mariadb.start" 2>&1 ||
  { cat "$WORK/mariadb.start" >&2; die "mariadb did not start"; }
DB_USER=${MARIADB_USER:-sqlcached}
DB_PASS=${MARIADB_PASSWORD:-sqlcached-test}
DB_VERSION=$(mariadbd --version 2>/dev/null | awk '{print $3}' || true)
sql() { mariadb --no-defaults --protocol=socket --socket="$DB_DIR/mysqld.sock" -uroot "$@"; }

log "creating bench.demo_test with $KEYS rows ($VALUE_SIZE-byte values)"
sql <<SQL
CREATE DATABASE IF NOT EXISTS bench;
USE bench;
DROP TABLE IF EXISTS demo_test;
CREATE TABLE demo_test (c1 VARCHAR(32) PRIMARY KEY, c2 VARCHAR(1024), c3 INT,
  c4 BIGINT UNSIGNED, c5 INT) ENGINE=InnoDB;
INSERT INTO demo_test SELECT CONCAT('key:', LPAD(seq, 8, '0')), CONCAT(LPAD(seq, 8, '0'), '$FILLER'),
  0, 1, 0 FROM seq_0_to_$((KEYS - 1));
SQL
[[ "$(sql -N -e 'SELECT COUNT(*) FROM bench.demo_test')" == "$KEYS" ]] || die "preload failed"


networked_toml mariadb "mysql://$DB_USER:$DB_PASS@127.0.0.1:$DB_PORT/bench" >"$WORK/containers.toml"

PORT_A=$(pick_port)
"$WORK/sqlcached" -l 127.0.0.1 -p "$PORT_A" -U 0 -m 1024 -t "$SERVER_THREADS" \
  --containers "$WORK/containers.toml" >"$WORK/sqlcached-a.log" 2>&1 &
PID_A=$!
wait_port "$PORT_A" "$PID_A" "$WORK/sqlcached-a.log"
fi
PORT_B=$(pick_port)
while [[ "$PORT_B" == "$PORT_A" ]]; do PORT_B=$(pick_port); done
"$WORK/sqlcached" -l 127.0.0.1 -p "$PORT_B" -U 0 -m 1024 -t "$SERVER_THREADS" >"$WORK/sqlcached-b.log" 2>&1 &
PID_B=$!
wait_port "$PORT_B" "$PID_B" "$WORK/sqlcached-b.log"
log "sqlcached A (containers) :$PORT_A pid $PID_A, B (memory only) :$PORT_B pid $PID_B"

lg() { timeout --kill-after=5 "$1" "$LOADGEN" "${@:2}"; }
LGT=$((DURATION * 2 + WARMUP * 2 + 60))

# mc_stats PORT: the `stats` lines of the server on PORT
mc_stats() {
  timeout 5 python3 -c 'import socket,sys; s=socket.create_connection(("127.0.0.1",int(sys.argv[1]))); s.sendall(b"stats\r\n"); b=b""
while not b.endswith(b"END\r\n"): b+=s.recv(65536)
sys.stdout.write(b.decode())' "$1"
}

# kv LINE KEY: value of KEY=... in a RESULT line
kv() { tr ' ' '\n' <<<"$1" | sed -n "s/^$2=//p" | head -1; }

# loadgen_point NAME CONNS PREFIX SET_RATIO [ADDR] [PID]: prints its RESULT line(s)
loadgen_point() {
  local out
  out=$(lg "$LGT" run --addr "${5:-127.0.0.1:$PORT_A}" --server-pid "${6:-$PID_A}" --conns "$2" \
    --threads "$LG_THREADS" --keys "$KEYS" --value-size "$VALUE_SIZE" --prefix "$3" --set-ratio "$4" \
    --duration "$DURATION" --warmup "$WARMUP") || die "loadgen failed ($1, $2 conns)"
  grep '^RESULT' <<<"$out" | sed "s/^/$1 conns=$2 /" | tee -a "$RAW" | sed 's/^[^ ]* conns=[0-9]* //'
}

# sysbench_point NAME CONNS MODE [pg]: prints "ops_s=.. p50_us=.. p95_us=.. p99_us=.. errors=.."
# (on MariaDB, or with "pg" on the PostgreSQL of the pg part)
sysbench_point() {
  local out db
  if [[ "${4:-}" == pg ]]; then
    db=(--db-driver=pgsql --pgsql-host=127.0.0.1 --pgsql-port="$PG_PORT" --pgsql-user="$PG_USER"
      --pgsql-password="$PG_PASS" --pgsql-db=bench)
  else
    db=(--db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="$DB_PORT" --mysql-user="$DB_USER"
      --mysql-password="$DB_PASS" --mysql-db=bench)
  fi
  out=$(timeout --kill-after=5 "$LGT" sysbench "$LUA" "${db[@]}" \
    --db-ps-mode=auto --threads="$2" --time="$DURATION" \
    --percentile=95 --histogram=on --report-interval=0 --rand-type=uniform --rand-seed=1 \
    --mode="$3" --keys="$KEYS" --value_size="$VALUE_SIZE" run 2>&1) ||
    { echo "$out" >&2; die "sysbench failed ($1, $2 conns)"; }
  echo "$out" >"$WORK/sysbench-$1-$2.out"
  local qps p95 errs hist
  qps=$(sed -n 's/^ *queries: .*(\([0-9.]*\) per sec.)/\1/p' <<<"$out" | head -1)
  p95=$(awk '/95th percentile:/ {print $3 * 1000}' <<<"$out")
  errs=$(sed -n 's/^ *ignored errors: *\([0-9]*\).*/\1/p' <<<"$out" | head -1)
  # p50/p99 from the latency histogram (value in ms | bar | count)
  hist=$(awk '$2 == "|" || $2 ~ /^\|/ { v[NR] = $1; c[NR] = $NF; n += $NF; o[++k] = NR }
    END { a = 0; p50 = ""; p99 = "";
      for (i = 1; i <= k; i++) { a += c[o[i]];
        if (p50 == "" && a >= 0.5 * n) p50 = v[o[i]] * 1000;
        if (p99 == "" && a >= 0.99 * n) p99 = v[o[i]] * 1000 }
      printf "p50_us=%s p99_us=%s", p50, p99 }' <<<"$out")
  local line="ops_s=$qps p95_us=$p95 $hist errors=${errs:-na}"
  echo "$1 conns=$2 SYSBENCH $line" >>"$RAW"
  echo "$line"
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "na" }'; }
fmt_ops() { awk -v x="$1" 'BEGIN { printf "%.0f", x }'; }
fmt_us() { awk -v x="$1" 'BEGIN { if (x == "") print "-"; else printf "%.0f", x }'; }

ROWS=()
REP=1
declare -A RATIOS=()
RATIO_ORDER=()
# row OP CONNS LEFT_LINE RIGHT_LINE LEFT_LABEL RIGHT_LABEL GOAL
row() {
  local a="$3" b="$4" ao bo id="$1|$2|$7"
  ao=$(kv "$a" ops_s); bo=$(kv "$b" ops_s)
  [[ -v "RATIOS[$id]" ]] || RATIO_ORDER+=("$id")
  RATIOS[$id]+="$(ratio "$ao" "$bo") "
  ROWS+=("| $1$( ((REPS > 1)) && echo " (rep $REP)") | $2 | $5 $(fmt_ops "$ao") | $(fmt_us "$(kv "$a" p50_us)") / $(fmt_us "$(kv "$a" p99_us)") | $6 $(fmt_ops "$bo") | $(fmt_us "$(kv "$b" p50_us)") / $(fmt_us "$(kv "$b" p99_us)") | **$(ratio "$ao" "$bo")** | $7 |")
  local e1 e2 h k
  e1=$(kv "$a" errors); e2=$(kv "$b" errors); h=$(kv "$a" hits); k=$(kv "$a" keys)
  log "$1 conns=$2: $5 $(fmt_ops "$ao") ops/s (errors=${e1:-na} hits=${h:-na}/${k:-na}) vs $6 $(fmt_ops "$bo") (errors=${e2:-na}) -> $(ratio "$ao" "$bo")x"
}

# summary: each ratio's median and min-max over the reps (one line per op and conns).
summary() {
  local id vals
  for id in "${RATIO_ORDER[@]}"; do
    vals=$(tr ' ' '\n' <<<"${RATIOS[$id]}" | grep -v '^$' | grep -v na | sort -g | tr '\n' ' ')
    IFS='|' read -r op conns goal <<<"$id"
    awk -v op="$op" -v c="$conns" -v goal="$goal" -v vals="$vals" 'BEGIN {
      n = split(vals, v, " "); if (n == 0) { printf "| %s | %s | na | | %s |\n", op, c, goal; exit }
      med = (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
      printf "| %s | %s | **%.2f** | %.2f-%.2f | %s |\n", op, c, med, v[1], v[n], goal }'
  done
}

START=$(date +%s)
has_part set && for REP in $(seq "$REPS"); do for c in $CONNS; do
  log "set, $c conns (rep $REP)"
  m=$(loadgen_point set "$c" "@@demo.key:" 1)
  s=$(sysbench_point set "$c" set)
  row set "$c" "$m" "$s" "mc" "sql" ">= 5x (plugin 4.5-9.2x)"
done; done
has_part get && for REP in $(seq "$REPS"); do for c in $CONNS; do
  log "get, $c conns (rep $REP)"
  m=$(loadgen_point get "$c" "@@demo.key:" 0)
  s=$(sysbench_point get "$c" get)
  row get "$c" "$m" "$s" "mc" "sql" ">= 3x (plugin 1.5-2.3x)"
done; done

has_part cache && {
log "warming the caching container (scan of $KEYS keys) and preloading the memory-only server"
lg 300 scan --addr "127.0.0.1:$PORT_A" --keys "$KEYS" --value-size "$VALUE_SIZE" --prefix "key:" \
  --mget 100 --conns 4 --depth 4 | tee -a "$RAW" >&2
lg 300 load --addr "127.0.0.1:$PORT_B" --keys "$KEYS" --value-size "$VALUE_SIZE" --prefix "key:" | tee -a "$RAW" >&2
for c in $CONNS; do
  log "caching vs memory-only get, $c conns (time-sliced)"
  out=$(lg "$LGT" run --addr "127.0.0.1:$PORT_A,127.0.0.1:$PORT_B" --server-pid "$PID_A,$PID_B" --conns "$c" \
    --threads "$LG_THREADS" --keys "$KEYS" --value-size "$VALUE_SIZE" --prefix "key:" --set-ratio 0 \
    --duration "$DURATION" --warmup "$WARMUP") || die "loadgen failed (cache, $c conns)"
  grep '^RESULT' <<<"$out" | sed "s/^/cache conns=$c /" >>"$RAW"
  a=$(grep '^RESULT server=0' <<<"$out"); b=$(grep '^RESULT server=1' <<<"$out")
  row "get caching vs memory" "$c" "$a" "$b" "caching" "memory" "ratio >= 0.67 (within 1.5x)"
done
}
has_part sqlite && {
log "creating the SQLite copy of demo_test ($KEYS rows) and starting sqlcached C on it"
python3 - "$WORK/demo.db" "$KEYS" "$FILLER" <<'PY'
import sqlite3, sys
db, keys, filler = sys.argv[1], int(sys.argv[2]), sys.argv[3]
c = sqlite3.connect(db)
c.execute("PRAGMA journal_mode = WAL")
c.execute("CREATE TABLE demo_test (c1 VARCHAR(32) PRIMARY KEY, c2 VARCHAR(1024), c3 INT, c4 INTEGER, c5 INT)")
c.executemany("INSERT INTO demo_test VALUES (?, ?, 0, 1, 0)",
              (("key:%08d" % i, "%08d%s" % (i, filler)) for i in range(keys)))
c.commit()
c.close()
PY
cat >"$WORK/containers-sqlite.toml" <<TOML
[backend]
kind = "sqlite"
path = "$WORK/demo.db"
plugin_tables = "off"
synchronous = "$SQLITE_SYNC"

[options]
w_batch_size = $W_BATCH
plain_keys = "default_container"
default_container = "demo"

$(container demo innodb_only)
TOML
PORT_C=$(pick_port)
while [[ "$PORT_C" == "$PORT_A" || "$PORT_C" == "$PORT_B" ]]; do PORT_C=$(pick_port); done
"$WORK/sqlcached" -l 127.0.0.1 -p "$PORT_C" -U 0 -m 1024 -t "$SERVER_THREADS" \
  --containers "$WORK/containers-sqlite.toml" >"$WORK/sqlcached-c.log" 2>&1 &
PID_C=$!
wait_port "$PORT_C" "$PID_C" "$WORK/sqlcached-c.log"
has_part cache || lg 300 load --addr "127.0.0.1:$PORT_B" --keys "$KEYS" --value-size "$VALUE_SIZE" --prefix "key:" | tee -a "$RAW" >&2
for op in get set; do
  for c in $CONNS; do
    log "SQLite container vs memory-only $op, $c conns (time-sliced)"
    ratio_arg=0; [[ $op == set ]] && ratio_arg=1
    out=$(lg "$LGT" run --addr "127.0.0.1:$PORT_C,127.0.0.1:$PORT_B" --server-pid "$PID_C,$PID_B" --conns "$c" \
      --threads "$LG_THREADS" --keys "$KEYS" --value-size "$VALUE_SIZE" --prefix "key:" --set-ratio "$ratio_arg" \
      --duration "$DURATION" --warmup "$WARMUP") || die "loadgen failed (sqlite $op, $c conns)"
    grep '^RESULT' <<<"$out" | sed "s/^/sqlite-$op conns=$c /" >>"$RAW"
    a=$(grep '^RESULT server=0' <<<"$out"); b=$(grep '^RESULT server=1' <<<"$out")
    row "$op SQLite vs memory" "$c" "$a" "$b" "sqlite" "memory" "report (issue 11 item 5)"
  done
done
}

has_part pg && {
PG_PORT=$(pick_port)
log "starting PostgreSQL in $PG_DIR on 127.0.0.1:$PG_PORT"
bash "$ROOT/scripts/postgres.sh" start "$PG_DIR" "$PG_PORT" >"$WORK/postgres.start" 2>&1 ||
  { cat "$WORK/postgres.start" >&2; die "postgres did not start"; }
PG_USER=${POSTGRES_USER:-sqlcached}
PG_PASS=${POSTGRES_PASSWORD:-sqlcached-test}
PG_VERSION=$(/usr/lib/postgresql/15/bin/postgres --version | awk '{print $3}')
psql_pg() { bash "$ROOT/scripts/postgres.sh" psql "$PG_DIR" -v ON_ERROR_STOP=1 -q "$@"; }
log "creating demo_test in PostgreSQL database bench ($KEYS rows)"
psql_pg -c "DROP DATABASE IF EXISTS bench" -c "CREATE DATABASE bench OWNER $PG_USER"
psql_pg -d bench <<SQL
SET ROLE $PG_USER;
CREATE TABLE demo_test (c1 VARCHAR(32) PRIMARY KEY, c2 VARCHAR(1024), c3 INT, c4 BIGINT, c5 INT);
INSERT INTO demo_test SELECT 'key:' || lpad(i::text, 8, '0'), lpad(i::text, 8, '0') || '$FILLER', 0, 1, 0
  FROM generate_series(0, $((KEYS - 1))) i;
VACUUM ANALYZE demo_test;
SQL
[[ "$(psql_pg -d bench -At -c 'SELECT count(*) FROM demo_test')" == "$KEYS" ]] || die "PostgreSQL preload failed"
networked_toml postgres "postgres://$PG_USER:$PG_PASS@127.0.0.1:$PG_PORT/bench?sslmode=disable" \
  >"$WORK/containers-pg.toml"
PORT_D=$(pick_port)
while [[ "$PORT_D" == "$PORT_A" || "$PORT_D" == "$PORT_B" || "$PORT_D" == "${PORT_C:-}" ]]; do PORT_D=$(pick_port); done
"$WORK/sqlcached" -l 127.0.0.1 -p "$PORT_D" -U 0 -m 1024 -t "$SERVER_THREADS" \
  --containers "$WORK/containers-pg.toml" >"$WORK/sqlcached-d.log" 2>&1 &
PID_D=$!
wait_port "$PORT_D" "$PID_D" "$WORK/sqlcached-d.log"
log "sqlcached D (PostgreSQL containers) :$PORT_D pid $PID_D"
declare -A PG_GET=()
for REP in $(seq "$REPS"); do
for c in $CONNS; do
  log "PostgreSQL: set, $c conns (rep $REP)"
  m=$(loadgen_point pg-set "$c" "@@demo.key:" 1 "127.0.0.1:$PORT_D" "$PID_D")
  s=$(sysbench_point pg-set "$c" set pg)
  row "set (PostgreSQL)" "$c" "$m" "$s" "mc" "sql" ">= 3x at 128 (issue 40)"
done
# The sets left dead row versions and WAL: vacuumed and checkpointed now, so that autovacuum and
# the checkpointer do not take the 2 CPUs during the reads
psql_pg -d bench -c "VACUUM demo_test" -c "CHECKPOINT"
for c in $CONNS; do
  log "PostgreSQL: get, $c conns (rep $REP)"
  m=$(loadgen_point pg-get "$c" "@@demo.key:" 0 "127.0.0.1:$PORT_D" "$PID_D")
  PG_GET[$c]=$m
  s=$(sysbench_point pg-get "$c" get pg)
  row "get (PostgreSQL)" "$c" "$m" "$s" "mc" "sql" ">= 2x at 128 (issue 40)"
done
log "warming the PostgreSQL caching container (scan of $KEYS keys)"
lg 300 scan --addr "127.0.0.1:$PORT_D" --keys "$KEYS" --value-size "$VALUE_SIZE" --prefix "key:" \
  --mget 100 --conns 4 --depth 4 | tee -a "$RAW" >&2
mc_stats "$PORT_D" | grep -E "^STAT (wal_|containers_)" | tee -a "$RAW" >&2 || true
for c in $CONNS; do
  log "PostgreSQL: caching get, $c conns (rep $REP)"
  m=$(loadgen_point pg-caching "$c" "key:" 0 "127.0.0.1:$PORT_D" "$PID_D")
  row "get caching vs innodb_only (PostgreSQL)" "$c" "$m" "${PG_GET[$c]}" "caching" "innodb_only" ">= 2x (issue 40)"
done
done
}

ELAPSED=$(($(date +%s) - START))

{
  echo "# Containers: sqlcached SQL containers vs plain SQL on MariaDB ($TS)"
  echo
  echo "MariaDB ${DB_VERSION:-?} (scripts/mariadb.sh: binlog ROW, innodb_flush_log_at_trx_commit=1, 64M buffer pool);"
  has_part pg && echo "PostgreSQL ${PG_VERSION:-?} (scripts/postgres.sh: fsync, synchronous_commit on, wal_level logical, 32MB shared_buffers);"
  echo "table bench.demo_test, $KEYS rows, $VALUE_SIZE-byte values, uniform keys; sqlcached $BIN_SHA -t $SERVER_THREADS,"
  echo "backend pool_size=$POOL writers=$WRITERS thread_readers=${THREAD_READERS:-default} thread_writers=${THREAD_WRITERS:-default} w_batch_size=$W_BATCH;"
  echo "$DURATION s measured + $WARMUP s warmup per point;"
  echo "$(nproc) CPUs shared by MariaDB, sqlcached and the client; loadgen threads=$LG_THREADS; sysbench $(sysbench --version | awk '{print $2}') prepared statements."
  echo
  echo "mc = memcached protocol on sqlcached (\`set/get @@demo.key:N\`, container \`demo\`, innodb_only);"
  echo "sql = sysbench, prepared \`INSERT ... ON DUPLICATE KEY UPDATE\` / \`SELECT c2 FROM demo_test WHERE c1=?\`;"
  echo "caching = plain \`get key:N\` on the caching container \`democ\` (memory copy warmed); memory = sqlcached without containers."
  echo "sqlite = plain \`get/set key:N\` on sqlcached with the table in an embedded SQLite file (innodb_only, synchronous=$SQLITE_SYNC, w_batch_size=$W_BATCH)."
  echo "Latency: loadgen p50/p99 per request; sysbench p50/p99 from its histogram (its p95 is in the .log)."
  echo
  echo "| op | conns | ops/s (left) | p50 / p99 µs | ops/s (right) | p50 / p99 µs | left/right | goal |"
  echo "|---|---:|---:|---:|---:|---:|---:|---|"
  printf '%s\n' "${ROWS[@]}"
  if ((REPS > 1)); then
    echo
    echo "Ratios over $REPS reps (each rep runs every point once, in turn): median and min-max."
    echo
    echo "| op | conns | left/right median | min-max | goal |"
    echo "|---|---:|---:|---:|---|"
    summary
  fi
  echo
  echo "Measured part: ${ELAPSED} s. Raw lines: \`$(basename "$RAW")\`."
} | tee "$OUT"
log "wrote $OUT"
