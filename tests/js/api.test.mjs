// The public API as users import it: option checks, result shapes, and the maths checked against
// plain JS products and the closed forms of SEMANTICS.md.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AttnflowError, FusedAttention, compute, loadAttention } from 'attnflow';
import { mulberry32 as random } from '../../bench/synthetic.mjs';


function softmaxRows(n, rand, causal) {
  return Array.from({ length: n }, (_, i) => {
    const logits = Array.from({ length: n }, (_, j) => (causal && j > i ? -Infinity : 3 * rand()));
    const e = logits.map((x) => Math.exp(x));
    const s = e.reduce((p, q) => p + q, 0);
    return e.map((x) => x / s);
  });
}

function randomInput({ L, H, n, seed, causal = false }) {
  const rand = random(seed);
  return {
    tokens: Array.from({ length: n }, (_, i) => `t${i}`),
    attentions: Array.from({ length: L }, () => Array.from({ length: H }, () => softmaxRows(n, rand, causal))),
  };
}

/** SEMANTICS.md steps 1-2 in plain JS: mean fusion, rownorm, residual mix. */
function mixedStack(input, alpha) {
  return input.attentions.map((heads) => {
    const n = heads[0].length;
    return Array.from({ length: n }, (_, i) => {
      const row = Array.from({ length: n }, (_, j) => heads.reduce((s, h) => s + h[i][j], 0) / heads.length);
      const fs = row.reduce((p, q) => p + q, 0);
      const mixed = row.map((v, j) => alpha * (fs > 0 ? v / fs : 0) + (i === j ? 1 - alpha : 0));
      const ms = mixed.reduce((p, q) => p + q, 0);
      return mixed.map((v) => (ms > 0 ? v / ms : 0));
    });
  });
}

function matmul(a, b) {
  return a.map((row) => b[0].map((_, j) => row.reduce((s, v, k) => s + v * b[k][j], 0)));
}

function assertClose(actual, expected, tolerance, what) {
  assert.equal(actual.length, expected.length, `${what}: length`);
  for (let i = 0; i < actual.length; i++) {
    assert.ok(Math.abs(actual[i] - expected[i]) <= tolerance,
      `${what}[${i}]: ${actual[i]} vs ${expected[i]}`);
  }
}

test('rollout equals the naive product of mixed matrices, for every layer and row', async () => {
  const input = randomInput({ L: 4, H: 3, n: 7, seed: 1 });
  const data = await loadAttention(input);
  const result = await compute(data, 'rollout', { layers: 'all', alpha: 0.3 });
  const A = mixedStack(input, 0.3);
  let R = A[0];
  for (let l = 1; l <= 4; l++) {
    if (l > 1) R = matmul(A[l - 1], R);
    for (let i = 0; i < 7; i++) assertClose(result.scoresFor(l, i), R[i], 1e-12, `R[${l}][${i}]`);
  }
});

test('rollout of a few rows (vector-matrix path) equals all rows (matrix path)', async () => {
  const input = randomInput({ L: 5, H: 2, n: 40, seed: 2 });
  const fused = await FusedAttention.create(await loadAttention(input));
  const few = fused.compute('rollout', { layers: 'all', rows: [3] });
  const all = fused.compute('rollout', { layers: 'all' });
  for (let l = 1; l <= 5; l++) assertClose(few.scoresFor(l, 3), all.scoresFor(l, 3), 1e-12, `layer ${l}`);
  fused.dispose();
});

test('flow closed forms: L = 1 is A[1]; L = 2 is sum_k min(A2[i][k], A1[k][j])', async () => {
  const one = randomInput({ L: 1, H: 2, n: 6, seed: 3 });
  const flow1 = await compute(await loadAttention(one), 'flow', { normalize: false });
  const A1 = mixedStack(one, 0.5);
  for (let i = 0; i < 6; i++) assertClose(flow1.scoresFor(1, i), A1[0][i], 1e-12, `L=1 row ${i}`);

  const two = randomInput({ L: 2, H: 3, n: 6, seed: 4, causal: true });
  const flow2 = await compute(await loadAttention(two), 'flow', { normalize: false, alpha: 0.3 });
  const [B1, B2] = mixedStack(two, 0.3);
  for (let i = 0; i < 6; i++) {
    const expected = B1.map((_, j) => B2[i].reduce((s, v, k) => s + Math.min(v, B1[k][j]), 0));
    assertClose(flow2.scoresFor(2, i), expected, 1e-12, `L=2 row ${i}`);
  }
});

