#!/usr/bin/env bash
# The kernel's floor of CPU per request on this machine (issue 11, item 2): memcached and
# sqlcached (on io_uring and on epoll) beside `bench/floor`, a cache-less get/set server over epoll, io_uring (one Recv per
# read, sends batched per loop turn) and io_uring multishot receive from provided buffers. What
# the floor servers spend is (almost) all kernel: no real server can go below them with the
# same I/O style, so they bound what an io_uring front end could gain.
#
#   bench/floor.sh                          # 3 reps of get-only and 90/10, 8 s per server
#   REPS=5 DURATION=10 SET_RATIOS="0.1" bench/floor.sh
#
# All six servers are up at once with one worker thread each (-t 1; the floor servers have
# one), pinned to SERVER_CPUS; one loadgen on LOADGEN_CPUS alternates between them every
# second (INTERLEAVE=slice of run.sh), 50 connections each, 100k preloaded keys of 32 bytes.
# Reported per rep and as median (min-max) ratios to memcached: ops/s and server CPU per op.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
# shellcheck source=lib.sh disable=SC2034
source "$HERE/lib.sh"

common_defaults
measure_defaults
SERVER_THREADS=1
DURATION="${DURATION:-8}"
VALUE_SIZE="${VALUE_SIZE:-32}"
SET_RATIOS="${SET_RATIOS:-0 0.1}"
while [[ $# -gt 0 ]]; do
  common_flag "$@" || die "unknown flag $1 (see the header)"
  shift "$FLAG_SHIFT"
done
check_reps
pin_setup split
build_binaries
build_floor
snapshot_sqlcached floor
trap 'cleanup' EXIT

NAMES=(memcached sqlcached-uring sqlcached-epoll floor-epoll floor-uring floor-uring-multi)
SRV_EXTRA[sqlcached-uring]="--io-uring on"
SRV_EXTRA[sqlcached-epoll]="--io-uring off"
TS=$(date +%Y%m%d-%H%M%S)
mkdir -p "$RESULTS_DIR"
RAW="$RESULTS_DIR/floor-$TS.tsv"
OUT="$RESULTS_DIR/floor-$TS.md"
printf 'rep\tset_ratio\tserver\tops_s\tsrv_cpu_us_per_op\tp99_us\n' >"$RAW"

for rep in $(seq 1 "$REPS"); do
  for ratio in $SET_RATIOS; do
    for n in "${NAMES[@]}"; do start_server "$n" "$SERVER_MEM" || die "$n did not start"; done
    addrs=() pids=()
    for n in "${NAMES[@]}"; do
      lg 120 load --addr "127.0.0.1:${SRV_PORT[$n]}" --keys "$KEYS" --value-size "$VALUE_SIZE" --conns 4 --depth 32 \
        >/dev/null || die "preloading $n failed"
      addrs+=("127.0.0.1:${SRV_PORT[$n]}")
      pids+=("${SRV_PID[$n]}")
    done
    log "rep $rep, set ratio $ratio: ${#NAMES[@]} servers x ${DURATION} s"
    res=$(lg $((DURATION * 6 + 120)) run --addr "$(IFS=,; echo "${addrs[*]}")" --server-pid "$(IFS=,; echo "${pids[*]}")" \
      --conns "$CONNS" --threads 1 --keys "$KEYS" --value-size "$VALUE_SIZE" --duration "$DURATION" \
      --warmup "$WARMUP" --slice "$SLICE" --set-ratio "$ratio") || die "loadgen run failed"
    echo "$res" | awk -v rep="$rep" -v ratio="$ratio" -v names="${NAMES[*]}" '
      /^RESULT/ { split(names, n, " "); delete v
        for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
        if (v["errors"] + 0 > 0 || v["bad"] + 0 > 0) { print "errors from " n[v["server"] + 1] > "/dev/stderr"; exit 1 }
        printf "%s\t%s\t%s\t%.0f\t%.2f\t%.1f\n", rep, ratio, n[v["server"] + 1], v["ops_s"], v["srv_cpu_s"] / v["ops"] * 1e6, v["p99_us"] }' \
      >>"$RAW"
    stop_all
  done
done

# Per (set ratio, server): median and min-max of the per-rep ratios to memcached's same rep.
{
  echo "# bench/floor.sh $TS: ${DURATION} s per server, ${REPS} reps, -t 1, ${CONNS} conns, pinned: servers CPU $SERVER_CPUS, loadgen CPU $LOADGEN_CPUS"
  echo
  echo "| set ratio | server | ops/s (median) | ops/s vs memcached | CPU/op µs (median) | CPU/op vs memcached |"
  echo "|---|---|---:|---|---:|---|"
  python3 - "$RAW" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
by = {}
for r in rows:
    by.setdefault((r["set_ratio"], r["rep"]), {})[r["server"]] = r
order = ["memcached", "sqlcached-uring", "sqlcached-epoll", "floor-epoll", "floor-uring", "floor-uring-multi"]
for ratio in dict.fromkeys(r["set_ratio"] for r in rows):
    for s in order:
        ops, cpu, ro, rc = [], [], [], []
        for (rt, _), reps in by.items():
            if rt != ratio or s not in reps:
                continue
            m, x = reps["memcached"], reps[s]
            ops.append(float(x["ops_s"])); cpu.append(float(x["srv_cpu_us_per_op"]))
            ro.append(float(x["ops_s"]) / float(m["ops_s"]))
            rc.append(float(x["srv_cpu_us_per_op"]) / float(m["srv_cpu_us_per_op"]))
        if ops:
            f = lambda v: f"{statistics.median(v):.2f}x ({min(v):.2f}-{max(v):.2f})"
            print(f"| {ratio} | {s} | {statistics.median(ops):,.0f} | {f(ro)} | {statistics.median(cpu):.2f} | {f(rc)} |")
EOF
} | tee "$OUT"
log "table: $OUT, raw: $RAW"
