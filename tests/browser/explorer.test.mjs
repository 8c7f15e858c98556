// The explorer page in a real headless Chromium (Debian's chromium, driven by playwright-core),
// served by scripts/serve.mjs on a free port. Run: node --test tests/browser/
// Screenshots go to tests/browser/out/ (git-ignored).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { compute, loadAttention } from 'attnflow';
import {
  OUT, ROOT, randomAttention, readCells, rng, toJson, toNpy, useServerAndBrowser, waitDone,
} from './helpers.mjs';
import { FORMAT_FIXTURES, mutate, readFormatFixture } from '../mutate.mjs';

const METHODS = ['raw', 'rollout', 'flow'];
const session = useServerAndBrowser();
const offOrigin = [];  // every request that left the page's origin, over all tests

async function openPage({ width = 1280, height = 800 } = {}) {
  const context = await session.browser.newContext({ viewport: { width, height }, acceptDownloads: true });
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  // context-level: also sees requests made by the page's workers
  context.on('request', (r) => {
    const u = r.url();
    if (!u.startsWith(`${session.server.origin}/`) && !u.startsWith('blob:') && !u.startsWith('data:')) offOrigin.push(u);
  });
  await page.goto(session.server.url);
  await waitDone(page, {}, 40_000);  // under the tests' 60 s, so a stuck page says where it stopped
  return { page, context, errors };
}

/** Sets the page's file input to a JSON input {tokens, attentions} as `name`; returns its bytes. */
async function dropJson(page, name, tokens, flat, L, H) {
  const bytes = Buffer.from(toJson(tokens, flat, L, H));
  await page.setInputFiles('input[type="file"][data-testid="attention-file"]', { name, mimeType: 'application/json', buffer: bytes });
  return bytes;
}

/** The package's own scores computed in Node, keyed by method. */
async function expected(bytes, name, { layer, target, fusion = 'mean', heads = null, alpha = 0.5, discard = 0, receptiveField = false }) {
  const data = await loadAttention(bytes, { name });
  const out = {};
  for (const method of METHODS) {
    const r = await compute(data, method, { layers: [layer], rows: [target], fusion, heads, alpha, discard, receptiveField });
    out[method] = Array.from(r.scoresFor(layer, target));
  }
  return out;
}

function assertCellsEqual(cells, want, { layer, target, tokens }) {
  assert.ok(cells.length > 0, 'no token cells');
  for (const c of cells) {
    assert.equal(c.layer, layer);
    assert.equal(c.target, target);
    assert.equal(c.text, tokens[c.index], 'the cell shows the token text');
    const w = want[c.method][c.index];
    assert.ok(Math.abs(c.value - w) <= 1e-12, `${c.method} layer ${layer} target ${target} token ${c.index}: page ${c.value}, package ${w}`);
  }
}

/** The text of the file a click on `selector` downloads. */
async function downloadText(page, selector) {
  const [dl] = await Promise.all([page.waitForEvent('download'), page.click(selector)]);
  const chunks = [];
  for await (const c of await dl.createReadStream()) chunks.push(c);
  return Buffer.concat(chunks).toString('utf8');
}

async function setRange(page, selector, value) {
  await page.$eval(selector, (el, v) => {
    el.value = String(v);
    el.dispatchEvent(new Event('input', { bubbles: true }));
  }, value);
}

test('page loads with the first example computed, equal to the package in Node', { timeout: 120_000 }, async () => {
  const { page, context, errors } = await openPage();
  const examples = JSON.parse(readFileSync(`${ROOT}demo/examples/index.json`, 'utf8'));
  const first = examples[0];
  const bytes = readFileSync(`${ROOT}demo/examples/${first.file}`);
  const data = JSON.parse(bytes);
  const L = data.attentions.length;
  await waitDone(page, { layer: L, target: 0, file: first.file, count: 3 * data.tokens.length });
  const cells = await readCells(page);
  assertCellsEqual(cells, await expected(bytes, first.file, { layer: L, target: 0 }), { layer: L, target: 0, tokens: data.tokens });
  // Defaults: last layer, first token, mean fusion, alpha 0.5.
  assert.equal(await page.inputValue('#layer'), String(L));
  assert.equal(await page.inputValue('#alpha'), '0.5');
  assert.equal(await page.$eval('input[name="fusion"]:checked', (e) => e.value), 'mean');
  // The other views are drawn, and the meta of the agreement example is shown.
  assert.equal(await page.locator('#heatmaps svg.heatmap').count(), 3);
  assert.equal(await page.locator('#graph svg .g-input').count(), data.tokens.length);
  // Inner nodes are dotted runs, one dot per column ("0 gap" dashes): a white dot for every node
  // of layers 1..L but the source, each above an input node.
  const dots = await page.$$eval('#graph svg path[stroke-dasharray][stroke="#ffffff"]', (paths) => {
    const inputs = [...document.querySelectorAll('#graph svg .g-input')].map((c) => Number(c.getAttribute('cx')));
    const found = [];
    for (const path of paths) {
      const gap = Number(path.getAttribute('stroke-dasharray').split(' ')[1]);
      for (const [, x1, x2] of path.getAttribute('d').matchAll(/M([\d.]+) [\d.]+H([\d.]+)/g)) {
        for (let x = Number(x1); x <= Number(x2) + 1e-9; x += gap) found.push(inputs.some((cx) => Math.abs(cx - x) < 0.05));
      }
    }
    return found;
  });
  assert.equal(dots.length, L * data.tokens.length - 1);
  assert.ok(dots.every(Boolean), 'every inner dot sits above an input node');
  assert.ok(['sink', 'source', 'inner'].includes(await page.getAttribute('#bottleneck', 'data-kind')));
  assert.equal(await page.locator('[data-testid="meta-score"]').count(), 2 * data.tokens.length);
  await page.screenshot({ path: `${OUT}explorer-1280x800.png` });
  await page.screenshot({ path: `${OUT}explorer-1280-full.png`, fullPage: true });
  assert.deepEqual(errors, []);
  await context.close();
});

