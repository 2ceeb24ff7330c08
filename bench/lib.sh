# shellcheck shell=bash disable=SC2034,SC2153
# Helpers shared by run.sh, profile.sh and persist.sh: start/stop servers on free loopback ports.
# Expects: MEMCACHED_BIN SQLCACHED_BIN SERVER_THREADS EXTRA_ARGS SRV_PIN[] LG_PIN[] LOADGEN WORK, log(), die().
# Servers are named "memcached…" (runs MEMCACHED_BIN) or anything else (runs SQLCACHED_BIN);
# SRV_PID[name] and SRV_PORT[name] describe the running ones; SRV_EXTRA[name] adds flags for
# that server only (persist.sh: "--data-dir DIR --durability sync"). launch_server sets SRV_T0
# (unix ns, taken just before the exec).

declare -A SRV_PID=() SRV_PORT=() SRV_EXTRA=()
SRV_T0=0

is_memcached() { timeout 2 "$1" -V 2>/dev/null | grep -q '^memcached'; }

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

pick_port() {
  local p i
  for i in $(seq 1 50); do
    p=$(( ${PORT_MIN:-20000} + RANDOM % ${PORT_SPAN:-30000} ))
    port_open "$p" || { echo "$p"; return; }
  done
  die "no free port found"
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
