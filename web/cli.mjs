#!/usr/bin/env node
// attnflow CLI: the same WebAssembly module as the browser, run in Node.
//   attnflow <raw|rollout|flow> FILE|- [--fusion mean|max|min] [--heads 0,3,5] [--alpha A]
//            [--layers last|all|1,4,12] [--rows all|0,5] [--unnormalized] [--receptive-field]
//            [--batch B] [--timing] [--workers N]
// Prints one JSON object on stdout. A user error prints one line on stderr and exits with 2.
import { basename } from 'node:path';
import { parseArgs } from 'node:util';
import { setFlagsFromString } from 'node:v8';

// The start of load_ms: the package's import below is part of it.
const started = performance.now();
// --timing compiles up front, in load_ms, what V8 would otherwise compile during the computation,
// so that compute_ms is the method alone: the WebAssembly module with the optimising tier, not in
// baseline code while V8 tiers up lazily (init() compiles it, so these flags must come first); and
// the package's JavaScript, whose functions V8 would compile at their first call: ~0.8 ms of a
// fresh process's first flow call (a 3-token flow: 0.80-1.40 ms before, 0.22-0.60 ms after; row 0
// of the flat L=12, n=128 input: medians 5.0 and 4.1 ms; 10 processes each, alternating). A
// module's functions are compiled eagerly only if the flag is set when the module is parsed, hence
// the dynamic imports. Only --timing does this: the whole module through the optimising tier takes
// ~0.3 s, more than V8's tiering loses, so without it a call ends sooner (one row of a realistic
// L=12, n=128 file in 0.36 s against 0.63 s, a 14-token one in 0.27 against 0.59 s, BERT-base's
// every row of every layer in 2.3 against 2.6 s: medians of 8 alternating pairs of processes,
// 2026-12-07).
const early = parseArgs({
  args: process.argv.slice(2),
  options: { timing: { type: 'boolean' } },
  strict: false,
  allowPositionals: true,
});
if (early.values.timing === true) {
  setFlagsFromString('--no-lazy');
  setFlagsFromString('--no-liftoff');
  setFlagsFromString('--no-wasm-lazy-compilation');
}
const { AttnflowError, FusedAttention, init, loadAttention } = await import('./index.mjs');
const { openAttentionFile } = await import('./node.mjs');
const { DEFAULTS, METHODS, checkWorkerCount, parseListOption, resolveCompute } = await import('./options.mjs');
const { fail } = await import('./errors.mjs');
const { streamCollector } = await import('./loaders/index.mjs');

const USAGE = `usage: attnflow <raw|rollout|flow> FILE|- [options]

Reads attention weights (JSON [L][H][n][n] with tokens, Hugging Face [L][B][H][n][n], pre-fused
[L][n][n], .json.gz, .npy, .npz, safetensors, PyTorch .pt) and prints scores as JSON:
{"method", "tokens", "layers" (1-based), "rows" (0-based), "options", "scores" [layers][rows][n]}

options:
  --fusion mean|max|min    how heads are combined (default mean)
  --heads 0,3,5            fuse only these heads (0-based; default all)
  --alpha A                residual weight in [0,1]: A = rownorm(alpha*F + (1-alpha)*I) (default 0.5)
  --discard R              rollout/flow: zero the fraction R in [0,1) of smallest fused weights
                           per layer before the residual (vit-explain's discard_ratio; default 0)
  --layers last|all|1,4    1-based layers to report (default last)
  --rows all|0,5           0-based target rows (default all)
  --unnormalized           flow: raw max-flow values instead of rows summing to 1
                           (with --receptive-field: the ratios themselves, rollout too)
  --receptive-field        rollout/flow: divide by the scores of uniform attention over the
                           mask (for causal models: removes the advantage of early tokens)
  --batch B                batch item of a Hugging Face [L][B][H][n][n] layout (default 0)
  --workers N              flow: split the work over N worker threads (same results; one
                           row at one layer is one unit of work and runs in this thread)
  --timing                 print {"load_ms", "compute_ms"} as one JSON line on stderr: load is
                           start-up (compiling the whole package up front, ~0.3 s more than
                           without --timing), reading, fusing heads and building the graph
  -h, --help               show this help`;

const OPTIONS = {
  fusion: { type: 'string' },
  heads: { type: 'string' },
  alpha: { type: 'string' },
  discard: { type: 'string' },
  layers: { type: 'string' },
  rows: { type: 'string' },
  unnormalized: { type: 'boolean' },
  'receptive-field': { type: 'boolean' },
  batch: { type: 'string' },
  workers: { type: 'string' },
  timing: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
};

