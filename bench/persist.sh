#!/usr/bin/env bash
# Persistence benchmark: memcached 1.6.18 (memory only) against sqlcached in memory only,
# with --data-dir --durability async and with --durability sync, in the same run.
#
#   bench/persist.sh                                   # everything, defaults below (~5-6 min)
#   bench/persist.sh --parts throughput --duration 10 --reps 5
#   bench/persist.sh --parts "restart reads" --restart-keys 2000000
#   DURATION=3 REPS=1 READ_SECS=5 bench/persist.sh      # env works too (flags win)
#
# Parts:
#   throughput  for each workload (sets: 100 % sets; mixed: 90/10 get/set; half: 50/50), four
#               fresh servers (memcached, sqlcached memory only, async, sync; each disk server on
#               its own fresh data dir), all preloaded with KEYS keys, then one load generator
#               (CONNS connections, 1 request in flight each) alternating between the four every
#               SLICE s, as run.sh does for two; plus `stats` deltas of disk_writes,
#               disk_batches and disk_fsyncs around the run.
#   restart     sqlcached async on a fresh dir, RESTART_KEYS keys loaded, stopped by SIGTERM
#               (clean) or SIGKILL (crash), restarted: time from the exec to the first `get`
#               hit of a known key (polled every POLL_MS ms); RESTART_REPS restarts per signal.
#   reads       right after a restart, READ_CONNS connections read random loaded keys
#               (uniform, then zipf) for READ_SECS s: hit % and gets/s per second; sqlcached
#               async (its restart dir) against memcached (loaded, then restarted).
# Traffic goes only to 127.0.0.1. Results: stdout and bench/results/persist-<timestamp>.md.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
# shellcheck source=lib.sh disable=SC2034
source "$HERE/lib.sh"

usage() {
  sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | grep '^#' | sed 's/^# \{0,1\}//'
  cat <<EOF
Flags (each also settable by the env var in capitals):
  --parts LIST          throughput restart reads                 [PARTS="$PARTS"]
  --workloads LIST      throughput workloads: sets mixed half     [WORKLOADS="$WORKLOADS"]
  --duration SECS       measured seconds per workload per server  [DURATION=$DURATION]
  --warmup SECS         unmeasured seconds per server before that [WARMUP=$WARMUP]
  --reps N              throughput repetitions (median shown)     [REPS=$REPS]
  --threads N           server -t, all servers                    [SERVER_THREADS=$SERVER_THREADS]
  --memory MB           server -m, all servers and parts          [SERVER_MEM=$SERVER_MEM]
  --conns N             throughput connections per server         [CONNS=$CONNS]
  --keys N              throughput key space (all preloaded)      [KEYS=$KEYS]
  --value-size B        value size, every part                    [VALUE_SIZE=$VALUE_SIZE]
  --restart-keys N      items loaded before the restarts          [RESTART_KEYS=$RESTART_KEYS]
  --restart-reps N      restarts per stop signal                  [RESTART_REPS=$RESTART_REPS]
  --signals LIST        how the server is stopped: term kill      [SIGNALS="$SIGNALS"]
  --poll-ms MS          restart probe interval                    [POLL_MS=$POLL_MS]
  --read-secs SECS      reads part: seconds read after a restart  [READ_SECS=$READ_SECS]
  --read-conns N        reads part: connections                   [READ_CONNS=$READ_CONNS]
  --dists LIST          reads part: uniform zipf                  [DISTS="$DISTS"]
  --zipf-theta T        zipf skew (YCSB default 0.99)             [ZIPF_THETA=$ZIPF_THETA]
  --flush-interval-ms N async fsync interval (empty: default 100) [FLUSH_INTERVAL_MS=$FLUSH_INTERVAL_MS]
  --data-root DIR       where the fresh data dirs go (not tmpfs)  [DATA_ROOT=${DATA_ROOT:-bench/results/persist-data-<ts>}]
  --drop-caches         drop the page cache before each restart (root; affects the whole machine)
                                                                  [DROP_CACHES=$DROP_CACHES]
  --pin MODE            split: servers on SERVER_CPUS, loadgen on LOADGEN_CPUS; none
                                                                  [PIN=$PIN SERVER_CPUS=$SERVER_CPUS LOADGEN_CPUS=$LOADGEN_CPUS]
  --slice SECS          throughput: seconds per server turn       [SLICE=$SLICE]
  --no-build            do not run cargo build                    [BUILD=$BUILD]
  Binaries: SQLCACHED_BIN (default target/release/sqlcached, built if unset), MEMCACHED_BIN.
EOF
}

