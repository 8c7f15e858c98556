// AttnflowWorker: run attnflow in a module worker (web/worker.mjs) from the page's thread, with
// promises, progress and cancel. Same conventions as index.d.ts: layers 1-based; heads, rows and
// token indices 0-based; scores float64.
import type {
  AttnflowError, Bottleneck, ComputeOptions, Fusion, FusionOptions, LoadOptions, Method, Result,
} from './index.js';

export { AttnflowError } from './index.js';

/** What `load` reports about the input (the AttentionData fields that cross the worker boundary). */
export interface LoadSummary {
  /** n token strings (untrusted text: never insert them as HTML). */
  tokens: string[];
  numLayers: number;
  /** 0 for pre-fused input. */
  numHeads: number;
  numTokens: number;
  fused: boolean;
  format: string;
  warnings: string[];
  meta?: Record<string, unknown>;
  /**
   * True when rows 0, 1, 2 and n/2 of layers 1 and L put no weight above the diagonal (with the
   * load's fusion): a decoder's causal mask. Decided in the worker as part of the load.
   */
  causal: boolean;
}

/** Scores computed in the worker: the package's Result, unchanged. */
export type WorkerResult = Result;

/** A compute's options in a worker: the fusion is load()'s or fuse()'s, and the options that
 *  coordinate threads or write into this thread's memory do not apply (E_OPTION at run time). */
export interface WorkerComputeOptions extends Omit<ComputeOptions, 'onProgress' | keyof FusionOptions |
  'sinkValues' | 'sourceFlags' | 'requestRows' | 'claim' | 'into'> {
  /** Flow only: progress reports from the worker, at most every 50 ms. Use cancel() to stop. */
  onProgress?: (done: number, total: number) => void;
}

export interface WorkerLoadOptions extends LoadOptions, FusionOptions {}

/**
 * One worker holding one loaded input with its heads fused. Requests run in order. Cancel
 * terminates the worker (a running WebAssembly call cannot be interrupted otherwise) and starts a
 * new one with the last loaded input and fusion re-sent; pending requests reject with an
 * AttnflowError of code E_CANCELLED. A worker that cannot be started (a wrong workerUrl, a server
 * or CSP that refuses the script, a restart while offline) rejects the requests sent to it with
 * E_OPTION; the next request starts another.
 */
export class AttnflowWorker {
  /** workerUrl defaults to new URL('./worker.mjs', import.meta.url) of client.mjs. */
  constructor(options?: { workerUrl?: string | URL });
  /** True while a request made by the caller is pending. */
  readonly busy: boolean;
  /** The summary of the last input that loaded, or null. */
  readonly summary: LoadSummary | null;
  /** The fusion settings that a request sent now is computed with (a fuse still queued counts). */
  readonly fusion: { fusion: Fusion; heads: number[] | null };
  /**
   * Loads and fuses an input. A Blob or File is passed by reference and read inside the worker
   * (no copy on the main thread: use this for large files). Strings, buffers and parsed objects
   * are copied into a Blob once, so they survive a restart. On failure the previous input stays
   * loaded.
   */
  load(input: Blob | ArrayBuffer | ArrayBufferView | string | object, options?: WorkerLoadOptions): Promise<LoadSummary>;
  /** Re-fuses the heads of the loaded input. */
  fuse(options?: FusionOptions): Promise<void>;
  compute(method: Method, options?: WorkerComputeOptions): Promise<WorkerResult>;
  bottleneck(layer: number, row: number, token: number, options?: { alpha?: number; discard?: number }): Promise<Bottleneck>;
  /** The residual-mixed matrix A[layer] (1-based) as flat n*n row-major. */
  mixedLayer(layer: number, options?: { alpha?: number; discard?: number }): Promise<Float64Array>;
  /** Rejects all pending requests with E_CANCELLED and restarts the worker; false if idle. */
  cancel(): boolean;
  /** Stops the worker for good. */
  terminate(): void;
}