test('normalised flow rows sum to 1 and scale the raw flow', async () => {
  const data = await loadAttention(randomInput({ L: 3, H: 2, n: 9, seed: 5 }));
  const fused = await FusedAttention.create(data, { fusion: 'max' });
  const raw = fused.compute('flow', { layers: 'all', normalize: false });
  const normalised = fused.compute('flow', { layers: 'all' });
  for (const layer of [1, 2, 3]) {
    for (let row = 0; row < 9; row++) {
      const r = raw.scoresFor(layer, row);
      const sum = r.reduce((p, q) => p + q, 0);
      assertClose(normalised.scoresFor(layer, row), Array.from(r, (v) => v / sum), 1e-12, `layer ${layer} row ${row}`);
    }
  }
  fused.dispose();
});

test('every row of a layer, read from the cached matrices (into an array or not), equals the rows asked one by one', async () => {
  // Rows 0..n-1 in order are copied straight from the session's fused layers or full rollout;
  // the same rows in another order go through the per-row path. Same numbers, bit for bit.
  const n = 9;
  const input = randomInput({ L: 3, H: 2, n, seed: 7 });
  const fused = await FusedAttention.create(await loadAttention(input));
  const reversed = Array.from({ length: n }, (_, i) => n - 1 - i);
  for (const method of ['raw', 'rollout']) {
    const whole = fused.compute(method, { layers: [3, 1], rows: 'all', alpha: 0.4 });
    const into = new Float64Array(2 * n * n);
    assert.equal(fused.compute(method, { layers: [3, 1], rows: 'all', alpha: 0.4, into }).scores, into);
    assert.deepEqual(into, whole.scores);
    const byRow = fused.compute(method, { layers: [3, 1], rows: reversed, alpha: 0.4 });
    for (const layer of [3, 1]) {
      for (let r = 0; r < n; r++) assert.deepEqual(whole.scoresFor(layer, r), byRow.scoresFor(layer, r), `${method} ${layer} ${r}`);
    }
  }
  fused.dispose();
});

test('raw attention is the fused, row-normalised attention without residual', async () => {
  const input = randomInput({ L: 2, H: 2, n: 4, seed: 6 });
  const result = await compute(await loadAttention(input), 'raw', { layers: [1], rows: [2], heads: [1] });
  assertClose(result.scoresFor(1, 2), input.attentions[0][1][2], 1e-12, 'head 1 alone');
  assert.deepEqual(result.options, { fusion: 'mean', heads: [1], alpha: 0.5, discard: 0, layers: [1], rows: [2], normalize: true, receptiveField: false });
});

test('a result describes itself and serialises as the CLI prints it', async () => {
  const data = await loadAttention(randomInput({ L: 3, H: 1, n: 5, seed: 7 }));
  const result = await compute(data, 'flow', { layers: [1, 3], rows: [0, 4] });
  assert.equal(result.method, 'flow');
  assert.deepEqual(result.layers, [1, 3]);
  assert.deepEqual(result.rows, [0, 4]);
  assert.equal(result.scores.length, 2 * 2 * 5);
  const json = JSON.parse(JSON.stringify(result));
  assert.deepEqual(Object.keys(json), ['method', 'tokens', 'layers', 'rows', 'options', 'scores']);
  assert.deepEqual(json.scores[1][1], Array.from(result.scoresFor(3, 4)));
  assert.throws(() => result.scoresFor(2, 0), { code: 'E_OPTION' });
  // Each result has its own tokens: changing them changes neither the input nor later results.
  const fused = await FusedAttention.create(data);
  const first = fused.compute('raw', { rows: [0] });
  first.tokens[0] = 'changed';
  assert.equal(fused.tokens[0], data.tokens[0]);
  assert.equal(fused.compute('raw', { rows: [0] }).tokens[0], data.tokens[0]);
  fused.dispose();
});

