// computeParallel / ParallelAttention (web/parallel.mjs): the merged result must be bitwise the
// single-threaded compute's, progress must reach its total, cancel must reject with E_CANCELLED
// and stop the workers, and errors raised inside a worker must arrive with their code and message.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AttnflowError, FusedAttention, loadAttention } from 'attnflow';
import { computeParallel, ParallelAttention } from '../../web/parallel.mjs';
import { mulberry32, npyHeader, syntheticNpy } from '../../bench/synthetic.mjs';

const SMALL = { layers: 5, heads: 3, tokens: 12, seed: 11 };
// dynamic: the workers claim (layer, row) units from a shared counter (Node's default);
// static: rows dealt ahead (a page that is not cross-origin isolated).
const BALANCES = ['dynamic', 'static'];
const CAUSAL = { layers: 4, heads: 2, tokens: 10, seed: 5, causal: true };

async function single(bytes, method, options) {
  const fused = await FusedAttention.create(await loadAttention(bytes, { name: 'x.npy' }), options);
  try {
    return fused.compute(method, options);
  } finally {
    fused.dispose();
  }
}

function assertBitwiseEqual(actual, expected) {
  assert.equal(actual.method, expected.method);
  assert.deepEqual(actual.layers, expected.layers);
  assert.deepEqual(actual.rows, expected.rows);
  assert.deepEqual(actual.tokens, expected.tokens);
  assert.equal(actual.numTokens, expected.numTokens);
  assert.deepEqual(actual.options, expected.options);
  assert.equal(actual.scores.length, expected.scores.length);
  for (let k = 0; k < expected.scores.length; k++) {
    if (!Object.is(actual.scores[k], expected.scores[k])) {
      assert.fail(`score ${k} differs: ${actual.scores[k]} vs ${expected.scores[k]}`);
    }
  }
  assert.equal(JSON.stringify(actual), JSON.stringify(expected));
}

test('flow over several layers (rows split) equals single-threaded compute bitwise', async () => {
  for (const shape of [SMALL, CAUSAL]) {
    const bytes = syntheticNpy(shape);
    for (const options of [
      { layers: 'all', normalize: false },
      { layers: [2, 4, 3], rows: [9, 0, 4], alpha: 1 },
      { layers: 'all', fusion: 'max', heads: [0, 1] },
      { layers: 'all', rows: [shape.tokens - 1] },  // one row: split by layers
      { layers: 'all', receptiveField: true },
    ]) {
      const expected = await single(bytes, 'flow', options);
      for (const workers of [2, 3]) {
        for (const balance of BALANCES) {
          const actual = await computeParallel({ bytes, name: 'x.npy' }, 'flow', { ...options, workers, balance });
          assertBitwiseEqual(actual, expected);
        }
      }
    }
  }
});

test('flow of one layer (rows split) equals single-threaded compute bitwise, also causal', async () => {
  for (const shape of [SMALL, CAUSAL]) {
    const bytes = syntheticNpy(shape);
    for (const options of [{}, { rows: [3, 1, 2], normalize: false }, { layers: [2], alpha: 0.2 }, { rows: [5] }]) {
      const expected = await single(bytes, 'flow', options);
      for (const workers of [1, 2, 3]) {
        for (const balance of BALANCES) {
          const actual = await computeParallel({ bytes: bytes.buffer }, 'flow', { ...options, workers, balance });
          assertBitwiseEqual(actual, expected);
        }
      }
    }
  }
});

