// AttnflowWorker (web/client.mjs) in Chromium: load, compute, bottleneck, mixedLayer, errors that
// keep the previous input, cancel (E_CANCELLED, then a fresh worker with the input re-sent) and
// terminate. Cancel is tested deterministically: cancel() right after compute(), before any answer.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { compute, loadAttention } from 'attnflow';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launch, randomAttention, startServer, toJson, toNpy } from './helpers.mjs';

let server;
let plainServer;  // without cross-origin isolation, as most static hosts serve
let browser;
before(async () => {
  server = await startServer();
  plainServer = await startServer({ isolated: false });
  browser = await launch();
});
after(async () => {
  await browser?.close();
  server?.close();
  plainServer?.close();
});

/** A page of the served repository, with its uncaught errors collected. */
async function openPage(from = server) {
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`${from.url}`);
  return { page, errors };
}

test('AttnflowWorker: results equal the package; errors keep the input; cancel and terminate', { timeout: 60_000 }, async () => {
  const { page, errors } = await openPage();
  const L = 3;
  const H = 2;
  const n = 10;
  const tokens = Array.from({ length: n }, (_, i) => `t${i}`);
  const json = toJson(tokens, randomAttention({ L, H, n, seed: 5 }), L, H);
  const out = await page.evaluate(async ({ json }) => {
    const { AttnflowWorker } = await import('/web/client.mjs');
    const w = new AttnflowWorker();
    const r = {};
    r.summary = await w.load(new Blob([json]), { name: 'x.json' });
    const flow = await w.compute('flow', { layers: 'all', rows: [2], onProgress: () => { r.progress = true; } });
    r.flow = Array.from(flow.scoresFor(3, 2));
    r.flowJSON = flow.toJSON();
    try { await w.compute('flow', { rows: [2], into: new Float64Array(10) }); r.into = 'resolved'; } catch (e) { r.into = e.code; }
    try { await w.compute('flow', null); r.nullOptions = 'resolved'; } catch (e) { r.nullOptions = e.code; }
    const misspelt = async (call) => { try { await call(); return 'resolved'; } catch (e) { return `${e.code}: ${e.message}`; } };
    r.misspelt = [
      await misspelt(() => w.compute('flow', { layer: [1] })),
      await misspelt(() => w.compute('flow', { fusion: 'max' })),
      await misspelt(() => w.load(new Blob([json]), { nmae: 'x.json' })),
      await misspelt(() => w.fuse({ head: [0] })),
      await misspelt(() => w.bottleneck(3, 2, 4, { aplha: 1 })),
      await misspelt(() => w.mixedLayer(2, { alpah: 1 })),
    ];
    // A throwing onProgress ends its call with its error (it used to raise a page error per report).
    const boom = new Error('boom');
    try { await w.compute('flow', { layers: 'all', rows: 'all', onProgress: () => { throw boom; } }); r.throwing = 'resolved'; } catch (e) { r.throwing = e === boom; }
    r.bottleneck = await w.bottleneck(3, 2, 4, { alpha: 0.5 });
    r.mixedLength = (await w.mixedLayer(2, { alpha: 0.7 })).length;
    // The fusion a request sent now gets: a fuse still queued counts (a page that compared with
    // the last answered one skipped a fuse it needed); a failed fuse leaves the one before.
    const queued = w.fuse({ fusion: 'min' });
    r.queued = w.fusion;
    await queued;
    try { await w.fuse({ fusion: 'max', heads: [7] }); r.badHeads = 'fused'; } catch (e) { r.badHeads = e.code; }
    r.afterBadHeads = w.fusion;
    await w.fuse({ fusion: 'max', heads: [1] });
    r.maxRollout = Array.from((await w.compute('rollout', { rows: [0], alpha: 0.3 })).scoresFor(3, 0));
    // A bad file: rejected with a located error, the previous input (and its fusion) stays loaded.
    try { await w.load(new Blob(['{"tokens": ["a", "b"], "attentions": [[[[0.5, 0.5], [1]]]]}']), { name: 'bad.json' }); r.badCode = 'loaded'; } catch (e) { r.badCode = e.code; r.badName = e.name; }
    r.afterBad = Array.from((await w.compute('rollout', { rows: [0], alpha: 0.3 })).scoresFor(3, 0));
    // Cancel: the pending request rejects with E_CANCELLED; a fresh worker gets the input again.
    const pending = w.compute('flow', { layers: 'all', rows: 'all' });
    r.busy = w.busy;
    r.cancelled = w.cancel();
    try { await pending; r.pending = 'resolved'; } catch (e) { r.pending = e.code; }
    r.cancelIdle = w.cancel();
    r.afterCancel = Array.from((await w.compute('rollout', { rows: [0], alpha: 0.3 })).scoresFor(3, 0));
    w.terminate();
    try { await w.compute('raw'); r.terminated = 'resolved'; } catch (e) { r.terminated = e.code; }
    return r;
  }, { json });

  assert.deepEqual(out.summary.tokens, tokens);
  assert.equal(out.summary.numLayers, L);
  assert.equal(out.summary.numHeads, H);
  const data = await loadAttention(Buffer.from(json), { name: 'x.json' });
  const want = (await compute(data, 'flow', { layers: 'all', rows: [2] })).scoresFor(3, 2);
  out.flow.forEach((v, j) => assert.ok(Math.abs(v - want[j]) <= 1e-12));
  assert.deepEqual(out.flowJSON.layers, [1, 2, 3]);
  assert.ok(out.progress, 'progress reported');
  assert.equal(out.into, 'E_OPTION', 'into is refused across a worker');
  assert.equal(out.nullOptions, 'E_OPTION');
  // A misspelt option is refused before anything is sent (the worker keeps its input); so is a
  // fusion passed to compute, which load() and fuse() set.
  for (const [message, pattern] of out.misspelt.map((m, k) => [m, [
    /^E_OPTION: AttnflowWorker.compute has no option "layer" \(its options: alpha, discard, layers, rows,/,
    /^E_OPTION: AttnflowWorker.compute has no option "fusion"/,
    /^E_OPTION: AttnflowWorker.load has no option "nmae" \(its options: name, batch, tokens, fusion, heads\)/,
    /^E_OPTION: AttnflowWorker.fuse has no option "head"/,
    /^E_OPTION: AttnflowWorker.bottleneck has no option "aplha"/,
    /^E_OPTION: AttnflowWorker.mixedLayer has no option "alpah"/,
  ][k]])) assert.match(message, pattern);
  assert.equal(out.throwing, true, 'a throwing onProgress rejects the call with its error');
  assert.ok(['sink', 'source', 'inner'].includes(out.bottleneck.kind));
  assert.ok(Math.abs(out.bottleneck.value - out.bottleneck.cut.reduce((s, e) => s + e.capacity, 0)) < 1e-9, 'cut capacity = flow value');
  assert.equal(out.mixedLength, n * n);
  assert.equal(out.summary.causal, false);
  assert.deepEqual(out.queued, { fusion: 'min', heads: null });
  assert.equal(out.badHeads, 'E_OPTION');
  assert.deepEqual(out.afterBadHeads, { fusion: 'min', heads: null });
  const wantMax = (await compute(data, 'rollout', { rows: [0], alpha: 0.3, fusion: 'max', heads: [1], layers: [3] })).scoresFor(3, 0);
  out.maxRollout.forEach((v, j) => assert.ok(Math.abs(v - wantMax[j]) <= 1e-12));
  assert.match(out.badCode, /^E_(INPUT|FORMAT)$/);
  assert.equal(out.badName, 'AttnflowError');
  assert.deepEqual(out.afterBad, out.maxRollout);
  assert.equal(out.busy, true);
  assert.equal(out.cancelled, true);
  assert.equal(out.pending, 'E_CANCELLED');
  assert.equal(out.cancelIdle, false);
  assert.deepEqual(out.afterCancel, out.maxRollout, 'the restarted worker has the same input and fusion');
  assert.equal(out.terminated, 'E_CANCELLED');
  assert.deepEqual(errors, []);
  await page.close();
});

for (const isolated of [true, false]) {
  const how = isolated ? 'in a cross-origin isolated page: rows claimed at run time' : 'in a page without cross-origin isolation: rows dealt ahead';
  test(`ParallelAttention ${how}, the same numbers as the package`, { timeout: 60_000 }, async () => {
    const { page, errors } = await openPage(isolated ? server : plainServer);
    // L >= 6 and >= 8 rows per share: the workers exchange the certificate's sink values (through
    // shared memory when isolated); one layer and all layers.
    const L = 7;
    const H = 2;
    const n = 20;
    const tokens = Array.from({ length: n }, (_, i) => `t${i}`);
    const json = toJson(tokens, randomAttention({ L, H, n, seed: 9, sharp: 4 }), L, H);
    const out = await page.evaluate(async ({ json }) => {
      const { ParallelAttention } = await import('/web/parallel.mjs');
      const bytes = new TextEncoder().encode(json);
      const r = { isolated: globalThis.crossOriginIsolated };
      try {
        (await ParallelAttention.open({ bytes, name: 'x.json' }, { workers: 2, balance: 'dynamic' })).close();
        r.dynamic = 'opened';
      } catch (e) {
        r.dynamic = `${e.code}: ${e.message}`;
      }
      const pool = await ParallelAttention.open({ bytes, name: 'x.json' }, { workers: 2 });
      r.balance = pool.balance;
      r.all = Array.from((await pool.compute('flow', { layers: 'all', rows: 'all', normalize: false })).scores);
      r.last = Array.from((await pool.compute('flow', { rows: 'all', normalize: false })).scores);
      pool.close();
      return r;
    }, { json });
    assert.equal(out.isolated, isolated);
    if (isolated) assert.equal(out.dynamic, 'opened');
    else assert.match(out.dynamic, /^E_OPTION: .*SharedArrayBuffer.*cross-origin isolated/);
    assert.equal(out.balance, isolated ? 'dynamic' : 'static');
    const data = await loadAttention(Buffer.from(json), { name: 'x.json' });
    for (const [key, layers] of [['all', 'all'], ['last', 'last']]) {
      const want = (await compute(data, 'flow', { layers, rows: 'all', normalize: false })).scores;
      assert.equal(out[key].length, want.length);
      out[key].forEach((v, k) => assert.equal(v, want[k], `${key}: score ${k}`));
    }
    assert.deepEqual(errors, []);
    await page.close();
  });
}

test('a File from disk is read in the workers a layer at a time; changed on disk, it is refused with E_INPUT', { timeout: 60_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'attnflow-'));
  const { page, errors } = await openPage();
  try {
    const L = 7;
    const H = 2;
    const n = 20;
    const flat = randomAttention({ L, H, n, seed: 3 });
    const path = join(dir, 'x.npy');
    writeFileSync(path, toNpy(flat, [L, H, n, n]));
    await page.evaluate(() => {
      const input = Object.assign(document.createElement('input'), { type: 'file', id: 'disk-file' });
      document.body.append(input);
    });
    await page.setInputFiles('#disk-file', path);  // a File backed by the file on disk
    const out = await page.evaluate(async () => {
      const { AttnflowWorker } = await import('/web/client.mjs');
      const { ParallelAttention } = await import('/web/parallel.mjs');
      const file = document.getElementById('disk-file').files[0];
      const r = {};
      window.diskWorker = new AttnflowWorker();
      r.summary = await window.diskWorker.load(file);
      r.rollout = Array.from((await window.diskWorker.compute('rollout', { layers: 'all', rows: 'all' })).scores);
      const pool = await ParallelAttention.open({ bytes: file, name: file.name }, { workers: 2 });
      r.flow = Array.from((await pool.compute('flow', { layers: 'all', rows: 'all' })).scores);
      pool.close();
      return r;
    });
    assert.equal(out.summary.format, 'npy');
    assert.equal(out.summary.numLayers, L);
    const data = await loadAttention(toNpy(flat, [L, H, n, n]), { name: 'x.npy' });
    for (const method of ['rollout', 'flow']) {
      const want = (await compute(data, method, { layers: 'all', rows: 'all' })).scores;
      assert.equal(out[method].length, want.length);
      out[method].forEach((v, k) => assert.equal(v, want[k], `${method}: score ${k}`));
    }
    // The worker reads the file again to fuse the heads another way; the file has changed since.
    writeFileSync(path, toNpy(flat.map((v) => v / 2), [L, H, n, n]));
    const refused = await page.evaluate(async () => {
      try {
        await window.diskWorker.fuse({ fusion: 'max' });
        return 'fused';
      } catch (e) {
        return `${e.code}: ${e.message}`;
      }
    });
    assert.match(refused, /^E_INPUT: x\.npy can no longer be read \(NotReadableError\): was it changed, moved or deleted/);
    // A cancel restarts the worker, which reads the file again: its requests then say why they
    // have no input (they said "no attention data is loaded in this worker").
    const afterCancel = await page.evaluate(async () => {
      const w = window.diskWorker;
      const pending = w.compute('flow', { layers: 'all', rows: 'all' });
      w.cancel();
      await pending.catch(() => {});
      try {
        await w.compute('raw');
        return 'computed';
      } catch (e) {
        return `${e.code}: ${e.message}`;
      }
    });
    assert.match(afterCancel, /^E_INPUT: x\.npy can no longer be read/);
    assert.deepEqual(errors, []);
  } finally {
    await page.close();
    rmSync(dir, { recursive: true });
  }
});

