#!/usr/bin/env bash
# Runs the example commands of README.md and of the guides in docs/, and
# fails if any of them fails.
#
# Usage: scripts/readme-examples.sh [-n] [FILE...]
#   -n      list the commands, run nothing
#   FILE    the Markdown files to read (default: README.md at the
#           repository's root, then every docs/**/*.md with examples)
#
# The commands are the lines of the files' ```sh blocks that start with
# `opcost` or `cargo run --release --` (a line ending in `\` goes on on the
# next line), except in README's "Set up and run" section, whose commands
# build and test the project. Both prefixes run target/release/opcost (or
# $OPCOST_BIN), which must be built first: `cargo build --release`.
#
# The commands run one after another, in order, in a temporary directory
# (so files they write land there) with a temporary history (OPCOST_DB and
# XDG_DATA_HOME point into it), so the user's history is never written.
# An example that reads the user's own files (`--input data.json`) gets a
# generated stand-in of that name (JSON lines for .json, log lines else).
# An example that names the placeholder server db.example is listed as not
# run, naming the test that runs the same command against a real server.
# The examples time benchmarks: run the script on a quiet machine.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
list_only=0
if [[ "${1:-}" == "-n" ]]; then
    list_only=1
    shift
fi
if [[ $# -gt 0 ]]; then
    files=("$@")
else
    files=("$root/README.md")
    while IFS= read -r f; do files+=("$f"); done \
        < <(find "$root/docs" -name '*.md' | LC_ALL=C sort)
fi
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

cmds=()
for f in "${files[@]}"; do
    [[ -r "$f" ]] || { echo "readme-examples: $f: cannot read it" >&2; exit 2; }
    mapfile -t found < <(extract "$f")
    cmds+=("${found[@]}")
done
if [[ ${#cmds[@]} -eq 0 ]]; then
    echo "readme-examples: no example commands found in ${files[*]}" >&2
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

# A stand-in for a file an example reads with --input, when it is missing:
# 70 KiB of JSON records (a .json name) or of service-log lines.
stand_in() {
    local name="$1" i=0
    [[ -e "$name" ]] && return 0
    # Only a name inside the temporary directory: never write elsewhere.
    if [[ "$name" == /* || "$name" == *..* ]]; then
        echo "   (no stand-in for $name: it is not a name inside the example's directory)"
        return 0
    fi
    mkdir -p "$(dirname "$name")"
    {
        while (( i < 1000 )); do
            if [[ "$name" == *.json ]]; then
                printf '{"id":%d,"user":"user%d","score":%d,"tags":["t%d","t%d"],"ok":%s}\n' \
                    "$i" $((i % 97)) $((i * 37 % 1000)) $((i % 7)) $((i % 11)) \
                    "$([[ $((i % 3)) -eq 0 ]] && echo true || echo false)"
            else
                printf '2026-11-27T10:%02d:%02d.%03dZ INFO [worker-%d] GET /api/items/%d 200 %d ms\n' \
                    $((i / 60 % 60)) $((i % 60)) $((i * 7 % 1000)) $((i % 8)) $((i % 500)) $((i % 90))
            fi
            i=$((i + 1))
        done
    } > "$name"
    echo "   (a generated stand-in for your $name: $(wc -c < "$name") bytes)"
}

failed=0
skipped=0
start_all=$SECONDS
for c in "${cmds[@]}"; do
    run="$c"
    if [[ "$run" == "cargo run --release --"* ]]; then
        run="opcost${run#cargo run --release --}"
    fi
    echo "== $c"
    if [[ "$run" == *db.example* ]]; then
        echo "not run: it names the placeholder server db.example (tests/postgres.rs runs push and fleet --label against a real PostgreSQL)"
        skipped=$((skipped + 1))
        continue
    fi
    read -ra words <<<"$run"
    for ((i = 0; i + 1 < ${#words[@]}; i++)); do
        if [[ "${words[i]}" == --input ]]; then stand_in "${words[i + 1]}"; fi
    done
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
echo "== ${#cmds[@]} commands, $failed failed, $skipped not run, $((SECONDS - start_all)) s"
[[ $failed -eq 0 ]]
