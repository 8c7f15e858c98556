// attnflow's public API (typed in index.d.ts): load attention data, fuse heads once inside the
// WebAssembly module, then compute raw attention, rollout or exact attention flow.
import { AttnflowError, fail, shown } from './errors.mjs';
import { call, loadModule, readDoubles, withAllocation, withDoubles, withInts } from './engine.mjs';
import {
  COMPUTE_OPTIONS, checkIndex, checkKnownOptions, checkOptionsObject, checkSameFusion, resolveCompute,
  resolveFusion,
} from './options.mjs';
import { Result } from './result.mjs';
import { MAX_WASM_BYTES } from './loaders/data.mjs';

export { AttnflowError } from './errors.mjs';
export { loadAttention } from './loaders/index.mjs';

const FUSION_CODES = { mean: 0, max: 1, min: 2 };

/** Loads and compiles the WebAssembly module once; later calls return the same promise. */
export async function init() {
  await loadModule();
}

/** compute's sinkValues option: absent (empty) or one finite value per token. */
function checkedSinkValues(values, n) {
  if (values === undefined || values === null) return new Float64Array(0);
  if (!(values instanceof Float64Array) || values.length !== n || !values.every(Number.isFinite)) {
    fail('E_OPTION', `sinkValues must be a Float64Array of ${n} finite numbers (from certificateSinks)`);
  }
  return values;
}

/** The requestRows option of compute and certificateSources: absent (0: the call's own rows) or
 * the row count of the whole request these rows are a share of. */
function checkedRequestRows(requestRows, numRows) {
  if (requestRows === undefined || requestRows === null) return 0;
  if (!Number.isInteger(requestRows) || requestRows < numRows) {
    fail('E_OPTION', `requestRows must be an integer >= the ${numRows} rows asked for (got ${JSON.stringify(requestRows)})`);
  }
  return requestRows;
}

/** compute's sourceFlags option: absent (empty) or one 0/1 flag per (layer, row) of the request. */
function checkedSourceFlags(flags, count) {
  if (flags === undefined || flags === null) return new Uint8Array(0);
  if (!(flags instanceof Uint8Array) || flags.length !== count || !flags.every((f) => f <= 1)) {
    fail('E_OPTION', `sourceFlags must be a Uint8Array of ${count} flags (0 or 1, from certificateSources)`);
  }
  return flags;  // withInts widens them to the int32 the binding reads
}

/** Whether rows are 0, 1, ..., n - 1: every row of a layer, in order. */
function isEveryRowInOrder(rows, n) {
  return rows.length === n && rows.every((row, i) => row === i);
}

function bottleneckKind(cut, layer, row, token) {
  if (cut.length === 0) return 'inner';
  if (cut.every((edge) => edge.layer === 1 && edge.to === token)) return 'sink';
  if (cut.every((edge) => edge.layer === layer && edge.from === row)) return 'source';
  return 'inner';
}

export class FusedAttention {
  #module;
  #session;
  #fusion;
  #numHeads;  // 0 for pre-fused input
  #inFlow = false;  // during a flow call, whose callbacks run JavaScript

  constructor(module, session, tokens, fusion, numHeads) {
    this.#module = module;
    this.#session = session;
    this.#fusion = fusion;
    this.#numHeads = numHeads;
    this.tokens = tokens;
    this.numLayers = session.numLayers();
    this.numTokens = tokens.length;
  }

