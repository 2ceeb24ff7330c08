#!/usr/bin/env bash
# Generate the man page sqlcached.1.gz from the binary's --help and --version with help2man:
#   bash dist/man.sh BINARY OUT_DIR     # prints OUT_DIR/sqlcached.1.gz
# --help is laid out for help2man (crates/config/src/help.rs): NAME, SYNOPSIS, DESCRIPTION,
# OPTIONS (a sub-section per group, one entry per flag), ENVIRONMENT, EXAMPLES; SEE ALSO
# comes from dist/debian/sqlcached.h2m. Needs help2man (apt-get install help2man).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:?usage: $0 BINARY OUT_DIR}
out=${2:?usage: $0 BINARY OUT_DIR}
command -v help2man >/dev/null || { echo "man.sh: help2man is missing (apt-get install help2man)" >&2; exit 1; }
mkdir -p "$out"
help2man --no-info --no-discard-stderr --section 1 \
    --name "persistent memcached-compatible cache and MySQL query cache" \
    --version-string "$("$bin" -V | awk '{print $2}')" \
    --include dist/debian/sqlcached.h2m \
    "$bin" > "$out/sqlcached.1"
gzip -9nf "$out/sqlcached.1"
echo "$out/sqlcached.1.gz"
