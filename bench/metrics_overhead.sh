#!/usr/bin/env bash
# bench/metrics_overhead.sh: what --metrics-listen costs (issue 15's goal: <= 3%).
#
#   bash bench/metrics_overhead.sh                 # bench/run.sh cases a b, 5 reps x 6 s (~3 min)
#   REPS=3 bash bench/metrics_overhead.sh
#   QUERYCACHE=1 bash bench/metrics_overhead.sh    # also bench/querycache.sh point_select, on/off
#
# Runs the same sqlcached binary twice in one bench/run.sh run, interleaved: "memcached" is
# sqlcached without --metrics-listen, "sqlcached" is sqlcached with it and a scrape of
# /metrics every second (as Prometheus would). The ratio column is then metrics-on /
# metrics-off. Run it a second time with both sides plain (CALIBRATE=1) to see the noise of
# this machine: the difference is only meaningful outside that band.
set -euo pipefail
cd "$(dirname "$0")/.."
REPS="${REPS:-5}"
DURATION="${DURATION:-6}"
BIN="${SQLCACHED_BIN:-$PWD/target/release/sqlcached}"
[ -x "$BIN" ] || cargo build --release -p sqlcached
MPORT="${MPORT:-29998}"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"; kill "$scraper" 2>/dev/null || true' EXIT
printf '#!/bin/sh\nexec %s "$@"\n' "$BIN" > "$dir/plain"
printf '#!/bin/sh\nexec %s --metrics-listen 127.0.0.1:%s "$@"\n' "$BIN" "$MPORT" > "$dir/metrics"
chmod +x "$dir/plain" "$dir/metrics"
on="$dir/metrics"
[ "${CALIBRATE:-0}" = 1 ] && on="$dir/plain"
(while true; do curl -s -o /dev/null "127.0.0.1:$MPORT/metrics" || true; sleep 1; done) &
scraper=$!
echo "== bench/run.sh cases a b: ratio = $( [ "$on" = "$dir/plain" ] && echo 'plain/plain (calibration)' || echo 'metrics on / off')"
SQLCACHED_BIN="$on" MEMCACHED_BIN="$dir/plain" bash bench/run.sh --cases "a b" --reps "$REPS" --duration "$DURATION"
if [ "${QUERYCACHE:-0}" = 1 ]; then
    for i in 1 2; do
        for side in metrics plain; do
            echo "== bench/querycache.sh point_select, $side, run $i"
            DURATION=5 THREADS="4 16" WORKLOADS=oltp_point_select SQLCACHED_BIN="$dir/$side" \
                bash bench/querycache.sh 2>&1 | grep -E "config=proxy"
        done
    done
fi
