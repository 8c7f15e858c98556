// AttnflowWorker: the main-thread side of web/worker.mjs, a promise-based API that keeps every
// computation off the page's thread (typed in client.d.ts). The explorer page uses it, and so can
// any embedder:
//
//   import { AttnflowWorker } from 'attnflow/client';   // or '../web/client.mjs'
//   const w = new AttnflowWorker();
//   const summary = await w.load(file);                  // a File/Blob is read inside the worker
//   const flow = await w.compute('flow', { rows: [0], onProgress: (d, t) => bar.value = d / t });
//   w.cancel();                                          // rejects pending work with E_CANCELLED
//
// Cancel design: a running WebAssembly computation is synchronous inside the worker and cannot be
// interrupted by a message (a shared-memory flag would need cross-origin isolation, which plain
// static hosting does not give). So cancel() terminates the worker, rejects every pending request
// with an AttnflowError E_CANCELLED, and starts a fresh worker at once, re-sending the last input
// that loaded successfully and its fusion settings. The input is kept on this side as a Blob (a
// File is only a handle: no bytes are read or copied on the main thread), so a restart re-reads it
// inside the new worker. Requests are answered in the order they were made.
import { AttnflowError } from './errors.mjs';
import { checkCallOptions, checkKnownOptions, checkOptionsObject } from './options.mjs';
import { Result } from './result.mjs';

export { AttnflowError } from './errors.mjs';

const CODES = new Set(['E_FORMAT', 'E_INPUT', 'E_OPTION', 'E_TOO_LARGE', 'E_CANCELLED']);

function toError(code, message) {
  if (CODES.has(code)) return new AttnflowError(code, message);
  const error = new Error(message);
  error.name = 'AttnflowWorkerError';
  return error;
}

export class AttnflowWorker {
  #url;
  #worker = null;
  #pending = new Map();  // id -> {resolve, reject, onProgress}
  #nextId = 1;
  #committed = null;     // {source, name, batch, tokens}: the last input that loaded
  // The fusion settings as the worker will have them once every request sent so far is done (it
  // answers in order, so a request sent now sees these), and as it has them after the last
  // answered load or fuse that succeeded (what a failed one leaves in place).
  #fusion = { fusion: 'mean', heads: null };
  #appliedFusion = this.#fusion;
  #summary = null;
  #terminated = false;
  #failed = false;       // the worker failed to start or crashed: the next request starts another

  /** @param {{workerUrl?: string | URL}} [options] */
  constructor(options = {}) {
    this.#url = options.workerUrl ?? new URL('./worker.mjs', import.meta.url);
    this.#spawn();
  }