test('an uploaded file: scores equal the package; switch target by click, layer, methods, fusion', { timeout: 120_000 }, async () => {
  const { page, context, errors } = await openPage();
  const L = 3;
  const H = 4;
  const n = 9;
  const tokens = ['<s>', 'A', 'never', 'seen', 'file', ',', 'with', 'tokens', '.'];
  const bytes = await dropJson(page, 'unseen.json', tokens, randomAttention({ L, H, n, seed: 424242 }), L, H);
  await waitDone(page, { file: 'unseen.json', layer: L, target: 0, count: 3 * n });
  assertCellsEqual(await readCells(page), await expected(bytes, 'unseen.json', { layer: L, target: 0 }), { layer: L, target: 0, tokens });

  // Click a token (in the flow strip) to make it the target.
  await page.click('[data-testid="token-score"][data-method="flow"][data-index="4"]');
  await waitDone(page, { target: 4, layer: L });
  assertCellsEqual(await readCells(page), await expected(bytes, 'unseen.json', { layer: L, target: 4 }), { layer: L, target: 4, tokens });

  // Layer by keyboard: focus the slider, Home = layer 1.
  await page.focus('#layer');
  await page.keyboard.press('Home');
  await waitDone(page, { target: 4, layer: 1 });
  assertCellsEqual(await readCells(page), await expected(bytes, 'unseen.json', { layer: 1, target: 4 }), { layer: 1, target: 4, tokens });

  // Methods: hide raw attention.
  await page.uncheck('input[name="method"][value="raw"]');
  await waitDone(page, { methods: ['rollout', 'flow'], count: 2 * n });

  // Fusion max over heads 0 and 2, alpha 0.8, layer 2.
  await page.check('input[name="method"][value="raw"]');
  await page.click('.segmented label:has(input[value="max"])');
  await waitDone(page, { target: 4, layer: 1 });
  await page.uncheck('#heads input[value="1"]');
  await page.uncheck('#heads input[value="3"]');
  await setRange(page, '#alpha', 0.8);
  await setRange(page, '#layer', 2);
  await page.waitForFunction(() => document.getElementById('strips-sub').textContent.includes('α = 0.8'));
  await waitDone(page, { target: 4, layer: 2, count: 3 * n });
  assertCellsEqual(await readCells(page),
    await expected(bytes, 'unseen.json', { layer: 2, target: 4, fusion: 'max', heads: [0, 2], alpha: 0.8 }),
    { layer: 2, target: 4, tokens });

  // Keyboard: Tab into a strip lands on the target; arrows move; Enter selects; focus shows the value.
  await page.focus('[data-testid="token-score"][data-method="rollout"][data-index="4"]');
  await page.keyboard.press('ArrowRight');
  const focused = await page.evaluate(() => document.activeElement.dataset.index);
  assert.equal(focused, '5');
  const readout = await page.textContent('#readout');
  const value = await page.getAttribute('[data-testid="token-score"][data-method="rollout"][data-index="5"]', 'data-value');
  assert.ok(readout.includes(value), `focus shows the exact value (${value} in "${readout}")`);
  await page.keyboard.press('Enter');
  await waitDone(page, { target: 5, layer: 2 });
  assert.deepEqual(errors, []);
  await context.close();
});

test('discard smallest: rollout and flow equal the package with the same {alpha, discard}; raw unchanged', { timeout: 120_000 }, async () => {
  const { page, context, errors } = await openPage();
  const L = 3;
  const H = 4;
  const n = 10;
  const tokens = Array.from({ length: n }, (_, i) => `d${i}`);
  const bytes = await dropJson(page, 'discard.json', tokens, randomAttention({ L, H, n, seed: 2024, sharp: 4 }), L, H);
  await waitDone(page, { file: 'discard.json', layer: L, target: 0, count: 3 * n });
  assert.equal(await page.inputValue('#discard'), '0', 'default 0 (the paper)');
  const before = await readCells(page);
  const byKey = (cells) => new Map(cells.map((c) => [`${c.method}|${c.index}`, c.value]));
  assertCellsEqual(before, await expected(bytes, 'discard.json', { layer: L, target: 0 }), { layer: L, target: 0, tokens });
  assert.ok(!(await page.textContent('#strips-sub')).includes('discard'), 'no discard in the caption at 0');

  // 0.3 through the slider (input events, as dragging it fires).
  await setRange(page, '#discard', 0.3);
  assert.equal(await page.textContent('#discard-out'), '0.3');
  await page.waitForFunction(() => document.getElementById('strips-sub').textContent.includes('α = 0.5, discard 0.3'));
  await waitDone(page, { layer: L, target: 0, count: 3 * n });
  const cells = await readCells(page);
  const want = await expected(bytes, 'discard.json', { layer: L, target: 0, alpha: 0.5, discard: 0.3 });
  assertCellsEqual(cells, want, { layer: L, target: 0, tokens });
  const was = byKey(before);
  for (const c of cells.filter((x) => x.method === 'raw')) assert.equal(c.value, was.get(`raw|${c.index}`), `raw token ${c.index} unchanged`);
  // The discard changes rollout and flow here (else the check above could not fail).
  assert.ok(cells.some((c) => c.method !== 'raw' && Math.abs(c.value - was.get(`${c.method}|${c.index}`)) > 1e-6), 'discard 0.3 changes rollout/flow');
  assert.match(await page.textContent('#graph svg'), /α = 0\.5, discard 0\.3/);

  // With another alpha, and a different target (graph and bottleneck recomputed with discard).
  await setRange(page, '#alpha', 0.7);
  await page.waitForFunction(() => document.getElementById('strips-sub').textContent.includes('α = 0.7, discard 0.3'));
  await page.click('[data-testid="token-score"][data-method="flow"][data-index="3"]');
  await waitDone(page, { layer: L, target: 3, count: 3 * n });
  assertCellsEqual(await readCells(page), await expected(bytes, 'discard.json', { layer: L, target: 3, alpha: 0.7, discard: 0.3 }), { layer: L, target: 3, tokens });

  // Keyboard: the slider is focusable; End = 0.95, Home = 0.
  await page.focus('#discard');
  await page.keyboard.press('End');
  await page.waitForFunction(() => document.getElementById('strips-sub').textContent.includes('discard 0.95'));
  await waitDone(page, { layer: L, target: 3, count: 3 * n });
  assertCellsEqual(await readCells(page), await expected(bytes, 'discard.json', { layer: L, target: 3, alpha: 0.7, discard: 0.95 }), { layer: L, target: 3, tokens });
  await page.screenshot({ path: `${OUT}explorer-discard-1280x800.png` });
  await page.keyboard.press('Home');
  await page.waitForFunction(() => !document.getElementById('strips-sub').textContent.includes('discard'));
  await waitDone(page, { layer: L, target: 3, count: 3 * n });
  assertCellsEqual(await readCells(page), await expected(bytes, 'discard.json', { layer: L, target: 3, alpha: 0.7 }), { layer: L, target: 3, tokens });
  // Every slider is named by its label (an <output> inside a <label> would otherwise take the label).
  assert.match(await page.getAttribute('#discard', 'aria-describedby') ?? '', /discard-hint/);
  const labels = await page.$$eval('input[type="range"]', (els) => els.map((e) => [e.id, e.labels?.[0]?.textContent ?? '']));
  assert.equal(labels.length, 4);
  for (const [id, text] of labels) assert.ok(text.trim().length > 0, `#${id} has a label`);
  assert.match(Object.fromEntries(labels).discard, /Discard smallest/);
  assert.deepEqual(errors, []);
  await context.close();
});

