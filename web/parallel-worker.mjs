// One worker of web/parallel.mjs: a worker_thread in Node, a module Web Worker in the browser
// (the same file; the environment is detected). It loads the input's bytes with the package's own
// loader, fuses the heads once, then computes the shares of work it is sent.
//
// Protocol (main -> worker):
//   {type:'load', bytes: Uint8Array, name?, batch?, tokens?, fusion, heads, prepare: {alpha, discard} | null,
//    peers: (MessagePort|null)[]}
//        -> {type:'ready', summary: {tokens, numLayers, numHeads, numTokens, fused, format, warnings}}
//        peers[p] is a channel to worker p of the pool (null at this worker's own index).
//   {type:'compute', id, method, options: {alpha, discard, layers, rows, normalize, receptiveField},
//    sinks?: {exchange, part, parts, shareRows, first, last}, progress: boolean}
//        -> {type:'progress', id, done, total} (flow only, if progress is wanted, throttled) ... then
//           {type:'result', id, scores: Float64Array} (transferred)
//   any failure -> {type:'error', id?, code, message}   (code null for a non-AttnflowError)
// With `sinks`, workers 0..parts-1 each get one share of the same request: each computes the
// flow certificate's sink values for sinks first..last-1 (FusedAttention.certificateSinks), sends
// them straight to the other parts over the peer channels (worker to worker: no round trip
// through the main thread), computes its share's certificate source flags while the others'
// values are on the way (FusedAttention.certificateSources), and computes its share with all
// sink values joined (compute's sinkValues and sourceFlags).
// Cancel is the main thread terminating this worker: a flow is one synchronous WebAssembly call,
// so no message can reach the worker while it runs.
import { FusedAttention, loadAttention } from './index.mjs';

const PROGRESS_MS = 25;
// Largest result kept as a spare (see `spare`): bounds the memory an idle worker holds.
const SPARE_MAX_VALUES = 1 << 19;  // 4 MB

let fused = null;
let peers = [];
let send;
// The next result's array, allocated and written while this worker is idle. A result is handed
// over to the main thread (transferred), so each would otherwise be fresh memory, whose first
// writes cost a page fault per 4 KB page: 0.2 ms per 64 KB in a worker thread on the 2-vCPU VMs
// measured (glibc gives a thread's freed memory back to the system), 7% of a 3 ms pool call.
let spare = null;
// Sink values sent by the other parts, by exchange number (one per request; a peer may get
// there before this worker): {values: all n, filled in as parts arrive; received: parts so far;
// wake: set while waiting}.
const exchanges = new Map();

function exchangeOf(exchange) {
  let entry = exchanges.get(exchange);
  if (!entry) {
    entry = { values: new Float64Array(fused.numTokens), received: 0, wake: null };
    exchanges.set(exchange, entry);
  }
  return entry;
}

function receiveSinkValues({ exchange, first, values }) {
  const entry = exchangeOf(exchange);
  entry.values.set(values, first);
  entry.received += 1;
  entry.wake?.();
}

/**
 * The certificate parts of a share ({sinkValues, sourceFlags}, see FusedAttention.compute), or {}
 * when the request uses no certificate. This worker's slice of the sink values goes to the other
 * parts first; the source flags are computed while theirs are on the way.
 */
async function certificateParts(options, { exchange, part, parts, shareRows, first, last }) {
  const { middleLayer, values } = fused.certificateSinks(options, shareRows, first, last);
  if (middleLayer === 0) return {};  // the same for every part: none of them waits
  for (let p = 0; p < parts; p++) {
    if (p !== part) peers[p].postMessage({ exchange, first, values });
  }
  const sourceFlags = fused.certificateSources(options);
  const entry = exchangeOf(exchange);
  entry.values.set(values, first);
  while (entry.received < parts - 1) await new Promise((resolve) => { entry.wake = resolve; });
  exchanges.delete(exchange);
  return { sinkValues: entry.values, sourceFlags };
}

async function handle(message) {
  try {
    if (message.type === 'load') {
      const { bytes, name, batch, tokens, fusion, heads } = message;
      peers = message.peers;
      for (const port of peers) {
        if (port) port.onmessage = (event) => receiveSinkValues(event.data);
      }
      const data = await loadAttention(bytes, { name, batch, tokens });
      fused = await FusedAttention.create(data, data.fused ? {} : { fusion, heads });
      if (message.prepare) fused.prepare(message.prepare);
      send({
        type: 'ready',
        summary: {
          tokens: data.tokens,
          numLayers: data.numLayers,
          numHeads: data.numHeads,
          numTokens: data.numTokens,
          fused: data.fused,
          format: data.format,
          warnings: data.warnings ?? [],
        },
      });
    } else if (message.type === 'compute') {
      const { id, method, options, sinks, progress } = message;
      if (!fused) throw new Error('parallel worker: compute before load');
      const certificate = sinks ? await certificateParts(options, sinks) : {};
      let last = -Infinity;
      const onProgress = (done, total) => {
        const now = performance.now();
        if (done >= total || now - last >= PROGRESS_MS) {
          last = now;
          send({ type: 'progress', id, done, total });
        }
      };
      const count = options.layers.length * options.rows.length * fused.numTokens;  // resolved lists
      const into = spare?.length === count ? spare : undefined;
      spare = null;
      const { scores } = fused.compute(method, {
        ...options, ...certificate, into, onProgress: progress && method === 'flow' ? onProgress : undefined,
      });
      // Result scores are a copy out of the heap: transferring hands the buffer over.
      send({ type: 'result', id, scores }, [scores.buffer]);
      if (count <= SPARE_MAX_VALUES) spare = new Float64Array(count).fill(0);
    }
  } catch (error) {
    send({ type: 'error', id: message.id, code: error?.code ?? null, message: String(error?.message ?? error) });
  }
}

if (typeof process === 'object' && typeof process.versions?.node === 'string') {
  const { parentPort } = await import('node:worker_threads');
  send = (value, transfer) => parentPort.postMessage(value, transfer);
  parentPort.on('message', handle);
} else {
  send = (value, transfer) => self.postMessage(value, transfer ?? []);
  self.onmessage = (event) => handle(event.data);
}
