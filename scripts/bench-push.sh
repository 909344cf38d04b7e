#!/usr/bin/env bash
# Times `opcost push` of N runs (default 1000) into a throw-away PostgreSQL
# cluster (initdb in a temp dir, Unix socket only, default durability
# settings), REPEAT times (default 3) into a fresh database each, then once
# more into the last one (every run already there: the idempotent path).
#
# The runs are made from a template run document (TEMPLATE, default the
# shipped reference run), each given its own id and host name and, like a
# real run, three rounds and 15 samples per result. They are imported into
# a local SQLite history first (not timed); only the push is timed, under
# flock /tmp/opcost-timing.lock so no other timing runs at once.
#
# The figure is the one opcost prints (from its first read of the local
# history to the commit), so waiting for the lock is not counted.
# LOCAL_DB=FILE reuses a history made by an earlier run of this script
# (kept with KEEP_LOCAL=FILE), skipping the generation and import.
#
#   scripts/bench-push.sh            # N=1000 REPEAT=3
#   N=200 TEMPLATE=my-run.json scripts/bench-push.sh
set -euo pipefail
N=${N:-1000}
REPEAT=${REPEAT:-3}
cd "$(dirname "$0")/.."
cargo build --release -q
BIN=$PWD/target/release/opcost

if command -v pg_ctl >/dev/null 2>&1; then
  PGBIN=$(dirname "$(command -v pg_ctl)")
else
  PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
fi
[ -x "$PGBIN/initdb" ] || { echo "error: PostgreSQL server binaries not found (apt-get install postgresql)" >&2; exit 1; }
PSQL=$PGBIN/psql
[ -x "$PSQL" ] || PSQL=psql

work=$(mktemp -d /tmp/opcost-bench-push.XXXXXX)
AS=()
if [ "$(id -u)" -eq 0 ]; then
  # PostgreSQL refuses to run as root.
  chown nobody: "$work"
  AS=(runuser -u nobody --)
fi
cleanup() {
  "${AS[@]}" "$PGBIN/pg_ctl" -D "$work/data" -m immediate -w stop >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
if [ -z "${TEMPLATE:-}" ]; then
  TEMPLATE=$work/template.json
  xzcat reference/quick.json.xz >"$TEMPLATE"
fi

(cd "$work" && "${AS[@]}" "$PGBIN/initdb" -D "$work/data" -U opcost --auth=trust -E UTF8 >/dev/null)
(cd "$work" && "${AS[@]}" "$PGBIN/pg_ctl" -D "$work/data" -l "$work/server.log" -w \
  -o "-k $work -c listen_addresses=" start >/dev/null)
url() { echo "postgresql:///$1?host=$work&user=opcost"; }

if [ -n "${LOCAL_DB:-}" ]; then
  cp "$LOCAL_DB" "$work/local.db"
  read -r N results < <(python3 -c 'import sqlite3, sys
print(*sqlite3.connect(sys.argv[1]).execute("SELECT count(*), max(n_results) FROM runs").fetchone())' "$work/local.db")
else
  echo "generating $N runs from $TEMPLATE ..." >&2
  mkdir -p "$work/docs"
  python3 - "$N" "$TEMPLATE" "$work/docs" <<'EOF'
import json, random, sys
n, template, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
base = json.load(open(template))
rng = random.Random(7)
for i in range(n):
    d = json.loads(json.dumps(base))
    d["run"]["id"] = "%08x" % (0xb0000000 + i)
    d["host"]["hostname"] = "node-%04d" % i
    for m in d["results"]:
        med = m["median"]
        if not m.get("samples"):
            m["samples"] = [med * (1 + rng.uniform(-0.03, 0.03)) for _ in range(15)]
        if not m.get("rounds"):
            m["rounds"] = [{"median": med * (1 + rng.uniform(-0.02, 0.02)), "n": 5,
                            "ops": 1000, "at_s": 0.1 * k, "canary": 1.0, "slow": False,
                            "used": True, "steal_ms": 0.0, "nivcsw": 1, "migrations": 0,
                            "load": 1.0} for k in range(3)]
    with open("%s/run-%04d.json" % (out, i), "w") as f:
        json.dump(d, f)
EOF
  size=$(du -sh "$work/docs" | cut -f1)
  results=$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['results']))" "$TEMPLATE")
  echo "importing them into a local history ($size of JSON, $results results each) ..." >&2
  find "$work/docs" -name '*.json' -print0 | sort -z | xargs -0 "$BIN" --db "$work/local.db" import 2>&1 | tail -n 1 >&2
  rm -rf "$work/docs"

  if [ -n "${KEEP_LOCAL:-}" ]; then cp "$work/local.db" "$KEEP_LOCAL"; fi
fi

# The seconds opcost reports: "N pushed, ... in 12.3 s".
push() {
  flock /tmp/opcost-timing.lock "$BIN" --db "$work/local.db" push --to "$(url "$1")" 2>&1 |
    tail -n 1 | tee /dev/stderr | sed -E 's/.* in ([0-9.]+) s$/\1/'
}
times=()
for r in $(seq 1 "$REPEAT"); do
  "$PSQL" -q -h "$work" -U opcost -d postgres -c "CREATE DATABASE bench$r" >/dev/null
  times+=("$(push "bench$r")")
done
again=$(push "bench$REPEAT")
median=$(printf '%s\n' "${times[@]}" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
printf 'push of %d runs (%s results each), seconds: %s; median %.1f s; again (all present): %.1f s\n' \
  "$N" "$results" "$(printf '%.1f ' "${times[@]}")" "$median" "$again"
echo "load: $(uptime)"
