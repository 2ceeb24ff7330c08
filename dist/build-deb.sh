#!/usr/bin/env bash
# Build the Debian package (binary, systemd unit, example config, man page generated from
# --help) with cargo-deb:  bash dist/build-deb.sh [--no-build]
# Prints the .deb's path ($CARGO_TARGET_DIR, else target/, then debian/sqlcached_<version>-1_<arch>.deb).
# Needs help2man (apt-get install help2man) and cargo-deb (cargo install --locked cargo-deb).
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in help2man cargo-deb; do
    command -v "$tool" >/dev/null || { echo "build-deb: $tool is missing (see the header of $0)" >&2; exit 1; }
done
# Where cargo builds: CARGO_TARGET_DIR if set (relative to this directory, as cargo reads it).
target=${CARGO_TARGET_DIR:-target}
[ "${1:-}" = --no-build ] || cargo build --release --locked -p sqlcached
# cargo-deb maps asset paths under target/release/ onto the real target directory, so the
# man page goes there (crates/server/Cargo.toml, [package.metadata.deb] assets).
bash dist/man.sh "$target/release/sqlcached" "$target/release" >/dev/null
cargo deb -p sqlcached --no-build --locked --strip -q
ls -t "$target"/debian/sqlcached_*.deb | head -n 1