test('progress reaches the total, and returning false cancels with E_CANCELLED', async () => {
  const fused = await FusedAttention.create(await loadAttention(randomInput({ L: 6, H: 2, n: 40, seed: 8 })));
  let last = null;
  fused.compute('flow', { layers: 'all', onProgress: (done, total) => { last = [done, total]; } });
  assert.deepEqual(last, [6 * 40 * 40, 6 * 40 * 40]);
  assert.throws(() => fused.compute('flow', { layers: 'all', onProgress: () => false }),
    (error) => error instanceof AttnflowError && error.code === 'E_CANCELLED');
  // The session stays usable after a cancelled run.
  assert.equal(fused.compute('flow', { rows: [0] }).scores.length, 40);
  // What a callback throws ends the call as it is: a RangeError, or a message with "memory", was
  // taken for the module running out of memory (E_TOO_LARGE).
  for (const error of [new RangeError('mine'), new Error('out of memory in my own code')]) {
    assert.throws(() => fused.compute('flow', { layers: 'all', onProgress: () => { throw error; } }), (e) => e === error);
    assert.throws(() => fused.compute('flow', { layers: 'all', claim: () => { throw error; } }), (e) => e === error);
  }
  assert.equal(fused.compute('flow', { rows: [0] }).scores.length, 40);
  fused.dispose();
});

test('bottleneck: the cut capacity equals the raw flow, and L = 1 is decided at the sink', async () => {
  const data = await loadAttention(randomInput({ L: 4, H: 2, n: 6, seed: 9 }));
  const fused = await FusedAttention.create(data);
  const flow = fused.compute('flow', { layers: 'all', normalize: false });
  for (const [layer, row, token] of [[4, 0, 0], [4, 5, 2], [2, 3, 3], [1, 1, 4]]) {
    const b = fused.bottleneck(layer, row, token);
    assert.ok(Math.abs(b.value - flow.scoresFor(layer, row)[token]) < 1e-12);
    const capacity = b.cut.reduce((s, e) => s + e.capacity, 0);
    assert.ok(Math.abs(capacity - b.value) < 1e-12, `cut ${capacity} vs value ${b.value}`);
    assert.ok(['sink', 'source', 'inner'].includes(b.kind));
  }
  assert.equal(fused.bottleneck(1, 1, 4).kind, 'sink');
  fused.dispose();
});

test('mixedLayer is rownorm(alpha F + (1 - alpha) I)', async () => {
  const input = randomInput({ L: 2, H: 2, n: 5, seed: 10 });
  const fused = await FusedAttention.create(await loadAttention(input));
  const expected = mixedStack(input, 0.8)[1].flat();
  assertClose(fused.mixedLayer(2, { alpha: 0.8 }), expected, 1e-12, 'A[2]');
  fused.dispose();
});

test('prepare builds the graph that compute then uses, with the same numbers bitwise', async () => {
  const input = randomInput({ L: 7, H: 2, n: 9, seed: 12 });
  const prepared = await FusedAttention.create(await loadAttention(input));
  const fresh = await FusedAttention.create(await loadAttention(input));
  for (const options of [{ alpha: 0.8 }, { alpha: 0.3, discard: 0.4 }, {}]) {
    prepared.prepare(options);
    for (const method of ['rollout', 'flow']) {
      const request = { ...options, layers: 'all', rows: 'all' };
      assert.deepEqual(prepared.compute(method, request).scores, fresh.compute(method, request).scores, `${method} ${JSON.stringify(options)}`);
    }
  }
  assert.throws(() => prepared.prepare({ alpha: 2 }), (error) => error.code === 'E_OPTION' && /alpha/.test(error.message));
  prepared.dispose();
  fresh.dispose();
});

test('the flow solver prepare builds for a layer, and keeps between computes, changes no number', async () => {
  // An explorer's sequence of requests on one session (the solver of the last layer solved is
  // kept; alpha changes the graph), each against a session that computes only that request.
  const input = randomInput({ L: 7, H: 2, n: 9, seed: 13 });
  const session = await FusedAttention.create(await loadAttention(input));
  session.prepare({ alpha: 0.6, layer: 'last' });
  const requests = [
    { alpha: 0.6, rows: [0] }, { alpha: 0.6, rows: [4, 2] }, { alpha: 0.6, layers: [5], rows: [3] },
    { alpha: 0.6, rows: [8] }, { alpha: 0.9, rows: [8] }, { alpha: 0.9, layers: 'all', rows: 'all' }, { alpha: 0.6, rows: [1] },
    // Every row at the last layer uses the flow certificate, whose half solvers prepare builds too.
    { prepare: { alpha: 0.7, layer: 7, rows: 'all' }, alpha: 0.7, rows: 'all' }, { alpha: 0.7, rows: [0, 1, 2, 3, 4, 5, 6, 7] },
  ];
  for (const { prepare, ...request } of requests) {
    if (prepare) session.prepare(prepare);
    const alone = await FusedAttention.create(await loadAttention(input));
    assert.deepEqual(session.compute('flow', request).scores, alone.compute('flow', request).scores, JSON.stringify(request));
    alone.dispose();
  }
  for (const [layer, got] of [[0.5, '0.5'], [8, '8'], [-1, '-1'], ['7', '"7"']]) {
    assert.throws(() => session.prepare({ layer }), { code: 'E_OPTION', message: `layer: ${got} is out of range (layers (1-based) 1..7, or 'last')` });
  }
  assert.throws(() => session.prepare({ layer: 'last', rows: [9] }), { code: 'E_OPTION', message: /rows: 9 is out of range/ });
  session.dispose();
});

