# shellcheck shell=bash disable=SC2034,SC2153
# Helpers shared by run.sh and profile.sh: start/stop servers on free loopback ports.
# Expects: MEMCACHED_BIN SQLCACHED_BIN SERVER_THREADS EXTRA_ARGS SRV_PIN[] LG_PIN[] LOADGEN WORK, log(), die().
# Servers are named "memcached" or "sqlcached"; SRV_PID[name] and SRV_PORT[name] describe the running ones.

declare -A SRV_PID=() SRV_PORT=()

is_memcached() { timeout 2 "$1" -V 2>/dev/null | grep -q '^memcached'; }

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

pick_port() {
  local p i
  for i in $(seq 1 50); do
    p=$(( 20000 + RANDOM % 30000 ))
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

start_server_once() {
  local name="$1" mem="$2" bin args port pid i
  if [[ "$name" == memcached ]]; then bin="$MEMCACHED_BIN"; else bin="$SQLCACHED_BIN"; fi
  port=$(pick_port)
  args=(-l 127.0.0.1 -p "$port" -U 0 -m "$mem" -t "$SERVER_THREADS")
  if is_memcached "$bin" && [[ "$(id -u)" == 0 ]]; then args+=(-u nobody); fi
  # shellcheck disable=SC2206
  args+=($EXTRA_ARGS)
  "${SRV_PIN[@]}" "$bin" "${args[@]}" >"$WORK/$name.log" 2>&1 &
  pid=$!
  SRV_PID[$name]=$pid
  SRV_PORT[$name]=$port
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