/**
 * "--alpha -1" as "--alpha=-1": parseArgs takes a value that starts with "-" for another option
 * and says the option is "ambiguous"; joined, the value gets the range check that explains it.
 */
function joinNegativeValues(argv) {
  const args = [];
  for (let k = 0; k < argv.length; k++) {
    const takesValue = argv[k].startsWith('--') && OPTIONS[argv[k].slice(2)]?.type === 'string';
    if (takesValue && /^-[\d.]/.test(argv[k + 1] ?? '')) args.push(`${argv[k]}=${argv[++k]}`);
    else args.push(argv[k]);
  }
  return args;
}

function parseCommandLine(argv) {
  let parsed;
  try {
    parsed = parseArgs({ args: joinNegativeValues(argv), allowPositionals: true, options: OPTIONS });
  } catch (error) {
    fail('E_OPTION', error.message);
  }
  const { values, positionals } = parsed;
  if (values.help) return { help: true };
  if (positionals.length !== 2) fail('E_OPTION', 'expected a method and a file (see attnflow --help)');
  const [method, file] = positionals;
  if (!METHODS.includes(method)) fail('E_OPTION', `unknown method ${JSON.stringify(method)}: use raw, rollout or flow`);
  const number = (name, text) => {
    if (!/^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$/.test(text)) fail('E_OPTION', `--${name} must be a number (got ${JSON.stringify(text)})`);
    return Number(text);
  };
  const options = {
    fusion: values.fusion,
    heads: values.heads === undefined ? null : parseListOption('heads', values.heads, []),
    alpha: values.alpha === undefined ? undefined : number('alpha', values.alpha),
    discard: values.discard === undefined ? undefined : number('discard', values.discard),
    layers: values.layers === undefined ? undefined : parseListOption('layers', values.layers, ['last', 'all']),
    rows: values.rows === undefined ? undefined : parseListOption('rows', values.rows, ['all']),
    normalize: !values.unnormalized,
    receptiveField: Boolean(values['receptive-field']),
  };
  const batch = values.batch === undefined ? undefined : number('batch', values.batch);
  if (batch !== undefined && !(Number.isInteger(batch) && batch >= 0)) {
    fail('E_OPTION', `--batch must be a non-negative integer (got ${values.batch})`);
  }
  const workers = values.workers === undefined ? undefined : number('workers', values.workers);
  if (workers !== undefined) checkWorkerCount(workers);
  return { method, file, options, batch, workers, timing: Boolean(values.timing) };
}

/**
 * A plain Uint8Array over the Buffer's own memory. `new Uint8Array(buffer)` would copy it, which
 * for a 400 MB file costs ~250 MB of peak memory and ~0.2 s (bench/README.md, Findings).
 */
const viewOf = (buffer) => new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);

async function readStdin() {
  const collected = streamCollector('stdin');
  for await (const chunk of process.stdin) collected.add(viewOf(chunk));
  return collected.bytes();
}

/**
 * The input's AttentionData: a binary tensor in a file is read a layer at a time as the heads are
 * fused, never whole (a 400 MB .npy: peak memory 0.61 -> 0.27 GB, bench/README.md).
 */
async function openInput(file, options) {
  return file === '-' ? loadAttention(await readStdin(), options) : openAttentionFile(file, options);
}

/** A progress line on stderr, only for runs long enough to need one. */
function progressReporter() {
  const started = performance.now();
  let lastShown = 0;
  return (done, total) => {
    const now = performance.now();
    if (now - started < 1000 || (now - lastShown < 500 && done < total)) return;
    lastShown = now;
    const line = `attnflow: flow ${done}/${total} max-flows (${((100 * done) / total).toFixed(0)}%)`;
    process.stderr.write(process.stderr.isTTY ? `\r${line}${done === total ? '\n' : ''}` : `${line}\n`);
  };
}

/** The one layer a flow request asks for ('last' or 1-based), or 0 (several layers, or not flow). */
function singleFlowLayer(command) {
  const { layers = 'last' } = command.options;
  if (command.method !== 'flow') return 0;
  if (layers === 'last') return 'last';
  return Array.isArray(layers) && layers.length === 1 ? layers[0] : 0;
}

/**
 * What FusedAttention.prepare builds while loading, so that compute_ms is the method alone: the
 * graph for the request's alpha and discard and, for a flow at one layer, the solvers its rows use.
 */
function preparation(command) {
  const { alpha, discard, rows = DEFAULTS.rows } = command.options;
  return { alpha, discard, rows, layer: singleFlowLayer(command) };
}