test('flow whose certificate sink values are computed in parts by the workers equals single-threaded compute bitwise', async () => {
  // L >= 6 and shares of >= 8 rows: the core uses its middle-layer certificate, and each worker
  // computes the sink values of a slice of the sinks and sends them to the other workers.
  for (const shape of [{ layers: 8, heads: 3, tokens: 24, seed: 3 }, { layers: 8, heads: 2, tokens: 24, seed: 4, causal: true }]) {
    const bytes = syntheticNpy(shape);
    const fused = await FusedAttention.create(await loadAttention(bytes, { name: 'x.npy' }));
    try {
      // Layers 5 and 6 use middle layer 3, layer 7 uses 4 and layer 8 uses 5: every layer
      // together shares no sink values (each worker computes its own), layers 5 and 6 share those
      // of layer 3.
      assert.equal(fused.certificateSinks({ layers: 'all' }, 8, 0, shape.tokens).middleLayer, 0);
      assert.equal(fused.certificateSinks({ layers: [6, 5] }, 8, 0, shape.tokens).middleLayer, 3);
      for (const options of [{ normalize: false }, { layers: 'all' }, { layers: [6, 5] }, { layers: [8, 6], alpha: 1 }]) {
        const expected = fused.compute('flow', options);
        if (!options.layers) assert.ok(fused.certificateSinks(options, 8, 0, shape.tokens).middleLayer > 0, 'the certificate is used');
        for (const workers of [2, 3]) {
          for (const balance of BALANCES) {
            const actual = await computeParallel({ bytes, name: 'x.npy' }, 'flow', { ...options, workers, balance });
            assertBitwiseEqual(actual, expected);
          }
        }
      }
      // The parts a pool would join give the same numbers through the public option too.
      const parts = [fused.certificateSinks({}, 12, 0, 10), fused.certificateSinks({}, 12, 10, 24)];
      const sinkValues = new Float64Array(24);
      sinkValues.set(parts[0].values, 0);
      sinkValues.set(parts[1].values, 10);
      const rows = [1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23];
      const whole = fused.compute('flow', { rows }).scores;
      assert.deepEqual(fused.compute('flow', { rows, sinkValues }).scores, whole);
      const sourceFlags = fused.certificateSources({ rows });
      assert.equal(sourceFlags.length, rows.length);
      // Sources pass the certificate test; on the causal input only the last row's source reaches
      // every middle-layer node, so only it can.
      assert.ok(sourceFlags.some((flag) => flag === 1));
      if (shape.causal) assert.ok(sourceFlags.every((flag, q) => flag === 0 || rows[q] === shape.tokens - 1));
      assert.deepEqual(fused.compute('flow', { rows, sinkValues, sourceFlags }).scores, whole);
      assert.deepEqual(fused.compute('flow', { rows, sourceFlags }).scores, whole);
      const into = new Float64Array(rows.length * 24);
      const written = fused.compute('flow', { rows, sinkValues, sourceFlags, into });
      assert.equal(written.scores, into);
      assert.deepEqual(into, whole);
      assert.throws(() => fused.compute('flow', { rows, into: new Float64Array(5) }), { code: 'E_OPTION', message: /into must be a Float64Array of 288 values/ });
      assert.equal(fused.certificateSources({ layers: 'all', rows: [0] }).length, shape.layers);
      assert.throws(() => fused.compute('flow', { rows, sinkValues: new Float64Array(3) }), { code: 'E_OPTION' });
      assert.throws(() => fused.compute('flow', { rows, sourceFlags: new Uint8Array(3) }), { code: 'E_OPTION', message: /sourceFlags must be a Uint8Array of 12 flags/ });
      assert.throws(() => fused.compute('flow', { rows, sourceFlags: sourceFlags.map(() => 2) }), { code: 'E_OPTION' });
      assert.throws(() => fused.compute('flow', { rows: [0], sinkValues }), { code: 'E_INPUT', message: /certificate sink values given; this request takes none/ });
      assert.throws(() => fused.certificateSinks({}, 12, 5, 25), { code: 'E_OPTION' });

      // Units claimed by two callers, as the workers of a dynamic pool do: joined, bitwise the
      // whole computation, and every other row 0.
      const request = { layers: [shape.layers, 6], rows, sinkValues: undefined };
      const all = fused.compute('flow', request).scores;
      const numUnits = 2 * rows.length;
      const joined = new Float64Array(all.length);
      for (const mine of [(u) => u % 3 === 0, (u) => u % 3 !== 0]) {
        let next = 0;
        const claim = () => {
          while (next < numUnits && !mine(next)) next++;
          return next++;
        };
        const part = fused.compute('flow', { ...request, claim }).scores;
        for (let u = 0; u < numUnits; u++) {
          const row = part.subarray(u * 24, (u + 1) * 24);
          if (mine(u)) joined.set(row, u * 24);
          else assert.ok(row.every((v) => v === 0), `unit ${u} was not claimed and is 0`);
        }
      }
      assert.deepEqual(joined, all);
      assert.throws(() => fused.compute('flow', { rows, claim: 5 }), { code: 'E_OPTION', message: /claim must be a function/ });
      assert.throws(() => fused.compute('flow', { rows, claim: () => -1 }), { code: 'E_OPTION', message: /claim\(\) must return a unit index, an integer >= 0 \(got -1\)/ });
      assert.throws(() => fused.compute('flow', { rows, claim: () => Number.NaN }), { code: 'E_OPTION', message: /\(got NaN\)/ });
      let back = 3;
      assert.throws(() => fused.compute('flow', { rows, claim: () => back-- }), { code: 'E_INPUT', message: /units must be claimed in increasing order/ });
    } finally {
      fused.dispose();
    }
  }
});

