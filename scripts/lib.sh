# Functions shared by the scripts in scripts/, which source this file
# (`. scripts/lib.sh` from the checkout's root); sourcing it runs nothing.

# need TOOL...: stops the script (exit 2) naming the first TOOL not installed.
need() {
  local tool
  for tool in "$@"; do
    command -v "$tool" >/dev/null || { echo "$tool is needed" >&2; exit 2; }
  done
}

# temp_dir [VAR]: a new directory in $VAR (default TMP), removed when the
# script exits.
temp_dir() {
  local _var=${1:-TMP}
  printf -v "$_var" %s "$(mktemp -d)"
  trap "rm -rf \"\$$_var\"" EXIT
}

# parse_options SPEC "$@": reads the script's options with getopts. SPEC
# names them, space-separated: `p:profile` (-p takes an argument, stored in
# $profile), `m=make` (-m sets $make to 1), `h` (-h shows the usage). -h, an
# unknown option or one missing its argument runs the script's own `usage`
# and exits 2. The caller then drops the options: shift $((OPTIND - 1)).
parse_options() {
  local _spec=$1 _letters="" _item _opt
  shift
  for _item in $_spec; do
    _letters+=${_item:0:1}
    if [[ ${_item:1:1} == : ]]; then _letters+=:; fi
  done
  while getopts "$_letters" _opt; do
    for _item in $_spec; do
      if [[ ${_item:0:1} != "$_opt" ]]; then continue; fi
      case ${_item:1:1} in
        :) printf -v "${_item:2}" %s "$OPTARG" ;;
        =) printf -v "${_item:2}" 1 ;;
        *) break ;;
      esac
      continue 2
    done
    usage
    exit 2
  done
}

# build_release: builds opcost's release binary from the checkout's root,
# where it leaves the script, and sets $bin to the binary's full path
# (under $CARGO_TARGET_DIR when it is set).
build_release() {
  cd "$(dirname "$0")/.."
  cargo build --release -q
  bin=$(realpath -m "${CARGO_TARGET_DIR:-target}")/release/opcost
}

# opcost_binary: makes $opcost (the binary a script tests, from -b,
# OPCOST_BIN or the release build) a full path; stops the script (exit 2)
# when there is no executable there.
opcost_binary() {
  opcost=$(realpath -m "$opcost")
  [ -x "$opcost" ] || { echo "error: no opcost binary at $opcost (build it, or -b / OPCOST_BIN)" >&2; exit 2; }
}

# median: the median of the numbers on stdin, one a line ("nan" for none).
median() { sort -g | awk '{v[NR]=$1} END {if (NR==0) print "nan"; else if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }

# opcost_stat JSON ID STATISTIC: the STATISTIC (median, mean...) of the
# result ID in opcost's JSON document JSON (needs jq).
opcost_stat() {
  jq -r --arg id "$2" --arg s "$3" '.results[] | select(.id == $id) | .[$s]' "$1"
}

# ratio A B: A / B.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {print a/b}'; }

# runs_line WIDTH LABEL FILE: LABEL padded to WIDTH, then every number of FILE, rounded.
runs_line() { printf "%-${1}s %s\n" "$2" "$(awk '{printf "%.0f ", $1}' "$3")"; }

# private_work_dir: $work, a new directory inside $DIR (itself a new one
# under /var/tmp when DIR is empty); both go when the script exits or is
# interrupted.
private_work_dir() {
  if [[ -z $DIR ]]; then
    DIR=$(mktemp -d /var/tmp/opcost-peer-XXXXXX)
    made_dir=$DIR
  fi
  [[ -d $DIR && -w $DIR ]] || { echo "error: $DIR is not a writable directory" >&2; exit 2; }
  work=$(mktemp -d "$DIR/opcost-peer-XXXXXX")
  cleanup() { rm -rf "$work" ${made_dir:+"$made_dir"}; }
  trap cleanup EXIT
  trap 'exit 130' INT TERM
}

# medians_row FORMAT WIDTH LABEL PEER_FILE OPCOST_FILE PEER_RUNS OPCOST_RUNS [NOTE...]:
# a row of a peer comparison: FORMAT (width WIDTH) printed with LABEL, the
# median of each file's numbers, their ratio opcost/peer and NOTE; then each
# file's runs under the labels PEER_RUNS and OPCOST_RUNS.
medians_row() {
  local p o
  p=$(median <"$4"); o=$(median <"$5")
  # shellcheck disable=SC2059 # the format is the caller's
  printf "$1" "$3" "$p" "$o" "$(ratio "$o" "$p")" "${@:8}"
  runs_line "$2" "$6" "$4"
  runs_line "$2" "$7" "$5"
}
