#!/usr/bin/env bash
# Issue 44 item 3: foreground latency after a bulk load, against the same node settled.
#
#   bench/settle.sh                                  # -m 256, defaults below (~5 min per binary)
#   MEM=32 SECS=60 bench/settle.sh
#   BINS="/tmp/before/sqlcached target/release/sqlcached" bench/settle.sh   # before/after, same run
#
# For each binary (BINS, default target/release/sqlcached), REPS times: a fresh server
# (-m MEM -t 2 --data-dir, async) is loaded with BASE_KEYS keys of VALUE bytes and left
# SETTLE s (compaction finishes); then
#   quiet   SECS s of the mixed load (CONNS connections, SET_RATIO sets, uniform over the
#           base keys): the settled node's p99;
#   bulk    BULK_KEYS new keys (`bulk:0`..) as fast as `loadgen load` sends them (a bulk
#           load), then at once SECS s of the same mixed load: the p99 of the next minute.
# Printed per run: ops/s and p50/p99/p99.9 of both windows, the ratio bulk/quiet p99 (goal
# <= 2), the server's peak RSS (VmHWM) and, every 5 s during the second window, fjall's
# level-0 tables and the compaction threads' nice value (`stats`). The load generator runs
# on LOADGEN_CPUS, the server on SERVER_CPUS (taskset). Traffic goes only to 127.0.0.1.
# A benchmark: run it on a quiet machine (nothing else building).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
BINS="${BINS:-$ROOT/target/release/sqlcached}"
MEM="${MEM:-256}"
BASE_KEYS="${BASE_KEYS:-400000}"
BULK_KEYS="${BULK_KEYS:-640000}"
VALUE="${VALUE:-200}"
CONNS="${CONNS:-20}"
SET_RATIO="${SET_RATIO:-0.1}"
SECS="${SECS:-60}"
SETTLE="${SETTLE:-60}"
REPS="${REPS:-2}"
SERVER_CPUS="${SERVER_CPUS:-0}"
LOADGEN_CPUS="${LOADGEN_CPUS:-1}"
DATA_ROOT="${DATA_ROOT:-$ROOT/bench/results/settle-data}"
LG="$ROOT/bench/loadgen/target/release/loadgen"
[ -x "$LG" ] || cargo build --release --manifest-path "$ROOT/bench/loadgen/Cargo.toml" >&2

stat() { "$LG" stats --addr "127.0.0.1:$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
field() { tr ' ' '\n' | sed -n "s/^$1=//p"; }

mkdir -p "$DATA_ROOT"
printf '| binary | rep | quiet ops/s | quiet p50/p99/p99.9 us | after-bulk ops/s | after p50/p99/p99.9 us | p99 ratio | bulk load s | peak RSS MiB |\n|---|---|---|---|---|---|---|---|---|\n'
for rep in $(seq 1 "$REPS"); do
  for bin in $BINS; do
    port=$((30000 + RANDOM % 20000))
    dir="$(mktemp -d "$DATA_ROOT/d.XXXX")"
    taskset -c "$SERVER_CPUS" "$bin" -p "$port" -U 0 -l 127.0.0.1 -m "$MEM" -t 2 --data-dir "$dir" 2>"$dir.log" &
    pid=$!
    for _ in $(seq 100); do "$LG" stats --addr "127.0.0.1:$port" >/dev/null 2>&1 && break; sleep 0.1; done
    taskset -c "$LOADGEN_CPUS" "$LG" load --addr "127.0.0.1:$port" --keys "$BASE_KEYS" --value-size "$VALUE" >/dev/null
    sleep "$SETTLE"
    run() {
      taskset -c "$LOADGEN_CPUS" "$LG" run --addr "127.0.0.1:$port" --conns "$CONNS" --set-ratio "$SET_RATIO" \
        --keys "$BASE_KEYS" --value-size "$VALUE" --duration "$SECS" --warmup 0 | grep '^RESULT'
    }
    quiet="$(run)"
    t0=$(date +%s.%N)
    taskset -c "$LOADGEN_CPUS" "$LG" load --addr "127.0.0.1:$port" --keys "$BULK_KEYS" --value-size 100 --prefix bulk: >/dev/null
    bulk_s=$(echo "$(date +%s.%N) - $t0" | bc)
    ( for _ in $(seq $((SECS / 5))); do sleep 5; echo "  l0=$(stat "$port" disk_l0_tables) nice=$(stat "$port" disk_compaction_nice) rss=$(( $(stat "$port" memory_rss) >> 20 ))MiB" >&2; done ) &
    mon=$!
    after="$(run)"
    wait "$mon" || true
    hwm=$(awk '/VmHWM/ {print int($2/1024)}' "/proc/$pid/status")
    kill "$pid"; wait "$pid" || true
    rm -rf "$dir" "$dir.log"
    q99=$(echo "$quiet" | field p99_us); a99=$(echo "$after" | field p99_us)
    printf '| %s | %s | %s | %s/%s/%s | %s | %s/%s/%s | %.2f | %.1f | %s |\n' "$(basename "$(dirname "$bin")")/$(basename "$bin")" "$rep" \
      "$(echo "$quiet" | field ops_s)" "$(echo "$quiet" | field p50_us)" "$q99" "$(echo "$quiet" | field p999_us)" \
      "$(echo "$after" | field ops_s)" "$(echo "$after" | field p50_us)" "$a99" "$(echo "$after" | field p999_us)" \
      "$(echo "$a99 / $q99" | bc -l)" "$bulk_s" "$hwm"
  done
done
