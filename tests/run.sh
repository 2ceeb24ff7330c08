#!/usr/bin/env bash
# Run the whole test suite: formatting and lints, the workspace's Rust tests, then the
# Python suite, which starts real sqlcached / memcached / MariaDB processes (differential
# test, memccapable, clients, persistence, containers, robustness).
set -euo pipefail
cd "$(dirname "$0")/.."

cargo fmt --all -- --check
cargo clippy --release --workspace --all-targets --locked -q -- -D warnings
cargo build --release --workspace --locked
cargo test --release --workspace --locked
python3 -m pytest -q -p no:cacheprovider tests/ "$@"
