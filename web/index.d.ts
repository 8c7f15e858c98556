// attnflow: attention rollout and exact attention flow (Abnar & Zuidema, ACL 2020) in WebAssembly.
//
// Conventions everywhere: layers shown to users are 1-based (layer L is the last block); heads,
// rows (target / attending tokens) and token indices are 0-based. Score arrays are float64.

/** The three methods of the paper. `raw` is fused attention (no residual), row-normalised. */
export type Method = 'raw' | 'rollout' | 'flow';

/** How the heads of a layer are combined (then rows are re-normalised to sum 1). */
export type Fusion = 'mean' | 'max' | 'min';

/** Stable codes carried by every error this package throws. */
export type ErrorCode =
  | 'E_FORMAT'     // the bytes are not a file format attnflow reads (or are truncated)
  | 'E_INPUT'      // the data is malformed: ragged, NaN/Inf, negative, wrong depth, token count...
  | 'E_OPTION'     // an option is invalid (alpha out of [0,1], head or row out of range, a name
                   // the call does not have, such as `layer` for `layers`...)
  | 'E_TOO_LARGE'  // the input exceeds what a wasm32 module can hold
  | 'E_CANCELLED'; // the computation was cancelled

export class AttnflowError extends Error {
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string);
}

/** Attention weights parsed and validated by `loadAttention`. */
export interface AttentionData {
  /** n token strings (untrusted text: never insert them as HTML). */
  readonly tokens: string[];
  readonly numLayers: number;
  /** Heads per layer; 0 when the file holds pre-fused [L][n][n] matrices. */
  readonly numHeads: number;
  readonly numTokens: number;
  /** True for pre-fused input (head options then do not apply). */
  readonly fused: boolean;
  /** The format that was read: 'json', 'hf-json', 'fused-json', 'npy', 'npz', 'safetensors', 'pytorch'. */
  readonly format: string;
  /** The file's optional "meta" object, as read. */
  readonly meta?: Record<string, unknown>;
  /** Non-fatal findings, e.g. rows far from summing to 1. */
  readonly warnings: string[];
  /**
   * Layer `l` (0-based) as one flat array: numHeads*n*n values, head-major then row-major
   * (W[h][i][j] at (h*n + i)*n + j), or n*n when `fused`. May be computed on demand (binary
   * formats stay in their compact form until asked); throws AttnflowError E_INPUT naming layer,
   * head and row for NaN/Inf/negative values.
   */
  layer(l: number): Float64Array | Float32Array;
}

export interface LoadOptions {
  /** File name, used in messages only (e.g. "x.npy"): the format is read from the content. */
  name?: string;
  /** Batch item to take from a Hugging Face layout [L][B][H][n][n] (default 0). */
  batch?: number;
  /** Token strings, for formats that carry none (.npy). Default: "0", "1", ... */
  tokens?: string[];
}

/**
 * Reads attention data: canonical JSON {tokens, attentions: [L][H][n][n], meta?}, the Hugging
 * Face layout [L][B][H][n][n], pre-fused [L][n][n], gzip-compressed JSON, .npy (float16/32/64,
 * shape [L,H,n,n], [L,B,H,n,n] or [L,n,n]), .npz (arrays "attentions" and optional "tokens"),
 * safetensors (tensor "attentions", tokens in the header's __metadata__.tokens as a JSON string)
 * and PyTorch .pt (torch.save of the attentions, read as data only), gzip of any of these.
 * A parsed JSON object may be passed directly. A Blob or File given in a worker is read a slice
 * at a time (FileReaderSync): a binary tensor's layers are read when layer(l) asks for them, so it
 * must stay readable (a File changed on disk afterwards makes layer(l) throw E_INPUT); elsewhere a
 * Blob is read whole.
 */
export function loadAttention(
  input: string | ArrayBuffer | Uint8Array | Blob | object,
  options?: LoadOptions,
): Promise<AttentionData>;

/** Loads and compiles the WebAssembly module once; later calls return the same promise. */
export function init(): Promise<void>;

export interface FusionOptions {
  /** Default 'mean'. On pre-fused input there is nothing to fuse: it changes no number and is
   *  only reported back in results' options. */
  fusion?: Fusion;
  /** 0-based heads to fuse; null or omitted = all heads (pre-fused input: E_OPTION if given). */
  heads?: number[] | null;
}

