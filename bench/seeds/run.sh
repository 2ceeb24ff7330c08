#!/usr/bin/env bash
# bench/seeds/run.sh: the five source experiments (../shared/seeds/000-004) replayed against
# sqlcached and the real references (Debian's memcached and MariaDB), each writing a markdown
# table and a PNG plot under bench/results/seeds/. A benchmark, not a test: asserts nothing.
#
#   bash bench/seeds/run.sh                  # all five: about 20 minutes (+ builds on a clean clone)
#   bash bench/seeds/run.sh --only "002 004" # some of them
#   bash bench/seeds/run.sh --quick          # tiny sizes, ~4 minutes: checks the scripts, not the numbers
#   bash bench/seeds/run.sh --publish        # also copy the PNGs to docs/seeds/ (what the READMEs embed)
#
# Each experiment is bench/seeds/e00N_*.py (runnable alone: python3 bench/seeds/e002_store_fetch.py);
# bench/seeds/README.md says what each replays, how it is scaled to this machine, and shows the plots.
# Needs: cargo (sqlcached and bench/loadgen are built if missing), memcached, mariadb-server, sysbench,
# Java + Maven and Go with their client libraries (.ci/deps-clients.sh fetches them), python3 with
# pylibmc, PyMySQL (tests/requirements.txt) and matplotlib (installed here if missing).
# Environment: SQLCACHED_BIN (default target/release/sqlcached).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"

ONLY="000 001 002 003 004"
QUICK=""
PUBLISH=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --only) ONLY="$2"; shift 2 ;;
    --quick) QUICK="--quick"; shift ;;
    --publish) PUBLISH=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done

log() { echo "[seeds] $*" >&2; }
START=$(date +%s)

# ---- what the experiments need (each step is skipped when already there)
python3 -c "import matplotlib" 2>/dev/null || { log "installing matplotlib (pip)"; python3 -m pip install -q matplotlib; }
python3 -c "import pylibmc, pymysql" 2>/dev/null || { log "installing tests/requirements.txt (pip)"; python3 -m pip install -q -r "$ROOT/tests/requirements.txt"; }
command -v sysbench >/dev/null || { log "installing sysbench"; apt-get update -qq; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq sysbench >/dev/null; }
command -v memcached >/dev/null || { log "installing memcached"; apt-get update -qq; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq memcached >/dev/null; }
if [[ " $ONLY " == *" 000 "* || " $ONLY " == *" 001 "* ]]; then
  log "client libraries (.ci/deps-clients.sh: Connector/J, spymemcached, go-sql-driver, gomemcache)"
  mkdir -p "$ROOT/bench/results/seeds"
  bash "$ROOT/.ci/deps-clients.sh" >"$ROOT/bench/results/seeds/deps-clients.log" 2>&1 ||
    { cat "$ROOT/bench/results/seeds/deps-clients.log" >&2; log "error: .ci/deps-clients.sh failed"; exit 1; }
fi
export PATH="$PATH:/usr/local/go/bin"
if [[ -z "${SQLCACHED_BIN:-}" ]]; then
  log "building sqlcached (cargo build --release -p sqlcached; a no-op when current)"
  (cd "$ROOT" && cargo build --release -q -p sqlcached)
fi
log "building bench/loadgen"
cargo build --release -q --manifest-path "$ROOT/bench/loadgen/Cargo.toml"

# ---- the experiments, one after the other (they must not share the 2 CPUs)
mkdir -p "$ROOT/bench/results/seeds"
failed=()
for n in $ONLY; do
  script=$(ls "$HERE"/e"$n"_*.py 2>/dev/null | head -1)
  [[ -n "$script" ]] || { log "no experiment $n"; failed+=("$n"); continue; }
  t0=$(date +%s)
  log "experiment $n: $(basename "$script") $QUICK"
  if python3 "$script" $QUICK; then
    log "experiment $n done in $(( $(date +%s) - t0 )) s"
  else
    log "experiment $n FAILED after $(( $(date +%s) - t0 )) s"
    failed+=("$n")
  fi
done

if [[ $PUBLISH == 1 ]]; then
  mkdir -p "$ROOT/docs/seeds"
  for n in $ONLY; do
    for f in "$ROOT"/bench/results/seeds/"$n"_*.png; do [[ -f "$f" ]] && cp "$f" "$ROOT/docs/seeds/"; done
  done
  log "copied the plots to docs/seeds/"
fi
log "finished in $(( $(date +%s) - START )) s; reports: bench/results/seeds/*.md"
for n in $ONLY; do
  f=$(ls "$ROOT"/bench/results/seeds/"$n"_*.md 2>/dev/null | head -1)
  [[ -n "$f" ]] && log "  $n: $(grep -m1 '^\*\*' "$f" | tr -d '*')"
done
if [[ ${#failed[@]} -gt 0 ]]; then
  log "failed: ${failed[*]}"
  exit 1
fi
