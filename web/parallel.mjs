// Long computations split across threads: worker_threads in Node, module Web Workers in the
// browser (same code). Each worker loads the input and fuses the heads itself, then runs
// the package's own compute on a share of the work, so every number is produced by exactly the
// code a single-threaded compute would run, and the merged result is bitwise the same.
//
// How work is split (flow only; raw and rollout are cheap and run whole on one worker):
// - several rows, where a SharedArrayBuffer is available (Node; a page only when cross-origin
//   isolated): every worker gets the whole request and computes the (layer, row) units it claims
//   from counters they share (Atomics.add), one unit at a time, so rows of uneven cost balance
//   themselves. On rows as peaky as a trained model's, one row whose source fails the flow
//   certificate's test costs as much as ~25-50 others: dealt ahead, the share that held it
//   finished last (the last layer at L=12, n=128: 1.67x on 2 workers). The last worker claims
//   from the end of the request (it is sent the layers and rows reversed), the others from the
//   front: over several layers each worker then meets few layers the other also meets, and
//   per-layer work that every worker touching a layer repeats (the certificate's sink values of
//   each middle layer, the reversed graph's saved starts) is mostly done once. Every row of every
//   layer at L=12, n=32 on 2 workers: 1.58-1.63x -> 1.74-1.77x at alpha 1, 1.80x -> 1.90x at 0.5
//   (claiming both from the front, each worker computed the sink values of all four middle
//   layers). Each worker's result has the request's full shape (the last one's in its reversed
//   order); the main thread keeps a front worker's, copies the others' rows into it, and hands
//   their arrays back to their workers for the next call, so it never writes fresh memory itself
//   (~0.3 ms of page faults per 128 KB on the VMs measured).
// - several rows otherwise: one share per worker, each with every requested layer, the rows dealt in snake
//   order (0, 1, 1, 0, 0, 1, ... for 2 workers) so that a cost growing with the row (causal
//   inputs) evens out: the halves of the causal all-layers case at n=32 took 5.8 and 5.8 ms,
//   against 5.6 and 6.1 ms dealt round-robin. Splitting by whole layers instead was capped near
//   1.5x on BERT-base, because one layer (layer 3 at alpha 0.5) alone took two thirds of the time.
//   The per-sink half of the core's certificate (about a third of a last-layer run at L=12,
//   n=128) would be repeated by every share, so each worker computes it for a slice of the sinks
//   and sends its slice straight to the others over channels set up when the pool opens (see
//   parallel-worker.mjs): one message per worker and call. (Two phases through the main thread
//   cost two extra message hops, ~0.3 ms of a 4 ms call on 2 vCPUs.) While the other slices are
//   on the way, each worker does its share's per-source half (which needs no sink values), so
//   no worker waits for the exchange unless another started much later. Workers that claim
//   their units share the sink values the same way, but through shared memory: each writes its
//   slice into one shared array and waits (spinning, then sleeping) until every slice is in; a
//   message between two running workers takes ~0.1 ms to arrive (last layer at L=12, n=128 on 2
//   workers: 2.87-2.88 ms a call, against 2.89-3.01 ms with the messages, in alternating runs).
// - one row and several layers: one task per layer, deepest first, to whichever worker is idle.
// Cancel (AbortSignal, or onProgress returning false) terminates the workers: a flow is one
// synchronous WebAssembly call that cannot be interrupted from outside its thread.
import { AttnflowError, fail } from './errors.mjs';
import {
  PARALLEL_COMPUTE_OPTIONS, checkCallOptions, checkKnownOptions, checkSameFusion, checkWorkerCount,
  resolveCompute,
} from './options.mjs';
import { Result } from './result.mjs';

const IS_NODE = typeof process === 'object' && typeof process.versions?.node === 'string';
const WORKER_URL = new URL('./parallel-worker.mjs', import.meta.url);
/**
 * Largest result array kept for reuse between calls (by a worker, and by the main thread for the
 * worker it goes back to): bounds the memory an idle pool holds. 4 MB. Internal: exported for
 * parallel-worker.mjs only (not in parallel.d.ts).
 */