export interface ComputeOptions extends FusionOptions {
  /** Residual weight in [0, 1]: A = rownorm(alpha*F + (1-alpha)*I). Default 0.5. Ignored by raw. */
  alpha?: number;
  /**
   * Rollout and flow: before the residual, set to 0 the floor(discard * n^2) smallest entries of
   * each fused layer (ranked by value rounded to a multiple of 2^-40, so that values equal in
   * exact arithmetic tie, then by row-major position; entry (0, 0) is never discarded), as
   * jacobgil/vit-explain's discard_ratio. In [0, 1); default 0. Raw attention is not affected.
   */
  discard?: number;
  /** 1-based layers to report: 'last' (default), 'all', or a list. */
  layers?: 'last' | 'all' | number[];
  /** 0-based target rows: 'all' (default) or a list. */
  rows?: 'all' | number[];
  /**
   * Flow: divide each row by its sum (default true); false gives raw max-flow values. Rollout:
   * only with receptiveField (rollout rows already sum to 1).
   */
  normalize?: boolean;
  /**
   * Rollout and flow: normalise by receptive field, for causal (decoder) or padded inputs, where
   * early tokens score higher by position alone. Each score is divided by the score the same
   * method gives when every position attends uniformly to the tokens the mask lets it see (same
   * alpha and layer; 0 where that is 0), then rows are re-normalised unless normalize is false.
   * Unnormalised, 1 means "as much as position alone predicts". Raw attention is not affected.
   * Default false. See docs/SEMANTICS.md.
   */
  receptiveField?: boolean;
  /**
   * Flow only: called between max-flow problems; return false to cancel (E_CANCELLED). If it
   * throws, the call rejects with that error. It must not call the same FusedAttention (E_OPTION:
   * the running flow still uses its memory).
   */
  onProgress?: (done: number, total: number) => boolean | void;
  /**
   * Flow only, for splitting one computation by rows over threads: the n sink values of the
   * certificate, joined from FusedAttention.certificateSinks parts, so that they are not computed
   * again for every share. The numbers are the same with or without. They are trusted: values
   * that do not come from certificateSinks with the same options can give wrong numbers.
   */
  sinkValues?: Float64Array;
  /**
   * Flow only, for splitting one computation by rows over threads: the request's certificate
   * source flags from FusedAttention.certificateSources (same options), computed ahead so that a
   * thread can do that work while it waits for the other threads' sink values. The numbers are
   * the same with or without. Trusted like sinkValues.
   */
  sourceFlags?: Uint8Array;
  /**
   * Flow only, for splitting one computation by rows over threads: the row count of the whole
   * request whose rows this call computes a share of (at least rows.length; default
   * rows.length). The core chooses its shortcuts by the request's row count (below 256 tokens
   * its certificate needs at least 8 rows) and a value's last bits depend on the path, so every
   * share passes the whole request's count for its numbers to be the whole request's, bitwise.
   */
  requestRows?: number;
  /**
   * Flow only, for splitting one computation over threads that balance it at run time: compute
   * only the (layer, row) units this function hands out. It is called before each unit and
   * returns the next one, u = k * rows.length + q for (layers[k], rows[q]), each larger than the
   * last, or any number >= layers.length * rows.length when none is left; typically
   * `Atomics.add` on a counter the threads share. The rows of the other units are 0 in the
   * result; onProgress counts this call's units. Numbers are bitwise those of a whole compute.
   */
  claim?: () => number;
  /**
   * FusedAttention.compute only (AttnflowWorker and ParallelAttention refuse it with E_OPTION):
   * write the scores into this array (exactly layers x rows x numTokens long) instead of a new
   * one, which then is the result's `scores`. Lets a caller reuse memory it has already written
   * to: on some machines first writes to fresh memory cost a page fault per 4 KB (0.2 ms per
   * 64 KB in a worker thread on the 2-vCPU VMs measured).
   */
  into?: Float64Array;
}

/** Part of the flow certificate's sink values (see FusedAttention.certificateSinks). */
export interface CertificateSinks {
  /** The certificate's middle layer; 0 when this request uses no certificate (values empty). */
  middleLayer: number;
  /** Sink values for sinks first..last-1. */
  values: Float64Array;
}

/** The options a result was computed with, all defaults filled in. */
export interface ResolvedOptions {
  fusion: Fusion;
  heads: number[] | null;
  alpha: number;
  discard: number;
  layers: number[];
  rows: number[];
  normalize: boolean;
  receptiveField: boolean;
}

