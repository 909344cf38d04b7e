#!/usr/bin/env bash
# Installs what the test suite needs beyond the Rust toolchain: a C
# compiler and python3 (the opcost cmd fixtures), and Chromium, which opens
# the HTML report headless to check that its charts render.
set -euo pipefail
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
# A C compiler and python3: the `opcost cmd` tests build and run the
# Mandelbrot and loop fixtures (node and lua are used when present).
missing=()
command -v cc >/dev/null 2>&1 || missing+=(gcc libc6-dev)
command -v python3 >/dev/null 2>&1 || missing+=(python3)
if [ ${#missing[@]} -gt 0 ]; then
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
  exit 0
fi
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq chromium >/dev/null
command -v chromium >/dev/null
