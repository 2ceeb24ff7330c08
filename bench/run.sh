#!/usr/bin/env bash
# Benchmark sqlcached against memcached 1.6.18 with the same load generator, in the same run.
#
#   bench/run.sh                                  # all cases a-e, defaults below (~5 min)
#   bench/run.sh --cases "a d" --duration 15 --reps 5
#   DURATION=5 REPS=1 CASES="b e" bench/run.sh    # env works too (flags win)
#   SQLCACHED_BIN=/usr/bin/memcached bench/run.sh # memcached vs memcached (calibration)
#   bench/run.sh --tls --cases b                  # over TLS: both servers -Z, loadgen --tls-ca
#   bench/run.sh --cases "a b" --floor            # + the cache-less floor servers (bench/floor)
#
# sqlcached runs once per I/O front end (FRONTENDS="uring epoll": servers sqlcached-uring with
# --io-uring on and sqlcached-epoll with --io-uring off; "auto": one server, sqlcached, on the
# server's own choice), each beside memcached in the same run, with ratios to memcached.
#
# Cases: a 90/10 get/set | b get only | c 10-key multiget | d pipelined gets (16 in flight)
#        e capacity with -m 64 (100-byte values) | m memcaslap 90/10 cross-check (not default)
# Cases a-d: all servers fresh and preloaded, one load generator alternating between them
# every SLICE s; e, m: one server after the other (memcached and sqlcached's first front end). Order alternates per repetition; the table
# shows medians. Traffic goes only to 127.0.0.1. See bench/README.md for the columns.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
# shellcheck source=lib.sh disable=SC2034
source "$HERE/lib.sh"

usage() {
  sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | grep '^#' | sed 's/^# \{0,1\}//'
  cat <<EOF
Flags (each also settable by the env var in capitals):
  --cases LIST          cases to run, space/comma separated     [CASES="$CASES"]
  --duration SECS       measured seconds per case per server    [DURATION=$DURATION]
  --warmup SECS         unmeasured seconds before each run      [WARMUP=$WARMUP]
  --reps N              repetitions (median reported)           [REPS=$REPS]
  --threads N           server worker threads, -t, both servers [SERVER_THREADS=$SERVER_THREADS]
  --memory MB           server -m for cases a-d                 [SERVER_MEM=$SERVER_MEM]
  --conns N             client connections for cases a-d        [CONNS=$CONNS]
  --keys N              key space for cases a-d (all preloaded) [KEYS=$KEYS]
  --value-size B        value size for cases a-d                [VALUE_SIZE=$VALUE_SIZE]
  --depth N             requests in flight per conn, case d     [DEPTH=$DEPTH]
  --mget N              keys per get, case c                    [MGET=$MGET]
  --loadgen-threads N   load generator threads                  [LOADGEN_THREADS=${LOADGEN_THREADS:-1 if split, nproc if none}]
  --pin MODE            split: server on SERVER_CPUS, loadgen on LOADGEN_CPUS; none: no pinning
                                                                [PIN=$PIN SERVER_CPUS=$SERVER_CPUS LOADGEN_CPUS=$LOADGEN_CPUS]
  --interleave MODE     slice: both servers up, load alternates every SLICE s; sequential: one
                        server after the other (cases a-d)      [INTERLEAVE=$INTERLEAVE SLICE=$SLICE]
  --cap-memory MB       server -m for case e                    [CAP_MEM=$CAP_MEM]
  --cap-value-size B    value size for case e                   [CAP_VALUE=$CAP_VALUE]
  --cap-max-keys N      hard cap on keys written in case e      [CAP_MAX_KEYS=$CAP_MAX_KEYS]
  --no-build            do not run cargo build                  [BUILD=$BUILD]
  --tls                 cases a-d over TLS: openssl-made certificates, both servers -Z
                        (ssl_chain_cert, ssl_key), every loadgen connection TLS  [TLS=$TLS]
  --frontends LIST      sqlcached's I/O front ends: uring, epoll, auto [FRONTENDS="$FRONTENDS"]
  --floor               cases a-d: also the floor servers floor-epoll and floor-uring-multi
                        (bench/floor: no cache, one thread; the kernel's share)  [FLOOR=$FLOOR]
  Binaries: SQLCACHED_BIN (default target/release/sqlcached, built with cargo if unset),
            MEMCACHED_BIN (default /usr/bin/memcached).  EXTRA_ARGS: flags added for both servers.
EOF
}

common_defaults
measure_defaults
CASES="${CASES:-a b c d e}"
DURATION="${DURATION:-8}"
VALUE_SIZE="${VALUE_SIZE:-32}"
DEPTH="${DEPTH:-16}"
MGET="${MGET:-10}"
LOADGEN_THREADS="${LOADGEN_THREADS:-}"
INTERLEAVE="${INTERLEAVE:-slice}"
CAP_MEM="${CAP_MEM:-64}"
CAP_VALUE="${CAP_VALUE:-100}"
CAP_MAX_KEYS="${CAP_MAX_KEYS:-3000000}"
TLS="${TLS:-0}"
FRONTENDS="${FRONTENDS:-uring epoll}"
FLOOR="${FLOOR:-0}"

while [[ $# -gt 0 ]]; do
  case "$1" in
    --cases) CASES="$2"; shift 2 ;;
    --depth) DEPTH="$2"; shift 2 ;;
    --mget) MGET="$2"; shift 2 ;;
    --loadgen-threads) LOADGEN_THREADS="$2"; shift 2 ;;
    --interleave) INTERLEAVE="$2"; shift 2 ;;
    --cap-memory) CAP_MEM="$2"; shift 2 ;;
    --cap-value-size) CAP_VALUE="$2"; shift 2 ;;
    --cap-max-keys) CAP_MAX_KEYS="$2"; shift 2 ;;
    --tls) TLS=1; shift ;;
    --frontends) FRONTENDS="$2"; shift 2 ;;
    --floor) FLOOR=1; shift ;;
    *) common_flag "$@" || { echo "run.sh: unknown argument $1 (see --help)" >&2; exit 2; }; shift "$FLAG_SHIFT" ;;
  esac