common_defaults
measure_defaults
PARTS="${PARTS:-throughput restart reads}"
WORKLOADS="${WORKLOADS:-sets mixed}"
DURATION="${DURATION:-5}"
VALUE_SIZE="${VALUE_SIZE:-100}"
RESTART_KEYS="${RESTART_KEYS:-1000000}"
RESTART_REPS="${RESTART_REPS:-2}"
SIGNALS="${SIGNALS:-term kill}"
POLL_MS="${POLL_MS:-2}"
READ_SECS="${READ_SECS:-10}"
READ_CONNS="${READ_CONNS:-50}"
DISTS="${DISTS:-uniform zipf}"
ZIPF_THETA="${ZIPF_THETA:-0.99}"
FLUSH_INTERVAL_MS="${FLUSH_INTERVAL_MS:-}"
DATA_ROOT="${DATA_ROOT:-}"
DROP_CACHES="${DROP_CACHES:-0}"

while [[ $# -gt 0 ]]; do
  case "$1" in
    --parts) PARTS="$2"; shift 2 ;;
    --workloads) WORKLOADS="$2"; shift 2 ;;
    --restart-keys) RESTART_KEYS="$2"; shift 2 ;;
    --restart-reps) RESTART_REPS="$2"; shift 2 ;;
    --signals) SIGNALS="$2"; shift 2 ;;
    --poll-ms) POLL_MS="$2"; shift 2 ;;
    --read-secs) READ_SECS="$2"; shift 2 ;;
    --read-conns) READ_CONNS="$2"; shift 2 ;;
    --dists) DISTS="$2"; shift 2 ;;
    --zipf-theta) ZIPF_THETA="$2"; shift 2 ;;
    --flush-interval-ms) FLUSH_INTERVAL_MS="$2"; shift 2 ;;
    --data-root) DATA_ROOT="$2"; shift 2 ;;
    --drop-caches) DROP_CACHES=1; shift ;;
    *) common_flag "$@" || { echo "persist.sh: unknown argument $1 (see --help)" >&2; exit 2; }; shift "$FLAG_SHIFT" ;;
  esac
done
PARTS="${PARTS//,/ }"; WORKLOADS="${WORKLOADS//,/ }"; SIGNALS="${SIGNALS//,/ }"; DISTS="${DISTS//,/ }"

log() { echo "[persist $(date +%H:%M:%S)] $*" >&2; }
die() { echo "persist.sh: $*" >&2; exit 1; }

# Bounds, so that a typo cannot start an hour-long run.
awk -v d="$DURATION" -v w="$WARMUP" -v r="$READ_SECS" \
  'BEGIN { exit !(d > 0 && d <= 600 && w >= 0 && w <= 60 && r > 0 && r <= 600) }' \
  || die "DURATION must be in (0, 600], WARMUP in [0, 60], READ_SECS in (0, 600]"
