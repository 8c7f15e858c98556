// Loads the WebAssembly module once and turns the binding's pending-error flag into thrown
// AttnflowErrors (TOOLCHAIN.md pattern D). Nothing outside web/ sees the Emscripten Module.
import createAttnflowModule from './wasm/attnflow_wasm.mjs';
import { AttnflowError } from './errors.mjs';

let modulePromise = null;

function isNode() {
  return typeof process === 'object' && typeof process.versions?.node === 'string';
}

async function instantiate() {
  const options = {};
  if (isNode()) {
    // The module is built for web and worker only (TOOLCHAIN.md section 3); Node gets the bytes.
    const { readFile } = await import('node:fs/promises');
    options.wasmBinary = await readFile(new URL('./wasm/attnflow_wasm.wasm', import.meta.url));
  }
  return createAttnflowModule(options);
}

/** The Emscripten Module, compiled and instantiated once per thread. */
export function loadModule() {
  modulePromise ??= instantiate().catch((error) => {
    modulePromise = null;  // a failed load (e.g. a missing .wasm) may be retried
    throw new AttnflowError('E_OPTION', `the WebAssembly module could not be loaded (${error?.message ?? error}): ` +
      'check that web/wasm/attnflow_wasm.wasm is served next to attnflow_wasm.mjs (as application/wasm), ' +
      "that a Content-Security-Policy allows WebAssembly ('wasm-unsafe-eval' in script-src), and that the " +
      'browser has WebAssembly SIMD and exception handling (Chrome 95+, Firefox 100+, Safari 16.4+)');
  });
  return modulePromise;
}

/**
 * Runs `body(M)` and raises the binding's pending error, if any, as an AttnflowError. Restores
 * the shadow stack if the module itself faulted, so one failure cannot corrupt later calls.
 */
export function call(M, body) {
  const stack = M.stackSave();
  let result;
  try {
    result = body(M);
  } catch (error) {
    M.stackRestore(stack);
    if (error instanceof RangeError || /memory|Aborted/i.test(String(error?.message))) {
      throw new AttnflowError('E_TOO_LARGE',
        `the WebAssembly module failed (${error.message}); the input is probably too large for ` +
        'wasm32 (4 GB): pre-fuse the heads or use fewer tokens');
    }
    throw error;
  }
  const flag = M.pendingErrorFlagAddress() >>> 2;
  if (M.HEAP32[flag]) {
    const { code, message } = M.takePendingError();
    throw code ? new AttnflowError(code, message) : new Error(`attnflow internal error: ${message}`);
  }
  return result;
}

/** Copies `count` float64 values out of the heap at byte address `address`. */
export function readDoubles(M, address, count) {
  return M.HEAPF64.slice(address >>> 3, (address >>> 3) + count);
}

/** Allocates heap memory for the duration of `body(address)`. */
export function withAllocation(M, bytes, body) {
  // Unsigned: past 2 GiB, _malloc's i32 result reads as negative in JavaScript, and heap views
  // indexed with it (address >> 3) silently counted from the end of the heap (wrong scores).
  const address = M._malloc(Math.max(8, bytes)) >>> 0;
  if (!address) {
    throw new AttnflowError('E_TOO_LARGE',
      `cannot allocate ${(bytes / 2 ** 20).toFixed(0)} MB in the WebAssembly module (wasm32 holds ` +
      'at most 4 GB): pre-fuse the heads or use fewer tokens');
  }
  try {
    return body(address);
  } finally {
    M._free(address);
  }
}

/** Writes 32-bit ints into the heap for the duration of `body(address)`. */
export function withInts(M, values, body) {
  return withAllocation(M, values.length * 4, (address) => {
    M.HEAP32.set(values, address >>> 2);
    return body(address);
  });
}

/** Writes float64 values into the heap for the duration of `body(address)`. */
export function withDoubles(M, values, body) {
  return withAllocation(M, values.length * 8, (address) => {
    M.HEAPF64.set(values, address >>> 3);
    return body(address);
  });
}