done
CASES="${CASES//,/ }"
FRONTENDS="${FRONTENDS//,/ }"

log() { echo "[bench $(date +%H:%M:%S)] $*" >&2; }
die() { echo "run.sh: $*" >&2; exit 1; }

# Bounds, so that a typo cannot start an hour-long run.
awk -v d="$DURATION" -v w="$WARMUP" 'BEGIN { exit !(d > 0 && d <= 600 && w >= 0 && w <= 60) }' \
  || die "DURATION must be in (0, 600] and WARMUP in [0, 60]"
check_reps
for c in $CASES; do [[ "$c" =~ ^[abcdem]$ ]] || die "unknown case '$c' (a b c d e m)"; done
for f in $FRONTENDS; do [[ "$f" =~ ^(uring|epoll|auto)$ ]] || die "unknown front end '$f' (uring epoll auto)"; done
[[ -n "${FRONTENDS// /}" ]] || die "FRONTENDS is empty"
[[ "$TLS" == 1 && "$FLOOR" == 1 ]] && die "--tls and --floor: the floor servers speak no TLS"

[[ "$INTERLEAVE" == slice || "$INTERLEAVE" == sequential ]] || die "INTERLEAVE must be slice or sequential"
awk -v s="$SLICE" 'BEGIN { exit !(s >= 0.1 && s <= 60) }' || die "SLICE must be in [0.1, 60]"
pin_setup "$PIN"

# ---------------------------------------------------------------------------------------------
# build
build_binaries
if [[ "$FLOOR" == 1 ]]; then build_floor; fi
if [[ " $CASES " == *" m "* ]]; then command -v memcaslap >/dev/null || die "case m needs memcaslap (libmemcached-tools)"; fi

# Run a snapshot of the binary, so that a rebuild during the run cannot mix two versions.
snapshot_sqlcached bench

# The servers: memcached, sqlcached once per front end, the floor servers (cases a-d).
SQ_NAMES=()
if is_memcached "$SQLCACHED_BIN"; then
  SQ_NAMES=(sqlcached) # calibration: memcached against itself, no --io-uring
