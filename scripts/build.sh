#!/usr/bin/env bash
# Builds the WebAssembly module into web/wasm/ (emcmake + CMake, Release: -O3 -msimd128, -Oz link).
# Serialised with flock so that concurrent callers (tests, the dev server) never race.
set -euo pipefail
cd "$(dirname "$0")/.."
exec 9>/tmp/attnflow-build.lock
flock 9
emcmake cmake -S . -B build/wasm -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/wasm -j2
# Browsers and module workers cannot resolve bare specifiers without a bundler, so the loaders
# import fflate by relative path from a copy made here out of node_modules (never committed).
mkdir -p web/vendor
cp node_modules/fflate/esm/browser.js web/vendor/fflate.mjs
cp node_modules/fflate/LICENSE web/vendor/fflate.LICENSE  # MIT: the notice goes with the copy