test('a pool certifies the same pairs as one thread where half flows meet their cuts only up to the room the solver ignores', async () => {
  // At n = 256 the certificate's sink values, solved in slices by the workers, end a few 1e-15
  // short of their cuts where one run over all sinks meets them exactly; the certificate's
  // tolerance grows with n so that both certify those pairs (before, 751 values differed).
  const shape = { layers: 8, heads: 2, tokens: 256, seed: 1 };
  const bytes = syntheticNpy(shape);
  const options = { rows: 'all', normalize: false };
  const expected = await single(bytes, 'flow', options);
  for (const balance of BALANCES) {
    assertBitwiseEqual(await computeParallel({ bytes, name: 'x.npy' }, 'flow', { ...options, workers: 2, balance }), expected);
  }
});

test('shares of rows dealt ahead choose the core\'s shortcuts as the whole request does', async () => {
  // 8 rows use the flow certificate; dealt ahead to 2 workers, each share has 4, too few for it
  // on their own: the shares now pass the request's row count (before, 145 values differed).
  const bytes = syntheticNpy({ layers: 6, heads: 1, tokens: 256, seed: 501 });
  for (const options of [
    { rows: [59, 180, 77, 95, 147, 237, 19, 255], normalize: false },
    { rows: [59, 180, 77, 95, 147, 237, 19, 255, 3], receptiveField: true },
  ]) {
    const expected = await single(bytes, 'flow', options);
    for (const balance of BALANCES) {
      assertBitwiseEqual(await computeParallel({ bytes, name: 'x.npy' }, 'flow', { ...options, workers: 2, balance }), expected);
    }
  }
  const fused = await FusedAttention.create(await loadAttention(bytes, { name: 'x.npy' }));
  try {
    assert.throws(() => fused.compute('flow', { rows: [1, 2, 3], requestRows: 2 }), { code: 'E_OPTION', message: /requestRows must be an integer >= the 3 rows/ });
    assert.throws(() => fused.certificateSources({ rows: [1, 2], requestRows: 1.5 }), { code: 'E_OPTION' });
  } finally {
    fused.dispose();
  }
});

test('random flow requests on random inputs: a pool gives the one-thread numbers bitwise, both balances', async () => {
  // What found the two bugs above: random shapes (flat or peaky, some causal), rows (all, or
  // 8-15 of them: shares below the certificate's row minimum) and layers, seeded.
  const random = mulberry32(2026);
  const pick = (list) => list[Math.floor(random() * list.length)];
  for (let input = 0; input < 6; input++) {
    const n = pick([24, 40, 64, 96]);
    const shape = { layers: pick([6, 7, 8]), heads: pick([1, 2]), tokens: n, seed: 1 + Math.floor(random() * 1000), causal: random() < 0.3, profile: pick(['flat', 'peaky']) };
    const bytes = syntheticNpy(shape);
    const fused = await FusedAttention.create(await loadAttention(bytes, { name: 'x.npy' }));
    const requests = Array.from({ length: 3 }, () => ({
      rows: random() < 0.4 ? 'all' : [...new Set(Array.from({ length: 8 + Math.floor(random() * 8) }, () => Math.floor(random() * n)))],
      layers: random() < 0.3 ? 'all' : 'last',
      alpha: pick([0.5, 1]),
      normalize: false,
    }));
    try {
      for (const balance of BALANCES) {
        const pool = await ParallelAttention.open({ bytes, name: 'x.npy' }, { workers: 2, balance });
        try {
          for (const request of requests) assertBitwiseEqual(await pool.compute('flow', request), fused.compute('flow', request));
        } finally {
          pool.close();
        }
      }
    } finally {
      fused.dispose();
    }
  }
});

