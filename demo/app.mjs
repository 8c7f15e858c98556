// The attnflow explorer: controls, orchestration and rendering. All computation runs in a Web
// Worker through the package's AttnflowWorker client; this thread only draws.
//
// How work is scheduled: every control change calls refresh(), which bumps a generation number.
// Results of an older generation are dropped. Stale work still running in the worker is cancelled
// (the worker is replaced, see web/client.mjs) when it is a long job (compute-all) or has run for
// more than STALE_MS; shorter stale work is left to finish, because a restart re-reads the input,
// which costs more than waiting for a quick computation. On a cancel the view, and the controls,
// go back to what is displayed, so the page is always in a consistent, usable state.
import { AttnflowWorker } from '../web/client.mjs';
import { ParallelAttention } from '../web/parallel.mjs';
import { clear, placeChild, trimChildren } from './dom.mjs';
import { FONT, h, svg } from '../web/view/dom.mjs';
import { ellipsize, fmt, showToken } from '../web/view/labels.mjs';
import { PALETTES, PALETTE_NAMES, legendGroup, paletteName, setPalette } from './colors.mjs';
import { renderPatchGrid } from '../web/view.mjs';
import { patchLayout } from '../web/view/patches.mjs';
import { METHODS, METHOD_LABEL, legendRange } from './views/common.mjs';
import { renderStrips, stripsSVG, wireStrips } from './views/strips.mjs';
import { heatmapCellAt, heatmapSVG } from './views/heatmap.mjs';
import { graphSVG } from './views/graph.mjs';
import { importance, metaSVG, renderMeta } from './views/meta.mjs';
import { download, pngBlob, scoresCSV, scoresJSON, svgBlob } from './export.mjs';

const STALE_MS = 250;
// "Compute all rows" spreads flow over a pool of workers (the package's ParallelAttention) when
// the machine has cores to spare and the file is small enough that every worker reading it,
// fusing the heads and holding its own flow graph is cheap.
const PARALLEL_MAX_BYTES = 64 * 2 ** 20;
const PROGRESSIVE_TOKENS = 96;  // from this many tokens, flow for all layers comes second
const MAX_TARGETS = 6;
// The smallest patch grid of common image models (ViT-B/32 at 224 px): smaller squares are
// usually sentences (bundled examples of 10, 11, 18 and 25 tokens would make 3 x 3 to 5 x 5).
const MIN_PATCH_SIDE = 7;
const $ = (id) => document.getElementById(id);

const ui = {
  example: $('example'), file: $('file'), fileLabel: $('file-label'),
  inputInfo: $('input-info'), status: $('status'), progress: $('progress'), progressText: $('progress-text'), cancel: $('cancel'),
  error: $('error'), warnings: $('warnings'),
  target: $('target'), layer: $('layer'), layerOut: $('layer-out'),
  headsBox: $('heads-box'), heads: $('heads'), headsAll: $('heads-all'), headsInvert: $('heads-invert'),
  alpha: $('alpha'), alphaOut: $('alpha-out'), discard: $('discard'), discardOut: $('discard-out'),
  receptive: $('receptive'),
  scale: $('scale'), palette: $('palette'),
  computeAll: $('compute-all'), exportJson: $('export-json'), exportCsv: $('export-csv'),
  results: $('results'), readout: $('readout'),
  strips: $('strips'), stripsSub: $('strips-sub'), stripsLegend: $('strips-legend'),
  heatmaps: $('heatmaps'), heatmapsSub: $('heatmaps-sub'), heatmapsLegend: $('heatmaps-legend'),
  sink: $('sink'), edgeFilter: $('edge-filter'), threshold: $('threshold'), thresholdOut: $('threshold-out'),
  bottleneck: $('bottleneck'), graph: $('graph'),
  metaPanel: $('panel-meta'), meta: $('meta'), dropzone: $('dropzone'),
  patchesPanel: $('panel-patches'), patches: $('patches'), patchesSub: $('patches-sub'), patchesLegend: $('patches-legend'),
  patchImage: $('patch-image'), patchImageClear: $('patch-image-clear'), patchSkip: $('patch-skip'),
};

const client = new AttnflowWorker();

/** Settings chosen in the controls. `shown` holds the settings of what is displayed. */
const settings = {
  targets: [0], layer: 1, fusion: 'mean', heads: null, alpha: 0.5, discard: 0, receptive: false,
  methods: [...METHODS], scale: 'row', sink: null, threshold: 0.05, filter: 'source',
};
let summary = null;       // LoadSummary of the input on display
// The generation of the file being read, until its first view is asked for: control changes on the
// view still shown then wait for the new input (they used to cancel the read, dropping the file).
let loading = null;
let sourceName = '';
let sourceBlob = null;    // the input on display, kept for the parallel pool
let causal = false;       // the input on display looks like a decoder's (causal masks)
let shown = null;         // {summary, settings, results, graph} on display
let generation = 0;
let running = null;       // {gen, started, long} while a refresh waits for the worker
let patchImage = null;    // ImageBitmap drawn under the patch grids (read here, never sent)

// ---------------------------------------------------------------------------------------------
// Result cache: per fusion/heads(/alpha/discard), results for all layers and some rows.

/**
 * Several WorkerResults of one method (different rows, possibly only some layers) seen as one.
 * Immutable once built: a refresh makes a new set, so a cancel leaves the view untouched.
 */
class ResultSet {
  constructor(method, parts = []) {
    this.method = method;
    this.parts = parts;
  }
  with(r) { return new ResultSet(this.method, [...this.parts, r]); }
  part(layer, row) { return this.parts.find((p) => p.rows.includes(row) && p.layers.includes(layer)); }
  has(layer, row) { return !!this.part(layer, row); }
  /** True when `row` is there for every layer 1..L. */
  complete(row, L) {
    for (let l = 1; l <= L; l++) if (!this.has(l, row)) return false;
    return true;
  }
  get layers() { return [...new Set(this.parts.flatMap((p) => p.layers))].sort((a, b) => a - b); }
  get rows() { return [...new Set(this.parts.flatMap((p) => p.rows))].sort((a, b) => a - b); }
  get options() { return this.parts[0]?.options; }
  get numTokens() { return this.parts[0]?.numTokens; }
  scoresFor(layer, row) { return this.part(layer, row).scoresFor(layer, row); }
  /** The complete (layer x row) grid for `rows`, as the CLI prints a result. */
  /** These rows as the CLI prints a result, with scoresFor(layer, row) in place of the scores. */
  described(rows = this.rows) {
    const layers = this.layers.filter((l) => rows.every((r) => this.has(l, r)));
    const { method, options } = this;
    return {
      method, tokens: summary.tokens, layers, rows, options: { ...options, layers, rows },
      scoresFor: (layer, row) => this.scoresFor(layer, row),
    };
  }
}