check_reps
[[ "$RESTART_REPS" =~ ^[0-9]+$ && "$RESTART_REPS" -ge 1 && "$RESTART_REPS" -le 20 ]] || die "RESTART_REPS must be 1..20"
[[ "$RESTART_KEYS" =~ ^[0-9]+$ && "$RESTART_KEYS" -ge 1 && "$RESTART_KEYS" -le 50000000 ]] || die "RESTART_KEYS must be 1..50000000"
for p in $PARTS; do [[ "$p" =~ ^(throughput|restart|reads)$ ]] || die "unknown part '$p' (throughput restart reads)"; done
for w in $WORKLOADS; do [[ "$w" =~ ^(sets|mixed|half)$ ]] || die "unknown workload '$w' (sets mixed half)"; done
for s in $SIGNALS; do [[ "$s" =~ ^(term|kill)$ ]] || die "unknown signal '$s' (term kill)"; done
for d in $DISTS; do [[ "$d" =~ ^(uniform|zipf)$ ]] || die "unknown distribution '$d' (uniform zipf)"; done
LOADGEN_THREADS=""
pin_setup "$PIN"
has_part() { [[ " $PARTS " == *" $1 "* ]]; }

# ---------------------------------------------------------------------------------------------
# build
build_binaries

mkdir -p "$RESULTS_DIR"
STAMP="$(date +%Y%m%d-%H%M%S)"
TSV="$RESULTS_DIR/persist-$STAMP.tsv"
MD="$RESULTS_DIR/persist-$STAMP.md"
: >"$TSV"

# Data dirs: on the disk (same filesystem as the repo by default), never tmpfs.
DATA_ROOT="${DATA_ROOT:-$RESULTS_DIR/persist-data-$STAMP}"
mkdir -p "$DATA_ROOT"
DATA_ROOT="$(cd "$DATA_ROOT" && pwd)"
DATA_FS=$(stat -f -c %T "$DATA_ROOT")
[[ "$DATA_FS" != tmpfs && "$DATA_FS" != ramfs ]] || die "DATA_ROOT $DATA_ROOT is on $DATA_FS: use a directory on a disk"
DATA_DEV=$(df -P "$DATA_ROOT" | awk 'NR == 2 { print $1 " mounted on " $6 }')
DATA_FSTYPE=$(df -PT "$DATA_ROOT" | awk 'NR == 2 { print $2 }')
DATA_MADE_HERE=1
# Server ports come from below Linux's ephemeral range (lib.sh's pick_port): a restart probe
# connecting to a port nobody listens on yet cannot be answered by a client socket owning it.

# Run a snapshot of the binary, so that a rebuild during the run cannot mix two versions.
snapshot_sqlcached persist

finish() {
  cleanup
  sleep 0.2
  rm -rf "${WORK:-/nonexistent}"
  if [[ "${DATA_MADE_HERE:-0}" == 1 && -n "${DATA_ROOT:-}" ]]; then rm -rf "$DATA_ROOT"; fi
}
trap finish EXIT
trap 'exit 130' INT TERM

ALL_SERVERS=(memcached sqlcached-mem sqlcached-async sqlcached-sync)

# disk_flags MODE DIR
disk_flags() {
  local f="--data-dir $2 --durability $1"
  if [[ -n "$FLUSH_INTERVAL_MS" ]]; then f+=" --flush-interval-ms $FLUSH_INTERVAL_MS"; fi
  echo "$f"
}

# fresh_dir NAME: an empty directory under DATA_ROOT
fresh_dir() {
  local d="$DATA_ROOT/$1"
  rm -rf "$d"
  mkdir -p "$d"
  echo "$d"
}

record() { # CASE NAME REP LINE
  printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$TSV"
  local short
  short=$(echo "$4" | grep -oE '^FAILED.*|ops_s=[^ ]+|p99_us=[^ ]+|connect_ms=[^ ]+|first_hit_ms=[^ ]+|stop_ms=[^ ]+| hits=[^ ]+|d_fsyncs=[^ ]+|errors=[1-9][^ ]*' | tr '\n' ' ')
  log "$1 $2 rep $3: ${short:0:220}"
}

