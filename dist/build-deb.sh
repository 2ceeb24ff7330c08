#!/usr/bin/env bash
# Build the Debian package (binary, systemd unit, example config, man page generated from
# --help) with cargo-deb:  bash dist/build-deb.sh [--no-build]
# Prints the .deb's path (target/debian/sqlcached_<version>-1_<arch>.deb).
# Needs help2man (apt-get install help2man) and cargo-deb (cargo install --locked cargo-deb).
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in help2man cargo-deb; do
    command -v "$tool" >/dev/null || { echo "build-deb: $tool is missing (see the header of $0)" >&2; exit 1; }
done
[ "${1:-}" = --no-build ] || cargo build --release --locked -p sqlcached
mkdir -p target/man
help2man --no-info --no-discard-stderr \
    --name "persistent memcached-compatible cache and MySQL query cache" \
    --version-string "$(target/release/sqlcached -V | awk '{print $2}')" \
    target/release/sqlcached > target/man/sqlcached.1
gzip -9nf target/man/sqlcached.1
cargo deb -p sqlcached --no-build --locked --strip -q
ls -t target/debian/sqlcached_*.deb | head -n 1
