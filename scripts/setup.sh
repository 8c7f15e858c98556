#!/usr/bin/env bash
# All set-up on a fresh Debian 12 machine: the toolchain and test tools from apt, then npm ci.
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
PACKAGES=(emscripten libeigen3-dev doctest-dev cmake make g++ chromium
  python3-numpy python3-networkx python3-scipy)
missing=()
# Node.js may come from elsewhere (e.g. NodeSource, whose nodejs conflicts with Debian's npm):
# install Debian's only when there is no node or npm at all.
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
for package in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ "${#missing[@]}" -gt 0 ]; then
  $SUDO apt-get update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
fi
npm ci --no-audit --no-fund
