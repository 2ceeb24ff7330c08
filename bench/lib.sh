# shellcheck shell=bash disable=SC2034,SC2153
# Helpers shared by run.sh, profile.sh and persist.sh (containers.sh and querycache.sh use
# port_open, pick_port, stop_pids and sysbench_setup): their common settings, flags and setup,
# and start/stop of servers on free loopback ports. Source it right after HERE and ROOT are set.
# Expects (when the functions run): MEMCACHED_BIN SQLCACHED_BIN SERVER_THREADS EXTRA_ARGS SRV_PIN[]
# LG_PIN[] LOADGEN WORK, log(), die(), and usage() for common_flag.
# Servers are named "memcached…" (runs MEMCACHED_BIN), "floor-MODE" (runs bench/floor MODE: epoll,
# uring or uring-multi; FLOOR_BIN) or anything else (runs SQLCACHED_BIN);
# SRV_PID[name] and SRV_PORT[name] describe the running ones; SRV_EXTRA[name] adds flags for
# that server only (persist.sh: "--data-dir DIR --durability sync"). launch_server sets SRV_T0
# (unix ns, taken just before the exec).

# log, die and usage for the script that sources this file: its name in the messages, its
# header comment (up to `set -euo`) as usage. Scripts with their own define them after sourcing.
LIB_SCRIPT="${BASH_SOURCE[1]:-$0}"
log() { echo "[$(basename "$LIB_SCRIPT" .sh) $(date +%H:%M:%S)] $*" >&2; }
die() { echo "$(basename "$LIB_SCRIPT"): $*" >&2; exit 1; }
usage() { sed -n '2,/^set -euo/p' "$LIB_SCRIPT" | grep '^#' | sed 's/^# \{0,1\}//'; }

# ---------------------------------------------------------------------------------------------
# settings, flags and setup

# common_defaults: the settings all three scripts share, with their defaults (env wins).
common_defaults() {
  SERVER_THREADS="${SERVER_THREADS:-2}"
  SERVER_MEM="${SERVER_MEM:-1024}"
  CONNS="${CONNS:-50}"
  KEYS="${KEYS:-100000}"
  SERVER_CPUS="${SERVER_CPUS:-0}"
  LOADGEN_CPUS="${LOADGEN_CPUS:-1}"
  EXTRA_ARGS="${EXTRA_ARGS:-}"
  MEMCACHED_BIN="${MEMCACHED_BIN:-$(command -v memcached || echo /usr/bin/memcached)}"
}

# measure_defaults: the further settings run.sh and persist.sh share (env wins).
measure_defaults() {
  WARMUP="${WARMUP:-1}"
  REPS="${REPS:-3}"
  PIN="${PIN:-split}"
  SLICE="${SLICE:-1}"
  BUILD="${BUILD:-1}"
  RESULTS_DIR="${RESULTS_DIR:-$HERE/results}"
}

# common_flag ARGS...: if $1 is one of the flags run.sh and persist.sh share, take it (and its
# value) and set FLAG_SHIFT to the number of words used; otherwise return 1.
common_flag() {
  FLAG_SHIFT=2
  case "$1" in
    --duration) DURATION="$2" ;;
    --warmup) WARMUP="$2" ;;
    --reps) REPS="$2" ;;
    --threads) SERVER_THREADS="$2" ;;
    --memory) SERVER_MEM="$2" ;;
    --conns) CONNS="$2" ;;
    --keys) KEYS="$2" ;;
    --value-size) VALUE_SIZE="$2" ;;
    --pin) PIN="$2" ;;
    --slice) SLICE="$2" ;;
    --no-build) BUILD=0; FLAG_SHIFT=1 ;;
    -h|--help) usage; exit 0 ;;
    *) return 1 ;;
  esac
}

# check_reps: REPS within bounds, so that a typo cannot start an hour-long run.
check_reps() {
  [[ "$REPS" =~ ^[0-9]+$ && "$REPS" -ge 1 && "$REPS" -le 20 ]] || die "REPS must be 1..20"
}