test('raw and rollout go through the pool unchanged; scoresFor and toJSON work', async () => {
  const bytes = syntheticNpy(SMALL);
  const pool = await ParallelAttention.open({ bytes, name: 'x.npy' }, { workers: 2 });
  try {
    assert.equal(pool.numLayers, SMALL.layers);
    assert.equal(pool.numTokens, SMALL.tokens);
    for (const method of ['raw', 'rollout', 'flow']) {
      const options = { layers: 'all', rows: [0, 7] };
      const expected = await single(bytes, method, options);
      const actual = await pool.compute(method, options);
      assertBitwiseEqual(actual, expected);
      assert.deepEqual(actual.scoresFor(3, 7), expected.scoresFor(3, 7));
      assert.throws(() => actual.scoresFor(3, 1), (error) => error.code === 'E_OPTION');
    }
  } finally {
    pool.close();
  }
});

test('a pool computing again and again gives the same numbers each time (workers reuse result memory)', async () => {
  // Each worker writes its next result of the same size into memory kept from the last one (or,
  // balanced dynamically, handed back by the main thread): a result the caller holds must never
  // be written again, so every result is checked after all later ones, whose numbers differ.
  const shape = { layers: 8, heads: 2, tokens: 24, seed: 5 };
  const bytes = syntheticNpy(shape);
  for (const balance of BALANCES) {
    const pool = await ParallelAttention.open({ bytes, name: 'x.npy' }, { workers: 2, balance });
    try {
      assert.equal(pool.balance, balance);
      const requests = [{ alpha: 0.5 }, { alpha: 1 }, { alpha: 0.5, rows: [3, 1, 4] }, { alpha: 0.7 }, { alpha: 0.7, layers: 'all' }, { alpha: 0.2 }];
      const held = [];
      for (const options of requests) {
        const expected = await single(bytes, 'flow', options);
        const first = await pool.compute('flow', options);
        const again = await pool.compute('flow', options);
        assert.notEqual(again.scores.buffer, first.scores.buffer);
        held.push([first, expected], [again, expected]);
      }
      for (const [actual, expected] of held) assertBitwiseEqual(actual, expected);
      await assert.rejects(pool.compute('flow', { into: new Float64Array(24 * 24) }), { code: 'E_OPTION', message: /into works with FusedAttention.compute only/ });
    } finally {
      pool.close();
    }
  }
});

test('a pool that prepares the graph and the solvers of every row while opening gives the same numbers; a bad alpha there fails the open', async () => {
  const bytes = syntheticNpy({ ...SMALL, layers: 7 });  // every row at layer 7 uses the flow certificate
  const options = { alpha: 0.7, discard: 0.2, layers: 'all' };
  const expected = await single(bytes, 'flow', options);
  const pool = await ParallelAttention.open({ bytes }, { workers: 2, prepare: { alpha: 0.7, discard: 0.2, layer: 'last', rows: 'all' } });
  try {
    assertBitwiseEqual(await pool.compute('flow', options), expected);
    const lastLayer = { alpha: 0.7, discard: 0.2 };  // the prepared solver's layer
    assertBitwiseEqual(await pool.compute('flow', lastLayer), await single(bytes, 'flow', lastLayer));
  } finally {
    pool.close();
  }
  await assert.rejects(ParallelAttention.open({ bytes }, { workers: 2, prepare: { alpha: 1.5 } }),
    (error) => error instanceof AttnflowError && error.code === 'E_OPTION' && /alpha/.test(error.message));
});

