// The one place where options get their defaults and are checked, shared by the API, the CLI, the
// worker and the page: a setting means the same everywhere.
import { fail, shown } from './errors.mjs';

export const METHODS = ['raw', 'rollout', 'flow'];
export const FUSIONS = ['mean', 'max', 'min'];
export const DEFAULTS = Object.freeze({
  fusion: 'mean', heads: null, alpha: 0.5, discard: 0, layers: 'last', rows: 'all', normalize: true,
  receptiveField: false,
});

/** Throws E_OPTION unless `value` is an integer from `lowest` to `highest`. */
export function checkIndex(name, value, lowest, highest, what) {
  if (!Number.isInteger(value) || value < lowest || value > highest) {
    fail('E_OPTION', `${name}: ${shown(value)} is out of range (${what} ${lowest}..${highest})`);
  }
}

function checkIndexList(name, list, lowest, highest, what) {
  if (!Array.isArray(list) || list.length === 0) {
    fail('E_OPTION', `${name} must be a non-empty list of ${what}`);
  }
  const seen = new Set();
  for (const value of list) {
    checkIndex(name, value, lowest, highest, what);
    if (seen.has(value)) fail('E_OPTION', `${name}: ${value} is listed twice`);
    seen.add(value);
  }
  return [...list];
}

/** Throws E_OPTION unless `count` is a number of workers a pool can have (1 to 64). */
export function checkWorkerCount(count) {
  if (!Number.isInteger(count) || count < 1 || count > 64) {
    fail('E_OPTION', `workers must be an integer from 1 to 64 (got ${shown(count)})`);
  }
}

/** The names a computation's options may have (ComputeOptions in index.d.ts). */
export const COMPUTE_OPTIONS = ['fusion', 'heads', 'alpha', 'discard', 'layers', 'rows', 'normalize',
  'receptiveField', 'onProgress', 'sinkValues', 'sourceFlags', 'requestRows', 'claim', 'into'];

/** Those of a pool's computation (ParallelComputeOptions): it coordinates its workers itself. */
export const PARALLEL_COMPUTE_OPTIONS = ['fusion', 'heads', 'alpha', 'discard', 'layers', 'rows', 'normalize',
  'receptiveField', 'onProgress', 'signal'];

/**
 * Throws E_OPTION for an option name that is not in `known` (and not undefined): a misspelt
 * option, such as `layer` for `layers` or `normalise`, would otherwise leave its default in place
 * and give the numbers of another question without a word.
 */
export function checkKnownOptions(options, known, what) {
  const unknown = Object.keys(options).filter((key) => options[key] !== undefined && !known.includes(key));
  if (unknown.length) {
    fail('E_OPTION', `${what} has no option ${unknown.map((key) => JSON.stringify(key)).join(', ')} ` +
      `(its options: ${known.join(', ')})`);
  }
}

/** Options left out (undefined) are {}; anything else but an object is refused. */
export function checkOptionsObject(options) {
  if (options === null || typeof options !== 'object') {
    fail('E_OPTION', `options must be an object (got ${options === null ? 'null' : typeof options})`);
  }
}

/**
 * The options object of a compute and its callbacks, checked before anything starts (a pool or a
 * worker would otherwise fail later, in another thread or a message handler).
 */
export function checkCallOptions(options) {
  checkOptionsObject(options);
  if (options.onProgress !== undefined && typeof options.onProgress !== 'function') {
    fail('E_OPTION', 'onProgress must be a function (done, total) => boolean | void');
  }
  const { signal } = options;
  if (signal !== undefined && !(typeof signal?.aborted === 'boolean' && typeof signal.addEventListener === 'function')) {
    fail('E_OPTION', 'signal must be an AbortSignal (from an AbortController)');
  }
}

/** {fusion, heads} checked against a layer with `numHeads` heads (0 = pre-fused input). */
export function resolveFusion(options = {}, numHeads) {
  checkOptionsObject(options);
  const fusion = options.fusion ?? DEFAULTS.fusion;
  if (!FUSIONS.includes(fusion)) {
    fail('E_OPTION', `fusion must be one of ${FUSIONS.join(', ')} (got ${JSON.stringify(fusion)})`);
  }
  const heads = options.heads ?? null;
  if (heads === null) return { fusion, heads };
  if (numHeads === 0) fail('E_OPTION', 'heads cannot be chosen: the input is already fused');
  return { fusion, heads: checkIndexList('heads', heads, 0, numHeads - 1, `heads`) };
}

