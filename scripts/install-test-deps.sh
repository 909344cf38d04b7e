#!/usr/bin/env bash
# Installs what the test suite needs beyond the Rust toolchain: a C
# compiler and python3 (the opcost cmd fixtures), iproute2 (the net tests'
# namespaces), iputils-ping (the ICMP peer), Chromium (which opens the
# HTML report headless to check that its charts render), and the glibc
# locales the text suite collates under (sv_SE.UTF-8, de_DE.UTF-8,
# en_US.UTF-8, and tr_TR.UTF-8 for the --words tests), PostgreSQL (the tests start a throw-away server) and
# Ansible (the playbook is run against localhost). Only what is missing is
# installed.
set -euo pipefail
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
missing=()
# The `opcost cmd` tests build and run the Mandelbrot and loop fixtures
# (node and lua are used when present).
command -v cc >/dev/null 2>&1 || missing+=(gcc libc6-dev)
command -v python3 >/dev/null 2>&1 || missing+=(python3)
# The net tests put `opcost serve` in its own network namespace with `ip`.
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
# The ICMP echo rows (`--target`) are compared with `ping -f` where it is present.
command -v ping >/dev/null 2>&1 || missing+=(iputils-ping)
if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
  missing+=(chromium)
fi
# The PostgreSQL server binaries, on PATH or where Debian puts them.
has_pg_server() {
  command -v pg_ctl >/dev/null 2>&1 && return 0
  compgen -G '/usr/lib/postgresql/*/bin/pg_ctl' >/dev/null
}
has_pg_server || missing+=(postgresql)
command -v ansible-playbook >/dev/null 2>&1 || missing+=(ansible)
# `locale -a` spells UTF-8 as utf8. Its list is read once into a variable:
# piping it into `grep -q` under pipefail fails at random, since grep exits
# at the first match and `locale -a` then dies of SIGPIPE.
has_locale() { grep -qx "$1.utf8" <<<"$(locale -a 2>/dev/null)"; }
for loc in sv_SE de_DE en_US tr_TR; do
  if ! has_locale "$loc"; then
    missing+=(locales-all)
    break
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
command -v cc >/dev/null
has_pg_server || { echo "error: the PostgreSQL server binaries are still missing" >&2; exit 1; }
command -v ansible-playbook >/dev/null
command -v chromium >/dev/null || command -v chromium-browser >/dev/null
for loc in sv_SE de_DE en_US tr_TR; do
  has_locale "$loc" || { echo "error: locale $loc.UTF-8 still missing" >&2; exit 1; }
done
