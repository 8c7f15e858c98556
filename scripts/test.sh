#!/usr/bin/env bash
# Every test: the C++ core natively (doctest, then again under ASan + UBSan), the WASM build, the
# package from Node as users import it, and the demo page in headless Chromium.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== C++ core, native (g++ -Wall -Wextra)"
cmake -S . -B build/native -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/native -j2
ctest --test-dir build/native --output-on-failure

echo "== C++ core, AddressSanitizer + UndefinedBehaviorSanitizer"
cmake -S . -B build/asan -DCMAKE_BUILD_TYPE=Debug -DATTNFLOW_SANITIZE=ON >/dev/null
cmake --build build/asan -j2
ctest --test-dir build/asan --output-on-failure

echo "== WebAssembly module"
bash scripts/build.sh

echo "== type declarations (tsc on an example of the public API)"
npx tsc -p tests/types/tsconfig.json

echo "== package (Node) and page (Chromium)"
node --test tests/js/*.test.mjs tests/browser/*.test.mjs