/** Scores that carry their own description. */
export interface Result {
  readonly method: Method;
  readonly tokens: string[];
  /** 1-based layers, in the order of `scores`. */
  readonly layers: number[];
  /** 0-based target rows, in the order of `scores`. */
  readonly rows: number[];
  readonly numTokens: number;
  readonly options: ResolvedOptions;
  /** Flat [layers.length][rows.length][numTokens]. */
  readonly scores: Float64Array;
  /** True when (1-based layer, 0-based row) is in this result. */
  has(layer: number, row: number): boolean;
  /** The numTokens scores of target `row` at 1-based `layer` (both must be in the result). */
  scoresFor(layer: number, row: number): Float64Array;
  /** {method, tokens, layers, rows, options, scores: number[][][]}: the CLI's output. */
  toJSON(): {
    method: Method; tokens: string[]; layers: number[]; rows: number[];
    options: ResolvedOptions; scores: number[][][];
  };
}

/** A saturated edge of a minimum cut: from (layer, from) to (layer - 1, to). */
export interface CutEdge { layer: number; from: number; to: number; capacity: number }

/** Where the flow from (layer, row) to input token `token` is decided. */
export interface Bottleneck {
  /** The raw max-flow value, as compute('flow', { normalize: false }) gives it (= total capacity
   *  of `cut`, to ~1e-14). */
  value: number;
  cut: CutEdge[];
  /** 'sink' when the cut is the sink token's own in-edges (the score ignores the layers above),
   *  'source' when it is the target's out-edges, else 'inner'. */
  kind: 'sink' | 'source' | 'inner';
}

/**
 * Heads fused once inside the WebAssembly module; compute any method many times, with any
 * alpha, layers and rows, without re-reading the data. Call dispose() when done.
 */
export class FusedAttention {
  static create(data: AttentionData, options?: FusionOptions): Promise<FusedAttention>;
  readonly tokens: string[];
  readonly numLayers: number;
  readonly numTokens: number;
  compute(method: Method, options?: ComputeOptions): Result;
  /**
   * Where the flow from target `row` at `layer` to input `token` is decided: a minimum cut.
   * After a compute('flow') of that one row alone, at that layer among others (same alpha and
   * discard, and no such compute of another row since), the value comes from it; otherwise the
   * row's flow at that layer is computed again first (~0.1 s at L=24, n=512).
   */
  bottleneck(layer: number, row: number, token: number, options?: { alpha?: number; discard?: number }): Bottleneck;
  /**
   * Builds the flow graph (the residual-mixed layers) for these options now instead of at the
   * first compute with them (rollout and flow use it), and with `layer` (1-based, or 'last'), the
   * exact flow solvers for requests of `rows` there (default one row; many rows also use the
   * flow certificate's two half solvers, ~25 MB each at n = 512), which later flow computes there
   * reuse: lets a caller time a computation apart from preparing its input, as the CLI's --timing
   * does.
   */
  prepare(options?: { alpha?: number; discard?: number; layer?: number | 'last'; rows?: number[] | 'all' }): void;
  /** The residual-mixed matrix A[layer] (1-based) as flat n*n, for drawing the flow graph. */
  mixedLayer(layer: number, options?: { alpha?: number; discard?: number }): Float64Array;
  /**
   * For splitting a flow computation by rows over threads (as web/parallel.mjs does): the sink
   * values of the certificate of a request of requestRows rows, for sinks first..last-1. Each
   * thread computes a part; the joined values go to every share's compute as sinkValues, with
   * requestRows.
   */
  certificateSinks(options: { alpha?: number; discard?: number; layers?: 'last' | 'all' | number[] },
                   requestRows: number, first: number, last: number): CertificateSinks;
  /**
   * For splitting a flow computation by rows over threads: per (layer, row) of these options,
   * layer-major, 1 if that source passes the certificate's source test, else 0 (all 0 when the
   * request uses no certificate). Needs no sink values; pass the result to compute as
   * sourceFlags with the same options (requestRows as for compute).
   */
  certificateSources(options: { alpha?: number; discard?: number; layers?: 'last' | 'all' | number[];
                                rows?: 'all' | number[]; requestRows?: number }): Uint8Array;
  dispose(): void;
}

/** One-shot: fuse, compute, dispose. */
export function compute(data: AttentionData, method: Method, options?: ComputeOptions): Promise<Result>;