export const SPARE_MAX_VALUES = 1 << 19;

function cancelled() {
  return new AttnflowError('E_CANCELLED', 'the computation was cancelled');
}

/** Whether workers can share a counter: SharedArrayBuffer exists and may be posted. */
function canShareMemory() {
  return typeof SharedArrayBuffer === 'function' && (IS_NODE || globalThis.crossOriginIsolated === true);
}

/** min(2, number of hardware threads), at least 1. */
async function defaultWorkers() {
  let threads = 1;
  if (IS_NODE) {
    const os = await import('node:os');
    threads = os.availableParallelism?.() ?? os.cpus().length;
  } else if (typeof navigator === 'object') {
    threads = navigator.hardwareConcurrency ?? 1;
  }
  return Math.max(1, Math.min(2, threads));
}

/** A worker with one interface for both environments: post, terminate, and one listener. */
async function spawnWorker(listener) {
  if (IS_NODE) {
    const { Worker } = await import('node:worker_threads');
    const worker = new Worker(WORKER_URL);
    let ended = false;
    worker.on('message', (message) => listener(message));
    worker.on('error', (error) => listener({ type: 'error', code: error?.code?.startsWith?.('E_') ? error.code : null, message: `worker failed: ${error?.message ?? error}` }));
    worker.on('exit', (code) => {
      if (!ended) listener({ type: 'error', code: null, message: `worker exited unexpectedly (code ${code})` });
    });
    return {
      post: (message, transfer) => worker.postMessage(message, transfer),
      terminate: () => { ended = true; worker.terminate(); },
      // An idle pool must not keep Node alive if its owner forgets close().
      hold: (busy) => (busy ? worker.ref() : worker.unref()),
    };
  }
  const worker = new Worker(WORKER_URL, { type: 'module' });
  worker.onmessage = (event) => listener(event.data);
  worker.onerror = (event) => {
    event.preventDefault?.();
    listener({ type: 'error', code: null, message: `worker failed: ${event.message ?? 'could not start (is parallel-worker.mjs served?)'}` });
  };
  worker.onmessageerror = () => listener({ type: 'error', code: null, message: 'worker message could not be read' });
  return {
    post: (message, transfer) => worker.postMessage(message, transfer ?? []),
    terminate: () => worker.terminate(),
    hold: () => {},
  };
}

const isBlob = (x) => typeof Blob !== 'undefined' && x instanceof Blob;

function toBytes(bytes) {
  if (bytes instanceof Uint8Array) return bytes;
  if (bytes instanceof ArrayBuffer || (typeof SharedArrayBuffer !== 'undefined' && bytes instanceof SharedArrayBuffer)) {
    return new Uint8Array(bytes);
  }
  return fail('E_INPUT', 'input.bytes must be a Uint8Array, an ArrayBuffer or a Blob (the raw bytes of the file)');
}

/**
 * What each worker is sent to load. A file path (Node) or a Blob (browser) is read by each
 * worker itself, a layer at a time as it fuses the heads, so no thread holds the whole file.
 * Bytes: in Node one SharedArrayBuffer read by every worker (copied into one once unless it
 * already is one); in a browser a copy per worker, transferred (a shared buffer needs cross-origin
 * isolation, and TextDecoder refuses shared views there).
 */
