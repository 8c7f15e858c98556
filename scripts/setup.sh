#!/usr/bin/env bash
# All set-up on a fresh Debian 12 machine: the toolchain and test tools from apt, then npm ci.
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
PACKAGES=(emscripten libeigen3-dev doctest-dev cmake make g++ nodejs npm chromium
  python3-numpy python3-networkx python3-scipy)
missing=()
for package in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ "${#missing[@]}" -gt 0 ]; then
  $SUDO apt-get update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
fi
npm ci --no-audit --no-fund