else
  for f in $FRONTENDS; do
    case "$f" in
      uring) SQ_NAMES+=(sqlcached-uring); SRV_EXTRA[sqlcached-uring]="--io-uring on" ;;
      epoll) SQ_NAMES+=(sqlcached-epoll); SRV_EXTRA[sqlcached-epoll]="--io-uring off" ;;
      auto) SQ_NAMES+=(sqlcached) ;;
    esac
  done
fi
PERF_NAMES=(memcached "${SQ_NAMES[@]}")
if [[ "$FLOOR" == 1 ]]; then PERF_NAMES+=(floor-epoll floor-uring-multi); fi

# --tls: a CA and a server certificate for 127.0.0.1, readable by memcached's -u nobody.
LG_TLS=()
if [[ "$TLS" == 1 ]]; then
  for c in $CASES; do [[ "$c" =~ ^[abcd]$ ]] || die "--tls: cases a-d only (case $c reads stats in clear)"; done
  TLS_DIR="$WORK/tls"
  mkdir -p "$TLS_DIR"
  (
    cd "$TLS_DIR"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.crt \
      -days 30 -subj /CN=bench-ca
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout server.key -out server.csr \
      -subj /CN=localhost
    printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >ext
    openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out server.crt -days 30 \
      -extfile ext
  ) >/dev/null 2>&1 || die "--tls: openssl could not make the test certificates"
  chmod 755 "$WORK" "$TLS_DIR"
  chmod 644 "$TLS_DIR"/*
  EXTRA_ARGS="${EXTRA_ARGS:+$EXTRA_ARGS }-Z -o ssl_chain_cert=$TLS_DIR/server.crt,ssl_key=$TLS_DIR/server.key"
  LG_TLS=(--tls-ca "$TLS_DIR/ca.crt")
fi

trap 'cleanup; rm -rf "${WORK:-/nonexistent}"' EXIT
trap 'exit 130' INT TERM

# ---------------------------------------------------------------------------------------------
# measurements; each appends "<case>\t<server>\t<rep>\t<RESULT|CAPACITY k=v ... | FAILED reason>" to $TSV
record() { # CASE NAME REP LINE
  printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$TSV"
  local short
  short=$(echo "$4" | grep -oE '^(FAILED.*|CAPACITY)|ops_s=[^ ]+|p50_us=[^ ]+|p99_us=[^ ]+|scan_hits=[^ ]+|errors=[1-9][^ ]*' | tr '\n' ' ')
  log "rep $3 case $1 $2: ${short:0:200}"
}

mode_args() {
  case "$1" in
    a) echo "--set-ratio 0.1" ;;
    b) echo "" ;;
    c) echo "--mget $MGET" ;;
    d) echo "--depth $DEPTH" ;;
  esac
}

# Cases a-d. INTERLEAVE=slice: both servers run at once and the load generator switches between
# them every SLICE seconds (same run, same moments of machine noise). INTERLEAVE=sequential: one
# server after the other.
measure_perf() { # CASE REP NAME...
  local case="$1" rep="$2" name out ok=() addrs=() pids=() i line
  shift 2
  for name in "$@"; do
    if ! start_server "$name" "$SERVER_MEM"; then record "$case" "$name" "$rep" "FAILED start"; continue; fi
    if ! out=$(lg 120 load --addr "127.0.0.1:${SRV_PORT[$name]}" --keys "$KEYS" --value-size "$VALUE_SIZE" \
        "${LG_TLS[@]}" 2>&1); then
      record "$case" "$name" "$rep" "FAILED preload: ${out//$'\n'/ }"; stop_server "$name"; continue
    fi
    ok+=("$name"); addrs+=("127.0.0.1:${SRV_PORT[$name]}"); pids+=("${SRV_PID[$name]}")
  done
  if [[ ${#ok[@]} -eq 0 ]]; then return; fi
  local tmo
  tmo=$(awk -v d="$DURATION" -v w="$WARMUP" -v n="${#ok[@]}" 'BEGIN { printf "%d", n * (d + w) + 60 }')
  local addr_list pid_list mode=()
  addr_list=$(IFS=,; echo "${addrs[*]}")
  pid_list=$(IFS=,; echo "${pids[*]}")
  read -r -a mode <<<"$(mode_args "$case")"
  if ! out=$(lg "$tmo" run --addr "$addr_list" --server-pid "$pid_list" --slice "$SLICE" \
        --conns "$CONNS" --threads "$LOADGEN_THREADS" --keys "$KEYS" --value-size "$VALUE_SIZE" \
        --duration "$DURATION" --warmup "$WARMUP" "${mode[@]}" "${LG_TLS[@]}" 2>&1); then
    for name in "${ok[@]}"; do
      if alive "$name"; then record "$case" "$name" "$rep" "FAILED ${out//$'\n'/ }"
      else record "$case" "$name" "$rep" "FAILED server died: ${out//$'\n'/ }"; fi
    done
    stop_all; return
  fi
  for i in "${!ok[@]}"; do
    name="${ok[$i]}"
    line=$(echo "$out" | grep "^RESULT server=$i " || echo "FAILED no output")
    if ! alive "$name"; then line="FAILED server died"; fi
    record "$case" "$name" "$rep" "$line"
  done
  stop_all
}

measure_capacity() { # REP NAME
  local rep="$1" name="$2" out
  start_server "$name" "$CAP_MEM" || { record e "$name" "$rep" "FAILED start"; return; }
  if ! out=$(lg 300 capacity --addr "127.0.0.1:${SRV_PORT[$name]}" --server-pid "${SRV_PID[$name]}" \
        --value-size "$CAP_VALUE" --prefix "fill:" --max-keys "$CAP_MAX_KEYS" --conns 4 --depth 32 2>&1); then
    stop_server "$name"; record e "$name" "$rep" "FAILED ${out//$'\n'/ }"; return
  fi
  stop_server "$name"
  record e "$name" "$rep" "$(echo "$out" | grep '^CAPACITY' || echo "FAILED no output")"
}

# memcaslap 90/10 cross-check: its own 16-byte keys, VALUE_SIZE values; ops/s and mean latency only
measure_memcaslap() { # REP NAME
  local rep="$1" name="$2" out secs tmo
  start_server "$name" "$SERVER_MEM" || { record m "$name" "$rep" "FAILED start"; return; }
  printf 'key\n16 16 1\nvalue\n%s %s 1\ncmd\n0 0.1\n1 0.9\n' "$VALUE_SIZE" "$VALUE_SIZE" >"$WORK/memcaslap.cfg"
  secs=$(awk -v d="$DURATION" -v w="$WARMUP" 'BEGIN { printf "%d", d + w + 0.5 }')
  tmo=$((secs + 60))
  if ! out=$(timeout --kill-after=5 "$tmo" "${LG_PIN[@]}" memcaslap -s "127.0.0.1:${SRV_PORT[$name]}" \
        -T "$LOADGEN_THREADS" -c "$CONNS" -t "${secs}s" -F "$WORK/memcaslap.cfg" 2>&1); then
    stop_server "$name"; record m "$name" "$rep" "FAILED memcaslap"; return
  fi
  stop_server "$name"
  echo "$out" >"$WORK/memcaslap-$name.out"
  record m "$name" "$rep" "$(echo "$out" | awk '
    /^Total Statistics \(/ { tot = 1 }
    tot && /Avg:/ { avg = $2; tot = 0 }
    /^cmd_get:/ { g = $2 } /^get_misses:/ { gm = $2 }
    /^Run time:/ { secs = $3; sub("s", "", secs); ops = $5; tps = $7 }
    END { if (tps == "") { print "FAILED no TPS"; exit }
          printf "RESULT ops=%s secs=%s ops_s=%s mean_us=%s keys=%s hits=%s errors=0 bad=0\n", ops, secs, tps, avg, g, g - gm }')"
}

# ---------------------------------------------------------------------------------------------
mkdir -p "$RESULTS_DIR"
STAMP="$(date +%Y%m%d-%H%M%S)"
TSV="$RESULTS_DIR/$STAMP.tsv"
MD="$RESULTS_DIR/$STAMP.md"
: >"$TSV"

log "cases: $CASES; $REPS reps; ${DURATION}s (+${WARMUP}s warmup) per case per server; interleave=$INTERLEAVE; pin=$PIN"
log "memcached: $MEMCACHED_BIN; sqlcached: $SQLCACHED_SRC (sha256 $SQLCACHED_SUM, built $SQLCACHED_MTIME)"
START=$(date +%s)
for rep in $(seq 1 "$REPS"); do
  # The order alternates per repetition (first, then last, server first).
  order=("${PERF_NAMES[@]}") two=(memcached "${SQ_NAMES[0]}")
  if (( rep % 2 == 0 )); then
    for ((i = 0; i < ${#PERF_NAMES[@]}; i++)); do order[i]=${PERF_NAMES[${#PERF_NAMES[@]} - 1 - i]}; done
    two=("${SQ_NAMES[0]}" memcached)
  fi
  for c in $CASES; do
    case "$c" in
      a|b|c|d)
        if [[ "$INTERLEAVE" == slice ]]; then
          measure_perf "$c" "$rep" "${order[@]}"
        else
          for name in "${order[@]}"; do measure_perf "$c" "$rep" "$name"; done
        fi ;;
      e) for name in "${two[@]}"; do measure_capacity "$rep" "$name"; done ;;
      m) for name in "${two[@]}"; do measure_memcaslap "$rep" "$name"; done ;;
    esac
  done
done
ELAPSED=$(( $(date +%s) - START ))

sq_ver=$(timeout 2 "$SQLCACHED_BIN" -V 2>/dev/null | head -1 || true)
mc_ver=$(timeout 2 "$MEMCACHED_BIN" -V 2>/dev/null | head -1 || true)
git_rev=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo "no commit")
{
  echo "# sqlcached vs memcached — $STAMP"
  echo
  echo "- servers: memcached \`$MEMCACHED_BIN\` (${mc_ver:-?}); sqlcached \`$SQLCACHED_SRC\` (${sq_ver:-?}, sha256 $SQLCACHED_SUM…, built $SQLCACHED_MTIME); git $git_rev"
  echo "- servers started with \`-l 127.0.0.1 -U 0 -t $SERVER_THREADS -m $SERVER_MEM\` (case e: \`-m $CAP_MEM\`)${EXTRA_ARGS:+ plus \`$EXTRA_ARGS\`}, fresh per measurement; sqlcached-uring adds \`--io-uring on\`, sqlcached-epoll \`--io-uring off\`"
  if [[ "$FLOOR" == 1 ]]; then echo "- floor-epoll, floor-uring-multi: bench/floor (no cache, one thread; epoll, io_uring multishot): the kernel's floor of CPU per request, cases a-d"; fi
  if [[ "$TLS" == 1 ]]; then echo "- over TLS (-Z, ECDSA P-256 certificate; loadgen: rustls client, TLS 1.3)"; fi
  echo "- load: bench/loadgen (closed loop, text protocol), $CONNS connections, $KEYS keys (preloaded), ${VALUE_SIZE}-byte values, $LOADGEN_THREADS loadgen thread(s)"
  if [[ "$PIN" == split ]]; then
    echo "- CPU pinning: servers on CPU $SERVER_CPUS, load generator on CPU $LOADGEN_CPUS (taskset); machine has $(nproc) CPUs"
  else
    echo "- CPU pinning: none; machine has $(nproc) CPUs"
  fi
  if [[ "$INTERLEAVE" == slice ]]; then
    echo "- cases a-d: all servers running, the load generator alternating between them every ${SLICE}s; per server ${WARMUP}s warmup + ${DURATION}s measured; $REPS repetitions (first server alternating); medians shown; run took ${ELAPSED}s"
  else
    echo "- ${DURATION}s measured after ${WARMUP}s warmup, one server after the other, $REPS repetitions per case and server, order alternating; medians shown; run took ${ELAPSED}s"
  fi
  echo "- load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo
  "$LOADGEN" report --input "$TSV"
  echo "Case d keeps $DEPTH gets in flight per connection; case c counts one $MGET-key get as one op."
  echo "Latency is per request, from send to full reply, measured by the load generator (HdrHistogram)."
  echo "server CPU µs/op = server process user+sys CPU during the measured window / ops; lower is better."
  echo "Ratios are medians of the per-repetition ratios (both servers of a repetition ran interleaved)."
  echo "Raw results: \`$(basename "$TSV")\`."
} >"$MD"
cat "$MD"
log "written $MD"
rm -rf "$WORK"