async function loadMessages(input, count) {
  const each = (message) => Array.from({ length: count }, () => ({ message, transfer: [] }));
  if (input.path !== undefined && input.bytes !== undefined) fail('E_INPUT', 'input has both bytes and path: give one');
  if (input.path !== undefined) {
    if (!IS_NODE || typeof input.path !== 'string') fail('E_INPUT', 'input.path must be a file path, and only in Node (in a browser pass a File as input.bytes)');
    return each({ path: input.path });
  }
  if (isBlob(input.bytes) && !IS_NODE) return each({ bytes: input.bytes });  // a handle: cheap to post
  const bytes = isBlob(input.bytes) ? new Uint8Array(await input.bytes.arrayBuffer()) : toBytes(input.bytes);
  if (IS_NODE) {
    let shared = bytes;
    if (!(bytes.buffer instanceof SharedArrayBuffer)) {
      shared = new Uint8Array(new SharedArrayBuffer(bytes.byteLength));
      shared.set(bytes);
    }
    return each({ bytes: shared });
  }
  return Array.from({ length: count }, () => {
    const copy = bytes.slice();
    return { message: { bytes: copy }, transfer: [copy.buffer] };
  });
}

/** peers[w][p]: worker w's end of a channel to worker p (null for p = w). */
function peerChannels(count) {
  const peers = Array.from({ length: count }, () => new Array(count).fill(null));
  for (let a = 0; a < count; a++) {
    for (let b = a + 1; b < count; b++) {
      const { port1, port2 } = new MessageChannel();
      peers[a][b] = port1;
      peers[b][a] = port2;
    }
  }
  return peers;
}

/**
 * The tasks of a resolved flow computation, as {layers, rows, claims} in dispatch order: with
 * claims, one per worker, each the whole request, whose units the workers claim at run time.
 */
function splitWork(method, { layers, rows }, workers, claims) {
  if (method !== 'flow' || workers === 1 || (rows.length === 1 && layers.length === 1)) return [{ layers, rows }];
  if (rows.length === 1) return [...layers].sort((a, b) => b - a).map((layer) => ({ layers: [layer], rows }));
  // The last worker claims from the end: see ParallelAttention's #compute.
  if (claims) return Array.from({ length: workers }, (_, w) => ({ layers, rows, claims, fromEnd: w === workers - 1 }));
  // Dealt like a snake draft: rows 0..W-1 to shares 0..W-1, the next W to shares W-1..0, and so
  // on, so that a cost growing with the row (causal inputs) evens out between the shares.
  const shareOf = (k) => {
    const pass = Math.floor(k / workers);
    return pass % 2 === 0 ? k % workers : workers - 1 - (k % workers);
  };
  return Array.from({ length: Math.min(workers, rows.length) }, (_, w) => ({
    layers, rows: rows.filter((_, k) => shareOf(k) === w),
  }));
}

/**
 * The result of a request whose units the workers claimed: the array of the worker claiming from
 * the front with the most units, with the other workers' rows (n values each) copied in. The
 * worker claiming from the end computed the request with its layers and rows reversed, so its
 * unit u is unit numUnits - 1 - u of the request. The other arrays go back to their workers, to
 * be written again by the next call.
 */
function joinClaimed(parts, n, numUnits) {
  parts.sort((a, b) => (a.fromEnd - b.fromEnd) || (b.units.length - a.units.length));
  const [{ scores }] = parts;
  for (const { slot, scores: part, units, fromEnd } of parts.slice(1)) {
    for (const unit of units) {
      // unit k * rows + q sits at (k * rows + q) * n in a layer-major, then row-major array
      const from = unit * n;
      scores.set(part.subarray(from, from + n), fromEnd ? (numUnits - 1 - unit) * n : from);
    }
    // Sent back with this worker's next task (no message, no wake-up now), unless it is larger
    // than a worker keeps between calls.
    slot.spare = part.length <= SPARE_MAX_VALUES ? part : null;
  }
  return scores;
}

/**
 * Attention data loaded and fused in a pool of workers, ready to compute many times (the
 * parallel twin of FusedAttention). Close it when done to free the workers' memory; an idle pool
 * does not keep Node alive.
 */
export class ParallelAttention {
  #workers;
  #fusion;
  #counter;  // Int32Array [claimed, front, end] on a SharedArrayBuffer, shared with the workers, or null
  #sinkExchange;  // with #counter: {values, arrived} on SharedArrayBuffers, where parts meet their sink values
  #closed = false;
  #busy = Promise.resolve();
  #endRunning = null;  // ends the running compute with an error (close() during a compute)
  #nextId = 0;  // task ids are unique over the pool's life, so a late message is never mistaken

