#!/usr/bin/env bash
# Boots a throw-away Linux guest under qemu with an emulated server topology,
# runs commands in it with opcost on PATH, and brings their output back: a
# test bed for machine shapes this one does not have (sockets, dies, SMT
# siblings, NUMA nodes). Timings measured inside are meaningless (software
# emulation); what the guest shows is how opcost reads and uses the shape.
#
# Usage: scripts/guest.sh [-s SHAPE] [-b OPCOST] [-o DIR] [-t SECONDS] [-v] COMMAND...
#   -s SHAPE    2s2c2t (default): 2 sockets x 2 cores x 2 threads, 8 CPUs,
#               a NUMA node per socket; 2s2d2c2t: 2 sockets x 2 dies x 2
#               cores x 2 threads, 16 CPUs (an L3 per die), a node per
#               socket; 2s2d2c2t-snc: the same with a node per die (4 nodes,
#               as Intel's sub-NUMA clustering or AMD's NPS2 split a socket)
#   -b OPCOST   the opcost binary to put in the guest (default: $OPCOST_BIN,
#               else target/release/opcost under $CARGO_TARGET_DIR or the
#               checkout); any build, a debug one too
#   -o DIR      keep the results in DIR: N.out, N.err and N.rc (exit status)
#               of the Nth COMMAND, the files the commands wrote in their
#               working directory, and console.log (the guest's console).
#               Without -o, each command's output is printed here
#   -t SECONDS  stop a guest that has not powered off by then (default 600)
#   -v          show the guest's console as it boots
#
# Each COMMAND is a line of sh (busybox) run in turn, in a directory whose
# files come back; opcost's history is a throw-away one in the guest's
# /tmp (OPCOST_DB), so `--no-save` is not needed. The guest has no network
# device. The script exits 1 when the guest fails (no results, a timeout),
# 3 when it ran but a COMMAND exited non-zero.
#
# It needs qemu-system-x86, busybox-static, cpio and numactl (installed with
# apt-get when missing, through sudo when not root) and a Debian cloud
# kernel (linux-image-*-cloud-amd64: NUMA, SMT, multi-core and cluster
# scheduling), fetched with `apt-get download` and unpacked into the cache
# directory ${XDG_CACHE_HOME:-~/.cache}/opcost-guest (or $OPCOST_GUEST_CACHE)
# once; nothing is written to /boot. $GUEST_KERNEL names another kernel
# image. The guest runs under TCG (software emulation, `-accel tcg`): no
# KVM needed. Boot takes 5-20 s with the cache warm (a guest whose init has
# not started after $GUEST_BOOT_SECONDS, default 120, is booted again once).
# GUEST_TCG_OPTS is added to `-accel tcg` (`,thread=single`: one host
# thread for all the vCPUs, slower). GUEST_APPEND is added to the guest
# kernel's command line (`mitigations=off`: a kernel-setting change the
# emulated CPU feels, see scripts/kernel-change-check.sh).
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"
root="$(cd "$(dirname "$0")/.." && pwd)"

shape=2s2c2t
opcost="${OPCOST_BIN:-${CARGO_TARGET_DIR:-$root/target}/release/opcost}"
outdir=""
limit=600
verbose=""
usage() { echo "usage: $0 [-s 2s2c2t|2s2d2c2t|2s2d2c2t-snc] [-b OPCOST] [-o DIR] [-t SECONDS] [-v] COMMAND..." >&2; }
parse_options "s:shape b:opcost o:outdir t:limit v=verbose h" "$@"
shift $((OPTIND - 1))
if [ $# -eq 0 ]; then usage; exit 2; fi

# The CPUs and, for each NUMA node, the part of the machine it holds (qemu's
# -numa cpu selectors).
case $shape in
  2s2c2t) smp="8,sockets=2,cores=2,threads=2"; nodes=("socket-id=0" "socket-id=1") ;;
  2s2d2c2t) smp="16,sockets=2,dies=2,cores=2,threads=2"; nodes=("socket-id=0" "socket-id=1") ;;
  2s2d2c2t-snc)
    smp="16,sockets=2,dies=2,cores=2,threads=2"
    nodes=("socket-id=0,die-id=0" "socket-id=0,die-id=1" "socket-id=1,die-id=0" "socket-id=1,die-id=1")
    ;;
  *) echo "error: unknown shape $shape (2s2c2t, 2s2d2c2t or 2s2d2c2t-snc)" >&2; exit 2 ;;