# pin_setup MODE: split runs servers on SERVER_CPUS and the load generator on LOADGEN_CPUS
# (LOADGEN_THREADS, if empty, becomes the number of those CPUs); none pins nothing
# (LOADGEN_THREADS, if empty: nproc). Sets SRV_PIN and LG_PIN.
pin_setup() {
  case "$1" in
    split)
      [[ -n "${LOADGEN_THREADS:-}" ]] || LOADGEN_THREADS=$(( $(echo "$LOADGEN_CPUS" | tr ',' '\n' | wc -l) ))
      SRV_PIN=(taskset -c "$SERVER_CPUS"); LG_PIN=(taskset -c "$LOADGEN_CPUS") ;;
    none)
      [[ -n "${LOADGEN_THREADS:-}" ]] || LOADGEN_THREADS=$(nproc)
      SRV_PIN=(); LG_PIN=() ;;
    *) die "PIN must be split or none" ;;
  esac
}

LOADGEN="$HERE/loadgen/target/release/loadgen"
FLOOR_BIN="$HERE/floor/target/release/floor"

# build_floor: with BUILD=1 build bench/floor (the cache-less floor servers); then check it exists.
build_floor() {
  if [[ "$BUILD" == 1 ]]; then
    log "building bench/floor"
    cargo build --release --quiet --manifest-path "$HERE/floor/Cargo.toml"
  fi
  [[ -x "$FLOOR_BIN" ]] || die "$FLOOR_BIN missing (run without --no-build)"
}

# build_binaries: with BUILD=1 build bench/loadgen; SQLCACHED_BIN unset means
# target/release/sqlcached (built too with BUILD=1); then check that all binaries exist.
build_binaries() {
  if [[ "$BUILD" == 1 ]]; then
    log "building bench/loadgen"
    cargo build --release --quiet --manifest-path "$HERE/loadgen/Cargo.toml"
  fi
  [[ -x "$LOADGEN" ]] || die "$LOADGEN missing (run without --no-build)"
  if [[ -z "${SQLCACHED_BIN:-}" ]]; then
    SQLCACHED_BIN="$ROOT/target/release/sqlcached"
    if [[ "$BUILD" == 1 ]]; then
      log "building sqlcached (cargo build --release -p sqlcached)"
      (cd "$ROOT" && cargo build --release --quiet -p sqlcached) || die "building sqlcached failed"
    fi
  fi
  [[ -x "$SQLCACHED_BIN" ]] || die "sqlcached binary $SQLCACHED_BIN not found (set SQLCACHED_BIN)"
  [[ -x "$MEMCACHED_BIN" ]] || die "memcached binary $MEMCACHED_BIN not found"
}

# snapshot_sqlcached NAME: WORK = a new /tmp/sqlcached-NAME.XXXXXX, and SQLCACHED_BIN a copy of
# the binary in it (SQLCACHED_SRC, _SUM, _MTIME describe the original), so that a rebuild during
# the run cannot mix two versions.
snapshot_sqlcached() {
  WORK="$(mktemp -d "/tmp/sqlcached-$1.XXXXXX")"
  SQLCACHED_SRC="$SQLCACHED_BIN"
  SQLCACHED_SUM=$(sha256sum "$SQLCACHED_BIN" | cut -c1-12)
  SQLCACHED_MTIME=$(date -r "$SQLCACHED_BIN" '+%Y-%m-%d %H:%M:%S')
  cp "$SQLCACHED_BIN" "$WORK/sqlcached"
  SQLCACHED_BIN="$WORK/sqlcached"
}

# ---------------------------------------------------------------------------------------------
# servers

declare -A SRV_PID=() SRV_PORT=() SRV_EXTRA=()
SRV_T0=0

is_memcached() { timeout 2 "$1" -V 2>/dev/null | grep -q '^memcached'; }

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# pick_port: a port nobody listens on, from PORT_MIN..PORT_MIN+PORT_SPAN-1 (default 20000-31999:
# below Linux's ephemeral range, 32768-60999, so it cannot be the local end of a connection the
# load generator opens meanwhile).
pick_port() {
  local p i
  for i in $(seq 1 50); do
    p=$(( ${PORT_MIN:-20000} + RANDOM % ${PORT_SPAN:-12000} ))
    port_open "$p" || { echo "$p"; return; }
  done
  die "no free port found"
}