test('progress is monotone and reaches its total exactly once at the end', async () => {
  const bytes = syntheticNpy(SMALL);
  for (const balance of BALANCES) {
    const calls = [];
    const result = await computeParallel({ bytes }, 'flow', {
      layers: 'all', workers: 2, balance, onProgress: (done, total) => { calls.push([done, total]); },
    });
    const total = SMALL.layers * SMALL.tokens * SMALL.tokens;
    assert.ok(calls.length >= 1);
    for (let k = 0; k < calls.length; k++) {
      assert.equal(calls[k][1], total);
      if (k > 0) assert.ok(calls[k][0] >= calls[k - 1][0], `progress went back at call ${k}`);
      assert.equal(calls[k][0] === total, k === calls.length - 1, `done === total only at the last call (${k})`);
    }
    assert.deepEqual(calls.at(-1), [total, total]);
    assert.equal(result.scores.length, total);
  }
});

test('abort rejects with E_CANCELLED and closes the pool', async () => {
  const bytes = syntheticNpy(SMALL);
  const pool = await ParallelAttention.open({ bytes }, { workers: 2 });
  const controller = new AbortController();
  const running = pool.compute('flow', { layers: 'all', signal: controller.signal });
  controller.abort();
  await assert.rejects(running, (error) => error instanceof AttnflowError && error.code === 'E_CANCELLED');
  await assert.rejects(pool.compute('flow', {}), (error) => error.code === 'E_OPTION' && /closed/.test(error.message));
  pool.close();  // a second close is harmless
});

test('abort while the workers compute, and onProgress returning false, cancel too', async () => {
  const bytes = syntheticNpy(SMALL);
  const controller = new AbortController();
  await assert.rejects(
    computeParallel({ bytes }, 'flow', {
      layers: 'all', workers: 2, signal: controller.signal, onProgress: () => controller.abort(),
    }),
    (error) => error.code === 'E_CANCELLED',
  );
  await assert.rejects(
    computeParallel({ bytes }, 'flow', { layers: 'all', workers: 2, onProgress: () => false }),
    (error) => error.code === 'E_CANCELLED',
  );
  const aborted = AbortSignal.abort();
  await assert.rejects(computeParallel({ bytes }, 'flow', { signal: aborted }), (error) => error.code === 'E_CANCELLED');
});

test('close() during a compute, and an onProgress that throws, end the call instead of leaving it pending', async () => {
  const bytes = syntheticNpy({ layers: 12, heads: 2, tokens: 48, seed: 3 });
  for (const balance of BALANCES) {
    // close() while the workers compute: the running call rejects at once, a queued one too.
    const pool = await ParallelAttention.open({ bytes }, { workers: 2, balance });
    let closeNow;
    const started = new Promise((resolve) => { closeNow = resolve; });
    const running = pool.compute('flow', { layers: 'all', onProgress: () => closeNow() });
    const queued = pool.compute('flow', {});
    await started;
    pool.close();
    await assert.rejects(running, { code: 'E_CANCELLED', message: /closed during the computation/ });
    await assert.rejects(queued, { code: 'E_OPTION', message: /closed/ });
    // onProgress throwing, while running and at the final report: the call rejects with its error.
    for (const when of ['running', 'final']) {
      const boom = new Error(`boom (${when})`);
      const onProgress = (done, total) => { if (when === 'running' || done === total) throw boom; };
      const other = await ParallelAttention.open({ bytes }, { workers: 2, balance });
      await assert.rejects(other.compute('flow', { layers: 'all', onProgress }), (error) => error === boom);
      // While the workers compute, they are terminated, as on a cancel; at the final report they
      // are done, and the pool stays usable (parallel.d.ts).
      if (when === 'running') await assert.rejects(other.compute('flow', {}), { code: 'E_OPTION', message: /closed/ });
      else assert.equal((await other.compute('flow', {})).scores.length, 48 * 48);
      other.close();
    }
  }
});