/**
 * Throws E_OPTION when a compute's options name another fusion than `applied`, the one its heads
 * were fused with, which a compute cannot change (it would get the numbers of the applied one
 * under a request for another). The same fusion is accepted: one object may serve both calls.
 */
export function checkSameFusion(options, applied, numHeads) {
  if (options.fusion === undefined && options.heads === undefined) return;
  const asked = { fusion: options.fusion ?? applied.fusion, heads: options.heads === undefined ? applied.heads : options.heads };
  const headsText = (heads) => {
    if (heads === null) return 'all heads';
    if (!Array.isArray(heads)) return shown(heads);
    const sorted = [...new Set(heads)].sort((a, b) => a - b);
    return sorted.length === numHeads && sorted.every((head, k) => head === k) ? 'all heads' : `heads ${sorted.join(', ')}`;
  };
  const text = ({ fusion, heads }) => `${shown(fusion)} of ${headsText(heads)}`;
  if (text(asked) !== text(applied)) {
    fail('E_OPTION', `the heads were fused as the ${text(applied)}, which a compute cannot change (got the ` +
      `${text(asked)}): choose the fusion when fusing (FusedAttention.create, ParallelAttention.open, or ` +
      'AttnflowWorker.load/fuse)');
  }
}

/** Every option of a computation, with defaults, checked against the data's shape. */
export function resolveCompute(method, options = {}, { numLayers, numTokens }) {
  if (!METHODS.includes(method)) {
    fail('E_OPTION', `method must be one of ${METHODS.join(', ')} (got ${JSON.stringify(method)})`);
  }
  checkCallOptions(options);
  const alpha = options.alpha ?? DEFAULTS.alpha;
  if (typeof alpha !== 'number' || !(alpha >= 0 && alpha <= 1)) {
    fail('E_OPTION', `alpha must be a number in [0, 1] (got ${shown(alpha)})`);
  }
  const discard = options.discard ?? DEFAULTS.discard;
  if (typeof discard !== 'number' || !(discard >= 0 && discard < 1)) {
    fail('E_OPTION', `discard must be a number in [0, 1) (got ${shown(discard)})`);
  }
  const layersOption = options.layers ?? DEFAULTS.layers;
  let layers;
  if (layersOption === 'last') layers = [numLayers];
  else if (layersOption === 'all') layers = Array.from({ length: numLayers }, (_, i) => i + 1);
  else layers = checkIndexList('layers', layersOption, 1, numLayers, 'layers (1-based)');
  const rowsOption = options.rows ?? DEFAULTS.rows;
  const rows = rowsOption === 'all'
    ? Array.from({ length: numTokens }, (_, i) => i)
    : checkIndexList('rows', rowsOption, 0, numTokens - 1, 'rows (0-based)');
  const normalize = options.normalize ?? DEFAULTS.normalize;
  if (typeof normalize !== 'boolean') fail('E_OPTION', 'normalize must be true or false');
  const receptiveField = options.receptiveField ?? DEFAULTS.receptiveField;
  if (typeof receptiveField !== 'boolean') fail('E_OPTION', 'receptiveField must be true or false');
  return { alpha, discard, layers, rows, normalize, receptiveField };
}

/**
 * Parses the CLI / URL spelling of a list option: "all", "last" (layers only) or "0,3,5".
 * Returns the keyword or an array of integers.
 */
export function parseListOption(name, text, keywords) {
  const trimmed = String(text).trim();
  if (keywords.includes(trimmed)) return trimmed;
  const parts = trimmed.split(',').map((part) => part.trim());
  const values = parts.map(Number);
  if (parts.some((part) => !/^-?\d+$/.test(part))) {
    fail('E_OPTION', `--${name} must be ${[...keywords, 'a comma-separated list of integers'].join(' or ')} (got ${JSON.stringify(text)})`);
  }
  return values;
}
