// Deterministic synthetic attention for the benchmark: per head, a softmax of random logits with
// a diagonal, a first-token ("sink") and a previous-token bias, optionally causal. The native
// benchmark (bench/native) implements the same spec's flat profile, and every implementation in
// `npm run bench` reads the .npy written here, so they all see the same numbers.
//
// Spec (version 1), for layer l, head h, row i, column j, all loops in that order (l, h, i, j),
// with the constants SPREAD, DIAG, SINK, PREV of a profile (PROFILES below):
//   PRNG   mulberry32 (32-bit state), state = seed; next():
//            state = (state + 0x6D2B79F5) mod 2^32; t = state;
//            t = (t ^ (t >>> 15)) * (t | 1)            (32-bit multiply)
//            t ^= t + (t ^ (t >>> 7)) * (t | 61)      (32-bit arithmetic)
//            return (t ^ (t >>> 14)) >>> 0
//          u = next() / 2^32 (a double in [0, 1), exact)
//   logit  = SPREAD * (2u - 1) + DIAG * [j == i] + SINK * [j == 0] + PREV * [j == i - 1]
//            + FOCUS * [l >= 1 and (j == 0 or j == n - 1)]   (l 0-based; FOCUS 0 unless given)
//            one u is drawn for every (l, h, i, j), also for masked cells, so causal and full
//            inputs share their random stream
//   causal cells j > i are masked (weight exactly 0)
//   row    w_j = exp(logit_j - max_k logit_k) / sum_k exp(...), in float64, then stored as
//          float32 (the dtype real models export)
// exp() may differ by an ulp between libms; the float32 rounding hides that almost always, and
// the benchmark passes the .npy file itself to every implementation anyway.
import { open } from 'node:fs/promises';

export const SPEC_VERSION = 1;
/**
 * flat: the inputs of ../shared/FLOW-NOTES.md, on which the issue's anchors were measured. Its
 * rows are far flatter than a trained model's: mean largest weight per row 0.10, normalised
 * entropy (H / ln n) 0.87 at n = 128, where the trained encoder of ../shared/examples/agreement
 * has 0.38-0.57 and 0.40-0.62 in its eight sentences (n = 8-25).
 * peaky: the same spec with larger logits, in that trained model's range: mean largest weight
 * 0.46, normalised entropy 0.47 at n = 128 (about half of each row on the sink, diagonal and
 * previous token). Fewer pairs meet the simple cut bounds there, so flow costs more per pair.
 * sink: peaky with a stronger first-token bias: half of every row (the mean over heads) on token
 * 0 in every layer, the first ones included, where trained encoders attend more broadly and put
 * that much on [CLS]/[SEP] only in their middle layers. A stress case for one target row (the
 * first token's own flows end below every cut bound, over ~1,400 tiny arcs) and for the flow
 * certificate of many rows (bench/README.md, Findings).
 * focus: peaky rows whose heads, from layer 2 up, put most of each row on the first and the last
 * token (a [CLS] and a [SEP]: about 0.7 of each row of the heads' mean on the two), with layer 1
 * as in peaky. Trained encoders attend like that in their middle layers; here it is every layer
 * but the first, so every flow must gather almost its whole unit into one ordinary token's
 * column through layers that hardly lead there. A stress case for one target row (its sinks
 * each need a full solve of ~100 us natively at n = 128; bench/README.md, Findings).
 */
export const PROFILES = {
  flat: { SPREAD: 2, DIAG: 1.5, SINK: 2.5, PREV: 1.5 },
  peaky: { SPREAD: 5, DIAG: 4, SINK: 6, PREV: 4 },
  sink: { SPREAD: 5, DIAG: 4, SINK: 8, PREV: 4 },
  focus: { SPREAD: 5, DIAG: 4, SINK: 0, PREV: 4, FOCUS: 6 },
};

/** mulberry32, as specified above. Returns a function giving doubles in [0, 1). */
export function mulberry32(seed) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6D2B79F5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Yields one layer at a time as a Float32Array of H*n*n values (head-major, then row-major),
 * so a 400 MB input never has to sit in memory twice.
 */