test('normalise by receptive field: rollout and flow equal the package with receptiveField; raw unchanged', { timeout: 120_000 }, async () => {
  const { page, context, errors } = await openPage();
  const L = 4;
  const H = 2;
  const n = 9;
  const tokens = Array.from({ length: n }, (_, i) => `c${i}`);
  const bytes = await dropJson(page, 'receptive.json', tokens, randomAttention({ L, H, n, seed: 4242, causal: true }), L, H);
  await waitDone(page, { file: 'receptive.json', layer: L, target: n - 1, count: 3 * n });
  assert.equal(await page.isChecked('#receptive'), false, 'off by default (the paper)');
  const before = await readCells(page);
  await page.check('#receptive');
  await page.waitForFunction(() => document.getElementById('strips-sub').textContent.includes('÷ receptive field'));
  await waitDone(page, { layer: L, target: n - 1, count: 3 * n });
  const cells = await readCells(page);
  assertCellsEqual(cells, await expected(bytes, 'receptive.json', { layer: L, target: n - 1, receptiveField: true }), { layer: L, target: n - 1, tokens });
  await page.screenshot({ path: `${OUT}explorer-receptive-1280x800.png` });
  assert.match(await page.textContent('#bottleneck'), /after normalising by receptive field and the row/);
  const was = new Map(before.map((c) => [`${c.method}|${c.index}`, c.value]));
  for (const c of cells.filter((x) => x.method === 'raw')) assert.equal(c.value, was.get(`raw|${c.index}`), `raw token ${c.index} unchanged`);
  // Position alone favours token 0 in a causal model; the normalisation lowers its share.
  for (const method of ['rollout', 'flow']) {
    const first = (list) => list.find((c) => c.method === method && c.index === 0).value;
    assert.ok(first(cells) < first(before), `${method}: token 0 ${first(cells)} < ${first(before)}`);
  }
  await page.uncheck('#receptive');
  await page.waitForFunction(() => !document.getElementById('strips-sub').textContent.includes('receptive'));
  await waitDone(page, { layer: L, target: n - 1, count: 3 * n });
  assertCellsEqual(await readCells(page), await expected(bytes, 'receptive.json', { layer: L, target: n - 1 }), { layer: L, target: n - 1, tokens });
  assert.deepEqual(errors, []);
  await context.close();
});

test('the flow graph draws the edges each filter asks for (all, from the source, on a path to the sink), against a brute-force count', { timeout: 60_000 }, async () => {
  const { page, context, errors } = await openPage();
  const counts = await page.evaluate(async () => {
    const { graphSVG } = await import('/demo/views/graph.mjs');
    const n = 7;
    const top = 4;
    let seed = 7;
    const random = () => ((seed = (seed * 16807) % 2147483647) / 2147483647);
    // Sparse rows with exact zeros and weights on both sides of the threshold.
    const mixed = Array.from({ length: top }, () => Float64Array.from({ length: n * n }, () => (random() < 0.5 ? 0 : random() * 0.4)));
    const threshold = 0.15;
    const target = 2;
    const sink = 5;
    const edge = (l, i, j) => mixed[l - 1][i * n + j] >= threshold && mixed[l - 1][i * n + j] > 0;
    // Brute force: node (l, i) reached from (top, target), node (l, j) reaching (0, sink).
    const reached = (l, i) => (l === top ? i === target : [...Array(n).keys()].some((p) => reached(l + 1, p) && edge(l + 1, p, i)));
    const reaches = (l, i) => (l === 0 ? i === sink : [...Array(n).keys()].some((c) => edge(l, i, c) && reaches(l - 1, c)));
    const expected = { all: 0, source: 0, path: 0 };
    for (let l = 1; l <= top; l++) {
      for (let i = 0; i < n; i++) {
        for (let j = 0; j < n; j++) {
          if (!edge(l, i, j)) continue;
          expected.all += 1;
          if (reached(l, i)) expected.source += 1;
          if (reached(l, i) && reaches(l - 1, j)) expected.path += 1;
        }
      }
    }
    const drawn = {};
    for (const filter of ['all', 'source', 'path']) {
      const steps = graphSVG({
        tokens: [...Array(n).keys()].map(String), layer: top, target, sink, mixed, threshold, filter,
        bottleneck: null, flowRow: new Float64Array(n), alpha: 0.5, width: 600,
      });
      let step = steps.next();
      while (!step.done) step = steps.next();
      drawn[filter] = step.value.edgesTotal;
    }
    return { expected, drawn };
  });
  assert.deepEqual(counts.drawn, counts.expected);
  assert.ok(counts.expected.all > counts.expected.source && counts.expected.source > counts.expected.path && counts.expected.path > 0, JSON.stringify(counts.expected));
  assert.deepEqual(errors, []);
  await context.close();
});

test('rollout and flow on an unseen L=2 file agree with an independent computation (1e-9)', { timeout: 60_000 }, async () => {
  const { page, context } = await openPage();
  const L = 2;
  const H = 3;
  const n = 7;
  const tokens = Array.from({ length: n }, (_, i) => `t${i}`);
  const flat = randomAttention({ L, H, n, seed: 777, causal: true });
  await dropJson(page, 'causal.json', tokens, flat, L, H);
  // A causal input: the default target is the last token (the first one only sees itself).
  await waitDone(page, { file: 'causal.json', layer: 2, target: n - 1 });
  assert.match(await page.textContent('#input-info'), /causal/);
  // Independent: mean of heads, A = (F + I) / rowsum, rollout = A2 A1, flow = sum_k min(A2[i][k], A1[k][j]).
  const A = [];
  for (let l = 0; l < L; l++) {
    const m = [];
    for (let i = 0; i < n; i++) {
      const row = [];
      for (let j = 0; j < n; j++) {
        let s = 0;
        for (let h = 0; h < H; h++) s += flat[((l * H + h) * n + i) * n + j];
        row.push(0.5 * (s / H) + (i === j ? 0.5 : 0));
      }
      const sum = row.reduce((a, b) => a + b, 0);
      m.push(row.map((v) => v / sum));
    }
    A.push(m);
  }
  const i = 6;
  const roll = [];
  const flow = [];
  for (let j = 0; j < n; j++) {
    let r = 0;
    let f = 0;
    for (let k = 0; k < n; k++) {
      r += A[1][i][k] * A[0][k][j];
      f += Math.min(A[1][i][k], A[0][k][j]);
    }
    roll.push(r);
    flow.push(f);
  }
  const fsum = flow.reduce((a, b) => a + b, 0);
  const cells = await readCells(page);
  for (const c of cells) {
    if (c.method === 'rollout') assert.ok(Math.abs(c.value - roll[c.index]) < 1e-9, `rollout ${c.index}: ${c.value} vs ${roll[c.index]}`);
    if (c.method === 'flow') assert.ok(Math.abs(c.value - flow[c.index] / fsum) < 1e-9, `flow ${c.index}: ${c.value} vs ${flow[c.index] / fsum}`);
  }
  await context.close();
});

