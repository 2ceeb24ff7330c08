#!/usr/bin/env bash
# Where does a server spend its time per request? For one case, for each server:
#   - perf stat (software events): CPU µs/op, context switches/op
#   - strace -c -f (a separate, slowed-down run): syscalls per op, by syscall
#   - with --record: perf record + the top symbols
#
#   bench/profile.sh                          # case b (get only): memcached, sqlcached on
#                                             # io_uring (sqlcached-uring) and on epoll
#   bench/profile.sh --case a --record
#   SQLCACHED_BIN=/usr/bin/memcached bench/profile.sh --servers sqlcached
#
# Same server flags, pinning and load generator as run.sh; traffic only to 127.0.0.1.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
# shellcheck source=lib.sh disable=SC2034
source "$HERE/lib.sh"

common_defaults
CASE="${CASE:-b}"
SERVERS="${SERVERS:-memcached sqlcached-uring sqlcached-epoll}"
# sqlcached's two I/O front ends (any other name not starting with memcached: the default, auto).
SRV_EXTRA[sqlcached-uring]="--io-uring on"
SRV_EXTRA[sqlcached-epoll]="--io-uring off"
DURATION="${DURATION:-4}"
RECORD="${RECORD:-0}"
VALUE_SIZE="${VALUE_SIZE:-32}"
DEPTH="${DEPTH:-16}"
MGET="${MGET:-10}"
SQLCACHED_BIN="${SQLCACHED_BIN:-$ROOT/target/release/sqlcached}"

while [[ $# -gt 0 ]]; do
  case "$1" in
    --case) CASE="$2"; shift 2 ;;
    --servers) SERVERS="$2"; shift 2 ;;
    --duration) DURATION="$2"; shift 2 ;;
    --threads) SERVER_THREADS="$2"; shift 2 ;;
    --record) RECORD=1; shift ;;
    -h|--help) sed -n '2,12p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "profile.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ "$CASE" =~ ^[abcd]$ ]] || { echo "profile.sh: case must be a, b, c or d" >&2; exit 2; }
[[ "$DURATION" =~ ^[0-9]+$ && "$DURATION" -ge 1 && "$DURATION" -le 60 ]] || { echo "DURATION must be 1..60" >&2; exit 2; }

log() { echo "[profile $(date +%H:%M:%S)] $*" >&2; }
die() { echo "profile.sh: $*" >&2; exit 1; }
command -v strace >/dev/null || die "needs strace"
command -v perf >/dev/null || die "needs perf"

pin_setup split
cargo build --release --quiet --manifest-path "$HERE/loadgen/Cargo.toml"
WORK="$(mktemp -d /tmp/sqlcached-profile.XXXXXX)"
TOOL_PID=""
cleanup_all() {
  if [[ -n "$TOOL_PID" ]]; then kill -INT "$TOOL_PID" 2>/dev/null || true; fi
  cleanup
  rm -rf "$WORK"
}
trap cleanup_all EXIT
trap 'exit 130' INT TERM

case "$CASE" in
  a) MODE=(--set-ratio 0.1) ;;
  b) MODE=() ;;
  c) MODE=(--mget "$MGET") ;;
  d) MODE=(--depth "$DEPTH") ;;
esac

run_load() { # DURATION -> RESULT line
  lg $(( $1 + 60 )) run --addr "127.0.0.1:${SRV_PORT[$name]}" --server-pid "${SRV_PID[$name]}" --conns "$CONNS" --threads 1 \
    --keys "$KEYS" --value-size "$VALUE_SIZE" --duration "$1" --warmup 0 "${MODE[@]}"
}
field() { echo "$1" | grep -oE "(^| )$2=[^ ]+" | cut -d= -f2; }

for name in $SERVERS; do
  echo "## $name, case $CASE ($CONNS conns, -t $SERVER_THREADS, server on CPU $SERVER_CPUS)"
  echo
  start_server "$name" "$SERVER_MEM" || die "cannot start $name"
  lg 120 load --addr "127.0.0.1:${SRV_PORT[$name]}" --keys "$KEYS" --value-size "$VALUE_SIZE" >/dev/null

  # 1) perf stat over a plain run
  perf stat -x, -e task-clock,context-switches,cpu-migrations -p "${SRV_PID[$name]}" -o "$WORK/perfstat" &
  TOOL_PID=$!
  sleep 0.3
  res=$(run_load "$DURATION")
  kill -INT "$TOOL_PID"; wait "$TOOL_PID" 2>/dev/null || true; TOOL_PID=""
  ops=$(field "$res" ops)
  tc=$(awk -F, '$3 ~ /task-clock/ { print $1 }' "$WORK/perfstat")
  cs=$(awk -F, '$3 ~ /context-switches/ { print $1 }' "$WORK/perfstat")
  echo "plain run: $(field "$res" ops_s) ops/s, p50 $(field "$res" p50_us) µs, p99 $(field "$res" p99_us) µs"
  awk -v tc="$tc" -v cs="$cs" -v ops="$ops" 'BEGIN {
    printf "perf stat: %.2f µs CPU/op (task-clock), %.3f context switches/op\n", tc * 1000 / ops, cs / ops }'

  # 2) optional perf record
  if [[ "$RECORD" == 1 ]]; then
    perf record -e cpu-clock -F 2000 -p "${SRV_PID[$name]}" -o "$WORK/perf.data" >/dev/null 2>&1 &
    TOOL_PID=$!
    sleep 0.3
    run_load "$DURATION" >/dev/null
    kill -INT "$TOOL_PID"; wait "$TOOL_PID" 2>/dev/null || true; TOOL_PID=""
    echo
    echo "perf record, top symbols (self time):"
    echo '```'
    perf report -i "$WORK/perf.data" --no-children -g none --sort dso,symbol --stdio 2>"$WORK/perf-report.err" </dev/null \
      | grep -E '^ +[0-9]' | head -25 | sed 's/ *$//' 
    echo '```'
  fi

  # 3) strace -c: syscalls per request (strace slows the server a lot; only the counts matter)
  strace -c -f -p "${SRV_PID[$name]}" -o "$WORK/strace" 2>/dev/null &
  TOOL_PID=$!
  sleep 0.5
  res=$(run_load "$DURATION")
  kill -INT "$TOOL_PID"; wait "$TOOL_PID" 2>/dev/null || true; TOOL_PID=""
  ops=$(field "$res" ops)
  echo
  echo "strace -c -f ($ops requests while traced):"
  echo
  echo "| syscall | calls | per request |"
  echo "|---|---:|---:|"
  awk -v ops="$ops" '
    /^-+/ { sep++; next }
    sep == 1 && NF >= 5 { n = ($4 ~ /^[0-9]+$/) ? $4 : 0; name = $NF; if (n > 0) { c[name] = n; tot += n } }
    END { for (k in c) printf "%s %d\n", k, c[k]; printf "TOTAL %d\n", tot }' "$WORK/strace" \
    | sort -k2,2nr | head -12 \
    | awk -v ops="$ops" '{ printf "| %s | %d | %.3f |\n", $1, $2, $2 / ops }'
  echo
  stop_server "$name"
done
