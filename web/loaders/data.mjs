// The AttentionData object shared by every format, the size guard, and the value checks.
//
// Validation policy (the same message style for every format):
// - JSON: every value is checked while it is packed into one Float64Array per layer, so
//   loadAttention() itself fails on NaN/Inf/negative values and ragged rows.
// - Binary formats (.npy, .npz, safetensors): the shape and byte length are checked when loading;
//   the values are checked lazily, once per layer, the first time layer(l) is called (the engine
//   reads every layer while fusing). A file with a NaN therefore loads, and the first layer(l)
//   that reaches it throws E_INPUT naming layer, head, row and column. This keeps loading a
//   400 MB tensor free of a second full pass, and lets a tensor that is not in memory be read a
//   layer at a time (./source.mjs).
// - Rows far from summing to 1 are counted, not fatal; `warnings` summarises them (count plus the
//   first location). For binary formats the count covers the layers read so far.

import { fail } from '../errors.mjs';

/**
 * The most the fused float64 stack (L*n*n*8 bytes) plus one layer of heads (H*n*n*8) may take.
 * A wasm32 module addresses at most 4 GiB; the rest is left for the module, the results and the
 * flow graph.
 */
export const MAX_WASM_BYTES = 3.5 * 2 ** 30;

/** A row whose sum is further than this from 1 is reported in `warnings`. */
export const ROW_SUM_TOLERANCE = 1e-2;

const GB = 2 ** 30;
const fmtGB = (b) => (b / GB >= 0.1 ? `${(b / GB).toFixed(2)} GB` : `${(b / 2 ** 20).toFixed(1)} MB`);

/**
 * Refuses shapes the wasm32 engine cannot hold, before anything is allocated for them.
 * @param {number} L @param {number} H heads (0 when fused) @param {number} n
 */
export function checkSize(L, H, n) {
  const stack = L * n * n * 8;
  const oneLayer = Math.max(H, 1) * n * n * 8;
  if (!(stack + oneLayer <= MAX_WASM_BYTES)) {
    fail('E_TOO_LARGE',
      `input too large: L=${L}, ${H ? `H=${H}, ` : ''}n=${n} needs ${fmtGB(stack)} for the fused ` +
      `float64 stack (L*n*n*8 bytes) plus ${fmtGB(oneLayer)} for one layer of heads, more than the ` +
      `${fmtGB(MAX_WASM_BYTES)} a wasm32 module can hold; pre-fuse the heads (save [L][n][n]), ` +
      'use fewer tokens, or keep fewer layers');
  }
}

/**
 * "layer 2, head 0, row 3" (layer 1-based; head omitted when fused), "layer 2, batch 1, head 0,
 * row 3" in a layout with a batch axis (`batch` undefined without one).
 */
export function where(l, h, i, batch) {
  const item = batch === undefined ? '' : `, batch ${batch}`;
  return h < 0 ? `layer ${l + 1}${item}, row ${i}` : `layer ${l + 1}${item}, head ${h}, row ${i}`;
}

/** Describes a value that is not a finite non-negative number. */
export function badValueMessage(l, h, i, j, v, batch) {
  const at = `${where(l, h, i, batch)}, column ${j}`;
  if (v === null) return `${at} is null: values must be finite numbers (NaN or Infinity in the export?)`;
  if (typeof v === 'number') {
    if (Number.isNaN(v)) return `${at} is NaN: values must be finite numbers`;
    if (!Number.isFinite(v)) return `${at} is ${v}: values must be finite numbers`;
    return `${at} is negative (${v}): attention weights must be >= 0`;
  }
  if (typeof v === 'string') {
    const s = v.length > 20 ? `${v.slice(0, 20)}...` : v;
    return `${at} is the string ${JSON.stringify(s)}: values must be finite numbers`;
  }
  if (Array.isArray(v) || ArrayBuffer.isView(v)) {
    return `${at} is an array, expected a number (too many levels of nesting?)`;
  }
  return `${at} is ${typeName(v)}, expected a number`;
}

/** Tally of rows whose sum is far from 1, summarised into one warning. */
const MAX_ROW_SUM = 1e300;

export class RowSumTally {
  /** @param {number} [batch] the batch item read, in a layout with a batch axis (for messages) */
  constructor(batch) { this.count = 0; this.rows = 0; this.first = null; this.batch = batch; }
  add(l, h, i, sum) {
    // Rows are re-normalised after the heads are summed: a sum this large would overflow there
    // (two values of 1e308 sum to Infinity, and the row would come out as 0).
    if (!(sum <= MAX_ROW_SUM)) {
      fail('E_INPUT', `${where(l, h, i, this.batch)} sums to ${sum}: attention weights are shares (rows sum to 1), ` +
        `and rows summing to more than ${MAX_ROW_SUM} cannot be normalised without overflow; scale them down`);
    }
    this.rows++;
    if (!(Math.abs(sum - 1) <= ROW_SUM_TOLERANCE)) {
      if (this.count++ === 0) this.first = `${where(l, h, i, this.batch)} sums to ${+sum.toPrecision(6)}`;
    }
  }
  message() {
    if (this.count === 0) return null;
    return `${this.count} of ${this.rows} rows do not sum to 1 within ${ROW_SUM_TOLERANCE} ` +
      `(first: ${this.first}); rows are re-normalised after head fusion`;
  }
}