test('a bad file shows an error; the previous view stays usable', { timeout: 60_000 }, async () => {
  const { page, context, errors } = await openPage();
  const before = await readCells(page);
  await page.setInputFiles('[data-testid="attention-file"]', { name: 'broken.json', mimeType: 'application/json', buffer: Buffer.from('{"tokens": ["a", "b"], "attentions": [[[[0.5, 0.5], [1.0]]]]}') });
  await page.waitForSelector('[data-testid="results"][data-state="error"]');
  const message = await page.textContent('[data-testid="error"]');
  assert.ok(await page.isVisible('[data-testid="error"]'));
  assert.match(message, /E_INPUT|E_FORMAT/);
  assert.match(message, /row|ragged|length|expected/i, `the message names the problem: ${message}`);
  // The previous strips are still there and still work.
  assert.deepEqual(await readCells(page), before);
  await page.click('[data-testid="token-score"][data-method="rollout"][data-index="2"]');
  await waitDone(page, { target: 2 });
  assert.ok(await page.isHidden('[data-testid="error"]'));
  // Not a format at all.
  await page.setInputFiles('[data-testid="attention-file"]', { name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('hello, I am not attention') });
  await page.waitForSelector('[data-testid="results"][data-state="error"]');
  assert.ok((await page.textContent('[data-testid="error"]')).length > 10);
  assert.equal((await readCells(page)).length, before.length);
  assert.deepEqual(errors, []);
  await context.close();
});

test('a cancel before a new file is first drawn empties the views instead of labelling the last file\'s scores with it', { timeout: 60_000 }, async () => {
  const { page, context, errors } = await openPage();
  // Cancel at the moment the new input is taken (its name shown), while its first scores compute.
  await page.evaluate(() => {
    const info = document.getElementById('input-info');
    new MutationObserver(() => {
      if (info.textContent.includes('second.json')) document.getElementById('cancel').click();
    }).observe(info, { childList: true, characterData: true, subtree: true });
  });
  const tokens = ['p', 'q', 'r', 's', 't'];
  await page.setInputFiles('[data-testid="attention-file"]', { name: 'second.json', mimeType: 'application/json',
    buffer: Buffer.from(toJson(tokens, randomAttention({ L: 3, H: 2, n: 5, seed: 4 }), 3, 2)) });
  await page.waitForFunction(() => document.getElementById('status').textContent === 'Cancelled');
  const after = await page.evaluate(() => ({
    cells: document.querySelectorAll('[data-testid="token-score"]').length,
    sub: document.getElementById('strips-sub').textContent,
    info: document.getElementById('input-info').textContent,
  }));
  assert.match(after.info, /second\.json/);
  assert.equal(after.cells, 0, 'the last file\'s scores are not shown under second.json');
  assert.match(after.sub, /^Nothing is computed for second\.json yet/);
  // Any control then computes the new input.
  await page.selectOption('#target', '2');
  await waitDone(page, { file: 'second.json', count: 3 * tokens.length, target: 2 });
  assert.deepEqual(errors, []);
  await context.close();
});

test('a click on the view still shown while a file is read does not drop the file', { timeout: 60_000 }, async () => {
  const { page, context, errors } = await openPage();
  // Hold the worker's load request for 600 ms, so that the click falls while the file is read.
  await page.evaluate(() => {
    const post = Worker.prototype.postMessage;
    Worker.prototype.postMessage = function delayed(msg, ...rest) {
      if (msg?.type === 'load') setTimeout(() => post.call(this, msg, ...rest), 600);
      else post.call(this, msg, ...rest);
    };
  });
  const L = 2;
  const n = 5;
  const tokens = Array.from({ length: n }, (_, i) => `w${i}`);
  await dropJson(page, 'later.json', tokens, randomAttention({ L, H: 2, n, seed: 9 }), L, 2);
  await page.waitForFunction(() => document.getElementById('status').textContent.startsWith('Reading later.json'));
  await page.click('[data-testid="token-score"][data-method="rollout"][data-index="1"]');
  await waitDone(page, { file: 'later.json', count: 3 * n, target: 0 });
  assert.deepEqual(errors, []);
  await context.close();
});

