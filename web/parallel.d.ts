// attnflow/web/parallel.mjs: long flow computations split across worker_threads (Node) or module
// Web Workers (browser). Results are bitwise those of FusedAttention.compute.
import type { ComputeOptions, FusionOptions, Method, Result } from './index.js';

/** A file `loadAttention` reads, as its bytes or (Node) its path, with its load options. */
export type ParallelInput = ({
  /** Node: shared with every worker through one SharedArrayBuffer (copied into one unless it is
   *  one already; a Blob is read into one). Browser: a Blob (e.g. a File) is posted to every
   *  worker, which reads it a layer at a time; other bytes are copied once per worker. */
  bytes: Uint8Array | ArrayBuffer | SharedArrayBuffer | Blob;
  path?: undefined;
} | {
  /** Node only: every worker reads the file itself, a layer at a time, so no thread holds it whole. */
  path: string;
  bytes?: undefined;
}) & ParallelLoadOptions;

export interface ParallelLoadOptions {
  /** File name, used in messages only (e.g. "x.npy"): the format is read from the content. */
  name?: string;
  /** Batch item of a Hugging Face [L][B][H][n][n] layout. */
  batch?: number;
  /** Token strings, for formats that carry none. */
  tokens?: string[];
}

export interface ParallelOpenOptions extends FusionOptions {
  /** Worker count, 1..64; default min(2, hardware threads). */
  workers?: number;
  /** Aborting rejects with AttnflowError E_CANCELLED and terminates the workers. */
  signal?: AbortSignal;
  /** Each worker builds the flow graph for this alpha and discard, and the exact solvers of
   *  `layer` for requests of `rows`, while opening (FusedAttention.prepare), instead of at the
   *  first compute with them. */
  prepare?: { alpha?: number; discard?: number; layer?: number | 'last'; rows?: number[] | 'all' };
  /**
   * How a flow over several rows is shared out. 'dynamic': every worker takes the whole request
   * and claims (layer, row) units one at a time from counters the workers share (the last
   * worker from the end of the request, the others from the front), so rows of
   * uneven cost (a trained model's attention sink, a causal mask) balance themselves; it needs a
   * SharedArrayBuffer, which Node always has and a page only when cross-origin isolated (served
   * with COOP and COEP headers). 'static': the rows are dealt ahead in snake order. Default:
   * 'dynamic' where available, else 'static'; asking for 'dynamic' where it is not available
   * rejects with E_OPTION. The numbers are bitwise the same either way.
   */
  balance?: 'dynamic' | 'static';
}

export interface ParallelComputeOptions extends ComputeOptions {
  /** Aborting rejects with AttnflowError E_CANCELLED and terminates the workers (the pool closes). */
  signal?: AbortSignal;
  /**
   * Aggregated over the workers, in max-flow problems (layers x rows x tokens). Called from the
   * main thread as workers report (throttled), and with done === total once at the end. Returning
   * false cancels like `signal`. If it throws, the call rejects with that error; while the workers
   * compute, they are also terminated, as on a cancel (the pool closes: a running computation
   * cannot be interrupted otherwise); at the final report (done === total) the pool stays open.
   */
  onProgress?: (done: number, total: number) => boolean | void;
}

/**
 * A pool of workers that each loaded the input and fused its heads once; compute many times,
 * then close(). Flow work over several rows is split by (layer, row) units, claimed at run time
 * or dealt ahead (see `balance`); a single row over several layers is split by layers. Raw and
 * rollout run whole on one worker. Computations on one pool run one after another.
 */
export class ParallelAttention {
  /**
   * Rejects with the loader's AttnflowError (same code and message) for a bad input, and with
   * E_OPTION where no worker can be started (e.g. Node's permission model without --allow-worker).
   */
  static open(input: ParallelInput, options?: ParallelOpenOptions): Promise<ParallelAttention>;
  readonly tokens: string[];
  readonly numLayers: number;
  /** 0 for pre-fused input. */
  readonly numHeads: number;
  readonly numTokens: number;
  readonly warnings: string[];
  readonly workerCount: number;
  /** The balance in use (see ParallelOpenOptions.balance). */
  readonly balance: 'dynamic' | 'static';
  compute(method: Method, options?: ParallelComputeOptions): Promise<Result>;
  /** Terminates the workers, freeing their memory. A compute still running rejects with
   *  E_CANCELLED, later ones with E_OPTION. Idempotent. (In Node an idle pool does not keep the
   *  process alive; a running computation does.) */
  close(): void;
}

/** One-shot: open a pool, compute, close. Options are those of open() and compute() together. */
export function computeParallel(
  input: ParallelInput,
  method: Method,
  options?: ParallelOpenOptions & ParallelComputeOptions,
): Promise<Result>;
