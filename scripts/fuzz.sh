#!/usr/bin/env bash
# Run every protocol fuzz target (cargo-fuzz, libFuzzer) for a bounded time each.
#   bash scripts/fuzz.sh [seconds-per-target]      (default 60)
# Needs a nightly toolchain; installs cargo-fuzz if missing. A crash leaves its input in
# crates/*/fuzz/artifacts/<target>/: turn it into a unit test before fixing.
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-60}"
if ! rustup toolchain list 2>/dev/null | grep -q nightly; then
    echo "fuzz: no nightly toolchain; skipping (rustup toolchain install nightly to run)"
    exit 0
fi
command -v cargo-fuzz >/dev/null || cargo install -q cargo-fuzz --locked
for dir in crates/*/fuzz; do
    crate="$(dirname "$dir")"
    # Build first, outside the filtered pipe below: a target that no longer compiles fails
    # the run instead of passing silently.
    (cd "$crate" && cargo +nightly fuzz build)
    for target in $(cd "$crate" && cargo +nightly fuzz list); do
        echo "fuzz: $crate $target for ${secs}s"
        (cd "$crate" && cargo +nightly fuzz run "$target" -- -max_total_time="$secs" -print_final_stats=1 2>&1 \
            | grep -E "^(stat::number_of_executed_units|Done|==[0-9]+==|SUMMARY|thread)" || true)
        # cargo fuzz exits non-zero on a crash; re-check for artifacts to fail loudly.
        if ls "$crate/fuzz/artifacts/$target"/crash-* >/dev/null 2>&1; then
            echo "fuzz: CRASH in $crate $target: see $crate/fuzz/artifacts/$target/"
            exit 1
        fi
    done
done