test('bad options are E_OPTION errors that name the option', async () => {
  const data = await loadAttention(randomInput({ L: 2, H: 3, n: 4, seed: 11 }));
  const fused = await FusedAttention.create(data);
  const cases = [
    [() => fused.compute('attention'), /method must be one of raw, rollout, flow/],
    [() => fused.compute('flow', { alpha: 1.5 }), /alpha must be a number in \[0, 1\]/],
    [() => fused.compute('flow', { alpha: Number.NaN }), /alpha/],
    [() => fused.compute('flow', { layers: [0] }), /layers: 0 is out of range/],
    [() => fused.compute('flow', { layers: [3] }), /layers: 3 is out of range/],
    [() => fused.compute('flow', { rows: [4] }), /rows: 4 is out of range/],
    [() => fused.compute('flow', { rows: [1, 1] }), /rows: 1 is listed twice/],
    [() => fused.compute('rollout', { rows: [] }), /rows must be a non-empty list/],
    [() => fused.bottleneck(2, 0, 9), /token: 9 is out of range \(tokens \(0-based\) 0..3\)/],
    [() => fused.bottleneck(2, 0, Number.NaN), /token: NaN is out of range/],
    [() => fused.bottleneck(3, 0, 1), /layer: 3 is out of range \(layers \(1-based\) 1..2\)/],
    [() => fused.bottleneck(2, 4, 1), /row: 4 is out of range \(rows \(0-based\) 0..3\)/],
    [() => fused.mixedLayer('2'), /layer: "2" is out of range/],
    // BigInts, which JSON.stringify throws on (a TypeError without a code escaped).
    [() => fused.bottleneck(2n, 0, 1), /layer: 2n is out of range/],
    [() => fused.compute('flow', { rows: [1n] }), /rows: 1n is out of range/],
    [() => fused.compute('flow', { alpha: 0n }), /alpha must be a number in \[0, 1\] \(got 0n\)/],
    [() => fused.compute('flow', { rows: [0] }).scoresFor('2', 0), /layer "2", row 0 is not in this result/],
    [() => fused.compute('rollout', { receptiveField: 1 }), /receptiveField must be true or false/],
    [() => fused.compute('flow', null), /options must be an object \(got null\)/],
    [() => fused.compute('flow', { onProgress: 5 }), /onProgress must be a function/],
    [() => fused.bottleneck(2, 0, 1, null), /options must be an object \(got null\)/],
    [() => fused.prepare(null), /options must be an object \(got null\)/],
    [() => fused.mixedLayer(1, null), /options must be an object \(got null\)/],
    // A misspelt option would leave its default in place: the numbers of another question.
    [() => fused.compute('flow', { layer: [1] }), /compute has no option "layer" \(its options: fusion, heads, alpha, discard, layers,/],
    [() => fused.compute('flow', { normalise: false, row: [0] }), /compute has no option "normalise", "row"/],
    [() => fused.bottleneck(2, 0, 1, { aplha: 1 }), /bottleneck has no option "aplha" \(its options: alpha, discard\)/],
    [() => fused.prepare({ layers: 'last' }), /prepare has no option "layers" \(its options: layer, rows, alpha, discard\)/],
    [() => fused.mixedLayer(1, { alpha: 1, discrad: 0.1 }), /mixedLayer has no option "discrad"/],
  ];
  for (const [run, message] of cases) assert.throws(run, (e) => e.code === 'E_OPTION' && message.test(e.message));
  await assert.rejects(FusedAttention.create(data, { heads: [3] }), { code: 'E_OPTION', message: /heads: 3 is out of range/ });
  await assert.rejects(FusedAttention.create(data, { fusion: 'median' }), { code: 'E_OPTION' });
  await assert.rejects(FusedAttention.create(data, { fuse: 'max' }), { code: 'E_OPTION', message: /FusedAttention.create has no option "fuse"/ });
  await assert.rejects(compute(data, 'flow', { layer: 1 }), { code: 'E_OPTION', message: /has no option "layer"/ });
  await assert.rejects(loadAttention(randomInput({ L: 1, H: 1, n: 2, seed: 1 }), { token: ['a', 'b'] }),
    { code: 'E_OPTION', message: /loadAttention has no option "token" \(its options: name, batch, tokens\)/ });
  // One object may serve both calls (ComputeOptions extends FusionOptions); undefined is no option.
  const both = { fusion: 'max', alpha: 0.7, rows: [0], extra: undefined };
  const fusedMax = await FusedAttention.create(data, both);
  assert.equal(fusedMax.compute('flow', both).options.fusion, 'max');
  // Another fusion than the one applied is refused: it used to give the applied one's numbers.
  assert.throws(() => fusedMax.compute('raw', { fusion: 'mean' }), { code: 'E_OPTION',
    message: /the heads were fused as the "max" of all heads, which a compute cannot change \(got the "mean" of all heads\)/ });
  assert.throws(() => fusedMax.compute('raw', { heads: [2, 0] }), { code: 'E_OPTION', message: /got the "max" of heads 0, 2/ });
  assert.equal(fusedMax.compute('raw', { heads: [2, 1, 0] }).options.fusion, 'max', 'every head, listed, is all heads');
  // A signal is a pool's option: FusedAttention.compute is one synchronous call that cannot heed it.
  assert.throws(() => fusedMax.compute('raw', { signal: new AbortController().signal }), { code: 'E_OPTION', message: /compute has no option "signal"/ });
  assert.equal(fusedMax.compute('raw', { fusion: 'max', heads: null }).options.fusion, 'max');
  fusedMax.dispose();
  await assert.rejects(FusedAttention.create(null), { code: 'E_INPUT', message: /needs the AttentionData/ });
  fused.dispose();
  assert.throws(() => fused.compute('flow'), { code: 'E_OPTION', message: /disposed/ });
});

test('a callback of a running flow cannot call the same FusedAttention (it would free memory the flow uses)', async () => {
  const data = await loadAttention(randomInput({ L: 6, H: 2, n: 40, seed: 21 }));
  const fused = await FusedAttention.create(data);
  const want = fused.compute('flow', { layers: 'all' }).scores;
  const inner = [
    () => fused.compute('rollout', { alpha: 0.3 }), () => fused.prepare({ alpha: 0.9, layer: 2 }),
    () => fused.bottleneck(6, 0, 1, { alpha: 0.2 }), () => fused.mixedLayer(1, { alpha: 0.1 }), () => fused.dispose(),
  ];
  const refused = [];
  const got = fused.compute('flow', {
    layers: 'all',
    onProgress: () => {
      for (const call of inner) {
        try { call(); } catch (error) { refused.push(error.code); }
      }
    },
  }).scores;
  assert.ok(refused.length >= inner.length && refused.every((code) => code === 'E_OPTION'), refused.join());
  assert.deepEqual(Array.from(got), Array.from(want), 'the running flow is unharmed');
  assert.equal(fused.compute('rollout', { alpha: 0.3 }).scores.length, 40 * 40, 'usable after it returns');
  fused.dispose();
});

test('an input beyond wasm32 gets E_TOO_LARGE before any allocation', async () => {
  const huge = {
    tokens: [], numLayers: 48, numHeads: 16, numTokens: 4096, fused: false, format: 'npy',
    warnings: [], layer: () => { throw new Error('must not be read'); },
  };
  await assert.rejects(FusedAttention.create(huge), { code: 'E_TOO_LARGE', message: /pre-fuse the heads or use fewer tokens/ });
  // Pre-fused, just past the limit: the figure does not round to the limit itself, and the advice
  // is not to pre-fuse what is.
  const prefused = { ...huge, numLayers: 24, numHeads: 0, numTokens: 2520, fused: true };
  await assert.rejects(FusedAttention.create(prefused), { code: 'E_TOO_LARGE',
    message: /needs 3586 MB inside the WebAssembly module, more than the 3584 MB \(3\.5 GB\) .*pre-fused, 2520 tokens\): use fewer tokens or layers$/ });
});

