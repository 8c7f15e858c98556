// How much of its CPU core this process's vCPU gets now, measured as the time of two fixed
// loops: one of independent integer operations (an out-of-order core runs several a cycle) and
// one chain of dependent floating-point operations (a multiply and an add, each waiting for the
// one before, so the clock alone sets its speed).
//
// Why the benchmark measures it: on the 2-vCPU VMs measured, each vCPU has spells of seconds to
// minutes in which code that issues several instructions a cycle runs up to 2x slower while the
// dependent chain keeps its speed: the signature of a hyperthread sharing its core with a busy
// sibling (another guest's), not of a lower clock. The flow solver runs 3-4 instructions a cycle
// (valgrind's count against its time) and slows by up to 1.6x in those spells (bench/README.md,
// Findings); a row of the table says in which state it was measured.

import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROUNDS = 3;

function throughputLoop(words, count) {
  let a = 1, b = 2, c = 3, d = 4, e = 5, f = 6;
  for (let i = 0; i < count; i++) {
    a = (a + words[i & 4095]) | 0;
    b ^= a >>> 3;
    c = (c + words[(i * 7) & 4095]) | 0;
    d ^= c << 1;
    e = (e + i) | 0;
    f ^= e >>> 2;
  }
  return a ^ b ^ c ^ d ^ e ^ f;
}

function chainLoop(count) {
  let x = 1;
  for (let i = 0; i < count; i++) x = x * 1.0000001 + 1e-9;
  return x;
}

/** Milliseconds of one call of body(), run after warm-up calls that let V8 optimise it. */
function timed(body) {
  for (let k = 0; k < 20; k++) body(10_000);
  const started = performance.now();
  body();
  return performance.now() - started;
}

/** {throughput_ms, chain_ms}: the best of three runs of each loop (~0.1 s in all). A
 * throughput_ms well above its usual value with chain_ms unchanged means a shared core. */
export function coreShare() {
  const words = new Int32Array(4096).map((_, k) => Math.imul(k, 0x9E3779B1));
  let throughput = Infinity, chain = Infinity;
  for (let k = 0; k < ROUNDS; k++) {
    throughput = Math.min(throughput, timed((count = 12_000_000) => throughputLoop(words, count)));
    chain = Math.min(chain, timed((count = 4_000_000) => chainLoop(count)));
  }
  return { throughput_ms: +throughput.toFixed(1), chain_ms: +chain.toFixed(1) };
}

// Run as a script (as scripts/serve.mjs tells): a file:// URL built by hand would miss paths that
// URLs escape (a space, a '#').
if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.stdout.write(`${JSON.stringify(coreShare())}\n`);
}