let cache = new Map();
// Raw attention does not depend on alpha, discard or the receptive-field normalisation, so its
// cache entry is shared by all of them.
const keyOf = (method, s) => `${method}|${s.fusion}|${s.heads ? s.heads.join(',') : 'all'}|${method === 'raw' ? '' : `${s.alpha}|${s.discard}|${s.receptive}`}`;
const graphKey = (s) => `${s.fusion}|${s.heads ? s.heads.join(',') : 'all'}|${s.alpha}|${s.discard}`;
/** Residual settings for captions: discard and the receptive-field normalisation only when in use. */
const residualText = (v) => `α = ${v.alpha}${v.discard ? `, discard ${v.discard}` : ''}${v.receptive ? ', ÷ receptive field' : ''}`;
let mixedCache = new Map();   // graphKey -> Map(layer -> Float64Array)
let cutCache = new Map();     // graphKey|layer|row|sink -> bottleneck

function resultSet(method, s) {
  const key = keyOf(method, s);
  if (!cache.has(key)) cache.set(key, new ResultSet(method));
  return cache.get(key);
}

// ---------------------------------------------------------------------------------------------
// State and status.

function setState(state) {
  ui.results.dataset.state = state;
  ui.results.setAttribute('aria-busy', String(state === 'computing'));
}

let progressTimer = 0;
function busy(text, { long = false } = {}) {
  ui.status.textContent = text;
  ui.progressText.hidden = true;
  clearTimeout(progressTimer);
  const showBar = () => {
    ui.progress.hidden = false;
    ui.progress.removeAttribute('value');  // indeterminate until the worker reports progress
    ui.cancel.hidden = false;
  };
  if (long) showBar();
  else progressTimer = setTimeout(showBar, 150);
}

function idle(text = 'Ready') {
  clearTimeout(progressTimer);
  ui.status.textContent = text;
  ui.progress.hidden = true;
  ui.progressText.hidden = true;
  ui.cancel.hidden = true;
}

function onProgress(label) {
  return (done, total) => {
    ui.progress.hidden = false;
    ui.cancel.hidden = false;
    ui.progress.value = total ? done / total : 0;
    ui.progressText.hidden = false;
    ui.progressText.textContent = `${label}: ${done.toLocaleString('en-US')} / ${total.toLocaleString('en-US')} max-flows`;
  };
}

/** Back to the highest-flow sink, in the settings and in its select. */
function resetSink() {
  settings.sink = null;
  ui.sink.value = 'auto';
}

function showError(error) {
  ui.error.replaceChildren(
    h('strong', {}, error?.code ? `${error.code}: ` : 'Error: '),
    String(error?.message ?? error),
    h('button', { type: 'button', class: 'btn tiny dismiss', 'aria-label': 'Dismiss error' }, '×'),
  );
  ui.error.hidden = false;
}

function clearError() {
  ui.error.hidden = true;
  ui.error.replaceChildren();
}

ui.error.addEventListener('click', (e) => {
  if (e.target.closest('.dismiss')) clearError();
});

// ---------------------------------------------------------------------------------------------
// Loading inputs.

async function loadInput(blob, name, { example = false } = {}) {
  const gen = ++generation;
  cancelStale(true);
  running = { gen, started: performance.now(), long: true };
  setState('computing');
  busy(`Reading ${name} (${formatBytes(blob.size)})…`, { long: blob.size > 20e6 });
  loading = gen;
  try {
    // One request: once it is answered the worker holds the new input, and the page takes it
    // before anything else can run (a second request here, cancelled, left the two out of step).
    const s = await client.load(blob, { name, fusion: settings.fusion, heads: null });
    if (gen !== generation) return;
    // Causal (decoder) input? Then the first token only sees itself, so the last token is the
    // sensible default target; encoders keep the first token (e.g. [CLS]).
    causal = s.causal;
    summary = s;
    sourceName = name;
    sourceBlob = blob;
    cache = new Map();
    mixedCache = new Map();
    cutCache = new Map();
    Object.assign(settings, { targets: [causal ? s.numTokens - 1 : 0], layer: s.numLayers, heads: null, sink: null });
    if (!example) ui.example.value = '';
    buildInputControls();
    running = null;
    loading = null;
    await refresh({ keepRunning: true, gen });
  } catch (error) {
    if (gen !== generation) return;
    running = null;
    fail(error, 'Could not open the file');
  } finally {
    if (loading === gen) loading = null;
  }
}