test('40 corrupted files in a row: each ends in a view or a coded error, the page never breaks', { timeout: 120_000 }, async () => {
  const { page, context, errors } = await openPage();
  const random = rng(4012);
  const outcomes = {};
  for (let k = 0; k < 40; k++) {
    const name = FORMAT_FIXTURES[Math.floor(random() * FORMAT_FIXTURES.length)];
    const [bytes, description] = mutate(readFormatFixture(name), random);
    const what = `${name}, mutant ${k}, ${description}`;
    // A state no drop leaves, so the wait below sees this drop's outcome, not the last one's.
    await page.evaluate(() => { document.querySelector('[data-testid="results"]').dataset.state = 'dropped'; });
    await page.setInputFiles('[data-testid="attention-file"]', { name, mimeType: 'application/octet-stream', buffer: Buffer.from(bytes) });
    await page.waitForFunction(() => ['done', 'error'].includes(document.querySelector('[data-testid="results"]').dataset.state),
      null, { timeout: 20_000 });
    if (await page.getAttribute('[data-testid="results"]', 'data-state') === 'error') {
      const message = await page.textContent('[data-testid="error"]');
      assert.match(message, /E_(FORMAT|INPUT|TOO_LARGE)/, what);
      assert.doesNotMatch(message, /undefined|\[object /, what);
      outcomes.error = (outcomes.error ?? 0) + 1;
    } else {
      outcomes.done = (outcomes.done ?? 0) + 1;
    }
  }
  assert.ok(outcomes.error >= 20, `most mutants are refused: ${JSON.stringify(outcomes)}`);
  // After all that, a good file still opens.
  await page.setInputFiles('[data-testid="attention-file"]', { name: 'att.npz', mimeType: 'application/octet-stream', buffer: Buffer.from(readFormatFixture('att.npz')) });
  await waitDone(page, { file: 'att.npz' });
  assert.deepEqual(errors, []);
  await context.close();
});

test('a PyTorch .pt file (torch.save) opens, equal to the package; one holding a Python object is refused', { timeout: 60_000 }, async () => {
  const { page, context, errors } = await openPage();
  const fixture = (name) => readFileSync(new URL(`../fixtures/formats/${name}`, import.meta.url));
  const bytes = fixture('att_dict_f16.pt');
  await page.setInputFiles('[data-testid="attention-file"]', { name: 'attn.pt', mimeType: 'application/octet-stream', buffer: bytes });
  const { tokens, numLayers: L, numTokens: n } = await loadAttention(bytes, { name: 'attn.pt' });
  await waitDone(page, { file: 'attn.pt', layer: L, target: 0, count: 3 * n });
  assertCellsEqual(await readCells(page), await expected(bytes, 'attn.pt', { layer: L, target: 0 }), { layer: L, target: 0, tokens });
  await page.setInputFiles('[data-testid="attention-file"]', { name: 'outputs.pt', mimeType: 'application/octet-stream', buffer: fixture('model_output.pt') });
  await page.waitForSelector('[data-testid="results"][data-state="error"]');
  assert.match(await page.textContent('[data-testid="error"]'), /outputs\.pt holds a Python object of type __main__\.ModelOutput/);
  assert.deepEqual(errors, []);
  await context.close();
});

test('untrusted tokens render as inert text', { timeout: 60_000 }, async () => {
  const { page, context, errors } = await openPage();
  const evil = ['<img src=x onerror=window.__xss=1>', '<script>window.__xss=2</script>', '"><svg onload=window.__xss=3>', '&amp;', 'ok'];
  const n = evil.length;
  await page.setInputFiles('[data-testid="attention-file"]', { name: 'evil.json', mimeType: 'application/json', buffer: Buffer.from(toJson(evil, randomAttention({ L: 2, H: 2, n, seed: 9 }), 2, 2)) });
  await waitDone(page, { file: 'evil.json', count: 3 * n });
  const cells = await readCells(page);
  for (const c of cells) assert.equal(c.text, evil[c.index]);
  // Hover and focus paths (read-out, tooltips), the graph and the selects also get the tokens.
  await page.hover('[data-testid="token-score"][data-index="0"]');
  await page.selectOption('#sink', '0');
  await waitDone(page);
  await page.waitForTimeout(300);
  assert.equal(await page.evaluate(() => window.__xss), undefined);
  assert.equal(await page.locator('main img, main script, #graph svg svg, #heatmaps foreignObject').count(), 0);
  assert.ok((await page.textContent('#readout')).includes(evil[0]));
  assert.deepEqual(errors, []);
  await context.close();
});

test('picking another input token redraws the graph alone; another layer redraws every view', { timeout: 60_000 }, async () => {
  const { page, context, errors } = await openPage();
  const n = 60;
  const tokens = [...Array(n).keys()].map((i) => `t${i}`);
  await page.setInputFiles('[data-testid="attention-file"]', { name: 'sinks.json', mimeType: 'application/json', buffer: Buffer.from(toJson(tokens, randomAttention({ L: 4, H: 2, n, seed: 12 }), 4, 2)) });
  await waitDone(page, { file: 'sinks.json', count: 3 * n, layer: 4 });
  // Marks on elements of the strips, the heatmaps and the graph: a view drawn again loses its mark.
  const mark = () => page.evaluate(() => {
    for (const s of ['[data-testid="token-score"]', '#heatmaps svg', '#graph svg']) document.querySelector(s).dataset.mark = '1';
  });
  const marked = () => page.evaluate(() => ['[data-testid="token-score"]', '#heatmaps svg', '#graph svg']
    .map((s) => document.querySelector(s).dataset.mark === '1'));
  await mark();
  await page.selectOption('#sink', '7');
  await page.waitForFunction(() => document.querySelector('#graph svg')?.textContent.includes('“t7” (input)'));
  await waitDone(page, { layer: 4 });
  assert.deepEqual(await marked(), [true, true, false]);
  assert.match(await page.textContent('#bottleneck'), /“t7”/);
  await setRange(page, '#layer', 3);
  await waitDone(page, { layer: 3 });
  assert.deepEqual(await marked(), [false, false, false]);
  assert.deepEqual(errors, []);
  await context.close();
});

test('tokens that would not show as themselves: visible forms, no reordered captions, no wide page, inert in CSV', { timeout: 60_000 }, async () => {
  const { page, context, errors } = await openPage();
  const tokens = ['\u202eright to left', ' ', '', 'x'.repeat(300), '=HYPERLINK("http://example.com")', 'ok',
    'b\u0001', 'esc\u001b[31m', '\u0000', 'a\u200bb'];
  const n = tokens.length;
  await page.setInputFiles('[data-testid="attention-file"]', { name: 'odd.json', mimeType: 'application/json', buffer: Buffer.from(toJson(tokens, randomAttention({ L: 2, H: 2, n, seed: 5 }), 2, 2)) });
  await waitDone(page, { file: 'odd.json', count: 3 * n });
  // The contract: a cell's text is the token. What it shows is its visible form.
  const cells = await page.$$eval('[data-testid="token-score"][data-method="flow"]', (els) => els.map((e) => ({ text: e.textContent, shown: e.dataset.shown ?? null })));
  assert.deepEqual(cells.map((c) => c.text), tokens);
  assert.deepEqual(cells.map((c) => c.shown), ['⟨RLO⟩right to left', '·', '∅', `${'x'.repeat(23)}…`, '=HYPERLINK("http://exam…', null,
    'b⟨U+0001⟩', 'esc⟨U+001B⟩[31m', '⟨U+0000⟩', 'a⟨U+200B⟩b']);
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  assert.ok(overflow <= 1, `a 300-character token does not widen the page (overflow ${overflow}px)`);
  // The read-out names the token by its visible form: no direction control reaches the page's text.
  await page.hover('[data-testid="token-score"][data-method="flow"][data-index="0"]');
  const readout = await page.textContent('#readout');
  assert.ok(readout.includes('⟨RLO⟩right to left') && !readout.includes('\u202e'), readout);
  for (const id of ['#strips-sub', '#bottleneck', '#heatmaps-sub']) {
    const text = await page.textContent(id);
    assert.ok(!text.includes('\u202e'), `${id}: ${text}`);
  }
  assert.ok((await page.textContent('#strips-sub')).includes('⟨RLO⟩'), 'the caption names target 0 by its visible form');
  assert.equal(await page.getAttribute('[data-testid="token-score"][data-method="flow"][data-index="2"]', 'aria-label').then((l) => l.split(':')[0]), 'empty token');
  // A spreadsheet would run the formula token: the CSV gives it a leading apostrophe.
  const csv = await downloadText(page, '#export-csv');
  assert.ok(csv.includes(`"'=HYPERLINK(""http://example.com"")"`), 'formula token defused');
  // Control characters (not allowed in XML): the SVG exports still parse, the PNG ones still draw.
  for (const view of ['strips', 'heatmaps', 'graph']) {
    const svgText = await downloadText(page, `[data-export="${view}"][data-format="svg"]`);
    const parseError = await page.evaluate((t) => new DOMParser().parseFromString(t, 'image/svg+xml')
      .querySelector('parsererror')?.textContent ?? null, svgText);
    assert.equal(parseError, null, `${view}: the SVG export parses`);
    const [png] = await Promise.all([page.waitForEvent('download', { timeout: 10_000 }),
      page.click(`[data-export="${view}"][data-format="png"]`)]);
    assert.match(png.suggestedFilename(), /\.png$/);
  }
  // The sink select follows the graph: back to "auto" when the target changes.
  await page.selectOption('#sink', '5');
  await waitDone(page);
  await page.selectOption('#target', '1');
  await waitDone(page, { target: 1 });
  assert.equal(await page.inputValue('#sink'), 'auto');
  assert.deepEqual(errors, []);
  await context.close();
});

test('a token of megabytes (a whole text as one token) is cut for display and freezes nothing', { timeout: 60_000 }, async () => {
  const { page, context, errors } = await openPage();
  await page.evaluate(() => {
    window.__longtasks = [];
    new PerformanceObserver((list) => { for (const e of list.getEntries()) window.__longtasks.push(Math.round(e.duration)); })
      .observe({ type: 'longtask' });
  });
  // 5 MB: its text nodes, titles and labels took main-thread tasks of about a second each (50 MB:
  // 14 tasks of 1.7-27 s, 97 s to the first view).
  // From disk, as a user picks it (a buffer would be copied into the page on its main thread).
  const tokens = ['[CLS]', 'w'.repeat(5_000_000), 'b', 'c'];
  const dir = mkdtempSync(join(tmpdir(), 'attnflow-long-token-'));
  const path = join(dir, 'long-token.json');
  writeFileSync(path, toJson(tokens, randomAttention({ L: 2, H: 2, n: 4, seed: 3 }), 2, 2));
  await page.setInputFiles('[data-testid="attention-file"]', path);
  await waitDone(page, { file: 'long-token.json', count: 12 });
  rmSync(dir, { recursive: true });
  const cell = await page.$eval('[data-testid="token-score"][data-method="flow"][data-index="1"]',
    (e) => ({ text: e.textContent, title: e.title, label: e.getAttribute('aria-label') }));
  assert.equal(cell.text, `${'w'.repeat(1000)}…`, 'cut to 1,000 characters');
  assert.ok(cell.title.length <= 1001 && cell.label.length < 1100, 'so are its title and label');
  const tasks = await page.evaluate(() => window.__longtasks);
  assert.ok(tasks.every((ms) => ms < 200), `main-thread tasks: ${tasks.join(', ')} ms`);
  assert.deepEqual(errors, []);
  await context.close();
});

test('exports: SVG, PNG, JSON and CSV downloads hold the displayed scores', { timeout: 60_000 }, async () => {
  const { page, context } = await openPage();
  const cells = await readCells(page);
  const grab = async (selector) => {
    const [dl] = await Promise.all([page.waitForEvent('download'), page.click(selector)]);
    const stream = await dl.createReadStream();
    const chunks = [];
    for await (const c of stream) chunks.push(c);
    return { name: dl.suggestedFilename(), bytes: Buffer.concat(chunks) };
  };
  for (const view of ['strips', 'heatmaps', 'graph']) {
    const svgFile = await grab(`[data-export="${view}"][data-format="svg"]`);
    assert.match(svgFile.name, /\.svg$/);
    assert.match(svgFile.bytes.toString('utf8'), /^<\?xml[^>]*>\s*<svg[^>]*xmlns="http:\/\/www.w3.org\/2000\/svg"/);
    const png = await grab(`[data-export="${view}"][data-format="png"]`);
    assert.deepEqual([...png.bytes.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    assert.ok(png.bytes.length > 2000);
  }
  const json = JSON.parse((await grab('#export-json')).bytes.toString('utf8'));
  const flow = json.results.find((r) => r.method === 'flow');
  const layer = cells[0].layer;
  const li = flow.layers.indexOf(layer);
  const ri = flow.rows.indexOf(cells[0].target);
  for (const c of cells.filter((x) => x.method === 'flow')) assert.equal(flow.scores[li][ri][c.index], c.value);
  const csv = (await grab('#export-csv')).bytes.toString('utf8').trim().split('\n');
  assert.equal(csv[0], 'method,layer,target,target_token,index,token,score,fusion,heads,alpha,discard,receptive_field');
  const rollout0 = cells.find((c) => c.method === 'rollout' && c.index === 0);
  assert.ok(csv.some((line) => line.startsWith(`rollout,${layer},${rollout0.target},`) && line.includes(`,${rollout0.value},`)));
  await context.close();
});

test('compute all rows: exported flow/rollout/raw equal the package, with one worker and with a worker pool', { timeout: 120_000 }, async () => {
  // L >= 6 and >= 8 rows per pool share (3 workers): the workers exchange the flow certificate's
  // sink values over their peer channels, in the browser too.
  const L = 6;
  const H = 2;
  const n = 24;
  const tokens = Array.from({ length: n }, (_, i) => `w${i}`);
  const bytes = Buffer.from(toJson(tokens, randomAttention({ L, H, n, seed: 31337, sharp: 4 }), L, H));
  const data = await loadAttention(bytes, { name: 'all.json' });
  const want = {};
  for (const method of METHODS) want[method] = (await compute(data, method, { layers: 'all', rows: 'all' })).toJSON().scores;
  for (const cores of [1, 4]) {
    const context = await session.browser.newContext({ viewport: { width: 1280, height: 800 }, acceptDownloads: true });
    // The page uses hardwareConcurrency - 1 pool workers for compute-all flow (none on <= 2 cores).
    await context.addInitScript((c) => Object.defineProperty(Navigator.prototype, 'hardwareConcurrency', { get: () => c }), cores);
    const page = await context.newPage();
    const errors = [];
    let pool = false;
    page.on('pageerror', (e) => errors.push(e.message));
    context.on('request', (r) => { if (r.url().endsWith('/web/parallel-worker.mjs')) pool = true; });
    await page.goto(session.server.url);
    await waitDone(page);
    await page.setInputFiles('[data-testid="attention-file"]', { name: 'all.json', mimeType: 'application/json', buffer: bytes });
    await waitDone(page, { file: 'all.json', layer: L });
    await page.click('#compute-all');
    await page.waitForFunction(() => /^Done: every row/.test(document.getElementById('status').textContent), null, { timeout: 60_000 });
    const [dl] = await Promise.all([page.waitForEvent('download'), page.click('#export-json')]);
    const chunks = [];
    for await (const c of await dl.createReadStream()) chunks.push(c);
    const json = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    for (const r of json.results) {
      assert.deepEqual(r.layers, [1, 2, 3, 4, 5, 6]);
      assert.equal(r.rows.length, n, `${r.method}: every row exported`);
      r.scores.forEach((perLayer, l) => perLayer.forEach((row, i) => row.forEach((v, j) => {
        const w = want[r.method][l][i][j];
        assert.ok(Math.abs(v - w) <= 1e-12, `${cores} cores, ${r.method} layer ${l + 1} row ${i} token ${j}: ${v} vs ${w}`);
      })));
    }
    assert.equal(pool, cores > 2, `the worker pool is used only with cores to spare (${cores} cores)`);
    // Switching target now needs no computation and shows the same numbers.
    await page.click('[data-testid="token-score"][data-method="flow"][data-index="7"]');
    await waitDone(page, { target: 7, layer: L });
    for (const c of await readCells(page)) assert.ok(Math.abs(c.value - want[c.method][L - 1][7][c.index]) <= 1e-12);
    assert.deepEqual(errors, []);
    await context.close();
  }
});

test('a long flow (L=12, H=12, n=128, every row of every layer): progress, no long main-thread task, cancel', { timeout: 300_000 }, async () => {
  const { page, context, errors } = await openPage();
  const L = 12;
  const H = 12;
  const n = 128;
  const npy = toNpy(randomAttention({ L, H, n, seed: 12128 }), [L, H, n, n]);
  await page.setInputFiles('[data-testid="attention-file"]', { name: 'bert-base-like.npy', mimeType: 'application/octet-stream', buffer: npy });
  await waitDone(page, { file: 'bert-base-like.npy', layer: L, target: 0, count: 3 * n }, 120_000);
  const before = await readCells(page);
  await page.evaluate(() => {
    window.__longest = 0;
    window.__longtasks = [];
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) {
        window.__longtasks.push(e.duration);
        window.__longest = Math.max(window.__longest, e.duration);
      }
    }).observe({ type: 'longtask' });
  });

  // 1. Start the full computation, see progress, cancel it.
  await page.click('#compute-all');
  await page.waitForSelector('#cancel:visible');
  assert.equal(await page.getAttribute('[data-testid="results"]', 'data-state'), 'computing');
  // Progress arrives from the worker (196,608 max-flows take far longer than one report period).
  await page.waitForFunction(() => /max-flows/.test(document.getElementById('progress-text').textContent), null, { timeout: 120_000 });
  await page.click('#cancel');
  await waitDone(page, { layer: L, target: 0, count: 3 * n });
  assert.equal(await page.textContent('#status'), 'Cancelled');
  assert.ok(await page.isHidden('#cancel'));
  assert.deepEqual(await readCells(page), before, 'after a cancel the previous view is back, unchanged');
  // The page is usable: a new target computes.
  await page.click('[data-testid="token-score"][data-method="flow"][data-index="5"]');
  await waitDone(page, { target: 5, layer: L });
  // A view change during a full run stops it, and the status says so.
  await page.click('#compute-all');
  await page.waitForFunction(() => /max-flows/.test(document.getElementById('progress-text').textContent), null, { timeout: 120_000 });
  await page.click('[data-testid="token-score"][data-method="flow"][data-index="6"]');
  await waitDone(page, { target: 6, layer: L });
  assert.match(await page.textContent('#status'), /computing every row stopped when the view changed/);
  await page.click('[data-testid="token-score"][data-method="flow"][data-index="5"]');
  await waitDone(page, { target: 5, layer: L });

  // 2. The full run to the end (every row of every layer), measuring long tasks throughout. The
  // page's own tasks here are at most ~40 ms (CPU profile: the views are drawn one per task); on
  // a 2-vCPU machine whose other core is also busy (Chromium's processes, the test runner) one of
  // them once stretched to 191 ms. So a run with a long task is run once more (another alpha:
  // the same work again); a page that blocks its main thread fails both runs.
  const fullRun = async () => {
    await page.evaluate(() => { window.__longest = 0; window.__longtasks = []; });
    const t0 = Date.now();
    await page.click('#compute-all');
    await page.waitForFunction(() => /^Done: every row/.test(document.getElementById('status').textContent), null, { timeout: 240_000 });
    const seconds = (Date.now() - t0) / 1000;
    await waitDone(page, { target: 5, layer: L });
    const longest = await page.evaluate(() => window.__longest);
    const tasks = await page.evaluate(() => window.__longtasks);
    console.log(`# long flow: every row of every layer (L=12, H=12, n=128; ${L * n * n} max-flows + raw + rollout) in ${seconds.toFixed(1)} s wall; main-thread long tasks (>50 ms): ${tasks.length}, longest ${longest.toFixed(0)} ms`);
    return longest;
  };
  let longest = await fullRun();
  if (longest >= 100) {
    await setRange(page, '#alpha', 0.6);
    await page.waitForFunction(() => document.getElementById('strips-sub').textContent.includes('α = 0.6'));
    await waitDone(page, { target: 5, layer: L });
    longest = await fullRun();
  }
  assert.ok(longest < 100, `longest main-thread task ${longest} ms`);
  // Exports of every row of every layer (raw, rollout, flow: 589,824 scores) are written a slice
  // at a time (as one task the CSV took 0.7 s).
  await page.evaluate(() => { window.__longest = 0; });
  const csvLines = (await downloadText(page, '#export-csv')).trim().split('\n');
  assert.equal(csvLines.length, 1 + 3 * L * n * n);
  const exported = JSON.parse(await downloadText(page, '#export-json'));
  assert.deepEqual(exported.results.map((r) => [r.method, r.scores.length, r.scores[0].length, r.scores[0][0].length]), ['raw', 'rollout', 'flow'].map((m) => [m, L, n, n]));
  const exportLongest = await page.evaluate(() => window.__longest);
  console.log(`# exports of every row: longest main-thread task ${exportLongest.toFixed(0)} ms`);
  assert.ok(exportLongest < 100, `longest main-thread task while exporting ${exportLongest} ms`);
  // With every row computed, switching targets needs no worker call.
  await page.click('[data-testid="token-score"][data-method="flow"][data-index="77"]');
  await waitDone(page, { target: 77, layer: L });
  await page.screenshot({ path: `${OUT}explorer-n128-1280x800.png` });
  assert.deepEqual(errors, []);
  await context.close();
});