esac
opcost_binary
cache="${OPCOST_GUEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/opcost-guest}"

# The host's tools, installed when missing (as scripts/install-test-deps.sh does).
install_tools() {
  local missing=() sudo=""
  command -v qemu-system-x86_64 >/dev/null 2>&1 || missing+=(qemu-system-x86)
  # busybox-static: the guest has no libraries of its own for busybox to use.
  if ! command -v busybox >/dev/null 2>&1 || ldd "$(command -v busybox)" >/dev/null 2>&1; then
    missing+=(busybox-static)
  fi
  command -v cpio >/dev/null 2>&1 || missing+=(cpio)
  command -v numactl >/dev/null 2>&1 || missing+=(numactl)
  if [ ${#missing[@]} -eq 0 ]; then return; fi
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  echo "guest: installing ${missing[*]}" >&2
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  # --no-remove: Debian's qemu-system-x86 (7.2) cannot sit beside a newer
  # qemu-utils from backports, and apt would remove it; a machine's own
  # packages are not ours to remove. GUEST_APT_ALLOW_REMOVE=1 lets apt do
  # it where the machine is thrown away after the run (CI).
  local keep=(--no-remove)
  if [ "${GUEST_APT_ALLOW_REMOVE:-0}" = 1 ]; then keep=(); fi
  if ! $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${keep[@]}" "${missing[@]}" >/dev/null; then
    echo "error: apt-get could not install ${missing[*]} without removing a package (qemu-system-x86 conflicts with a newer qemu-utils?); GUEST_APT_ALLOW_REMOVE=1 lets it remove what it must" >&2
    exit 1
  fi
}

# kernel: the cached kernel image's path on stdout (fetched the first time).
kernel() {
  if [ -n "${GUEST_KERNEL:-}" ]; then echo "$GUEST_KERNEL"; return; fi
  local found pkg dl
  found=$(find "$cache" -maxdepth 1 -name 'vmlinuz-*' 2>/dev/null | sort -V | tail -n 1)
  if [ -n "$found" ]; then echo "$found"; return; fi
  pkg=$(apt-cache depends linux-image-cloud-amd64 2>/dev/null | awk '/Depends: linux-image-/ {print $2; exit}')
  if [ -z "$pkg" ]; then
    # No package lists yet (a fresh machine): read them once.
    if [ "$(id -u)" -ne 0 ]; then sudo apt-get update -qq; else apt-get update -qq; fi
    pkg=$(apt-cache depends linux-image-cloud-amd64 | awk '/Depends: linux-image-/ {print $2; exit}')
  fi
  [ -n "$pkg" ] || { echo "error: apt knows no linux-image-cloud-amd64 (Debian's cloud kernel)" >&2; exit 1; }
  echo "guest: fetching $pkg into $cache" >&2
  mkdir -p "$cache"
  dl=$(mktemp -d "$cache/dl.XXXXXX")
  (cd "$dl" && apt-get download -q "$pkg" >/dev/null 2>&1) ||
    { rm -rf "$dl"; echo "error: apt-get download $pkg failed" >&2; exit 1; }
  dpkg-deb -x "$dl"/*.deb "$dl/x"
  found=$(find "$dl/x/boot" -name 'vmlinuz-*' | head -n 1)
  [ -n "$found" ] || { rm -rf "$dl"; echo "error: $pkg has no /boot/vmlinuz-*" >&2; exit 1; }
  cp "$found" "$cache/"
  rm -rf "$dl"
  echo "$cache/$(basename "$found")"
}

# add_binary ROOT FILE NAME: FILE as ROOT/bin/NAME, with the shared libraries
# and the dynamic loader ldd names, at their paths.
add_binary() {
  local lib
  install -m 755 "$2" "$1/bin/$3"
  for lib in $(ldd "$2" 2>/dev/null | grep -o '/[^ ]*' || true); do
    mkdir -p "$1$(dirname "$lib")"
    cp -L "$lib" "$1$lib"
  done
}

install_tools
vmlinuz=$(kernel)
work=""
temp_dir work
mkdir -p "$work/root"/{bin,sbin,usr/bin,usr/sbin,dev,proc,sys,tmp,guest,etc}
install -m 755 "$(command -v busybox)" "$work/root/bin/busybox"
add_binary "$work/root" "$opcost" opcost
add_binary "$work/root" "$(command -v numactl)" numactl
echo "root:x:0:0:root:/tmp/home:/bin/sh" >"$work/root/etc/passwd"
# The guest's host name names its shape (runs brought back say where they ran).
echo "opcost-guest-$shape" >"$work/root/etc/hostname"
i=0
for cmd in "$@"; do
  i=$((i + 1))
  printf '%s\n' "$cmd" >"$work/root/guest/$i.sh"
done

# The guest's init: mounts, runs the commands, sends the results through the
# second serial port (ttyS1) as a base64 tar between two markers, powers off.
cat >"$work/root/init" <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t devtmpfs devtmpfs /dev
exec </dev/console >/dev/console 2>&1
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t tmpfs tmpfs /tmp
hostname -F /etc/hostname
mkdir -p /tmp/home /tmp/out
export HOME=/tmp/home TMPDIR=/tmp OPCOST_DB=/tmp/home/opcost.db
cd /tmp/out
echo "guest: up after $(cut -d' ' -f1 /proc/uptime) s, $(nproc) CPUs"
n=1
while [ -f "/guest/$n.sh" ]; do
  echo "guest: command $n: $(cat "/guest/$n.sh")"
  sh "/guest/$n.sh" >"$n.out" 2>"$n.err" </dev/null
  echo $? >"$n.rc"
  echo "guest: command $n exited $(cat "$n.rc") at $(cut -d' ' -f1 /proc/uptime) s"
  n=$((n + 1))
done
{
  echo OPCOST-GUEST-BEGIN
  tar -cf - . | gzip | base64
  echo OPCOST-GUEST-END
} >/dev/ttyS1
sync
poweroff -f
EOF
chmod 755 "$work/root/init"
(cd "$work/root" && find . | cpio -o -H newc --quiet >"$work/initrd.cpio")

# 2 GiB split evenly between the nodes. The declared (SLIT) distances are
# those of common servers: 21 to another socket's node, 11 to another node
# of the same socket.
numa=()
mem=$((2048 / ${#nodes[@]}))
for n in "${!nodes[@]}"; do
  numa+=(-object "memory-backend-ram,id=m$n,size=${mem}M" -numa "node,nodeid=$n,memdev=m$n")
  numa+=(-numa "cpu,node-id=$n,${nodes[$n]}")
done
for a in "${!nodes[@]}"; do
  for b in "${!nodes[@]}"; do
    if [ "$a" -ge "$b" ]; then continue; fi
    if [ "${nodes[$a]%%,*}" = "${nodes[$b]%%,*}" ]; then d=11; else d=21; fi
    numa+=(-numa "dist,src=$a,dst=$b,val=$d")
  done
done
fail() {
  echo "error: $1" >&2
  # (less the warnings that TCG lacks some of Skylake-Server's features)
  echo "--- qemu's messages:" >&2
  grep -v "TCG doesn't support requested feature" "$work/qemu.err" | tail -n 20 >&2 || true
  echo "--- the guest's console (last 30 lines):" >&2; tail -n 30 "$work/console.log" >&2 || true
  exit 1
}

# boot: one run of the guest; its status is qemu's (124: the time limit),
# 75 when the guest's init did not start within $boot_limit seconds. The
# console goes to console.log (and here too with -v).
boot() {
  local pid waited=0 tail_pid=""
  : >"$work/console.log"
  : >"$work/serial1"
  timeout -k 10 "$limit" qemu-system-x86_64 \
    -machine q35 -accel "tcg${GUEST_TCG_OPTS:-}" -cpu Skylake-Server -smp "$smp" -m 2G "${numa[@]}" \
    -kernel "$vmlinuz" -initrd "$work/initrd.cpio" \
    -append "console=ttyS0 panic=1 rdinit=/init${GUEST_APPEND:+ $GUEST_APPEND}" \
    -nographic -no-reboot -nic none -monitor none \
    -serial "file:$work/console.log" -serial "file:$work/serial1" \
    </dev/null 2>"$work/qemu.err" &
  pid=$!
  if [ -n "$verbose" ]; then
    tail -n +1 -f --pid="$pid" "$work/console.log" &
    tail_pid=$!
  fi
  until grep -q '^guest: up' "$work/console.log"; do
    if ! kill -0 "$pid" 2>/dev/null; then break; fi
    if [ "$waited" -ge "$boot_limit" ]; then
      echo "guest: qemu had used $(ps -o times= -p "$(pgrep -P "$pid" | head -n 1)" 2>/dev/null || echo '?') s of CPU" >&2
      kill "$pid"
      wait "$pid" || true
      if [ -n "$tail_pid" ]; then wait "$tail_pid" || true; fi
      return 75
    fi
    sleep 1
    waited=$((waited + 1))
  done
  wait "$pid" || return $?
  if [ -n "$tail_pid" ]; then wait "$tail_pid" || true; fi
}

# A guest rarely hangs while it boots: seen twice in some forty boots, both
# while 2 cores were busy with builds (once nothing on the console after the
# firmware's banner, once not even that), never on a quiet machine. One
# that has not started its init after $boot_limit seconds (normally 5-20)
# is stopped and booted again, once.
boot_limit=${GUEST_BOOT_SECONDS:-120}
start=$(date +%s)
status=0
boot || status=$?
if [ "$status" -eq 75 ]; then
  echo "guest: $shape did not start within $boot_limit s; booting it again. Its console and qemu's messages:" >&2
  tail -n 5 "$work/console.log" >&2
  grep -v "TCG doesn't support requested feature" "$work/qemu.err" | tail -n 5 >&2 || true
  status=0
  boot || status=$?
  if [ "$status" -eq 75 ]; then fail "the guest did not start within $boot_limit s, twice"; fi
fi
took=$(($(date +%s) - start))
if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then fail "the guest did not power off within $limit s"; fi
[ "$status" -eq 0 ] || fail "qemu exited $status"
mkdir -p "$work/out"
tr -d '\r' <"$work/serial1" | sed -n '/^OPCOST-GUEST-BEGIN$/,/^OPCOST-GUEST-END$/p' | sed '1d;$d' >"$work/results.b64"
grep -qx OPCOST-GUEST-END <(tr -d '\r' <"$work/serial1") || fail "no results from the guest (after $took s)"
base64 -d "$work/results.b64" | tar -xzf - -C "$work/out" || fail "the guest's results are damaged"
cp "$work/console.log" "$work/out/console.log"
echo "guest: $shape, $i command(s), $took s in qemu" >&2

failed=0
for n in $(seq 1 "$i"); do
  rc=$(cat "$work/out/$n.rc" 2>/dev/null || echo missing)
  if [ "$rc" != 0 ]; then
    failed=1
    echo "guest: command $n exited $rc: $(cat "$work/root/guest/$n.sh")" >&2
  fi
  if [ -z "$outdir" ]; then
    cat "$work/out/$n.out"
    cat "$work/out/$n.err" >&2
  fi
done
if [ -n "$outdir" ]; then
  mkdir -p "$outdir"
  cp -r "$work/out/." "$outdir/"
fi
if [ "$failed" -ne 0 ]; then exit 3; fi
