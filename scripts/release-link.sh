#!/usr/bin/env bash
# The x86_64 linker of scripts/release.sh's builds. The link is Zig's, as
# cargo-zigbuild runs it (its `zig cc` against glibc 2.17's symbol lists);
# for the executable, the ld.lld command Zig ran is run once more with
# identical code folding (`--icf=all`, as build.rs asks of a local build's
# rust-lld), which Zig's driver refuses as an argument, and one symbol
# hash table. The second link reads the same objects and libraries and
# writes the same output file.
#
# Environment: RELEASE_ZIG_TARGET (Zig's target, e.g.
# x86_64-linux-gnu.2.17); zig and cargo-zigbuild on PATH (release.sh puts
# them there).
set -euo pipefail
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# Zig prints its command unquoted: a path with a space could not be read back.
for a in "$@" "$HOME"; do
  case $a in *" "*) echo "release-link: '$a' holds a space" >&2 && exit 1 ;; esac
done
status=0
# The flags of cargo-zigbuild's own zig cc wrapper, with Zig's commands shown.
ZIG_VERBOSE_LINK=1 cargo-zigbuild zig cc -- -g -fno-sanitize=all \
  -target "${RELEASE_ZIG_TARGET:?}" "$@" 2>"$log" || status=$?
grep -v -e '^ld\.lld ' -e '^ar ' "$log" >&2 || true
[ "$status" -eq 0 ] || exit "$status"
line=$(grep '^ld\.lld ' "$log" | tail -n 1 || true)
case " $line " in
  "  " | *" -shared "* | *" -r "*) exit 0 ;;
esac
read -r -a args <<<"$line"
rm -f "$log"
# --hash-style=gnu: only the GNU symbol hash table (glibc has read it since
# 2.5), not the older one Zig adds beside it; -O2: strings that end another
# string are kept once.
exec zig ld.lld "${args[@]:1}" --icf=all --hash-style=gnu -O2