test('a worker that cannot be started rejects every request with E_OPTION, none stays pending', { timeout: 60_000 }, async () => {
  const { page, errors } = await openPage();
  const out = await page.evaluate(async () => {
    const { AttnflowWorker } = await import('/web/client.mjs');
    const settle = (promise) => Promise.race([
      promise.then(() => 'resolved', (e) => `${e.code}: ${e.message}`),
      new Promise((resolve) => { setTimeout(() => resolve('still pending after 5 s'), 5000); }),
    ]);
    const w = new AttnflowWorker({ workerUrl: '/nowhere/worker.mjs' });
    const json = JSON.stringify({ tokens: ['a', 'b'], attentions: [[[[1, 0], [0.5, 0.5]]]] });
    const r = { first: await settle(w.load(json)) };
    // Before, requests sent after the failure were posted to the dead worker and never answered.
    r.second = await settle(w.load(json));
    r.busy = w.busy;
    w.terminate();
    return r;
  });
  assert.match(out.first, /^E_OPTION: the attnflow worker \(.*\/nowhere\/worker\.mjs\) failed: .*check that the URL serves web\/worker\.mjs/);
  assert.match(out.second, /^E_OPTION: the attnflow worker/);
  assert.equal(out.busy, false);
  assert.deepEqual(errors, []);
  await page.close();
});

test('a page whose CSP refuses WebAssembly gets E_OPTION saying so, not an Emscripten abort', { timeout: 60_000 }, async () => {
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  // script-src 'self' without 'wasm-unsafe-eval': module scripts load, WebAssembly does not compile.
  await page.route('**/csp-without-wasm.html', (route) => route.fulfill({
    contentType: 'text/html',
    body: '<!doctype html><meta http-equiv="Content-Security-Policy" content="script-src \'self\'"><title>t</title>',
  }));
  await page.goto(`${server.url}csp-without-wasm.html`);
  const out = await page.evaluate(async () => {
    const { compute, loadAttention } = await import('/web/index.mjs');
    const data = await loadAttention({ tokens: ['a', 'b'], attentions: [[[[1, 0], [0.5, 0.5]]]] });
    try {
      await compute(data, 'rollout');
      return 'resolved';
    } catch (e) {
      return `${e.code}: ${e.message}`;
    }
  });
  assert.match(out, /^E_OPTION: the WebAssembly module could not be loaded \(.*\): check that .*'wasm-unsafe-eval'/);
  assert.deepEqual(errors, []);
  await page.close();
});
