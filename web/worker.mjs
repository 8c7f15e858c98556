// attnflow's module worker: holds one loaded input and its fused heads, and answers requests from
// the main-thread client (web/client.mjs), so no computation ever runs on the page's thread.
//
// Protocol (every request carries an `id`; every reply echoes it):
//   {type:'load', source: Blob|ArrayBuffer, name, batch?, tokens?, fusion?, heads?}
//        -> {type:'result', value: summary}   summary = {tokens, numLayers, numHeads, numTokens,
//                                                        fused, format, warnings, meta, causal}
//   {type:'fuse', fusion, heads}               -> {type:'result', value: null}
//   {type:'compute', method, options}          -> {type:'result', value: {method, layers, rows,
//                                                 numTokens, options, scores}}  (scores transferred)
//   {type:'bottleneck', layer, row, token, alpha, discard} -> {type:'result', value: {value, cut, kind}}
//   {type:'mixedLayer', layer, alpha, discard} -> {type:'result', value: Float64Array} (transferred)
//   while a flow runs: {type:'progress', done, total}, at most every PROGRESS_MS
//   on failure: {type:'error', code, message}
//
// Why cancel is "terminate the worker": the WebAssembly flow computation is one synchronous call,
// so this worker cannot receive a message while it runs (the event loop is blocked, and a shared
// flag would need SharedArrayBuffer, i.e. cross-origin-isolation headers that a plain static server
// does not send). So the client cancels by terminating this worker and starting a fresh one, to
// which it re-sends the input and the fusion settings. Requests are handled strictly one after
// another (a promise chain), so a `compute` sent while a `load` is still parsing waits for it.
import { FusedAttention, init, loadAttention } from './index.mjs';

const PROGRESS_MS = 50;

let data = null;   // AttentionData of the loaded input
let fused = null;  // FusedAttention for the current fusion settings
// Why this worker holds no input, if a load failed: the client restarts a worker after a cancel by
// loading its input again, and if the file can no longer be read (changed on disk), the requests
// that follow should say so rather than "no attention data is loaded".
let loadFailure = null;

/** True when the first rows of layers 1 and L (as fused) put no weight above the diagonal. */
function looksCausal(f) {
  const n = f.numTokens;
  if (n < 3) return false;
  const rows = [...new Set([0, 1, 2, Math.floor(n / 2)])];
  const layers = [...new Set([1, f.numLayers])];
  const r = f.compute('raw', { layers, rows });
  for (const layer of layers) {
    for (const row of rows) {
      const v = r.scoresFor(layer, row);
      for (let j = row + 1; j < n; j++) if (v[j] !== 0) return false;
    }
  }
  return true;
}

function summarize(d, f) {
  return {
    tokens: d.tokens,
    numLayers: d.numLayers,
    numHeads: d.numHeads,
    numTokens: d.numTokens,
    fused: d.fused,
    format: d.format,
    warnings: d.warnings ?? [],
    meta: d.meta,
    causal: looksCausal(f),
  };
}

async function refuse(options) {
  const fusion = { fusion: options.fusion ?? 'mean', heads: options.heads ?? null };
  const next = await FusedAttention.create(data, data.fused ? {} : fusion);
  fused?.dispose();
  fused = next;
}

function noInput() {
  return loadFailure ?? Object.assign(new Error('no attention data is loaded in this worker'), { code: 'E_OPTION' });
}

function needFused() {
  if (!fused) throw noInput();
  return fused;
}

// A Float64Array that owns its whole buffer, so it can be transferred without sending extra bytes.
function own(array) {
  return array.byteOffset === 0 && array.byteLength === array.buffer.byteLength ? array : array.slice();
}

const handlers = {
  async load(msg) {
    const { source, name, batch, tokens } = msg;
    // A Blob (e.g. a File) is read here, off the main thread, and a binary tensor a layer at a
    // time (FileReaderSync): the worker never holds the whole file, and reads it again to re-fuse.
    const previous = { data, fused };
    try {
      data = await loadAttention(source, { name, batch, tokens });
      fused = null;
      await refuse(msg);
    } catch (error) {
      ({ data, fused } = previous);  // keep the previous input usable after a bad file
      if (!data) loadFailure = error;
      throw error;
    }
    loadFailure = null;
    previous.fused?.dispose();
    return { value: summarize(data, fused) };
  },

  async fuse(msg) {
    if (!data) throw noInput();
    await refuse(msg);
    return { value: null };
  },

  compute(msg, id) {
    const f = needFused();
    let last = 0;
    const options = { ...msg.options };
    if (msg.method === 'flow') {
      options.onProgress = (done, total) => {
        const now = Date.now();
        if (now - last >= PROGRESS_MS || done === total) {
          last = now;
          self.postMessage({ id, type: 'progress', done, total });
        }
      };
    }
    const result = f.compute(msg.method, options);
    const scores = own(result.scores);
    const value = {
      method: result.method,
      layers: [...result.layers],
      rows: [...result.rows],
      numTokens: result.numTokens,
      options: { ...result.options },
      scores,
    };
    return { value, transfer: [scores.buffer] };
  },

  bottleneck(msg) {
    const b = needFused().bottleneck(msg.layer, msg.row, msg.token, { alpha: msg.alpha, discard: msg.discard });
    return { value: { value: b.value, kind: b.kind, cut: b.cut.map((e) => ({ ...e })) } };
  },

  mixedLayer(msg) {
    const m = own(needFused().mixedLayer(msg.layer, { alpha: msg.alpha, discard: msg.discard }));
    return { value: m, transfer: [m.buffer] };
  },
};

let queue = init().catch(() => {});  // start compiling the module at once; errors surface per request

self.onmessage = ({ data: msg }) => {
  queue = queue.then(async () => {
    const handler = Object.hasOwn(handlers, msg.type) ? handlers[msg.type] : null;
    try {
      if (!handler) throw Object.assign(new Error(`unknown request ${String(msg.type)}`), { code: 'E_OPTION' });
      const { value, transfer = [] } = await handler(msg, msg.id);
      self.postMessage({ id: msg.id, type: 'result', value }, transfer);
    } catch (error) {
      self.postMessage({
        id: msg.id,
        type: 'error',
        code: error?.code ?? null,  // null: not an AttnflowError (a bug, or out of memory)
        message: error?.message ?? String(error),
      });
    }
  });
};
