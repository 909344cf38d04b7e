#!/usr/bin/env bash
# Installs what the test suite needs beyond the Rust toolchain: Chromium,
# which opens the HTML report headless to check that its charts render.
set -euo pipefail
if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq chromium >/dev/null
command -v chromium >/dev/null
