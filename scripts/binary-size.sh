#!/usr/bin/env bash
# The release binary's size against its limit (a build property, not a unit
# test): builds `cargo build --release` and fails when target/release/opcost
# is larger than LIMIT_MB (default 15, decimal megabytes), printing the size,
# the build time and what the release profile strips.
#
#   scripts/binary-size.sh [LIMIT_MB]
set -euo pipefail
cd "$(dirname "$0")/.."
limit_mb=${1:-15}
start=$(date +%s)
cargo build --release --quiet
took=$(( $(date +%s) - start ))
bin=target/release/opcost
bytes=$(stat -c %s "$bin")
mb=$(awk -v b="$bytes" 'BEGIN { printf "%.1f", b / 1e6 }')
symbols=$(nm "$bin" 2>/dev/null | wc -l || true)
debug=$(readelf -S "$bin" 2>/dev/null | grep -c '\.debug_' || true)
echo "target/release/opcost: $bytes bytes ($mb MB); limit $limit_mb MB"
echo "symbols: $symbols; debug sections: $debug; build (incremental): ${took}s"
if awk -v b="$bytes" -v l="$limit_mb" 'BEGIN { exit !(b > l * 1e6) }'; then
    echo "too large: $mb MB > $limit_mb MB" >&2
    exit 1
fi