/**
 * Whether a pool of workers can share the request: a flow of more than one (row, layer). A pool
 * runs one (row, layer) whole on one worker, and raw and rollout too, so for those it would only
 * add its start-up and messages to the same computation (the same numbers either way).
 */
function splitsOverWorkers(command) {
  const { rows = DEFAULTS.rows } = command.options;
  return command.method === 'flow' && !(singleFlowLayer(command) && Array.isArray(rows) && rows.length === 1);
}

async function main() {
  const command = parseCommandLine(process.argv.slice(2));
  if (command.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const name = command.file === '-' ? 'stdin' : basename(command.file);
  if (command.workers !== undefined && splitsOverWorkers(command)) {
    // Each worker reads the file (a layer at a time) and fuses the heads itself (web/parallel.mjs).
    const input = command.file === '-' ? { bytes: await readStdin() } : { path: command.file };
    const { ParallelAttention } = await import('./parallel.mjs');
    const pool = await ParallelAttention.open({ ...input, name, batch: command.batch }, { ...command.options, workers: command.workers, prepare: preparation(command) });
    try {
      for (const warning of pool.warnings) process.stderr.write(`attnflow: warning: ${oneLine(warning)}\n`);
      const loaded = performance.now();
      const result = await pool.compute(command.method, { ...command.options, onProgress: progressReporter() });
      finish(command, result, started, loaded, performance.now());
    } finally {
      pool.close();
    }
    return;
  }
  const [data] = await Promise.all([openInput(command.file, { name, batch: command.batch }), init()]);
  let fused;
  try {
    fused = await FusedAttention.create(data, command.options);
  } finally {
    data.close?.();  // every layer has been read into the fused stack
  }
  // The graph (residual-mixed layers) and, for a flow at one layer, its exact solvers are built as
  // part of loading, like the heads' fusion: the benchmark times peers on graphs already built,
  // and attnflow on warm calls that reuse them.
  // Checked as the compute will check them first, so that a bad --layers or --rows is named as
  // such (prepare, which takes a single layer, called it "layer").
  resolveCompute(command.method, command.options, fused);
  if (command.method !== 'raw') fused.prepare(preparation(command));
  // Binary formats check values as layers are read, so warnings are complete only after fusion.
  for (const warning of data.warnings) process.stderr.write(`attnflow: warning: ${oneLine(warning)}\n`);
  const loaded = performance.now();
  const result = fused.compute(command.method, { ...command.options, onProgress: progressReporter() });
  const computed = performance.now();
  fused.dispose();
  finish(command, result, started, loaded, computed);
}

function finish(command, result, started, loaded, computed) {
  if (command.timing) {
    process.stderr.write(`${JSON.stringify({ load_ms: loaded - started, compute_ms: computed - loaded })}\n`);
  }
  writeResult(result);
}

const OUTPUT_CHUNK = 1 << 20;

/**
 * Writes `${JSON.stringify(result)}\n`, the same bytes, a megabyte at a time: as one string the
 * output passed V8's longest string (2^29 - 24 characters) from ~27 million scores (every layer of
 * a rollout at L=12, n=1,500) and the CLI crashed with "Invalid string length".
 */
function writeResult(result) {
  const { method, tokens, layers, rows, options } = result;
  const head = JSON.stringify({ method, tokens, layers, rows, options });
  let text = `${head.slice(0, -1)},"scores":[`;
  layers.forEach((layer, l) => {
    text += l ? ',[' : '[';
    rows.forEach((row, r) => {
      text += (r ? ',' : '') + JSON.stringify(Array.from(result.scoresFor(layer, row)));
      if (text.length >= OUTPUT_CHUNK) {
        process.stdout.write(text);
        text = '';
      }
    });
    text += ']';
  });
  process.stdout.write(`${text}]}\n`);
}

/**
 * A message as one line of the terminal: control characters that came from the file (an escape
 * sequence in a dtype, a zip entry's name or a pickled class name) are shown as \uXXXX, not run.
 */
const oneLine = (text) => String(text).replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

process.stdout.on('error', (error) => {
  // The reader went away (`attnflow ... | head`): nothing more to say to anyone.
  if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  process.stderr.write(`attnflow: cannot write the output: ${error.message}\n`);
  process.exit(1);
});

main().catch((error) => {
  if (error instanceof AttnflowError) {
    process.stderr.write(`attnflow: ${oneLine(error.message)}\n`);
    process.exitCode = 2;
  } else {
    process.stderr.write(`attnflow: internal error: ${error?.stack ?? error}\n`);
    process.exitCode = 1;
  }
});