stats_of() { # NAME -> "STATS k=v ..."
  lg 15 stats --addr "127.0.0.1:${SRV_PORT[$1]}" 2>/dev/null || echo "STATS"
}

stat_val() { # "STATS ..." KEY
  echo "$1" | tr ' ' '\n' | awk -F= -v k="$2" '$1 == k { print $2; found = 1 } END { if (!found) print "na" }'
}

# stop_by NAME term|kill: stop it; STOP_MS = how long it took to exit after the signal
STOP_MS=na
stop_by() {
  local name="$1" sig="$2" pid t1 t2 i
  pid="${SRV_PID[$name]:-}"
  STOP_MS=na
  [[ -n "$pid" ]] || return 0
  t1=$(date +%s%N)
  if [[ "$sig" == kill ]]; then kill -KILL "$pid" 2>/dev/null || true; else kill -TERM "$pid" 2>/dev/null || true; fi
  for i in $(seq 1 12000); do # up to ~60 s
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.005
  done
  t2=$(date +%s%N)
  if kill -0 "$pid" 2>/dev/null; then
    log "$name did not exit within 60 s of SIG${sig^^}; killing it"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  wait "$pid" 2>/dev/null || true
  unset "SRV_PID[$name]"
  STOP_MS=$(awk -v a="$t1" -v b="$t2" 'BEGIN { printf "%.0f", (b - a) / 1e6 }')
}

drop_caches() {
  [[ "$DROP_CACHES" == 1 ]] || return 0
  sync
  if ! echo 1 >/proc/sys/vm/drop_caches 2>/dev/null; then
    log "cannot drop the page cache here (needs root, not in a container); restarts read a warm cache"
    DROP_CACHES=unavailable
  fi
}

# ---------------------------------------------------------------------------------------------
# 1. throughput: four servers, one load generator alternating between them

set_ratio_of() { case "$1" in sets) echo 1.0 ;; mixed) echo 0.1 ;; half) echo 0.5 ;; esac; }