  constructor(workers, summary, fusion, balance, counter) {
    this.#workers = workers;
    this.#fusion = fusion;
    this.#counter = counter;
    this.#sinkExchange = counter && {
      values: new Float64Array(new SharedArrayBuffer(8 * summary.numTokens)),
      arrived: new Int32Array(new SharedArrayBuffer(4)),
    };
    this.balance = balance;
    this.tokens = summary.tokens;
    this.numLayers = summary.numLayers;
    this.numHeads = summary.numHeads;
    this.numTokens = summary.numTokens;
    this.warnings = summary.warnings;
    this.workerCount = workers.length;
  }

  /**
   * Starts the workers and has each load `input.bytes` or `input.path` and fuse the heads. Rejects with the
   * loader's AttnflowError (same code and message) if the input is bad, and with E_OPTION if a
   * worker cannot be started here.
   */
  static async open(input, options = {}) {
    if (!input || typeof input !== 'object') fail('E_INPUT', 'input must be {bytes or path, name?, batch?, tokens?}');
    checkCallOptions(options);
    // A compute's options are accepted too (ComputeOptions extends the fusion's), as computeParallel
    // and FusedAttention.create take them, so one object can serve both.
    checkKnownOptions(options, ['workers', 'prepare', 'balance', ...PARALLEL_COMPUTE_OPTIONS], 'ParallelAttention.open');
    const count = options.workers ?? await defaultWorkers();
    checkWorkerCount(count);
    const { signal } = options;
    if (signal?.aborted) throw cancelled();
    const fusion = { fusion: options.fusion ?? 'mean', heads: options.heads ?? null };
    const prepare = options.prepare ?? null;
    const balance = options.balance ?? (canShareMemory() ? 'dynamic' : 'static');
    if (balance !== 'dynamic' && balance !== 'static') {
      fail('E_OPTION', `balance must be 'dynamic' or 'static' (got ${JSON.stringify(options.balance)})`);
    }
    if (balance === 'dynamic' && !canShareMemory()) {
      fail('E_OPTION', "balance 'dynamic' needs a SharedArrayBuffer, which a page has only when cross-origin isolated (COOP and COEP headers); use 'static'");
    }
    // One worker has nothing to balance.
    const counter = balance === 'dynamic' && count > 1 ? new Int32Array(new SharedArrayBuffer(12)) : null;
    const messages = await loadMessages(input, count);
    // An abort before the listener below is added (during the awaits above) is seen here.
    if (signal?.aborted) throw cancelled();
    const slots = [];
    let onAbort;
    try {
      return await new Promise((resolve, reject) => {
        let ready = 0;
        let summary = null;
        let settled = false;
        const finish = (error) => {
          if (settled) return;
          settled = true;
          if (error) {
            slots.forEach((slot) => slot?.terminate());
            reject(error);
          }
        };
        onAbort = () => finish(cancelled());
        signal?.addEventListener('abort', onAbort);
        const peers = peerChannels(count);
        for (let w = 0; w < count; w++) {
          const slot = { terminate() {}, hold() {}, listener: null };
          slots.push(slot);
          slot.listener = (message) => {
            if (settled) return;
            if (message.type === 'ready') {
              summary ??= message.summary;
              if (++ready === count) {
                settled = true;
                slots.forEach((s) => s.hold(false));
                resolve(new ParallelAttention(slots, summary, fusion, balance, counter));
              }
            } else if (message.type === 'error') {
              finish(message.code ? new AttnflowError(message.code, message.message) : new Error(message.message));
            }
          };
          spawnWorker((message) => {
            // A crash (not tied to a task) is remembered, so a later compute fails instead of waiting.
            if (message.type === 'error' && message.id === undefined) slot.failure ??= message;
            slot.listener(message);
          }).then((worker) => {
            slot.post = worker.post;
            slot.terminate = worker.terminate;
            slot.hold = worker.hold;
            if (settled) { worker.terminate(); return; }
            const { message, transfer } = messages[w];
            worker.post({
              type: 'load', ...message, name: input.name, batch: input.batch, tokens: input.tokens, ...fusion,
              prepare, peers: peers[w], counter,
            }, [...transfer, ...peers[w].filter(Boolean)]);
          }, (error) => finish(new AttnflowError('E_OPTION', `cannot start a worker here: ${error?.message ?? error}`)));
        }
      });
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
  }

  /**
   * Like FusedAttention.compute, spread over the workers; resolves with a Result of the same
   * shape. options.signal (AbortSignal) or onProgress returning false cancels: the workers are
   * terminated (this pool is closed) and the promise rejects with E_CANCELLED.
   */
  compute(method, options = {}) {
    const run = this.#busy.then(() => this.#compute(method, options));
    this.#busy = run.catch(() => {});
    return run;
  }

  async #compute(method, options) {
    if (this.#closed) fail('E_OPTION', 'this ParallelAttention has been closed');
    const resolved = resolveCompute(method, options, this);  // checks the options object first
    if (options.into !== undefined) fail('E_OPTION', 'into works with FusedAttention.compute only: the workers cannot write into memory of this thread');
    checkKnownOptions(options, PARALLEL_COMPUTE_OPTIONS, 'ParallelAttention.compute');
    checkSameFusion(options, this.#fusion, this.numHeads);
    const { alpha, discard, layers, rows, normalize, receptiveField } = resolved;
    const n = this.numTokens;
    const tasks = splitWork(method, resolved, this.#workers.length, this.#counter !== null);
    const claims = Boolean(tasks[0].claims);
    // Parts of rows over the same layers, one per worker, share the flow certificate's per-sink
    // work: worker w computes the sink values of slice w and sends it to the others.
    const sharesSinks = method === 'flow' && tasks.length > 1 && tasks.every((task) => task.layers === layers);
    if (claims) {
      this.#counter.fill(0);
      Atomics.store(this.#sinkExchange.arrived, 0, 0);
    }
    const firstId = this.#nextId;
    this.#nextId += tasks.length;
    const total = layers.length * rows.length * n;
    const shareDone = new Float64Array(tasks.length);
    const { signal, onProgress } = options;
    if (signal?.aborted) {
      this.close();
      throw cancelled();
    }
    const failed = this.#workers.find((slot) => slot.failure);
    if (failed) {
      this.close();
      throw new Error(`a worker of this pool has failed: ${failed.failure.message}`);
    }

    let onAbort;
    try {
      return await new Promise((resolve, reject) => {
        let next = 0;
        let finished = 0;
        let settled = false;
        let scores;  // allocated at the first result, not before the workers have their tasks
        const claimed = [];  // with claims: per worker, {slot, scores, units}
        this.#workers.forEach((slot) => slot.hold(true));
        const finish = (error) => {
          if (settled) return;
          settled = true;
          this.#endRunning = null;
          this.#workers.forEach((slot) => slot.hold(false));
          if (error) {
            this.close();
            reject(error);
            return;
          }
          if (claims) scores = joinClaimed(claimed, n, layers.length * rows.length);
          try {
            if (onProgress && method === 'flow') onProgress(total, total);
          } catch (callbackError) {
            reject(callbackError);  // as FusedAttention.compute: the callback's error is the call's
            return;
          }
          resolve(new Result({
            method, tokens: this.tokens, layers, rows, scores,
            options: { ...this.#fusion, alpha, discard, layers, rows, normalize, receptiveField },
          }));
        };
        onAbort = () => finish(cancelled());
        signal?.addEventListener('abort', onAbort);
        this.#endRunning = finish;

        // Called from a worker's message listener: a callback that throws must end this call
        // (stopping the workers, as a cancel does), not escape as an uncaught exception.
        const report = () => {
          if (!onProgress) return;
          let done = 0;
          for (let t = 0; t < tasks.length; t++) done += shareDone[t];
          let goOn;
          try {
            goOn = onProgress(Math.min(total - 1, Math.floor(done)), total);
          } catch (callbackError) {
            finish(callbackError);
            return;
          }
          if (goOn === false) finish(cancelled());
        };
        // Where a dealt share's rows go in the result (claimed units carry their own index).
        const layerIndex = claims ? null : new Map(layers.map((layer, k) => [layer, k]));
        const rowIndex = claims ? null : new Map(rows.map((row, k) => [row, k]));
        const dispatch = (slot) => {
          if (next >= tasks.length) return;
          const t = next++;
          const id = firstId + t;
          const task = tasks[t];
          slot.listener = (message) => {
            if (settled) return;
            if (message.type === 'error') {
              finish(message.code ? new AttnflowError(message.code, message.message) : new Error(message.message));
            } else if (message.id !== id) {
              // a late message of an earlier task: ignore
            } else if (message.type === 'progress') {
              // With claims, a worker counts its own units against the whole request.
              shareDone[t] = (task.layers.length * task.rows.length * n * message.done) / message.total;
              report();
            } else if (message.type === 'result' && claims) {
              claimed.push({ slot, scores: message.scores, units: message.units, fromEnd: task.fromEnd });
              if (++finished === tasks.length) finish(null);
            } else if (message.type === 'result') {
              const { scores: part } = message;
              scores ??= new Float64Array(layers.length * rows.length * n);
              task.layers.forEach((layer, tl) => {
                const l = layerIndex.get(layer);
                task.rows.forEach((row, tr) => {
                  const from = (tl * task.rows.length + tr) * n;
                  scores.set(part.subarray(from, from + n), (l * rows.length + rowIndex.get(row)) * n);
                });
              });
              shareDone[t] = task.layers.length * task.rows.length * n;
              if (++finished === tasks.length) finish(null);
              else dispatch(slot);
            }
          };
          const sinks = sharesSinks
            ? {
              exchange: firstId, part: t, parts: tasks.length, requestRows: rows.length,
              first: Math.floor((n * t) / tasks.length), last: Math.floor((n * (t + 1)) / tasks.length),
              shared: claims ? this.#sinkExchange : undefined,
            }
            : undefined;
          const reversed = (list) => (task.fromEnd ? [...list].reverse() : list);
          const { spare } = slot;
          slot.spare = null;
          slot.post({
            type: 'compute', id, method,
            options: { alpha, discard, layers: reversed(task.layers), rows: reversed(task.rows), normalize, receptiveField },
            sinks, claims, fromEnd: Boolean(task.fromEnd), progress: Boolean(onProgress), spare,
          }, spare ? [spare.buffer] : []);
        };
        // With sinks shared, task t goes to worker t (its peers expect it there); tasks.length
        // is at most the number of workers then.
        this.#workers.forEach(dispatch);
      });
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
  }

  /**
   * Terminates the workers. A compute still running rejects with E_CANCELLED, and later ones with
   * E_OPTION. Safe to call more than once.
   */
  close() {
    if (this.#closed) return;
    this.#closed = true;
    for (const slot of this.#workers) slot.terminate();
    this.#endRunning?.(new AttnflowError('E_CANCELLED', 'the ParallelAttention was closed during the computation'));
  }
}

/**
 * One-shot parallel computation: start the workers, load and fuse in each, compute, close.
 * `input` = {bytes or path, name?, batch?, tokens?} (a file loadAttention reads).
 */
export async function computeParallel(input, method, options = {}) {
  const pool = await ParallelAttention.open(input, options);
  const { workers, balance, prepare, ...computeOptions } = options;  // the open's own, which compute refuses
  try {
    return await pool.compute(method, computeOptions);
  } finally {
    pool.close();
  }
}