  /** True while a request is waiting for the worker. */
  get busy() {
    for (const entry of this.#pending.values()) if (!entry.internal) return true;
    return false;
  }

  /** The summary of the loaded input, or null. */
  get summary() {
    return this.#summary;
  }

  #spawn() {
    const worker = new Worker(this.#url, { type: 'module' });
    worker.onmessage = ({ data: msg }) => {
      const entry = this.#pending.get(msg.id);
      if (!entry) return;
      if (msg.type === 'progress') {
        try {
          entry.onProgress?.(msg.done, msg.total);
        } catch (error) {
          // As FusedAttention.compute does: the callback's error ends the call. The worker's
          // answer to it is then dropped (no entry), and later requests queue behind it.
          this.#pending.delete(msg.id);
          entry.reject(error);
        }
        return;
      }
      this.#pending.delete(msg.id);
      if (msg.type === 'result') entry.resolve(msg.value);
      else entry.reject(toError(msg.code, msg.message));
    };
    worker.onerror = (event) => {
      // The worker script itself failed: it did not load (a wrong workerUrl, a server or a CSP
      // that refuses it, a restart after a cancel while offline) or threw outside a request.
      // Messages posted to it would never be answered, so the next request starts a new one.
      event.preventDefault?.();
      worker.terminate();
      this.#failed = true;
      const error = new AttnflowError('E_OPTION', `the attnflow worker (${this.#url}) failed: ` +
        `${event.message || 'it could not be started'}; check that the URL serves web/worker.mjs as ` +
        "JavaScript and that the page's Content-Security-Policy allows it as a worker");
      for (const entry of this.#pending.values()) entry.reject(error);
      this.#pending.clear();
    };
    this.#worker = worker;
    this.#failed = false;
    if (this.#committed) {
      // Restore the state of the worker we replaced, with the fusion its pending requests were
      // sent for. Nobody awaits this answer: a failure (e.g. the file changed on disk) is what
      // the worker answers the next requests with.
      const fusion = this.#fusion;
      this.#post({ type: 'load', ...this.#committed, ...fusion }, { internal: true })
        .then(() => { this.#appliedFusion = fusion; }, () => {});
    }
  }

  #post(msg, { transfer = [], onProgress, internal = false } = {}) {
    if (this.#terminated) return Promise.reject(new AttnflowError('E_CANCELLED', 'this AttnflowWorker was terminated'));
    if (this.#failed) this.#spawn();
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject, onProgress, internal });
      this.#worker.postMessage({ ...msg, id }, transfer);
    });
  }

  /**
   * Loads an input in the worker (any format loadAttention reads) and fuses its heads.
   * A Blob/File is passed by reference and read in the worker; other inputs are kept as a Blob so
   * that the worker can be restarted after a cancel.
   */
  async load(input, options = {}) {
    checkOptionsObject(options);
    checkKnownOptions(options, ['name', 'batch', 'tokens', 'fusion', 'heads'], 'AttnflowWorker.load');
    let source = input;
    if (typeof input === 'string' || input instanceof ArrayBuffer || ArrayBuffer.isView(input)) {
      source = new Blob([input]);  // one copy, so the bytes survive worker restarts
    } else if (!(input instanceof Blob)) {
      source = new Blob([JSON.stringify(input)], { type: 'application/json' });
      options = { name: 'input.json', ...options };
    }
    const load = { source, name: options.name ?? input?.name, batch: options.batch, tokens: options.tokens };
    const fusion = { fusion: options.fusion ?? 'mean', heads: options.heads ?? null };
    const summary = await this.#changeFusion(fusion, { type: 'load', ...load, ...fusion });
    this.#committed = load;
    this.#summary = summary;
    return summary;
  }

  /** Re-fuses the heads of the loaded input (fusion 'mean'|'max'|'min', heads null = all). */
  async fuse(options = {}) {
    checkOptionsObject(options);
    checkKnownOptions(options, ['fusion', 'heads'], 'AttnflowWorker.fuse');
    const fusion = { fusion: options.fusion ?? 'mean', heads: options.heads ?? null };
    await this.#changeFusion(fusion, { type: 'fuse', ...fusion });
  }

  /**
   * Sends a request that sets the fusion. Requests sent after it see the new fusion from the moment
   * it is sent (a page that compared with the fusion of the last answered request skipped a fuse
   * it needed while another was still queued, and showed scores of the other fusion).
   */
  async #changeFusion(fusion, msg) {
    this.#fusion = fusion;
    try {
      const value = await this.#post(msg);
      this.#appliedFusion = fusion;
      return value;
    } catch (error) {
      // The worker kept the fusion it had, unless a later request changed it again or a cancel
      // restarted the worker with this one.
      if (this.#fusion === fusion && error?.code !== 'E_CANCELLED') this.#fusion = this.#appliedFusion;
      throw error;
    }
  }

  /** The fusion settings that a request sent now is computed with. */
  get fusion() {
    return { ...this.#fusion };
  }

  /** Computes 'raw' | 'rollout' | 'flow'; options as the package's ComputeOptions. */
  async compute(method, options = {}) {
    checkCallOptions(options);
    if (options.into !== undefined) {
      throw new AttnflowError('E_OPTION', 'into works with FusedAttention.compute only: a worker cannot write into memory of this thread');
    }
    // The fusion is the one load() or fuse() set; cancel() stops a request (no signal).
    checkKnownOptions(options, ['alpha', 'discard', 'layers', 'rows', 'normalize', 'receptiveField', 'onProgress'],
      'AttnflowWorker.compute');
    const { onProgress, ...rest } = options;
    const value = await this.#post({ type: 'compute', method, options: rest }, { onProgress });
    return new Result({ ...value, tokens: this.#summary?.tokens ?? [] });
  }

  /** The minimum cut of the flow from (layer, row) to input token `token`. */
  async bottleneck(layer, row, token, options = {}) {
    checkOptionsObject(options);
    checkKnownOptions(options, ['alpha', 'discard'], 'AttnflowWorker.bottleneck');
    return this.#post({ type: 'bottleneck', layer, row, token, alpha: options.alpha, discard: options.discard });
  }

  /** The residual-mixed matrix of a 1-based layer, flat n*n row-major. */
  async mixedLayer(layer, options = {}) {
    checkOptionsObject(options);
    checkKnownOptions(options, ['alpha', 'discard'], 'AttnflowWorker.mixedLayer');
    return this.#post({ type: 'mixedLayer', layer, alpha: options.alpha, discard: options.discard });
  }

  /**
   * Cancels all pending requests (they reject with E_CANCELLED) by replacing the worker.
   * Returns false when nothing was pending (then nothing is restarted).
   */
  cancel() {
    if (this.#terminated || !this.busy) return false;
    this.#worker.terminate();
    const error = new AttnflowError('E_CANCELLED', 'the computation was cancelled');
    for (const entry of this.#pending.values()) entry.reject(error);
    this.#pending.clear();
    this.#spawn();
    return true;
  }

  /** Stops the worker for good; pending requests reject with E_CANCELLED. */
  terminate() {
    if (this.#terminated) return;
    this.#worker.terminate();
    const error = new AttnflowError('E_CANCELLED', 'this AttnflowWorker was terminated');
    for (const entry of this.#pending.values()) entry.reject(error);
    this.#pending.clear();
    this.#terminated = true;
  }
}