measure_throughput() { # WORKLOAD REP
  local wl="$1" rep="$2" ratio name out line i k n
  ratio=$(set_ratio_of "$wl")
  # rotate the order per repetition, so no server always goes first
  local order=() ok=() addrs=() pids=()
  n=${#ALL_SERVERS[@]}
  for i in $(seq 0 $((n - 1))); do order+=("${ALL_SERVERS[$(( (i + rep - 1) % n ))]}"); done
  SRV_EXTRA=()
  SRV_EXTRA["sqlcached-async"]=$(disk_flags async "$(fresh_dir "tp-async")")
  SRV_EXTRA["sqlcached-sync"]=$(disk_flags sync "$(fresh_dir "tp-sync")")
  for name in "${order[@]}"; do
    if ! start_server "$name" "$SERVER_MEM"; then record "$wl" "$name" "$rep" "FAILED start"; continue; fi
    if ! out=$(lg 300 load --addr "127.0.0.1:${SRV_PORT[$name]}" --keys "$KEYS" --value-size "$VALUE_SIZE" 2>&1); then
      record "$wl" "$name" "$rep" "FAILED preload: ${out//$'\n'/ }"; stop_server "$name"; continue
    fi
    ok+=("$name"); addrs+=("127.0.0.1:${SRV_PORT[$name]}"); pids+=("${SRV_PID[$name]}")
  done
  [[ ${#ok[@]} -gt 0 ]] || return 0
  declare -A before=()
  for name in "${ok[@]}"; do
    if [[ "$name" == sqlcached-async || "$name" == sqlcached-sync ]]; then before[$name]=$(stats_of "$name"); fi
  done
  local tmo addr_list pid_list
  tmo=$(awk -v d="$DURATION" -v w="$WARMUP" -v n="${#ok[@]}" 'BEGIN { printf "%d", n * (d + w) + 60 }')
  addr_list=$(IFS=,; echo "${addrs[*]}")
  pid_list=$(IFS=,; echo "${pids[*]}")
  if ! out=$(lg "$tmo" run --addr "$addr_list" --server-pid "$pid_list" --slice "$SLICE" \
        --conns "$CONNS" --threads "$LOADGEN_THREADS" --keys "$KEYS" --value-size "$VALUE_SIZE" \
        --duration "$DURATION" --warmup "$WARMUP" --set-ratio "$ratio" 2>&1); then
    for name in "${ok[@]}"; do record "$wl" "$name" "$rep" "FAILED ${out//$'\n'/ }"; done
    stop_all; return 0
  fi
  for i in "${!ok[@]}"; do
    name="${ok[$i]}"
    line=$(echo "$out" | grep "^RESULT server=$i " || echo "FAILED no output")
    if ! alive "$name"; then line="FAILED server died"; fi
    if [[ -n "${before[$name]:-}" && "$line" == RESULT* ]]; then
      local after b a
      after=$(stats_of "$name")
      for k in writes batches fsyncs; do
        b=$(stat_val "${before[$name]}" "disk_$k"); a=$(stat_val "$after" "disk_$k")
        line+=" d_$k=$(awk -v a="$a" -v b="$b" 'BEGIN { if (a == "na" || b == "na") print "na"; else print a - b }')"
      done
      # the server was driven for its warmup and measured slices
      line+=" d_secs=$(echo "$line" | grep -oE ' secs=[0-9.]+' | head -1 | awk -F= -v w="$WARMUP" '{ print $2 + w }')"
    fi
    record "$wl" "$name" "$rep" "$line"
  done
  stop_all
  rm -rf "$DATA_ROOT/tp-async" "$DATA_ROOT/tp-sync"
}

# ---------------------------------------------------------------------------------------------
# 2. restart to first hit

load_restart_keys() { # NAME -> LOADED line
  lg 900 load --addr "127.0.0.1:${SRV_PORT[$1]}" --keys "$RESTART_KEYS" --value-size "$VALUE_SIZE" --conns 4 --depth 32 2>&1
}

RESTART_DIR=""
measure_restart() { # SIGNAL
  local sig="$1" name=sqlcached-async dir out loaded load_s st items stop_ms disk_mb r clean
  dir=$(fresh_dir "restart-$sig")
  SRV_EXTRA[$name]=$(disk_flags async "$dir")
  start_server "$name" "$SERVER_MEM" || { record "restart-$sig" "$name" 1 "FAILED start"; return 0; }
  log "loading $RESTART_KEYS items of $VALUE_SIZE bytes into $name ($dir)"
  if ! loaded=$(load_restart_keys "$name"); then
    record "restart-$sig" "$name" 1 "FAILED load: ${loaded//$'\n'/ }"; stop_server "$name"; return 0
  fi
  load_s=$(echo "$loaded" | grep -oE 'secs=[0-9.]+' | cut -d= -f2)
  log "$loaded"
  for r in $(seq 1 "$RESTART_REPS"); do
    st=$(stats_of "$name")
    items=$(stat_val "$st" disk_items)
    stop_by "$name" "$sig"
    stop_ms=$STOP_MS
    if [[ "$sig" == kill ]]; then stop_ms="na"; fi
    disk_mb=$(du -sm "$dir" | cut -f1)
    drop_caches
    # the probe starts right after the exec and polls until the known key hits
    launch_server "$name" "$SERVER_MEM" "$(pick_port)"
    out=$(lg 120 restart --addr "127.0.0.1:${SRV_PORT[$name]}" --t0-ns "$SRV_T0" --keys "$RESTART_KEYS" \
          --value-size "$VALUE_SIZE" --poll-ms "$POLL_MS" --timeout 60 --until hit 2>>"$WORK/loadgen.err") \
      || out="FAILED restart probe: $(tail -1 "$WORK/loadgen.err"); server $(alive "$name" && echo running || echo exited): $(tail -c 300 "$WORK/$name.log" | tr '\n' ' ')"
    if [[ "$out" == RESTART* ]]; then
      clean=yes
      if grep -q 'did not shut down cleanly' "$WORK/$name.log"; then clean=no; fi
      out+=" items=$items stop_ms=$stop_ms disk_mb=$disk_mb load_s=$load_s clean=$clean"
      if ! alive "$name"; then out="FAILED server died after restart: $(tr '\n' ' ' <"$WORK/$name.log")"; fi
    fi
    record "restart-$sig" "$name" "$r" "$out"
    alive "$name" || break
  done
  if [[ "$sig" == term || -z "$RESTART_DIR" ]]; then RESTART_DIR="$dir"; fi
  stop_by "$name" term
}

# ---------------------------------------------------------------------------------------------
# 3. reads in the first READ_SECS s after a restart

measure_reads() { # NAME
  local name="$1" dist out port st
  if [[ "$name" == memcached ]]; then
    start_server "$name" "$SERVER_MEM" || { record read-uniform "$name" 1 "FAILED start"; return 0; }
    log "loading $RESTART_KEYS items into memcached (to lose them on the restart)"
    out=$(load_restart_keys "$name") || { record read-uniform "$name" 1 "FAILED load: ${out//$'\n'/ }"; stop_server "$name"; return 0; }
  else
    if [[ -z "$RESTART_DIR" ]]; then
      RESTART_DIR=$(fresh_dir restart-term)
      SRV_EXTRA[$name]=$(disk_flags async "$RESTART_DIR")
      start_server "$name" "$SERVER_MEM" || { record read-uniform "$name" 1 "FAILED start"; return 0; }
      log "loading $RESTART_KEYS items into $name ($RESTART_DIR)"
      out=$(load_restart_keys "$name") || { record read-uniform "$name" 1 "FAILED load: ${out//$'\n'/ }"; stop_server "$name"; return 0; }
    else
      SRV_EXTRA[$name]=$(disk_flags async "$RESTART_DIR")
      start_server "$name" "$SERVER_MEM" || { record read-uniform "$name" 1 "FAILED start"; return 0; }
    fi
  fi
  for dist in $DISTS; do
    stop_by "$name" term
    drop_caches
    port=$(pick_port)
    launch_server "$name" "$SERVER_MEM" "$port"
    out=$(lg $((READ_SECS + 90)) restart --addr "127.0.0.1:$port" --t0-ns "$SRV_T0" --until listen \
          --read-secs "$READ_SECS" --conns "$READ_CONNS" --keys "$RESTART_KEYS" --value-size "$VALUE_SIZE" \
          --dist "$dist" --zipf-theta "$ZIPF_THETA" --poll-ms "$POLL_MS" --timeout 60 2>>"$WORK/loadgen.err") \
      || out="FAILED reads: $(tail -1 "$WORK/loadgen.err"); server $(alive "$name" && echo running || echo exited): $(tail -c 300 "$WORK/$name.log" | tr '\n' ' ')"
    if [[ "$out" == READ* ]]; then
      st=$(stats_of "$name")
      out+=" disk_hits=$(stat_val "$st" disk_hits) curr_items=$(stat_val "$st" curr_items) keys_n=$RESTART_KEYS zipf_theta=$ZIPF_THETA"
    fi
    record "read-$dist" "$name" 1 "$out"
  done
  stop_by "$name" term
}

# ---------------------------------------------------------------------------------------------
log "parts: $PARTS; data dirs under $DATA_ROOT ($DATA_FSTYPE on $DATA_DEV)"
log "memcached: $MEMCACHED_BIN; sqlcached: $SQLCACHED_SRC (sha256 $SQLCACHED_SUM, built $SQLCACHED_MTIME)"
START=$(date +%s)
if has_part throughput; then
  for rep in $(seq 1 "$REPS"); do
    for wl in $WORKLOADS; do measure_throughput "$wl" "$rep"; done
  done
fi
T_TP=$(( $(date +%s) - START ))
if has_part restart; then
  for sig in $SIGNALS; do measure_restart "$sig"; done
fi
T_RS=$(( $(date +%s) - START - T_TP ))
if has_part reads; then
  measure_reads sqlcached-async
  measure_reads memcached
fi
ELAPSED=$(( $(date +%s) - START ))

sq_ver=$(timeout 2 "$SQLCACHED_BIN" -V 2>/dev/null | head -1 || true)
mc_ver=$(timeout 2 "$MEMCACHED_BIN" -V 2>/dev/null | head -1 || true)
git_rev=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo "no commit")
{
  echo "# Persistence: sqlcached (memory / async / sync) vs memcached — $STAMP"
  echo
  echo "- servers: memcached \`$MEMCACHED_BIN\` (${mc_ver:-?}); sqlcached \`$SQLCACHED_SRC\` (${sq_ver:-?}, sha256 $SQLCACHED_SUM…, built $SQLCACHED_MTIME); git $git_rev"
  echo "- all started with \`-l 127.0.0.1 -U 0 -t $SERVER_THREADS -m $SERVER_MEM\`${EXTRA_ARGS:+ plus \`$EXTRA_ARGS\`}; disk servers add \`--data-dir <fresh dir> --durability async|sync\`${FLUSH_INTERVAL_MS:+ \`--flush-interval-ms $FLUSH_INTERVAL_MS\`} (async fsyncs at least every ${FLUSH_INTERVAL_MS:-100} ms)"
  echo "- data dirs: \`$DATA_ROOT\` ($DATA_FSTYPE, $DATA_DEV); page cache dropped before restarts: $([[ "$DROP_CACHES" == 1 ]] && echo yes || echo "no ($DROP_CACHES): restarts read files the OS still caches")"
  if [[ "$PIN" == split ]]; then
    echo "- CPU pinning: servers (all threads) on CPU $SERVER_CPUS, load generator on CPU $LOADGEN_CPUS (taskset); machine has $(nproc) CPUs"
  else
    echo "- CPU pinning: none; machine has $(nproc) CPUs"
  fi
  if has_part throughput; then
    echo "- throughput: $CONNS connections per server, 1 request in flight each, $KEYS keys (preloaded), ${VALUE_SIZE}-byte values; the four servers run side by side and one load generator alternates between them every ${SLICE}s; per server ${WARMUP}s warmup + ${DURATION}s measured; $REPS repetitions (order rotated); medians shown (${T_TP}s)"
  fi
  if has_part restart; then
    echo "- restart: $RESTART_KEYS items of ${VALUE_SIZE} bytes loaded (4 connections x 32 pipelined sets) into sqlcached async on a fresh dir, then stopped and restarted $RESTART_REPS time(s) per signal; a probe connects and \`get\`s one known loaded key every ${POLL_MS} ms from the exec on (${T_RS}s)"
  fi
  if has_part reads; then
    echo "- reads: right after a restart, $READ_CONNS connections read random keys of the $RESTART_KEYS loaded (1 in flight each) for ${READ_SECS}s, counted per second from the first accepted connection"
  fi
  echo "- run took ${ELAPSED}s; load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo
  "$LOADGEN" persist-report --input "$TSV"
  echo "Latency is per request (send to full reply) measured by the load generator. server CPU µs/op: the"
  echo "server's user+sys CPU during the measured window / ops. sets per batch = disk_writes / disk_batches"
  echo "(changes the committer wrote to fjall as one batch); sets per fsync = disk_writes / disk_fsyncs;"
  echo "fsyncs/s = disk_fsyncs / the seconds that server was driven (its warmup + measured slices)."
  echo "Raw results: \`$(basename "$TSV")\`."
} >"$MD"
cat "$MD"
log "written $MD"
