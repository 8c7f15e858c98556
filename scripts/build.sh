#!/usr/bin/env bash
# Builds the WebAssembly module into web/wasm/ (emcmake + CMake, Release: -O3 -msimd128, -Oz link).
# Serialised with flock so that concurrent callers (tests, the dev server) never race.
set -euo pipefail
cd "$(dirname "$0")/.."
exec 9>/tmp/attnflow-build.lock
flock 9
emcmake cmake -S . -B build/wasm -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/wasm -j2