export function* syntheticLayers({ layers, heads, tokens: n, seed = 1, causal = false, profile = 'flat' }) {
  const { SPREAD, DIAG, SINK, PREV, FOCUS = 0 } = PROFILES[profile];
  const random = mulberry32(seed);
  const logits = new Float64Array(n);
  for (let l = 0; l < layers; l++) {
    const out = new Float32Array(heads * n * n);
    for (let h = 0; h < heads; h++) {
      for (let i = 0; i < n; i++) {
        let max = -Infinity;
        for (let j = 0; j < n; j++) {
          let x = SPREAD * (2 * random() - 1);
          if (j === i) x += DIAG;
          if (j === 0) x += SINK;
          if (j === i - 1) x += PREV;
          if (l > 0 && (j === 0 || j === n - 1)) x += FOCUS;
          logits[j] = x;
          if (!(causal && j > i) && x > max) max = x;
        }
        let sum = 0;
        for (let j = 0; j < n; j++) {
          const e = causal && j > i ? 0 : Math.exp(logits[j] - max);
          logits[j] = e;
          sum += e;
        }
        const base = (h * n + i) * n;
        for (let j = 0; j < n; j++) out[base + j] = logits[j] / sum;
      }
    }
    yield out;
  }
}

/** The whole [L][H][n][n] tensor as one Float32Array. */
export function syntheticAttention(shape) {
  const { layers, heads, tokens: n } = shape;
  const all = new Float32Array(layers * heads * n * n);
  let l = 0;
  for (const layer of syntheticLayers(shape)) all.set(layer, (l++) * heads * n * n);
  return all;
}

/** A .npy (version 1.0) header for a little-endian float32 C-order array of `shape`. */
export function npyHeader(shape) {
  const dict = `{'descr': '<f4', 'fortran_order': False, 'shape': (${shape.join(', ')}${shape.length === 1 ? ',' : ''}), }`;
  const unpadded = 10 + dict.length + 1;
  const padded = Math.ceil(unpadded / 64) * 64;
  const header = `${dict}${' '.repeat(padded - unpadded)}\n`;
  const bytes = new Uint8Array(10 + header.length);
  bytes.set([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0]);  // \x93NUMPY v1.0
  bytes[8] = header.length & 0xff;
  bytes[9] = header.length >> 8;
  for (let k = 0; k < header.length; k++) bytes[10 + k] = header.charCodeAt(k);
  return bytes;
}

/** The synthetic input as the bytes of a .npy file [L, H, n, n] float32 (in memory). */
export function syntheticNpy(shape) {
  const { layers, heads, tokens: n } = shape;
  const header = npyHeader([layers, heads, n, n]);
  const bytes = new Uint8Array(header.length + layers * heads * n * n * 4);
  bytes.set(header);
  let offset = header.length;
  for (const layer of syntheticLayers(shape)) {
    bytes.set(new Uint8Array(layer.buffer, layer.byteOffset, layer.byteLength), offset);
    offset += layer.byteLength;
  }
  return bytes;
}

/** Streams the synthetic input to a .npy file layer by layer; returns its size in bytes. */
export async function writeSyntheticNpy(path, shape) {
  const { layers, heads, tokens: n } = shape;
  const file = await open(path, 'w');
  try {
    const header = npyHeader([layers, heads, n, n]);
    await file.write(header);
    for (const layer of syntheticLayers(shape)) {
      await file.write(new Uint8Array(layer.buffer, layer.byteOffset, layer.byteLength));
    }
    return header.length + layers * heads * n * n * 4;
  } finally {
    await file.close();
  }
}

/**
 * The residual-mixed matrices the peers run max-flow on, computed here independently of attnflow:
 * A[l] = rownorm(alpha * rownorm(mean_h W[l][h]) + (1 - alpha) * I), float64, each n*n.
 */
export function mixedLayers(attention, { layers, heads, tokens: n }, alpha) {
  const result = [];
  for (let l = 0; l < layers; l++) {
    const A = new Float64Array(n * n);
    for (let h = 0; h < heads; h++) {
      const base = (l * heads + h) * n * n;
      for (let k = 0; k < n * n; k++) A[k] += attention[base + k];
    }
    for (let i = 0; i < n; i++) {
      let sum = 0;
      for (let j = 0; j < n; j++) sum += A[i * n + j];
      for (let j = 0; j < n; j++) A[i * n + j] = sum > 0 ? (alpha * A[i * n + j]) / sum : 0;
      A[i * n + i] += 1 - alpha;
      let total = 0;
      for (let j = 0; j < n; j++) total += A[i * n + j];
      if (total > 0) for (let j = 0; j < n; j++) A[i * n + j] /= total;
    }
    result.push(A);
  }
  return result;
}