test('discard zeroes the smallest fused weights of each layer before the residual (vit-explain)', async () => {
  const input = randomInput({ L: 3, H: 2, n: 5, seed: 12 });
  const fused = await FusedAttention.create(await loadAttention(input));
  const discard = 0.4;  // floor(0.4 * 25) = 10 entries per layer
  const expected = input.attentions.map((heads) => {
    const F = Array.from({ length: 5 }, (_, i) => {
      const row = Array.from({ length: 5 }, (_, j) => heads.reduce((s, h) => s + h[i][j], 0) / heads.length);
      const sum = row.reduce((p, q) => p + q, 0);
      return row.map((v) => v / sum);
    }).flat();
    // ranked by value rounded to a multiple of 2^-40, then by position (docs/SEMANTICS.md)
    const order = F.map((v, k) => [Math.floor(v * 2 ** 40 + 0.5), k]).sort((a, b) => a[0] - b[0] || a[1] - b[1]).slice(0, 10);
    for (const [, k] of order) if (k !== 0) F[k] = 0;
    return Array.from({ length: 5 }, (_, i) => {
      const mixed = F.slice(i * 5, i * 5 + 5).map((v, j) => 0.7 * v + (i === j ? 0.3 : 0));
      const sum = mixed.reduce((p, q) => p + q, 0);
      return mixed.map((v) => v / sum);
    });
  });
  for (const l of [1, 2, 3]) {
    assertClose(fused.mixedLayer(l, { alpha: 0.7, discard }), expected[l - 1].flat(), 1e-12, `A[${l}]`);
  }
  let R = expected[0];
  for (let l = 2; l <= 3; l++) R = matmul(expected[l - 1], R);
  const rollout = fused.compute('rollout', { alpha: 0.7, discard, rows: [4] });
  assertClose(rollout.scoresFor(3, 4), R[4], 1e-12, 'rollout with discard');
  assert.equal(rollout.options.discard, discard);
  // Raw attention ignores discard; discard 0 is the default.
  assert.deepEqual(fused.compute('raw', { discard }).scores, fused.compute('raw').scores);
  assert.deepEqual(fused.compute('flow', { discard: 0 }).scores, fused.compute('flow').scores);
  assert.throws(() => fused.compute('flow', { discard: 1 }), { code: 'E_OPTION', message: /discard must be a number in \[0, 1\)/ });
  fused.dispose();
});

