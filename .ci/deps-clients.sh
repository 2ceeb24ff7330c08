#!/usr/bin/env bash
# Fetch everything the real-client compatibility tests need, so that the test runs
# themselves go offline-fast:
#   tests/clients/test_java_spymemcached.py  (Maven project tests/clients/java: spymemcached + JUnit 5)
#   tests/clients/test_go_gomemcache.py      (Go module tests/clients/go: bradfitz/gomemcache)
#   tests/querycache/test_client_java.py     (Maven project tests/clients/mysql/java: Connector/J + JUnit 5)
#   tests/querycache/test_client_go.py       (Go module tests/clients/mysql/go: go-sql-driver/mysql)
# Idempotent: with everything already in ~/.m2 and the Go module cache it only checks, in a few seconds.
# Installs Maven/JDK/Go from Debian only if they are missing (the polyglot machine ships them).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
JAVA_DIR="$ROOT/tests/clients/java"
GO_DIR="$ROOT/tests/clients/go"
MYSQL_JAVA_DIR="$ROOT/tests/clients/mysql/java"
MYSQL_GO_DIR="$ROOT/tests/clients/mysql/go"

log() { printf '[deps-clients] %s\n' "$*"; }

apt_updated=0
apt_install() {
    if [ "$apt_updated" = 0 ]; then
        log "apt-get update"
        DEBIAN_FRONTEND=noninteractive apt-get update -qq
        apt_updated=1
    fi
    log "apt-get install $*"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# --- toolchains -------------------------------------------------------------------------
missing=()
command -v javac >/dev/null 2>&1 || missing+=(openjdk-17-jdk-headless)
command -v mvn >/dev/null 2>&1 || missing+=(maven)
# Go: the machine ships a current Go in /usr/local/go; Debian's golang-go (1.19) also builds the module.
if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
    export PATH="/usr/local/go/bin:$PATH"
fi
command -v go >/dev/null 2>&1 || missing+=(golang-go)
if [ "${#missing[@]}" -gt 0 ]; then
    apt_install "${missing[@]}"
fi

# --- Java: spymemcached, JUnit 5, and every plugin + surefire's JUnit Platform provider ----
# Running only ClientLoadsTest (which needs no server) resolves exactly what `mvn test` needs,
# including surefire's JUnit Platform provider and launcher that surefire resolves at run time
# (dependency:go-offline and a test filter matching nothing both miss those), and compiles the tests.
log "maven: resolving and compiling tests/clients/java"
(
    cd "$JAVA_DIR"
    mvn -q -B -Dstyle.color=never test \
        -Dtest=ClientLoadsTest
)

# --- Java: MySQL Connector/J for the query cache proxy tests (DriverLoadsTest needs no server) ---
log "maven: resolving and compiling tests/clients/mysql/java"
(
    cd "$MYSQL_JAVA_DIR"
    mvn -q -B -Dstyle.color=never test \
        -Dtest=DriverLoadsTest
)

# --- Go: module download and a compile of the test binary (warms the build cache) --------
log "go: downloading modules and building tests/clients/go"
(
    cd "$GO_DIR"
    go mod download
    out="$(mktemp -d)"
    trap 'rm -rf "$out"' EXIT
    go test -c -o "$out/clients.test" .
)
log "go: downloading modules and building tests/clients/mysql/go"
(
    cd "$MYSQL_GO_DIR"
    go mod download
    out="$(mktemp -d)"
    trap 'rm -rf "$out"' EXIT
    go test -c -o "$out/mysqlproxy.test" .
)

log "done"
