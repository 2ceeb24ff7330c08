#!/usr/bin/env bash
# Run the whole test suite: the workspace's Rust tests, then the Python suite, which
# starts real sqlcached / memcached processes (differential test, memccapable, clients).
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --release --workspace --locked
cargo test --release --workspace --locked
python3 -m pytest -q -p no:cacheprovider tests/ "$@"
