// One worker of web/parallel.mjs: a worker_thread in Node, a module Web Worker in the browser
// (the same file; the environment is detected). It loads the input with the package's own loader
// (a path or a Blob a layer at a time), fuses the heads once, then computes the shares of work it
// is sent.
//
// Protocol (main -> worker):
//   {type:'load', bytes: Uint8Array|Blob | path: string (Node), name?, batch?, tokens?, fusion, heads, prepare: {alpha, discard} | null,
//    peers: (MessagePort|null)[], counter: Int32Array [claimed, front, end] on a SharedArrayBuffer | null}
//        -> {type:'ready', summary: {tokens, numLayers, numHeads, numTokens, fused, format, warnings}}
//        peers[p] is a channel to worker p of the pool (null at this worker's own index).
//   {type:'compute', id, method, options: {alpha, discard, layers, rows, normalize, receptiveField},
//    sinks?: {exchange, part, parts, requestRows, first, last, shared?: {values, arrived}}, claims: boolean,
//    fromEnd: boolean, progress: boolean, spare?: Float64Array (transferred)}
//        -> {type:'progress', id, done, total} (flow only, if progress is wanted, throttled) ... then
//           {type:'result', id, scores: Float64Array (transferred), units: Int32Array | null}
//   any failure -> {type:'error', id?, code, message}   (code null for a non-AttnflowError)
// With `sinks`, workers 0..parts-1 each get a part of the same request: each computes the flow
// certificate's sink values for sinks first..last-1 (FusedAttention.certificateSinks) and sends
// them straight to the other parts over the peer channels (worker to worker: no round trip
// through the main thread), or, with `shared` (a pool with shared memory), writes them into the
// shared `values` and counts itself in `arrived`; then it computes its part with all sink values
// joined (compute's sinkValues).
// With `claims`, every part gets the whole request and computes the (layer, row) units it
// claims from the pool's shared counters (compute's claim, see claimer()), so that the workers
// balance rows of uneven cost at run time; its result has the request's full shape, with the
// rows of `units` written. With `fromEnd` the pool sent the request's layers and rows reversed,
// and this part claims from the end: its units, counted in that order, are the request's last.
// While the other parts' sink values are on the way, it readies its result array.
// Without `claims`, each part is a share of the rows dealt ahead; while it waits, it computes
// its share's certificate source flags (FusedAttention.certificateSources, compute's
// sourceFlags).
// Cancel is the main thread terminating this worker: a flow is one synchronous WebAssembly call,
// so no message can reach the worker while it runs.
import { FusedAttention, loadAttention } from './index.mjs';
import { SPARE_MAX_VALUES } from './parallel.mjs';

const PROGRESS_MS = 25;

let fused = null;
let peers = [];
let counter = null;
let send;
// The next result's array, written before it is needed. A result is handed over to the main
// thread (transferred), so each would otherwise be fresh memory, whose first writes cost a page
// fault per 4 KB page: 0.2 ms per 64 KB in a worker thread on the 2-vCPU VMs measured (glibc
// gives a thread's freed memory back to the system), 7% of a 3 ms pool call. A worker writes a
// new one as soon as it has sent a result, while the main thread joins the results; with claims
// the main thread keeps a front part's array and hands back the others, so only front parts
// write (on 2 workers, last layer at L=12, n=128, alpha 1: 1.56-1.69 -> 1.53-1.65 ms a call,
// against writing it at the start of the next call, which delayed that part's first claim).
let spare = null;

/** The spare if it has `count` values, else undefined; either way there is no spare after. */
function takeSpare(count) {
  const array = spare?.length === count ? spare : undefined;
  spare = null;
  return array;
}

/** An array of `count` values whose pages are written: the spare, or a new one written now. */
function writtenArray(count) {
  return takeSpare(count) ?? new Float64Array(count).fill(0);
}
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
 * The certificate parts of a request's part ({sinkValues, sourceFlags?}, see
 * FusedAttention.compute), or {} when the request uses no certificate. This worker's slice of
 * the sink values goes to the other parts first; `meanwhile()` runs while theirs are on the way,
 * and what it returns is merged into the parts.
 */
