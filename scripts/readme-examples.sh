#!/usr/bin/env bash
# Runs the example commands of README.md and fails if any of them fails.
#
# Usage: scripts/readme-examples.sh [-n] [README]
#   -n      list the commands, run nothing
#   README  the file to read (default: README.md at the repository's root)
#
# The commands are the lines of the README's ```sh blocks that start with
# `opcost` or `cargo run --release --` (a line ending in `\` goes on on the
# next line), except in the "Set up and run" section, whose commands build
# and test the project. Both prefixes run target/release/opcost (or
# $OPCOST_BIN), which must be built first: `cargo build --release`.
#
# The commands run one after another, in order, in a temporary directory
# (so files they write land there) with a temporary history (OPCOST_DB and
# XDG_DATA_HOME point into it), so the user's history is never written.
# The examples time benchmarks: run the script on a quiet machine.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
list_only=0
if [[ "${1:-}" == "-n" ]]; then
    list_only=1
    shift
fi
readme="${1:-$root/README.md}"
bin="${OPCOST_BIN:-${CARGO_TARGET_DIR:-$root/target}/release/opcost}"

# The example commands, one per line (continuations joined).
extract() {
    awk '
        /^#+ / { setup = ($0 ~ /^#+ Set up and run/) }
        /^```/ {
            if (!inblock) { inblock = 1; sh = ($0 ~ /^```sh[[:space:]]*$/); next }
            inblock = 0; sh = 0; next
        }
        !inblock || !sh || setup { next }
        {
            line = $0
            if (cont != "") { line = cont " " line; cont = "" }
            if (line ~ /\\$/) { sub(/\\$/, "", line); cont = line; next }
            if (line ~ /^(opcost|cargo run --release --)([[:space:]]|$)/) print line
        }
    ' "$1"
}

mapfile -t cmds < <(extract "$readme")
if [[ ${#cmds[@]} -eq 0 ]]; then
    echo "readme-examples: no example commands found in $readme" >&2
    exit 1
fi
if [[ $list_only -eq 1 ]]; then
    printf '%s\n' "${cmds[@]}"
    exit 0
fi
if [[ ! -x "$bin" ]]; then
    echo "readme-examples: $bin is missing: build it first (cargo build --release) or set OPCOST_BIN" >&2
    exit 1
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/data"
export OPCOST_DB="$work/data/results.db"
export XDG_DATA_HOME="$work/data"
cd "$work"

# `opcost` in the examples is this function, so a command runs as written.
opcost() { "$bin" "$@"; }

failed=0
start_all=$SECONDS
for c in "${cmds[@]}"; do
    run="$c"
    if [[ "$run" == "cargo run --release --"* ]]; then
        run="opcost${run#cargo run --release --}"
    fi
    echo "== $c"
    start=$SECONDS
    set +e
    eval "$run" < /dev/null > "$work/out" 2>&1
    rc=$?
    set -e
    if [[ $rc -ne 0 ]]; then
        echo "FAILED (exit $rc after $((SECONDS - start)) s):"
        sed 's/^/    /' "$work/out" | tail -n 30
        failed=$((failed + 1))
    else
        echo "ok ($((SECONDS - start)) s, $(wc -l < "$work/out") lines of output)"
    fi
done
echo "== ${#cmds[@]} commands, $failed failed, $((SECONDS - start_all)) s"
[[ $failed -eq 0 ]]