  /** Fuses the heads of `data` layer by layer, so only one layer of heads is in the heap at once. */
  static async create(data, options = {}) {
    if (data === null || typeof data !== 'object' || typeof data.layer !== 'function') {
      fail('E_INPUT', 'FusedAttention.create needs the AttentionData that loadAttention resolves with');
    }
    checkOptionsObject(options);
    // A compute's options are accepted (ComputeOptions extends FusionOptions: one object may serve
    // both calls); names that are no option at all are refused.
    checkKnownOptions(options, COMPUTE_OPTIONS, 'FusedAttention.create');
    const fusion = resolveFusion(options, data.fused ? 0 : data.numHeads);
    const M = await loadModule();
    const n = data.numTokens;
    const valuesPerLayer = data.fused ? n * n : data.numHeads * n * n;
    // The heap holds the fused stack, its residual-mixed copy, a cached full rollout, one layer
    // of input and one of output.
    const bytesNeeded = 8 * (3 * data.numLayers * n * n + valuesPerLayer + n * n);
    if (bytesNeeded > MAX_WASM_BYTES) {
      // In MB: in GB with one decimal, the boundary read "about 3.5 GB, more than the 3.5 GB".
      fail('E_TOO_LARGE', `this input needs ${Math.ceil(bytesNeeded / 2 ** 20)} MB inside the WebAssembly module, ` +
        `more than the ${MAX_WASM_BYTES / 2 ** 20} MB (${MAX_WASM_BYTES / 2 ** 30} GB) wasm32 allows (${data.numLayers} layers, ` +
        `${data.fused ? 'pre-fused' : `${data.numHeads} heads`}, ${n} tokens): ` +
        `${data.fused ? 'use fewer tokens or layers' : 'pre-fuse the heads or use fewer tokens'}`);
    }
    const session = new M.Session(n);
    try {
      withAllocation(M, valuesPerLayer * 8, (layerAddress) =>
        withInts(M, fusion.heads ?? [], (headsAddress) => {
          for (let l = 0; l < data.numLayers; l++) {
            const values = data.layer(l);
            if (values.length !== valuesPerLayer) {
              fail('E_INPUT', `layer ${l + 1} has ${values.length} values, expected ${valuesPerLayer}`);
            }
            // Heads in float32 (most files) go in as they are and the core widens them as it
            // fuses: converting to float64 here cost a pass writing twice the bytes.
            const float32 = !data.fused && values instanceof Float32Array;
            if (float32) M.HEAPF32.set(values, layerAddress >>> 2);
            else M.HEAPF64.set(values, layerAddress >>> 3);
            call(M, () => (data.fused
              ? session.addFused(layerAddress)
              : session.addHeads(layerAddress, float32, data.numHeads, FUSION_CODES[fusion.fusion],
                headsAddress, fusion.heads?.length ?? 0)));
          }
        }));
    } catch (error) {
      session.delete();
      throw error;
    }
    return new FusedAttention(M, session, [...data.tokens], fusion, data.fused ? 0 : data.numHeads);
  }

  #live() {
    if (!this.#session) fail('E_OPTION', 'this FusedAttention has been disposed');
    if (this.#inFlow) {
      // Inside the WebAssembly flow call (from its onProgress or claim): another call would
      // change or free memory the running one still uses.
      fail('E_OPTION', 'this FusedAttention is busy: it was called from a callback (onProgress) of a compute that is still running; call it after that compute returns');
    }
    return this.#session;
  }