function formatBytes(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1024 ** 2) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 ** 2).toFixed(1)} MB`;
}

function fail(error, context) {
  if (error?.code === 'E_CANCELLED') {
    restoreShown();
    redraw();  // a cancelled refresh may have drawn part of its views
    idle('Cancelled');
    setState(shown ? 'done' : 'error');
    return;
  }
  console.warn(context, error);
  showError(error);
  setState('error');
  idle(context);
  restoreShown();
}

// ---------------------------------------------------------------------------------------------
// Controls.

function buildInputControls() {
  const s = summary;
  ui.target.replaceChildren(...s.tokens.map((t, i) => h('option', { value: i }, `${i}: ${ellipsize(showToken(t), 28)}`)));
  ui.sink.replaceChildren(h('option', { value: 'auto' }, 'auto (highest flow)'),
    ...s.tokens.map((t, i) => h('option', { value: i }, `${i}: ${ellipsize(showToken(t), 28)}`)));
  ui.layer.max = String(s.numLayers);
  ui.heads.replaceChildren(...Array.from({ length: s.numHeads }, (_, k) => h('label', { class: 'head' }, [
    h('input', { type: 'checkbox', value: k, checked: true, 'aria-label': `head ${k}` }), h('span', {}, String(k)),
  ])));
  ui.headsBox.hidden = s.fused || s.numHeads === 0;
  for (const r of document.querySelectorAll('input[name="fusion"]')) r.disabled = s.fused;
  const parts = [
    h('strong', { class: 'input-name' }, sourceName),
    ` · ${s.format} · ${s.numLayers} layer${s.numLayers === 1 ? '' : 's'} × ${s.fused ? 'pre-fused heads' : `${s.numHeads} head${s.numHeads === 1 ? '' : 's'}`} · ${s.numTokens} tokens`,
  ];
  if (causal) parts.push(' · ', h('span', { class: 'badge neutral', title: 'no attention above the diagonal: the default target is the last token, and early tokens score higher by position alone (see "Normalise by receptive field")' }, 'causal'));
  if (s.meta?.synthetic === true) parts.push(' ', h('span', { class: 'badge' }, 'synthetic'));
  ui.inputInfo.replaceChildren(...parts);
  const patches = patchDefault(s.numTokens);
  ui.patchesPanel.hidden = !patches;
  if (!patches) ui.patches.replaceChildren();  // no grids of an earlier input kept behind
  ui.patchSkip.max = String(s.numTokens - 1);
  ui.patchSkip.value = patches ? String(patches.skip) : '';
  if (s.warnings?.length) {
    ui.warnings.replaceChildren(h('details', {}, [
      h('summary', {}, `${s.warnings.length} warning${s.warnings.length === 1 ? '' : 's'} while reading the file`),
      h('ul', {}, s.warnings.slice(0, 50).map((w) => h('li', {}, w))),
    ]));
    ui.warnings.hidden = false;
  } else {
    ui.warnings.hidden = true;
  }
  syncControls(settings);
}

/** Puts the controls in line with `s` (used after a cancel, to show what is displayed). */
function syncControls(s) {
  if (!summary) return;
  ui.target.value = String(s.targets[0]);
  ui.layer.value = String(s.layer);
  ui.layerOut.textContent = `${s.layer} of ${summary.numLayers}`;
  ui.alpha.value = String(s.alpha);
  ui.alphaOut.textContent = String(s.alpha);
  ui.discard.value = String(s.discard);
  ui.discardOut.textContent = String(s.discard);
  ui.receptive.checked = s.receptive;
  for (const r of document.querySelectorAll('input[name="fusion"]')) r.checked = r.value === s.fusion;
  for (const c of ui.heads.querySelectorAll('input')) c.checked = !s.heads || s.heads.includes(Number(c.value));
  for (const c of document.querySelectorAll('input[name="method"]')) c.checked = s.methods.includes(c.value);
  ui.sink.value = s.sink === null ? 'auto' : String(s.sink);
  ui.scale.value = s.scale;
  ui.threshold.value = String(s.threshold);
  ui.thresholdOut.textContent = String(s.threshold);
  ui.edgeFilter.value = s.filter;
}

/**
 * After a cancel or a failure before anything of a new input was drawn: the views still hold the
 * previous input's scores, and a redraw would label them with the new input's tokens (a cancel
 * during a new file's first flow showed the last file's scores under its name). They are emptied.
 */
function dropViewOfOtherInput() {
  if (!shown || shown.summary === summary) return;
  shown = null;
  drawnViews = null;
  graphInfo = null;
  for (const el of [ui.strips, ui.stripsLegend, ui.heatmaps, ui.heatmapsLegend, ui.graph, ui.bottleneck, ui.patches,
    ui.meta]) {
    el.replaceChildren();
  }
  ui.patchesPanel.hidden = true;
  ui.metaPanel.hidden = true;
  ui.heatmapsSub.textContent = '';
  ui.stripsSub.textContent = `Nothing is computed for ${sourceName} yet: pick a target or a layer, or press ` +
    '"Compute all rows", to compute it.';
  ui.readout.textContent = 'Hover or focus a token to see its exact score.';
}

function restoreShown() {
  dropViewOfOtherInput();
  if (!shown) return;
  Object.assign(settings, structuredClone(shown.settings));
  syncControls(settings);
}

function selectedHeads() {
  const boxes = [...ui.heads.querySelectorAll('input')];
  const on = boxes.filter((c) => c.checked).map((c) => Number(c.value));
  return on.length === boxes.length ? null : on;
}

ui.target.addEventListener('change', () => {
  settings.targets = [Number(ui.target.value)];
  resetSink();
  refresh();
});
ui.layer.addEventListener('input', () => {
  settings.layer = Number(ui.layer.value);
  ui.layerOut.textContent = `${settings.layer} of ${summary?.numLayers ?? ''}`;
  resetSink();
  refresh();
});
for (const r of document.querySelectorAll('input[name="fusion"]')) {
  r.addEventListener('change', () => {
    settings.fusion = r.value;
    refresh();
  });
}
ui.heads.addEventListener('change', (e) => {
  const boxes = [...ui.heads.querySelectorAll('input')];
  if (!boxes.some((c) => c.checked)) {
    e.target.checked = true;  // at least one head must be fused
    ui.status.textContent = 'At least one head must stay selected';
    return;
  }
  settings.heads = selectedHeads();
  refresh();
});
ui.headsAll.addEventListener('click', () => {
  for (const c of ui.heads.querySelectorAll('input')) c.checked = true;
  settings.heads = null;
  refresh();
});
ui.headsInvert.addEventListener('click', () => {
  const boxes = [...ui.heads.querySelectorAll('input')];
  if (boxes.every((c) => c.checked)) return;
  for (const c of boxes) c.checked = !c.checked;
  settings.heads = selectedHeads();
  refresh();
});
let alphaTimer = 0;
ui.alpha.addEventListener('input', () => {
  settings.alpha = Number(ui.alpha.value);
  ui.alphaOut.textContent = String(settings.alpha);
  clearTimeout(alphaTimer);
  alphaTimer = setTimeout(() => refresh(), 120);
});
ui.discard.addEventListener('input', () => {
  settings.discard = Number(ui.discard.value);
  ui.discardOut.textContent = String(settings.discard);
  clearTimeout(alphaTimer);  // shares the debounce with alpha: one refresh for both
  alphaTimer = setTimeout(() => refresh(), 120);
});
ui.receptive.addEventListener('change', () => {
  settings.receptive = ui.receptive.checked;
  refresh();
});
for (const c of document.querySelectorAll('input[name="method"]')) {
  c.addEventListener('change', () => {
    const on = [...document.querySelectorAll('input[name="method"]')].filter((x) => x.checked).map((x) => x.value);
    if (!on.length) {
      c.checked = true;
      return;
    }
    settings.methods = METHODS.filter((m) => on.includes(m));
    redraw();
  });
}
ui.scale.addEventListener('change', () => {
  settings.scale = ui.scale.value;
  redraw();
});
ui.palette.replaceChildren(...Object.keys(PALETTES).map((k) => h('option', { value: k }, PALETTE_NAMES[k])));
ui.palette.addEventListener('change', () => {
  setPalette(ui.palette.value);
  redraw();
});
ui.sink.addEventListener('change', () => {
  settings.sink = ui.sink.value === 'auto' ? null : Number(ui.sink.value);
  refresh();
});
ui.edgeFilter.addEventListener('change', () => {
  settings.filter = ui.edgeFilter.value;
  redrawGraph();
});
ui.threshold.addEventListener('input', () => {
  settings.threshold = Number(ui.threshold.value);
  ui.thresholdOut.textContent = String(settings.threshold);
  redrawGraph();
});
ui.cancel.addEventListener('click', () => {
  generation++;
  running?.abort?.abort();
  client.cancel();
  running = null;
  restoreShown();
  redraw();
  idle('Cancelled');
  setState(shown ? 'done' : 'error');
});
ui.computeAll.addEventListener('click', () => refresh({ all: true }));

/** Makes token `index` the target (add: adds or removes it among the targets). */
function selectTarget(index, { add = false, focus = null } = {}) {
  if (add) {
    const t = settings.targets.includes(index)
      ? settings.targets.filter((x) => x !== index)
      : [...settings.targets, index].slice(-MAX_TARGETS);
    if (!t.length) return;
    settings.targets = t;
  } else {
    settings.targets = [index];
  }
  resetSink();
  syncControls(settings);  // the target select follows the click
  refresh({ focus });
}

wireStrips(ui.strips, {
  onSelect: (index, add) => selectTarget(index, { add, focus: index }),
  onInspect: inspect,
});

function inspect(info) {
  // A cell of the views still shown while another input loads may name a token it does not have.
  if (!info || !summary || Math.max(info.target, info.index) >= summary.numTokens) {
    ui.readout.textContent = 'Hover or focus a token to see its exact score.';
    return;
  }
  const tok = (i) => `“${showToken(summary.tokens[i])}”`;
  // One line, value first: the read-out never changes height (no layout shift under the pointer).
  ui.readout.replaceChildren(
    h('code', { class: 'value' }, String(info.value)),
    h('span', { class: `method-name m-${info.method}` }, METHOD_LABEL[info.method] ?? info.method),
    ` · layer ${info.layer} · target ${info.target} ${tok(info.target)} → input ${info.index} ${tok(info.index)}`,
  );
}

ui.heatmaps.addEventListener('mousemove', (e) => {
  const host = e.target.closest?.('svg[data-method]');
  if (!host || !shown) return;
  const method = host.dataset.method;
  const cell = heatmapCellAt(e, shown.results[method], shown.settings.targets[0]);
  if (cell) inspect({ method, layer: cell.layer, target: shown.settings.targets[0], index: cell.index, value: cell.value });
});
ui.heatmaps.addEventListener('click', (e) => {
  const host = e.target.closest?.('svg[data-method]');
  if (!host || !shown) return;
  const cell = heatmapCellAt(e, shown.results[host.dataset.method], shown.settings.targets[0]);
  if (!cell) return;
  settings.layer = cell.layer;
  settings.sink = cell.index;
  syncControls(settings);
  refresh();
});
ui.graph.addEventListener('click', (e) => {
  const node = e.target.closest?.('.g-input');
  if (!node) return;
  settings.sink = Number(node.dataset.index);
  ui.sink.value = String(settings.sink);
  refresh();
});

// The patch grids: an image under them, and how many special tokens come before the patches.
ui.patchImage.addEventListener('change', async () => {
  const file = ui.patchImage.files?.[0];
  if (!file) return;
  try {
    const bitmap = await createImageBitmap(file);
    patchImage?.close();
    patchImage = bitmap;
  } catch {
    showError(new Error(`${file.name}: not an image this browser can read`));
  }
  ui.patchImageClear.hidden = !patchImage;
  redrawPatches();
});
ui.patchImageClear.addEventListener('click', () => {
  patchImage?.close();
  patchImage = null;
  ui.patchImage.value = '';
  ui.patchImageClear.hidden = true;
  redrawPatches();
});
ui.patchSkip.addEventListener('input', redrawPatches);

// Examples and files.
ui.example.addEventListener('change', () => loadExample(ui.example.value));
ui.file.addEventListener('change', () => {
  const f = ui.file.files?.[0];
  if (f) loadInput(f, f.name);
  ui.file.value = '';  // the same file can be chosen again
});
let dragDepth = 0;
window.addEventListener('dragenter', (e) => {
  if (![...(e.dataTransfer?.types ?? [])].includes('Files')) return;
  dragDepth++;
  ui.dropzone.hidden = false;
});
window.addEventListener('dragleave', () => {
  dragDepth = Math.max(0, dragDepth - 1);
  if (!dragDepth) ui.dropzone.hidden = true;
});
window.addEventListener('dragover', (e) => e.preventDefault());
window.addEventListener('drop', (e) => {
  e.preventDefault();
  dragDepth = 0;
  ui.dropzone.hidden = true;
  const f = e.dataTransfer?.files?.[0];
  if (f) loadInput(f, f.name);
});

let examples = [];
async function loadExample(file) {
  const ex = examples.find((x) => x.file === file);
  if (!ex) return;
  try {
    const res = await fetch(`examples/${encodeURIComponent(ex.file)}`);
    if (!res.ok) throw new Error(`examples/${ex.file}: HTTP ${res.status}`);
    await loadInput(await res.blob(), ex.file, { example: true });
  } catch (error) {
    fail(error, 'Could not load the example');
  }
}

// ---------------------------------------------------------------------------------------------
// Computing.

function cancelStale(force) {
  if (!running) return;
  running.abort?.abort();
  if (!client.busy) return;
  if (force || running.long || performance.now() - running.started > STALE_MS) client.cancel();
}

/** The options of `s` that change the numbers of a computation (fusion is the worker's). */
const computeOptions = (s) => ({ alpha: s.alpha, discard: s.discard, receptiveField: s.receptive });

/** Flow for every row of every layer, split over two workers; null if not worth it here. */
async function parallelFlow(s, abort, progress) {
  // Leave one core to the page: with every core busy in workers, the main thread's tasks stretch
  // (measured on 2 cores: 150 ms tasks with 2 flow workers, none over 50 ms with one).
  const workers = Math.min(4, (navigator.hardwareConcurrency || 1) - 1);
  if (workers < 2 || !sourceBlob || sourceBlob.size > PARALLEL_MAX_BYTES) return null;
  const pool = await ParallelAttention.open({ bytes: sourceBlob, name: sourceName },
    { workers, fusion: s.fusion, heads: summary.fused ? null : s.heads, signal: abort.signal });
  try {
    return await pool.compute('flow', { ...computeOptions(s), layers: 'all', rows: 'all', onProgress: progress, signal: abort.signal });
  } finally {
    pool.close();
  }
}

/**
 * Brings the display in line with `settings`: fuses if needed, computes what the cache lacks,
 * fetches the graph's data, then draws. `all` computes every row (long; shows progress).
 */
async function refresh({ all = false, keepRunning = false, gen = 0, focus = null } = {}) {
  if (!summary || (loading !== null && !keepRunning)) return;
  if (!keepRunning && !all && shown && !running && sameSettings(settings, shown.settings)) {
    // Nothing to compute (e.g. a debounced control already applied): just leave any error state.
    clearError();
    setState('done');
    return;
  }
  // A view change stops a run over every row: say so when the new view is ready.
  const stopsFullRun = !keepRunning && !all && Boolean(running?.long);
  if (!keepRunning) {
    gen = ++generation;
    cancelStale(all);
  }
  const s = structuredClone(settings);
  running = { gen, started: performance.now(), long: all };
  setState('computing');
  busy(all ? 'Computing every row of every layer…' : 'Computing…', { long: all });
  const stale = () => gen !== generation;
  try {
    const f = client.fusion;
    const heads = s.heads;
    if (!summary.fused && (f.fusion !== s.fusion || String(f.heads) !== String(heads))) {
      await client.fuse({ fusion: s.fusion, heads });
      if (stale()) return;
    }
    // Big inputs: flow first for the selected layer only (strips and graph appear quickly), then
    // for every layer (the heatmap), in a second step below.
    const progressive = !all && summary.numTokens >= PROGRESSIVE_TOKENS && summary.numLayers > 1;
    const results = {};
    for (const method of METHODS) {
      const set = resultSet(method, s);
      const staged = progressive && method === 'flow';
      const rows = all ? (set.parts.some((p) => p.rows.length === summary.numTokens && p.layers.length === summary.numLayers) ? [] : 'all')
        : s.targets.filter((t) => (staged ? !set.has(s.layer, t) : !set.complete(t, summary.numLayers)));
      if (rows === 'all' || rows.length) {
        const progress = method === 'flow' ? onProgress(all ? 'Flow, every row' : 'Flow') : undefined;
        let r = null;
        if (rows === 'all' && method === 'flow') {
          running.abort = new AbortController();
          r = await parallelFlow(s, running.abort, progress);
          if (stale()) return;
        }
        r ??= await client.compute(method, { ...computeOptions(s), layers: staged ? [s.layer] : 'all', rows, onProgress: progress });
        if (stale()) return;
        // All rows supersede the single rows.
        results[method] = rows === 'all' ? new ResultSet(method, [r]) : set.with(r);
      } else {
        results[method] = set;
      }
    }
    for (const method of METHODS) cache.set(keyOf(method, s), results[method]);
    // Graph: residual-mixed layers 1..layer and the bottleneck of the selected flow.
    const target = s.targets[0];
    const flowRow = results.flow.scoresFor(s.layer, target);
    const sink = s.sink ?? argmax(flowRow);
    const gk = graphKey(s);
    if (!mixedCache.has(gk)) mixedCache.set(gk, new Map());
    const mixed = mixedCache.get(gk);
    for (let l = 1; l <= s.layer; l++) {
      if (!mixed.has(l)) {
        const m = await client.mixedLayer(l, { alpha: s.alpha, discard: s.discard });
        if (stale()) return;
        mixed.set(l, m);
      }
    }
    const ck = `${gk}|${s.layer}|${target}|${sink}`;
    if (!cutCache.has(ck)) {
      const b = await client.bottleneck(s.layer, target, sink, { alpha: s.alpha, discard: s.discard });
      if (stale()) return;
      cutCache.set(ck, b);
    }
    shown = {
      summary, settings: s, results, sink,
      mixed: Array.from({ length: s.layer }, (_, k) => mixed.get(k + 1)),
      bottleneck: cutCache.get(ck),
    };
    if (!(await draw(gen))) return;
    const missing = s.targets.filter((t) => !results.flow.complete(t, summary.numLayers));
    if (missing.length) {
      busy('Flow for every layer…');
      // The worker's first steps write much fresh memory (at n = 512 the certificate's solvers
      // for each middle layer), which slowed the layout of the views just drawn, in the frame
      // after the last step, from ~16 to 32-51 ms (traced; same process, so the page faults
      // contend): let that frame come first.
      await nextFrame();
      if (stale()) return;
      // Not the layers these rows already have (the selected one, from the first step): the last
      // layer is the costliest (at L=24, n=512 its one-row flow is ~75 ms of this step's 1.4-1.7
      // s, more when its solver, which the cache holds one of at that size, must be rebuilt).
      const layers = Array.from({ length: summary.numLayers }, (_, k) => k + 1)
        .filter((l) => missing.some((t) => !results.flow.has(l, t)));
      const r = await client.compute('flow', { ...computeOptions(s), layers, rows: missing, onProgress: onProgress('Flow, every layer') });
      if (stale()) return;
      results.flow = results.flow.with(r);
      cache.set(keyOf('flow', s), results.flow);
      const drawn = drawnViews;
      drawnViews = null;
      await stepwise('heatmaps', heatmapSteps(view()), gen);
      if (stale()) return;
      // The new flow results add the other layers' rows: the strips and patches show the same.
      if (drawn?.key === viewsKey(view())) drawnViews = { key: drawn.key, results: { ...results } };
      drawMeta(view());
    }
    running = null;
    clearError();
    setState('done');
    idle(all ? `Done: every row of every layer (${summary.numLayers * summary.numTokens * summary.numTokens} flows)`
      : stopsFullRun ? 'Ready (computing every row stopped when the view changed)' : 'Ready');
    if (focus !== null) ui.strips.querySelector(`[data-method="${s.methods[0]}"] [data-index="${focus}"]`)?.focus();
  } catch (error) {
    if (stale()) return;
    running = null;
    fail(error, 'Computation failed');
  }
}

function sameSettings(a, b) {
  const key = (x) => JSON.stringify([x.targets, x.layer, x.fusion, x.heads, x.alpha, x.discard, x.receptive, x.sink]);
  return key(a) === key(b);
}

function argmax(a) {
  let best = 0;
  for (let i = 1; i < a.length; i++) if (a[i] > a[best]) best = i;
  return best;
}

// ---------------------------------------------------------------------------------------------
// Drawing. `shown` holds the computed data; display-only settings (methods shown, colour scale,
// palette, graph threshold and filter) are read from `settings` so they apply without computing.

function view() {
  return { ...shown.settings, methods: settings.methods, scale: settings.scale, threshold: settings.threshold, filter: settings.filter };
}

/** Runs fn and records its duration as a User Timing measure (visible in DevTools). */
function timed(name, fn) {
  const start = performance.now();
  try {
    return fn();
  } finally {
    performance.measure(`attnflow:${name}`, { start, end: performance.now() });
  }
}

/**
 * Resolves once the browser has had a frame to render what the last step drew, so that its style,
 * layout and paint are a task of their own, not added to the next step's. A hidden page renders
 * no frames: there, and should a frame not come, a timer goes on.
 */
const nextFrame = () => new Promise((resolve) => {
  const timer = setTimeout(resolve, document.hidden ? 0 : 100);
  requestAnimationFrame(() => {
    clearTimeout(timer);
    setTimeout(resolve, 0);
  });
});

let drawing = 0;  // the draw in progress: a newer one (even of the same refresh) stops it
// What the strips, patches and heatmaps show, {key, results}, once a draw has drawn all three (null
// while one draws them). They do not show the input token of the graph (the sink) or its edge
// settings, so picking another sink redraws the graph alone: at n = 1,024 the other views took
// ~0.45 s of the ~1.2 s that a sink change took, most of it waiting for frames between steps.
let drawnViews = null;

/** What the views other than the graph depend on, besides the results (see drawnViews). */
function viewsKey(v) {
  const { sink, threshold, filter, ...rest } = v;
  return JSON.stringify([rest, paletteName(), summary.numTokens]);
}

/**
 * Runs the steps of a view (a generator), one per task with a frame between them, each recorded as
 * a User Timing measure. Resolves false, leaving the rest undone, when a newer refresh or draw took
 * over meanwhile.
 */
async function stepwise(name, steps, gen, owner = drawing) {
  for (;;) {
    const start = performance.now();
    const { done } = steps.next();
    performance.measure(`attnflow:${name}`, { start, end: performance.now() });
    if (done) return true;
    await nextFrame();
    if (gen !== generation || owner !== drawing) return false;
  }
}

/** Runs every step of a view at once (user actions that redraw a single view). */
function drain(steps) {
  for (let step = steps.next(); !step.done; step = steps.next());
}

/**
 * Draws every view from `shown`, a part per task (a strip, a heatmap, a batch of the graph's
 * elements), so that on big inputs (n = 512: 1,536 strip cells, 2,200 graph elements) no single
 * main-thread task, script or rendering, grows long. Resolves false when a newer refresh took
 * over meanwhile (a newer draw of this refresh finishes the views: true).
 */
async function draw(gen = generation) {
  if (!shown) return false;
  const mine = ++drawing;
  const v = view();
  const key = viewsKey(v);
  const drawn = drawnViews;
  if (drawn?.key === key && METHODS.every((m) => drawn.results[m] === shown.results[m])) {
    if (!(await stepwise('graph', graphSteps(), gen, mine))) return gen === generation;
    return true;
  }
  drawnViews = null;
  const target = v.targets[0];
  const tok = (i) => `“${ellipsize(showToken(summary.tokens[i]), 30)}”`;
  ui.stripsSub.textContent = `Share of each input token in ${v.targets.length > 1
    ? `targets ${v.targets.join(', ')}` : `target ${target} ${tok(target)}`} at layer ${v.layer} of ${summary.numLayers}`
    + ` · ${summary.fused ? 'pre-fused heads' : `${v.fusion} of ${v.heads ? `heads ${v.heads.join(', ')}` : 'all heads'}`} · ${residualText(v)} · click a token to make it the target`;
  const rows = [];
  for (const m of v.methods) for (const t of v.targets) rows.push(shown.results[m].scoresFor(v.layer, t));
  const range = legendRange(v.scale, rows);
  ui.stripsLegend.replaceChildren(svg('svg', { width: 300, height: 30, viewBox: '0 0 300 30', 'font-family': FONT, class: 'legend-svg', 'aria-hidden': 'true' },
    legendGroup({ x: 1, y: 4, width: 180, ...range })));
  ui.strips.classList.toggle('dense', summary.numTokens > 48);
  const strips = renderStrips(ui.strips, {
    tokens: summary.tokens, layer: v.layer, targets: v.targets, methods: v.methods, results: shown.results, scale: v.scale,
  });
  // Each view ends on a yield (a frame) or on a cheap step, so the next view starts right away.
  if (!(await stepwise('strips', strips, gen, mine))) return gen === generation;
  if (!(await stepwise('patches', patchSteps(v), gen, mine))) return gen === generation;
  if (!(await stepwise('heatmaps', heatmapSteps(v), gen, mine))) return gen === generation;
  drawnViews = { key, results: { ...shown.results } };
  if (!(await stepwise('graph', graphSteps(), gen, mine))) return gen === generation;
  timed('meta', () => drawMeta(v));
  return true;
}

function drawMeta(v) {
  const hasMeta = renderMeta(ui.meta, {
    tokens: summary.tokens, meta: summary.meta, methods: v.methods, results: shown.results,
    target: v.targets[0], layer: v.layer, scale: v.scale, numLayers: summary.numLayers,
  });
  ui.metaPanel.hidden = !hasMeta;
}

/**
 * The patch layout of an input of n tokens by the package's default rule (1, 2 or 0 special
 * tokens, then a square), or null when it is not an image's: no square, or a small one.
 */
function patchDefault(n) {
  try {
    const layout = patchLayout(n);
    return layout.rows >= MIN_PATCH_SIDE ? layout : null;
  } catch {
    return null;
  }
}

/** The patch grids, one per shown method, for the first target at the layer (one per step). */
function* patchSteps(v) {
  if (ui.patchesPanel.hidden) return;
  const target = v.targets[0];
  let layout;
  try {
    layout = patchLayout(summary.numTokens, { skip: ui.patchSkip.valueAsNumber });
  } catch (error) {
    ui.patchesSub.textContent = error.message;
    trimChildren(ui.patches, 0);
    return;
  }
  const { skip, rows, cols } = layout;
  const gap = 16;
  const width = ui.patches.clientWidth || 900;
  const size = Math.max(160, Math.min(320, Math.floor((width - (v.methods.length - 1) * gap) / v.methods.length)));
  ui.patchesSub.textContent = `Target ${target} “${ellipsize(showToken(summary.tokens[target]), 30)}” at layer ${v.layer}: `
    + `${rows} × ${cols} patches after ${skip} special token${skip === 1 ? '' : 's'}, each grid from 0 to `
    + `${v.scale === 'abs' ? '1' : 'its top patch'}. Click a patch to make it the target.`;
  ui.patchesLegend.replaceChildren(svg('svg', { width: 300, height: 30, viewBox: '0 0 300 30', 'font-family': FONT, class: 'legend-svg', 'aria-hidden': 'true' },
    legendGroup({ x: 1, y: 4, width: 180, min: 0, max: 1, label: v.scale === 'abs' ? 'score' : '× top patch' })));
  for (const [k, method] of v.methods.entries()) {
    const holder = h('div');
    const grid = renderPatchGrid(holder, shown.results[method].described([target]), {
      layer: v.layer, row: target, skip, palette: paletteName(), scale: v.scale === 'abs' ? 'absolute' : 'row',
      image: patchImage ?? undefined, size, onSelect: (index) => selectTarget(index),
    });
    grid.setAttribute('data-testid', 'patch-grid');
    grid.dataset.method = method;
    placeChild(ui.patches, k, h('figure', { class: 'patch-fig' }, [
      h('figcaption', { class: `method-name m-${method}` }, METHOD_LABEL[method]), holder,
    ]));
    yield;
  }
  trimChildren(ui.patches, v.methods.length);
}

function redrawPatches() {
  if (shown) drain(patchSteps(view()));
}

function heatmapColumns(count) {
  const w = ui.heatmaps.clientWidth || 900;
  const cols = w >= 760 ? count : w >= 520 ? Math.min(2, count) : 1;
  return { cols, width: Math.floor((w - (cols - 1) * 16) / cols) };
}

/** The heatmaps, one per step (see stepwise). */
function* heatmapSteps(v) {
  const target = v.targets[0];
  const { cols, width } = heatmapColumns(v.methods.length);
  // One legend for all heatmaps when they share a scale (0..row max, or absolute).
  const shared = v.scale !== 'view';
  for (const [k, method] of v.methods.entries()) {
    placeChild(ui.heatmaps, k, h('figure', { class: 'heatmap-fig' }, heatmapSVG({
      tokens: summary.tokens, method, result: shown.results[method], target, layer: v.layer, scale: v.scale, width, legend: !shared,
      numLayers: summary.numLayers,
    })));
    yield;
  }
  trimChildren(ui.heatmaps, v.methods.length);
  ui.heatmapsLegend.replaceChildren(...(shared ? [svg('svg', { width: 300, height: 30, viewBox: '0 0 300 30', 'font-family': FONT, class: 'legend-svg', 'aria-hidden': 'true' },
    legendGroup({ x: 1, y: 4, width: 180, ...legendRange(v.scale, []) }))] : []));
  ui.heatmaps.dataset.cols = String(cols);
  ui.heatmapsSub.textContent = `Target ${target} “${ellipsize(showToken(summary.tokens[target]), 30)}” at the output of every layer (last on top). Click a cell to select its layer and input token.`;
}

// The graph's top-level parts (guides, edges, the cut, the nodes, the labels) go into the page in
// batches of about this many elements, one per step: at n = 512 the cut and the input nodes are
// ~1,000 elements each (a <title> apiece), and the first style, layout and paint of all of them
// at once took 40-65 ms in one frame.
const GRAPH_BATCH = 800;

let graphInfo = null;
/** The flow graph, in batches of its top-level parts, in order (see stepwise). */
function* graphSteps() {
  if (!shown) return;
  const v = view();
  const target = v.targets[0];
  const width = ui.graph.clientWidth || 900;
  const info = yield* graphSVG({
    tokens: summary.tokens, layer: v.layer, target, sink: shown.sink, mixed: shown.mixed,
    threshold: v.threshold, filter: v.filter, bottleneck: shown.bottleneck,
    flowRow: shown.results.flow.scoresFor(v.layer, target), alpha: v.alpha, discard: v.discard, width,
  });
  graphInfo = info;
  describeBottleneck(v);
  const parts = [...info.svg.children];
  info.svg.replaceChildren();
  ui.graph.replaceChildren(info.svg);
  let batch = 0;
  for (const part of parts) {
    const size = part.getElementsByTagName('*').length + 1;
    if (batch && batch + size > GRAPH_BATCH) {
      yield;
      batch = 0;
    }
    info.svg.append(part);
    batch += size;
  }
}

function redrawGraph() {
  drain(graphSteps());
}

function describeBottleneck(v) {
  const b = shown.bottleneck;
  const t = v.targets[0];
  const j = shown.sink;
  const q = (i) => `“${ellipsize(showToken(summary.tokens[i]), 30)}”`;
  const score = shown.results.flow.scoresFor(v.layer, t)[j];
  const lines = [];
  const kindText = {
    sink: [h('strong', {}, 'Decided by the sink. '), `The minimum cut is the input token ${q(j)}’s own in-edges from layer 1: its score is bounded by how much layer-1 attention flows into it, whatever the layers above or the target do.`],
    source: [h('strong', {}, 'Decided by the source. '), `The minimum cut is the target ${q(t)}’s own out-edges at layer ${v.layer}: everything the target attends to could reach ${q(j)}.`],
    inner: [h('strong', {}, 'Decided inside the network. '), `The minimum cut runs through layers ${[...new Set(b.cut.map((e) => e.layer))].sort((a, c) => a - c).join(', ') || '–'}: those layers limit how much of ${q(t)} can reach ${q(j)}.`],
  }[b.kind] ?? [];
  lines.push(h('p', {}, [
    `Flow from ${q(t)} at layer ${v.layer} to input ${q(j)}: `,
    h('code', {}, fmt(b.value, 6)), ' (raw max-flow), ', h('code', {}, fmt(score, 6)),
    v.receptive ? ' after normalising by receptive field and the row. ' : ' after normalising the row. ',
    ...kindText,
  ]));
  const shownCut = b.cut.slice().sort((a, c) => c.capacity - a.capacity).slice(0, 10);
  if (shownCut.length) {
    lines.push(h('p', { class: 'cut-list' }, [
      `Cut (${b.cut.length} edge${b.cut.length === 1 ? '' : 's'}, total ${fmt(b.value, 6)}): `,
      ...shownCut.flatMap((e, k) => [k ? ', ' : '', h('span', { class: 'cut-edge' }, `L${e.layer} ${ellipsize(showToken(summary.tokens[e.from]), 20)} → ${ellipsize(showToken(summary.tokens[e.to]), 20)} (${fmt(e.capacity, 3)})`)]),
      b.cut.length > shownCut.length ? ', …' : '',
    ]));
  }
  ui.bottleneck.replaceChildren(...lines);
  ui.bottleneck.dataset.kind = b.kind;
}

function redraw() {
  if (shown) draw();
}

let resizeTimer = 0;
let lastWidth = 0;
new ResizeObserver(() => {
  const w = ui.results.clientWidth;
  if (w === lastWidth) return;
  lastWidth = w;
  clearTimeout(resizeTimer);
  resizeTimer = setTimeout(() => {
    if (!shown) return;
    drain(heatmapSteps(view()));
    redrawPatches();
    redrawGraph();
  }, 120);
}).observe(ui.results);

// ---------------------------------------------------------------------------------------------
// Exports.

function baseName() {
  const v = shown.settings;
  return `${sourceName.replace(/\.[^.]+(\.gz)?$/, '').replace(/[^\w.-]+/g, '_') || 'attnflow'}-L${v.layer}-t${v.targets.join('_')}`;
}

function exportSVG(which) {
  const v = view();
  const target = v.targets[0];
  const tok = (i) => `“${ellipsize(showToken(summary.tokens[i]), 30)}”`;
  if (which === 'strips') {
    return stripsSVG({
      tokens: summary.tokens, layer: v.layer, targets: v.targets, methods: v.methods, results: shown.results, scale: v.scale,
      title: `Attribution to input tokens: ${v.targets.length > 1 ? `targets ${v.targets.join(', ')}` : `target ${tok(target)}`}, layer ${v.layer} of ${summary.numLayers}, ${residualText(v)}`,
    });
  }
  if (which === 'heatmaps') {
    const { width: hw } = heatmapColumns(v.methods.length);
    const parts = v.methods.map((method) => heatmapSVG({
      tokens: summary.tokens, method, result: shown.results[method], target, layer: v.layer, scale: v.scale, width: Math.max(hw, 300), legend: true,
      numLayers: summary.numLayers,
    }));
    let x = 0;
    let height = 0;
    const g = [];
    for (const p of parts) {
      const w = Number(p.getAttribute('width'));
      p.setAttribute('x', x);
      p.setAttribute('y', 34);
      g.push(p);
      x += w + 16;
      height = Math.max(height, Number(p.getAttribute('height')));
    }
    const W = Math.max(x - 16, 300);
    return svg('svg', { xmlns: 'http://www.w3.org/2000/svg', width: W, height: height + 40, viewBox: `0 0 ${W} ${height + 40}`, 'font-family': FONT }, [
      svg('rect', { width: W, height: height + 40, fill: '#ffffff' }),
      svg('text', { x: 36, y: 22, 'font-size': 15, 'font-weight': 600, fill: '#1d2430' }, `Target ${tok(target)}: attribution per layer, ${residualText(v)}`),
      ...g,
    ]);
  }
  if (which === 'patches') return patchesSVG(v);
  if (which === 'graph') return graphInfo.svg.cloneNode(true);
  if (which === 'meta') return metaSVG({ tokens: summary.tokens, meta: summary.meta, title: `Importance of each input token (${sourceName})` });
  return null;
}

/**
 * The patch grids as drawn (with the image under them, if any), side by side under a title and
 * the legend: each grid's canvas goes in as a PNG, as it is raster already.
 */
function patchesSVG(v) {
  const grids = [...ui.patches.querySelectorAll('[data-testid="patch-grid"]')];
  if (!grids.length) return null;
  const top = 50;
  const parts = [];
  let x = 16;
  let height = 0;
  for (const grid of grids) {
    const canvas = grid.querySelector('canvas');
    const w = parseFloat(canvas.style.width);
    const hgt = parseFloat(canvas.style.height);
    parts.push(
      svg('text', { x, y: top - 8, 'font-size': 13, 'font-weight': 600, fill: '#1d2430' }, METHOD_LABEL[grid.dataset.method]),
      svg('image', { href: canvas.toDataURL('image/png'), x, y: top, width: w, height: hgt }),
    );
    x += w + 16;
    height = Math.max(height, hgt);
  }
  const W = Math.max(x, 320);
  const H = top + height + 44;
  const target = v.targets[0];
  return svg('svg', { xmlns: 'http://www.w3.org/2000/svg', width: W, height: H, viewBox: `0 0 ${W} ${H}`, 'font-family': FONT }, [
    svg('rect', { width: W, height: H, fill: '#ffffff' }),
    svg('text', { x: 16, y: 22, 'font-size': 15, 'font-weight': 600, fill: '#1d2430' },
      `Target ${target} “${ellipsize(showToken(summary.tokens[target]), 30)}” over the image patches, layer ${v.layer} of ${summary.numLayers}, ${residualText(v)}`),
    ...parts,
    legendGroup({ x: 16, y: top + height + 10, width: 180, min: 0, max: 1, label: v.scale === 'abs' ? 'score' : '× top patch' }),
  ]);
}

document.addEventListener('click', async (e) => {
  const btn = e.target.closest?.('[data-export]');
  if (!btn || !shown) return;
  const which = btn.dataset.export;
  const el = exportSVG(which);
  if (!el) return;
  const name = `${baseName()}-${which}`;
  try {
    if (btn.dataset.format === 'svg') download(svgBlob(el), `${name}.svg`);
    else download(await pngBlob(el, 2), `${name}.png`);
  } catch (error) {
    showError(error);
  }
});

function exportResults() {
  const v = shown.settings;
  const results = {};
  for (const m of METHODS) {
    const set = shown.results[m];
    const rows = set.rows.length === summary.numTokens ? set.rows : v.targets.slice().sort((a, b) => a - b);
    results[m] = set.described(rows);
  }
  return { source: sourceName, summary, results };
}

/** Writes an export a slice at a time (see export.mjs), then offers it as a download. */
async function exportScores(write, type, suffix) {
  if (!shown) return;
  const what = exportResults();
  const before = ui.status.textContent;
  ui.status.textContent = 'Preparing the export…';
  try {
    download(new Blob(await write(what), { type }), `${baseName()}-${suffix}`);
  } catch (error) {
    showError(error);
  } finally {
    if (ui.status.textContent === 'Preparing the export…') ui.status.textContent = before;
  }
}
ui.exportJson.addEventListener('click', () => exportScores(scoresJSON, 'application/json', 'scores.json'));
ui.exportCsv.addEventListener('click', () => exportScores(scoresCSV, 'text/csv', 'scores.csv'));

// ---------------------------------------------------------------------------------------------
// Start: list the bundled examples and compute the first.

async function start() {
  try {
    const res = await fetch('examples/index.json');
    if (!res.ok) throw new Error(`examples/index.json: HTTP ${res.status}`);
    examples = await res.json();
  } catch (error) {
    showError(error);
    setState('error');
    idle('No examples');
    return;
  }
  const groups = new Map();
  for (const ex of examples) {
    if (!groups.has(ex.group)) groups.set(ex.group, h('optgroup', { label: ex.group }));
    groups.get(ex.group).append(h('option', { value: ex.file }, `${ex.title} (${ex.numTokens} tokens)`));
  }
  ui.example.replaceChildren(h('option', { value: '', disabled: true }, 'Your file'), ...groups.values());
  ui.example.value = examples[0].file;
  await loadExample(examples[0].file);
}

clear(ui.strips);
start();
