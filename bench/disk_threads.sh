#!/usr/bin/env bash
# Where the CPU of a write load goes, thread by thread, with the disk tier on: sqlcached
# (unpinned, so fjall starts its default min(CPUs, 4) workers) with --data-dir and
# --durability async, loaded with KEYS distinct sets of VALUE_SIZE bytes by `loadgen load`
# (8 connections, 16 in flight each) until done. Prints the load's seconds and sets/s, and each
# thread's CPU seconds (utime+stime from /proc) during it, per repetition.
#
#   bench/disk_threads.sh                         # 3 reps, 1.5M keys of 500 bytes (~0.75 GB)
#   REPS=5 KEYS=3000000 bench/disk_threads.sh
#   SQLCACHED_BIN=/tmp/other/sqlcached bench/disk_threads.sh --no-build
#
# Written for third_party/README.md (fjall's worker 0 busy loop during compactions); any
# change to the disk tier's threads can be read off it the same way.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
# shellcheck source=lib.sh disable=SC2034
source "$HERE/lib.sh"

common_defaults
measure_defaults
KEYS="${KEYS:-1500000}"
VALUE_SIZE="${VALUE_SIZE:-500}"
SERVER_MEM="${SERVER_MEM:-64}"
while [[ $# -gt 0 ]]; do
  common_flag "$@" || die "unknown flag $1 (see the header)"
  shift "$FLAG_SHIFT"
done
check_reps
pin_setup none
build_binaries
snapshot_sqlcached disk-threads
trap 'cleanup; rm -rf "$WORK"' EXIT

# thread_cpu PID: "comm tid ticks" per thread of PID.
thread_cpu() {
  local t
  for t in /proc/"$1"/task/*; do
    printf '%s %s %s\n' "$(cat "$t/comm")" "${t##*/}" "$(awk '{print $14 + $15}' "$t/stat")"
  done 2>/dev/null
}

hz=$(getconf CLK_TCK)
for rep in $(seq 1 "$REPS"); do
  rm -rf "$WORK/data"
  SRV_EXTRA[sqlcached]="--data-dir $WORK/data --durability async"
  start_server sqlcached "$SERVER_MEM" || die "sqlcached did not start"
  pid=${SRV_PID[sqlcached]}
  thread_cpu "$pid" | sort -k2 >"$WORK/cpu0"
  t0=$(date +%s%N)
  lg 3600 load --addr "127.0.0.1:${SRV_PORT[sqlcached]}" --keys "$KEYS" --value-size "$VALUE_SIZE" --conns 8 --depth 16 \
    >/dev/null || die "loading failed"
  t1=$(date +%s%N)
  thread_cpu "$pid" | sort -k2 >"$WORK/cpu1"
  secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", (b - a) / 1e9 }')
  echo "rep $rep: $KEYS sets of $VALUE_SIZE B in $secs s ($(awk -v n="$KEYS" -v s="$secs" 'BEGIN { printf "%.0f", n / s }') sets/s)"
  join -j 2 "$WORK/cpu0" "$WORK/cpu1" | awk -v hz="$hz" '{ d = ($5 - $3) / hz; if (d > 0) printf "  %-16s tid %-8s %6.2f CPU s\n", $2, $1, d }'
  stop_server sqlcached
done