# sysbench_setup NAME (containers.sh, querycache.sh): sets TS, RESULTS, OUT (NAME-TS.md), RAW
# (NAME-TS.log) and WORK (on /work, not tmpfs: MariaDB fsyncs there); installs sysbench if missing.
sysbench_setup() {
  TS=$(date +%Y%m%d-%H%M%S)
  RESULTS=$ROOT/bench/results
  OUT=$RESULTS/$1-$TS.md
  RAW=$RESULTS/$1-$TS.log
  WORK=$RESULTS/work-$1-$TS
  mkdir -p "$RESULTS" "$WORK"
  : >"$RAW"
  command -v sysbench >/dev/null || {
    log "installing sysbench"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq sysbench >/dev/null
  }
}

# stop_pids PID...: TERM, up to 5 s to exit, then KILL (only these processes; empty ok)
stop_pids() {
  local p
  for p in "$@"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "$@"; do
    for _ in $(seq 1 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$p" 2>/dev/null || true
  done
}

# start_server NAME MEM: 3 tries, in case a port is taken meanwhile
start_server() {
  for _ in 1 2 3; do
    start_server_once "$@" && return 0
  done
  return 1
}

# launch_server NAME MEM PORT: start it in the background and return at once (no waiting
# for the port); SRV_T0 = unix ns just before the exec.
launch_server() {
  local name="$1" mem="$2" port="$3" bin args
  if [[ "$name" == floor-* ]]; then
    # The floor server: one thread, 127.0.0.1 only, no flags.
    SRV_T0=$(date +%s%N)
    "${SRV_PIN[@]}" "$FLOOR_BIN" "${name#floor-}" "$port" >"$WORK/$name.log" 2>&1 &
    SRV_PID[$name]=$!
    SRV_PORT[$name]=$port
    return
  fi
  if [[ "$name" == memcached* ]]; then bin="$MEMCACHED_BIN"; else bin="$SQLCACHED_BIN"; fi
  args=(-l 127.0.0.1 -p "$port" -U 0 -m "$mem" -t "$SERVER_THREADS")
  if is_memcached "$bin" && [[ "$(id -u)" == 0 ]]; then args+=(-u nobody); fi
  # shellcheck disable=SC2206
  args+=($EXTRA_ARGS ${SRV_EXTRA[$name]:-})
  SRV_T0=$(date +%s%N)
  "${SRV_PIN[@]}" "$bin" "${args[@]}" >"$WORK/$name.log" 2>&1 &
  SRV_PID[$name]=$!
  SRV_PORT[$name]=$port
}

start_server_once() {
  local name="$1" mem="$2" port pid i
  port=$(pick_port)
  launch_server "$name" "$mem" "$port"
  pid=${SRV_PID[$name]}
  for i in $(seq 1 200); do
    if port_open "$port"; then return 0; fi
    if ! kill -0 "$pid" 2>/dev/null; then
      cat "$WORK/$name.log" >&2
      unset "SRV_PID[$name]"
      return 1
    fi
    sleep 0.05
  done
  log "$name did not listen on $port within 10 s"
  stop_server "$name"
  return 1
}

# alive NAME: is that server still running?
alive() { [[ -n "${SRV_PID[$1]:-}" ]] && kill -0 "${SRV_PID[$1]}" 2>/dev/null; }

stop_server() {
  local name="$1" pid i
  pid="${SRV_PID[$name]:-}"
  [[ -n "$pid" ]] || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for i in $(seq 1 50); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  unset "SRV_PID[$name]"
}

stop_all() {
  local name
  for name in "${!SRV_PID[@]}"; do stop_server "$name"; done
}

cleanup() {
  local name
  for name in "${!SRV_PID[@]}"; do kill -TERM "${SRV_PID[$name]}" 2>/dev/null || true; done
}

lg() { timeout --kill-after=5 "$1" "${LG_PIN[@]}" "$LOADGEN" "${@:2}"; }