  compute(method, options = {}) {
    this.#live();
    const resolved = resolveCompute(method, options, this);  // checks the options object first
    checkKnownOptions(options, COMPUTE_OPTIONS, 'compute');
    checkSameFusion(options, this.#fusion, this.#numHeads);
    const { alpha, discard, layers, rows, normalize, receptiveField } = resolved;
    const n = this.numTokens;
    const perLayer = rows.length * n;
    if (options.into !== undefined && !(options.into instanceof Float64Array && options.into.length === layers.length * perLayer)) {
      fail('E_OPTION', `into must be a Float64Array of ${layers.length * perLayer} values (layers x rows x tokens)`);
    }
    const scores = method !== 'flow' && !(method === 'rollout' && receptiveField) && isEveryRowInOrder(rows, n)
      ? this.#wholeLayers(method, alpha, discard, layers, options.into)
      : this.#computeRows(method, resolved, options);
    return new Result({
      method, tokens: this.tokens, layers, rows, scores,
      options: { ...this.#fusion, alpha, discard, layers, rows, normalize, receptiveField },
    });
  }

  /**
   * Every row of each layer, in order: each layer is one block of the session's cached matrices
   * (the fused layers, or the full rollout), copied from there straight into the result.
   */
  #wholeLayers(method, alpha, discard, layers, into) {
    const M = this.#module;
    const session = this.#session;
    const perLayer = this.numTokens * this.numTokens;
    const scores = into ?? new Float64Array(layers.length * perLayer);
    layers.forEach((layer, i) => {
      const address = call(M, () => (method === 'raw' ? session.rawLayer(layer) : session.rolloutLayer(alpha, discard, layer)));
      // HEAPF64 read after the call: a call that grows the memory replaces it.
      scores.set(M.HEAPF64.subarray(address >>> 3, (address >>> 3) + perLayer), i * perLayer);
    });
    return scores;
  }

  /** The requested rows of each layer, computed into a heap buffer and copied out. */
  #computeRows(method, resolved, options) {
    const M = this.#module;
    const session = this.#session;
    const { alpha, discard, layers, rows, normalize, receptiveField } = resolved;
    const n = this.numTokens;
    const perLayer = rows.length * n;
    return withInts(M, rows, (rowsAddress) =>
      withAllocation(M, layers.length * perLayer * 8, (out) => {
        if (method === 'flow') {
          // What the caller's callbacks throw ends the call with that very error: call() would
          // take a RangeError (or a message with "memory") for the module running out of memory.
          let thrown = null;
          const guarded = (fn) => fn && ((...args) => {
            try {
              return fn(...args);
            } catch (error) {
              thrown ??= { error };
              throw error;
            }
          });
          const onProgress = guarded(options.onProgress && ((done, total) => options.onProgress(done, total) !== false));
          const sinkValues = checkedSinkValues(options.sinkValues, n);
          const sourceFlags = checkedSourceFlags(options.sourceFlags, layers.length * rows.length);
          const requestRows = checkedRequestRows(options.requestRows, rows.length);
          if (options.claim !== undefined && typeof options.claim !== 'function') {
            fail('E_OPTION', 'claim must be a function returning the next unit to compute');
          }
          const claim = guarded(options.claim && (() => {
            const unit = options.claim();
            if (!Number.isInteger(unit) || unit < 0) {
              fail('E_OPTION', `claim() must return a unit index, an integer >= 0 (got ${shown(unit)})`);
            }
            return unit;
          }));
          this.#inFlow = true;
          try {
            withInts(M, layers, (layersAddress) => withDoubles(M, sinkValues, (sinkAddress) => withInts(M, sourceFlags, (flagsAddress) => call(M, () => session.flow(
              alpha, discard, layersAddress, layers.length, rowsAddress, rows.length, normalize, receptiveField,
              sinkValues.length ? sinkAddress : 0, sourceFlags.length ? flagsAddress : 0, requestRows, claim, onProgress, out)))));
          } catch (error) {
            throw thrown ? thrown.error : error;
          } finally {
            this.#inFlow = false;
          }
        } else {
          layers.forEach((layer, i) => {
            const target = out + i * perLayer * 8;
            call(M, () => (method === 'raw'
              ? session.raw(layer, rowsAddress, rows.length, target)
              : session.rollout(alpha, discard, receptiveField, normalize, layer, rowsAddress, rows.length, target)));
          });
        }
        const count = layers.length * perLayer;
        if (!options.into) return readDoubles(M, out, count);
        options.into.set(M.HEAPF64.subarray(out >>> 3, (out >>> 3) + count));
        return options.into;
      }));
  }