/** A 24-bit .bmp of width x height, left half red and right half blue (a format browsers decode). */
function halfRedHalfBlueBmp(width, height) {
  const rowBytes = Math.ceil((3 * width) / 4) * 4;
  const out = Buffer.alloc(54 + rowBytes * height);
  out.write('BM', 0, 'latin1');
  out.writeUInt32LE(out.length, 2);
  out.writeUInt32LE(54, 10);
  out.writeUInt32LE(40, 14);
  out.writeInt32LE(width, 18);
  out.writeInt32LE(height, 22);
  out.writeUInt16LE(1, 26);
  out.writeUInt16LE(24, 28);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) out.set(x < width / 2 ? [0, 0, 255] : [255, 0, 0], 54 + y * rowBytes + 3 * x);  // BGR
  }
  return out;
}

test('a Vision Transformer input: a patch grid per method, a click on a patch makes it the target, an image underneath; none for sentences', { timeout: 120_000 }, async () => {
  const { page, context, errors } = await openPage();
  // The first example (a sentence) shows no patches.
  assert.ok(await page.locator('#panel-patches').isHidden());
  const L = 2;
  const H = 2;
  const tokens = ['[CLS]', ...Array.from({ length: 49 }, (_, k) => `p${k}`)];  // ViT-B/32 at 224 px: 7 x 7 patches
  await dropJson(page, 'vit.json', tokens, randomAttention({ L, H, n: tokens.length, seed: 77 }), L, H);
  await waitDone(page, { file: 'vit.json', layer: L, target: 0 });
  const grids = () => page.$$eval('[data-testid="patch-grid"]', (els) => els.map((e) => ({ ...e.dataset })));
  assert.ok(await page.locator('#panel-patches').isVisible());
  await page.waitForFunction(() => document.querySelectorAll('[data-testid="patch-grid"]').length === 3);
  assert.deepEqual(await grids(), ['raw', 'rollout', 'flow'].map((method) => ({
    testid: 'patch-grid', method, layer: String(L), row: '0', grid: '7 x 7', skip: '1',
  })));

  // A click at the centre of patch (2, 3) of the rollout grid: token 1 + 2 * 7 + 3 = 18.
  const canvas = page.locator('[data-testid="patch-grid"][data-method="rollout"] canvas');
  await canvas.scrollIntoViewIfNeeded();
  const box = await canvas.boundingBox();
  await page.mouse.click(box.x + (3.5 / 7) * box.width, box.y + (2.5 / 7) * box.height);
  await waitDone(page, { target: 18, layer: L });
  await page.waitForFunction(() => [...document.querySelectorAll('[data-testid="patch-grid"]')].every((g) => g.dataset.row === '18'));
  assert.equal(await page.inputValue('#target'), '18');

  // An image under the grids: each pixel is 0.6 of the cell's colour and 0.4 of the image's.
  await page.setInputFiles('#patch-image', { name: 'cat.bmp', mimeType: 'image/bmp', buffer: halfRedHalfBlueBmp(64, 64) });
  await page.waitForSelector('#patch-image-clear:not([hidden])');
  const mixes = await page.evaluate(async () => {
    const { rgb } = await import('/web/view/colors.mjs');
    const values = [...document.querySelectorAll('[data-testid="token-score"][data-method="flow"]')].map((c) => Number(c.dataset.value)).slice(1);
    const max = Math.max(...values);
    const canvas = document.querySelector('[data-testid="patch-grid"][data-method="flow"] canvas');
    const out = [];
    for (const c of [0, 1, 2, 4, 5, 6]) {  // not column 3, where the image's halves blend
      const p = 7 + c;  // row 1
      const pixel = canvas.getContext('2d').getImageData(Math.floor(((c + 0.5) * canvas.width) / 7), Math.floor((1.5 * canvas.height) / 7), 1, 1).data;
      const under = c < 3 ? [255, 0, 0] : [0, 0, 255];
      out.push({ pixel: Array.from(pixel.slice(0, 3)), expected: rgb(values[p] / max, 'viridis').map((g, k) => 0.6 * g + 0.4 * under[k]) });
    }
    return out;
  });
  for (const { pixel, expected } of mixes) assert.ok(pixel.every((v, k) => Math.abs(v - expected[k]) <= 2), `pixel ${pixel}, expected ${expected}`);

  // The exports hold the grids as drawn, image included: the SVG embeds each canvas as a PNG.
  const exported = await downloadText(page, '[data-export="patches"][data-format="svg"]');
  const drawn = await page.$$eval('[data-testid="patch-grid"] canvas', (els) => els.map((c) => c.toDataURL('image/png')));
  assert.deepEqual([...exported.matchAll(/<image [^>]*href="(data:image\/png;base64,[^"]+)"/g)].map((m) => m[1]), drawn);
  assert.match(exported, /Target 18 “p17” over the image patches, layer 2 of 2/);
  const [pngDownload] = await Promise.all([page.waitForEvent('download'), page.click('[data-export="patches"][data-format="png"]')]);
  const png = [];
  for await (const c of await pngDownload.createReadStream()) png.push(c);
  assert.deepEqual([...Buffer.concat(png).subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  assert.match(pngDownload.suggestedFilename(), /^vit-L2-t18-patches\.png$/);

  // Two special tokens leave 48 patches, no square: the panel says so; back to one.
  await page.fill('#patch-skip', '2');
  assert.match(await page.textContent('#patches-sub'), /50 tokens less 2 special are 48 patches, not a square/);
  assert.equal(await page.locator('[data-testid="patch-grid"]').count(), 0);
  await page.fill('#patch-skip', '1');
  assert.equal(await page.locator('[data-testid="patch-grid"]').count(), 3);
  await page.screenshot({ path: `${OUT}explorer-patches.png`, fullPage: true });

  // A sentence again: no patches (agreement-01's 10 tokens would be [CLS] and 3 x 3, too small for an image).
  await page.selectOption('#example', 'agreement-01.json');
  await waitDone(page, { file: 'agreement-01.json' });
  assert.ok(await page.locator('#panel-patches').isHidden());
  assert.deepEqual(errors, []);
  await context.close();
});

test('narrow screen layout and screenshot', { timeout: 60_000 }, async () => {
  const { page, context, errors } = await openPage({ width: 390, height: 844 });
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  assert.ok(overflow <= 1, `no horizontal scrolling (overflow ${overflow}px)`);
  await page.screenshot({ path: `${OUT}explorer-390x844.png` });
  await page.screenshot({ path: `${OUT}explorer-390-full.png`, fullPage: true });
  // The narrowest phones (320 px): the 300 px legends used to overflow by 5 px.
  await page.setViewportSize({ width: 320, height: 640 });
  const narrowest = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  assert.ok(narrowest <= 1, `no horizontal scrolling at 320 px (overflow ${narrowest}px)`);
  assert.deepEqual(errors, []);
  await context.close();
});

test('no request left the page\'s origin', () => {
  assert.deepEqual(offOrigin, []);
});