/**
 * Checks one flat layer (values finite and >= 0) and tallies its row sums, in one pass.
 * A row's values are summed into four accumulators with one flag for a value that is not >= 0
 * (NaN or negative), and only a row that fails (or sums to +Infinity) is scanned again for the
 * value to name: one comparison a value instead of two (+Infinity shows in the row's sum), and
 * four independent chains of adds instead of one. 2.2 against 4.3 ns a value on a BERT-large
 * layer (16 x 512 x 512 float32; ~0.2 s of the 1.4 s that loading the whole file took).
 * @param {ArrayLike<number>} a @param {number} l 0-based layer @param {number} H 0 when fused
 */
export function checkLayerValues(a, l, H, n, tally) {
  const heads = Math.max(H, 1);
  for (let h = 0, k = 0; h < heads; h++) {
    for (let i = 0; i < n; i++, k += n) {
      const end = k + n;
      let s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      let bad = false;
      let j = k;
      for (; j + 3 < end; j += 4) {
        const x = a[j], y = a[j + 1], z = a[j + 2], w = a[j + 3];
        s0 += x; s1 += y; s2 += z; s3 += w;
        if (!(x >= 0 && y >= 0 && z >= 0 && w >= 0)) bad = true;
      }
      for (; j < end; j++) {
        s0 += a[j];
        if (!(a[j] >= 0)) bad = true;
      }
      const sum = (s0 + s1) + (s2 + s3);
      // +Infinity passes v >= 0 but makes the sum infinite (a sum of finite values can overflow
      // to Infinity too: then the rescan finds nothing and the tally's limit reports the row).
      if (bad || sum === Infinity) throwFirstBadValue(a, k, l, H, h, i, n, tally.batch);
      tally.add(l, H ? h : -1, i, sum);
    }
  }
}

/** Fails with the first value of the row at a[k..k+n) that is not finite and >= 0, if any. */
function throwFirstBadValue(a, k, l, H, h, i, n, batch) {
  for (let j = 0; j < n; j++) {
    const v = a[k + j];
    if (!(v >= 0) || v === Infinity) fail('E_INPUT', badValueMessage(l, H ? h : -1, i, j, v, batch));
  }
}

/**
 * Validates token strings against n. Untrusted text: kept as strings, never evaluated.
 * @returns {string[]}
 */
export function checkTokens(tokens, n, what = 'tokens') {
  if (tokens === undefined || tokens === null) return Array.from({ length: n }, (_, i) => String(i));
  if (!Array.isArray(tokens)) fail('E_INPUT', `${what} must be an array of strings, found ${typeName(tokens)}`);
  for (let i = 0; i < tokens.length; i++) {
    if (typeof tokens[i] !== 'string') {
      fail('E_INPUT', `${what}[${i}] is ${typeName(tokens[i])}, expected a string`);
    }
  }
  if (tokens.length !== n) {
    fail('E_INPUT', `${tokens.length} ${what === 'tokens' ? 'tokens' : `tokens in ${what}`} but the matrices are ${n}x${n}`);
  }
  return tokens.slice();
}

export function typeName(v) {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (ArrayBuffer.isView(v)) return `a ${v.constructor.name}`;
  const kind = typeof v;
  if (kind === 'undefined') return 'missing';
  return withArticle(kind);
}

/** "an object", "a boolean". */
export const withArticle = (word) => `${/^[aeiou]/.test(word) ? 'an' : 'a'} ${word}`;

/**
 * Builds the AttentionData object.
 * @param {object} s
 * @param {string} s.format
 * @param {string[]} s.tokens
 * @param {number} s.numLayers
 * @param {number} s.numHeads 0 when fused
 * @param {number} s.numTokens
 * @param {(l: number) => Float32Array|Float64Array} s.readLayer the raw layer (view or conversion)
 * @param {boolean} s.checked true when every value was already validated (JSON)
 * @param {RowSumTally} [s.tally] row-sum tally (filled already when `checked`)
 * @param {string[]} [s.warnings] other warnings
 * @param {Record<string, unknown>} [s.meta]
 * @param {number} [s.batch] the batch item read, in a layout with a batch axis (for messages)
 */
export function makeAttentionData(s) {
  const { numLayers: L, numHeads: H, numTokens: n, readLayer } = s;
  const tally = s.tally || new RowSumTally(s.batch);
  const fixed = s.warnings ? s.warnings.slice() : [];
  const done = new Uint8Array(L); // layers whose values were validated
  if (s.checked) done.fill(1);
  const data = {
    tokens: s.tokens,
    numLayers: L,
    numHeads: H,
    numTokens: n,
    fused: H === 0,
    format: s.format,
    get warnings() {
      const m = tally.message();
      return m ? [...fixed, m] : fixed.slice();
    },
    layer(l) {
      if (!Number.isInteger(l) || l < 0 || l >= L) {
        fail('E_OPTION', `layer index ${l} is out of range: layer(l) takes a 0-based index 0..${L - 1}`);
      }
      const a = readLayer(l);
      if (!done[l]) {
        checkLayerValues(a, l, H, n, tally);
        done[l] = 1;
      }
      return a;
    },
  };
  if (s.meta !== undefined) data.meta = s.meta;
  return Object.freeze(data);
}