  bottleneck(layer, row, token, options = {}) {
    checkOptionsObject(options);
    checkKnownOptions(options, ['alpha', 'discard'], 'bottleneck');
    const session = this.#live();
    checkIndex('layer', layer, 1, this.numLayers, 'layers (1-based)');
    checkIndex('row', row, 0, this.numTokens - 1, 'rows (0-based)');
    checkIndex('token', token, 0, this.numTokens - 1, 'tokens (0-based)');
    const { alpha, discard, layers: [checkedLayer], rows: [checkedRow] } = resolveCompute('flow',
      { alpha: options.alpha, discard: options.discard, layers: [layer], rows: [row] }, this);
    const { value, cut } = call(this.#module, () => session.bottleneck(alpha, discard, checkedLayer, checkedRow, token));
    return { value, cut, kind: bottleneckKind(cut, checkedLayer, checkedRow, token) };
  }

  /**
   * Builds the flow graph (the residual-mixed layers) for these options now instead of at the
   * first compute with them, and with `layer` (1-based, or 'last'), the exact flow solvers for
   * requests of `rows` (default one row) at that layer (kept for later computes there): lets a
   * caller time a computation apart from preparing its input.
   */
  prepare(options = {}) {
    checkOptionsObject(options);
    checkKnownOptions(options, ['layer', 'rows', 'alpha', 'discard'], 'prepare');
    const session = this.#live();
    const { alpha, discard, rows } = resolveCompute('rollout',
      { alpha: options.alpha, discard: options.discard, rows: options.rows ?? [0] }, this);
    const layer = options.layer === 'last' ? this.numLayers : options.layer ?? 0;
    if (layer !== 0 && (!Number.isInteger(layer) || layer < 1 || layer > this.numLayers)) {
      // Worded as compute's check of `layers` is, which the CLI's --layers reaches too.
      fail('E_OPTION', `layer: ${shown(options.layer)} is out of range (layers (1-based) 1..${this.numLayers}, or 'last')`);
    }
    call(this.#module, () => session.prepare(alpha, discard, layer, rows.length));
  }

  mixedLayer(layer, options = {}) {
    checkOptionsObject(options);
    checkKnownOptions(options, ['alpha', 'discard'], 'mixedLayer');
    const session = this.#live();
    const M = this.#module;
    checkIndex('layer', layer, 1, this.numLayers, 'layers (1-based)');
    const { alpha, discard, layers: [checkedLayer] } = resolveCompute('rollout',
      { alpha: options.alpha, discard: options.discard, layers: [layer], rows: [0] }, this);
    const count = this.numTokens * this.numTokens;
    return withAllocation(M, count * 8, (out) => {
      call(M, () => session.mixedLayer(alpha, discard, checkedLayer, out));
      return readDoubles(M, out, count);
    });
  }

  certificateSinks(options, requestRows, first, last) {
    const session = this.#live();
    const M = this.#module;
    const { alpha, discard, layers } = resolveCompute('flow', { ...options, rows: [0] }, this);
    if (!Number.isInteger(requestRows) || requestRows < 1) fail('E_OPTION', `requestRows must be a positive integer (got ${JSON.stringify(requestRows)})`);
    if (!Number.isInteger(first) || !Number.isInteger(last) || first < 0 || first > last || last > this.numTokens) {
      fail('E_OPTION', `sinks ${JSON.stringify(first)}..${JSON.stringify(last)} are out of range (0..${this.numTokens})`);
    }
    const middleLayer = withInts(M, layers, (layersAddress) => call(M, () => session.certificateMiddleLayer(layersAddress, layers.length, requestRows)));
    if (middleLayer === 0) return { middleLayer, values: new Float64Array(0) };
    const values = withAllocation(M, (last - first) * 8, (out) => {
      call(M, () => session.certificateSinkValues(alpha, discard, middleLayer, first, last, out));
      return readDoubles(M, out, last - first);
    });
    return { middleLayer, values };
  }

  certificateSources(options) {
    const session = this.#live();
    const M = this.#module;
    const { alpha, discard, layers, rows } = resolveCompute('flow', options, this);
    const requestRows = checkedRequestRows(options.requestRows, rows.length);
    const count = layers.length * rows.length;
    return withInts(M, layers, (layersAddress) => withInts(M, rows, (rowsAddress) =>
      withAllocation(M, count * 4, (out) => {
        call(M, () => session.certificateSourceFlags(alpha, discard, layersAddress, layers.length, rowsAddress, rows.length, requestRows, out));
        return Uint8Array.from(M.HEAP32.subarray(out >>> 2, (out >>> 2) + count));
      })));
  }

  dispose() {
    if (!this.#session) return;
    this.#live();  // not from inside a running flow
    this.#session.delete();
    this.#session = null;
  }
}

/** One-shot: fuse, compute, dispose. */
export async function compute(data, method, options = {}) {
  const fused = await FusedAttention.create(data, options);
  try {
    return fused.compute(method, options);
  } finally {
    fused.dispose();
  }
}