async function certificateParts(options, { exchange, part, parts, requestRows, first, last, shared }, meanwhile) {
  const { middleLayer, values } = fused.certificateSinks(options, requestRows, first, last);
  if (middleLayer === 0) return meanwhile();  // the same for every part: none of them waits
  if (shared) {
    shared.values.set(values, first);
    Atomics.add(shared.arrived, 0, 1);  // publishes the writes above to whoever reads the count
    Atomics.notify(shared.arrived, 0);
    const extra = meanwhile();
    // The parts finish their slices within microseconds of each other unless one started late:
    // spin for up to 1 ms before sleeping. Waking a sleeping thread, like delivering a peer's
    // message, takes ~0.1 ms on the 2-vCPU VMs measured, 3% of a 3 ms call.
    const spinUntil = performance.now() + 1;
    while (Atomics.load(shared.arrived, 0) < parts && performance.now() < spinUntil);
    for (let seen; (seen = Atomics.load(shared.arrived, 0)) < parts;) Atomics.wait(shared.arrived, 0, seen);
    return { ...extra, sinkValues: shared.values };
  }
  for (let p = 0; p < parts; p++) {
    if (p !== part) peers[p].postMessage({ exchange, first, values });
  }
  const extra = meanwhile();
  const entry = exchangeOf(exchange);
  entry.values.set(values, first);
  while (entry.received < parts - 1) await new Promise((resolve) => { entry.wake = resolve; });
  exchanges.delete(exchange);
  return { ...extra, sinkValues: entry.values };
}

/** A claim function for compute: the next unit from the front (or, fromEnd, from the end) of
 * the request while the units claimed by all workers (counter[0]) are fewer than `count`; each
 * unit is recorded in `units`. The front and the end count their units apart (counter[1] and
 * counter[2]), and together they never get more than `count`, so they never meet. */
function claimer(count, units, fromEnd) {
  return () => {
    if (Atomics.add(counter, 0, 1) >= count) return count;
    const unit = Atomics.add(counter, fromEnd ? 2 : 1, 1);
    units.push(unit);
    return unit;
  };
}

async function handle(message) {
  try {
    if (message.type === 'load') {
      const { bytes, path, name, batch, tokens, fusion, heads } = message;
      peers = message.peers;
      counter = message.counter;
      for (const port of peers) {
        if (port) port.onmessage = (event) => receiveSinkValues(event.data);
      }
      const data = path === undefined
        ? await loadAttention(bytes, { name, batch, tokens })
        : await (await import('./node.mjs')).openAttentionFile(path, { name, batch, tokens });
      try {
        fused = await FusedAttention.create(data, { fusion, heads });
      } finally {
        data.close?.();  // a file: every layer has been read into the fused stack
      }
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
      const { id, method, options, sinks, claims, fromEnd, progress } = message;
      if (message.spare) spare = message.spare;
      if (!fused) throw new Error('parallel worker: compute before load');
      const numUnits = options.layers.length * options.rows.length;  // resolved lists
      const count = numUnits * fused.numTokens;
      // The result's memory: the spare written after the last result or handed back, if it
      // fits; with claims, if none fits, a new one is written while the other parts' sink values
      // are on the way (the other workers claim more units meanwhile).
      let into = claims ? undefined : takeSpare(count);
      // A share of a request's rows chooses the core's shortcuts as the whole request does.
      const requestRows = sinks?.requestRows;
      const meanwhile = () => {
        if (!claims) return { sourceFlags: fused.certificateSources({ ...options, requestRows }) };
        into = writtenArray(count);
        return {};
      };
      const certificate = sinks ? await certificateParts(options, sinks, meanwhile) : {};
      const units = claims ? [] : null;
      let last = -Infinity;
      const onProgress = (done, total) => {
        const now = performance.now();
        if (done >= total || now - last >= PROGRESS_MS) {
          last = now;
          send({ type: 'progress', id, done, total });
        }
      };
      const { scores } = fused.compute(method, {
        ...options,
        ...certificate,
        requestRows,
        into,
        claim: claims ? claimer(numUnits, units, fromEnd) : undefined,
        onProgress: progress && method === 'flow' ? onProgress : undefined,
      });
      // Result scores are a copy out of the heap: transferring hands the buffer over.
      send({ type: 'result', id, scores, units: units && Int32Array.from(units) }, [scores.buffer]);
      if (!(claims && fromEnd) && count <= SPARE_MAX_VALUES) spare = writtenArray(count);
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