test('options that are not an object, a callback that is not a function, a signal that is not an AbortSignal: E_OPTION', async () => {
  const bytes = syntheticNpy(SMALL);
  const pool = await ParallelAttention.open({ bytes }, { workers: 2 });
  try {
    await assert.rejects(pool.compute('flow', null), { code: 'E_OPTION', message: /options must be an object/ });
    await assert.rejects(pool.compute('flow', { onProgress: 5 }), { code: 'E_OPTION', message: /onProgress must be a function/ });
    await assert.rejects(pool.compute('flow', { signal: {} }), { code: 'E_OPTION', message: /signal must be an AbortSignal/ });
    await assert.rejects(pool.compute('raw', { fusion: 'min' }), { code: 'E_OPTION', message: /fused as the "mean" of all heads/ });
    // The options by which workers share a request are the pool's own business.
    await assert.rejects(pool.compute('flow', { claim: () => 0 }), { code: 'E_OPTION', message: /ParallelAttention.compute has no option "claim"/ });
    assert.equal((await pool.compute('flow', {})).scores.length, SMALL.tokens * SMALL.tokens, 'the pool still works');
  } finally {
    pool.close();
  }
  await assert.rejects(ParallelAttention.open({ bytes }, { workers: 2, signal: 'x' }), { code: 'E_OPTION', message: /signal/ });
  await assert.rejects(ParallelAttention.open({ bytes }, { worker: 2 }),
    { code: 'E_OPTION', message: /ParallelAttention.open has no option "worker" \(its options: workers, prepare, balance, fusion,/ });
});

test('an error inside a worker arrives with the code and message of the single-threaded error', async () => {
  // A NaN in layer 2, head 1, row 3 of an otherwise valid .npy.
  const bytes = syntheticNpy(SMALL);
  const n = SMALL.tokens;
  const header = npyHeader([SMALL.layers, SMALL.heads, n, n]).length;
  new DataView(bytes.buffer).setFloat32(header + 4 * (((1 * SMALL.heads + 1) * n + 3) * n + 4), NaN, true);
  let expected;
  try {
    await single(bytes, 'flow', {});
    assert.fail('the single-threaded compute accepted a NaN');
  } catch (error) {
    expected = error;
  }
  assert.equal(expected.code, 'E_INPUT');
  await assert.rejects(computeParallel({ bytes, name: 'x.npy' }, 'flow', { workers: 2 }), (error) => {
    assert.ok(error instanceof AttnflowError);
    assert.equal(error.code, expected.code);
    assert.equal(error.message, expected.message);
    return true;
  });
  // Not a format at all, and a truncated .npy.
  await assert.rejects(computeParallel({ bytes: new TextEncoder().encode('hello') }, 'flow', {}),
    (error) => error.code === 'E_FORMAT');
  await assert.rejects(computeParallel({ bytes: bytes.subarray(0, 500), name: 'x.npy' }, 'flow', {}),
    (error) => error.code === 'E_FORMAT' || error.code === 'E_INPUT');
});

test('a pool given a file path or a Blob loads it in each worker: the same numbers; a missing file is E_INPUT', async () => {
  const bytes = syntheticNpy(CAUSAL);
  const dir = mkdtempSync(join(tmpdir(), 'attnflow-'));
  try {
    const path = join(dir, 'x.npy');
    writeFileSync(path, bytes);
    const options = { layers: 'all', rows: 'all' };
    const expected = await single(bytes, 'flow', options);
    for (const input of [{ path }, { bytes: new Blob([bytes]) }]) {
      for (const balance of BALANCES) {
        assertBitwiseEqual(await computeParallel({ ...input, name: 'x.npy' }, 'flow', { ...options, workers: 2, balance }), expected);
      }
    }
    const missing = join(dir, 'missing.npy');
    await assert.rejects(computeParallel({ path: missing }, 'flow', { workers: 2 }),
      (error) => error.code === 'E_INPUT' && error.message === `cannot read ${missing}: no such file`);
    await assert.rejects(computeParallel({ path: 7 }, 'flow', { workers: 2 }), (error) => error.code === 'E_INPUT');
  } finally {
    rmSync(dir, { recursive: true });
  }
});

test('invalid options are refused with E_OPTION', async () => {
  const bytes = syntheticNpy(SMALL);
  await assert.rejects(computeParallel({ bytes }, 'flow', { rows: [SMALL.tokens] }), (error) => error.code === 'E_OPTION');
  await assert.rejects(computeParallel({ bytes }, 'flow', { heads: [7] }), (error) => error.code === 'E_OPTION');
  await assert.rejects(computeParallel({ bytes }, 'flow', { workers: 0 }), (error) => error.code === 'E_OPTION');
  await assert.rejects(computeParallel({ bytes }, 'flow', { balance: 'even' }), { code: 'E_OPTION', message: /balance must be 'dynamic' or 'static'/ });
  await assert.rejects(computeParallel({ bytes: [1, 2, 3] }, 'flow', {}), (error) => error.code === 'E_INPUT');
  await assert.rejects(computeParallel({ bytes, path: 'x.npy' }, 'flow', {}), { code: 'E_INPUT', message: /both bytes and path/ });
  // Pre-fused input: heads and fusion are checked as FusedAttention.create checks them (they were
  // not, and the bad values were copied into every result's options).
  const prefused = new TextEncoder().encode(JSON.stringify({ attentions: [[[0.5, 0.5], [0.25, 0.75]]] }));
  await assert.rejects(computeParallel({ bytes: prefused }, 'flow', { heads: [0], workers: 2 }), { code: 'E_OPTION', message: /already fused/ });
  await assert.rejects(computeParallel({ bytes: prefused }, 'flow', { fusion: 'bogus', workers: 2 }), { code: 'E_OPTION', message: /fusion must be one of/ });
});

test('an abort right after open() is called, before the workers start, rejects it with E_CANCELLED', async () => {
  const controller = new AbortController();
  const opening = ParallelAttention.open({ bytes: syntheticNpy(SMALL) }, { workers: 2, signal: controller.signal });
  controller.abort();  // during open's first await: it used to resolve with a working pool
  await assert.rejects(opening, { code: 'E_CANCELLED' });
});

test('a claiming worker waits until every part has written its sink values into shared memory', async () => {
  // The worker protocol of web/parallel-worker.mjs, driven by hand: one worker computes part 0
  // of a request (so it claims every unit), and the test plays part 1, which writes its slice of
  // the sink values late. Until then the slice holds values far too large: a worker that did
  // not wait would certify flows that are wrong.
  const shape = { layers: 8, heads: 3, tokens: 24, seed: 3 };
  const bytes = syntheticNpy(shape);
  const fused = await FusedAttention.create(await loadAttention(bytes, { name: 'x.npy' }));
  const { Worker } = await import('node:worker_threads');
  const worker = new Worker(new URL('../../web/parallel-worker.mjs', import.meta.url));
  try {
    const options = { alpha: 0.5, discard: 0, layers: [8], rows: [...Array(24).keys()], normalize: false, receptiveField: false };
    const expected = fused.compute('flow', options).scores;
    const lateSlice = fused.certificateSinks(options, 12, 12, 24);
    assert.ok(lateSlice.middleLayer > 0, 'the certificate is used');
    const reply = (type) => new Promise((resolve, reject) => {
      worker.once('message', (message) => (message.type === type ? resolve(message) : reject(new Error(message.message))));
    });
    const counter = new Int32Array(new SharedArrayBuffer(12));  // [claimed, front, end]
    worker.postMessage({ type: 'load', bytes, name: 'x.npy', fusion: 'mean', heads: null, prepare: null, peers: [null, null], counter });
    await reply('ready');
    const shared = { values: new Float64Array(new SharedArrayBuffer(8 * 24)).fill(1e9), arrived: new Int32Array(new SharedArrayBuffer(4)) };
    const result = reply('result');
    worker.postMessage({
      type: 'compute', id: 1, method: 'flow', options, claims: true, progress: false,
      sinks: { exchange: 1, part: 0, parts: 2, requestRows: 24, first: 0, last: 12, shared },
    });
    let written = false;
    result.then(() => assert.ok(written, 'the worker replied before part 1 wrote its sink values'), () => {});
    await new Promise((resolve) => setTimeout(resolve, 200));
    shared.values.set(lateSlice.values, 12);
    written = true;
    Atomics.add(shared.arrived, 0, 1);
    Atomics.notify(shared.arrived, 0);
    const { scores, units } = await result;
    assert.equal(units.length, 24);
    assert.deepEqual(scores, expected);
  } finally {
    await worker.terminate();
    fused.dispose();
  }
});