test('receptiveField: raw is unaffected, flow progress covers the baseline too', async () => {
  const fused = await FusedAttention.create(await loadAttention(randomInput({ L: 4, H: 2, n: 9, seed: 13, causal: true })));
  assert.deepEqual(fused.compute('raw', { layers: 'all', receptiveField: true }).scores,
    fused.compute('raw', { layers: 'all' }).scores);
  const seen = [];
  fused.compute('flow', { layers: 'all', receptiveField: true, onProgress: (done, total) => { seen.push([done, total]); } });
  assert.deepEqual(seen.at(-1), [2 * 4 * 9 * 9, 2 * 4 * 9 * 9]);
  assert.ok(seen.every(([done], k) => k === 0 || done >= seen[k - 1][0]), 'progress is monotone');
  fused.dispose();
});

test('receptiveField on an encoder (full mask) only lowers the target token against the others', async () => {
  // Every token but the row's own has the same baseline score, so their proportions stay.
  const n = 7;
  const fused = await FusedAttention.create(await loadAttention(randomInput({ L: 3, H: 2, n, seed: 14 })));
  for (const method of ['rollout', 'flow']) {
    const plain = fused.compute(method, { normalize: false });
    const ratio = fused.compute(method, { normalize: false, receptiveField: true });
    for (let i = 0; i < n; i++) {
      const p = plain.scoresFor(3, i);
      const r = ratio.scoresFor(3, i);
      const others = [...Array(n).keys()].filter((j) => j !== i);
      const scale = r[others[0]] / p[others[0]];
      for (const j of others) assert.ok(Math.abs(r[j] / p[j] - scale) < 1e-12 * scale, `${method} row ${i} token ${j}`);
      assert.ok(r[i] / p[i] < scale, `${method} row ${i}: the row's own token is divided by a larger baseline`);
    }
  }
  fused.dispose();
});
