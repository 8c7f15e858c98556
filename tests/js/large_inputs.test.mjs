// Flow at the sizes of real models, through the package as users import it, against the plain JS
// Dinic of the benchmark (bench/peers/plain_dinic.mjs: textbook BFS levels and blocking flow on
// the residual-mixed matrices that bench/synthetic.mjs computes on its own). The core's other
// tests compare with its reference at n <= 129; above 128 tokens the solver keeps its bitsets'
// word count at run time and its certificate's tolerance grows with n, so both are checked here
// where users meet them: an encoder of 512 tokens and a decoder of 1,024.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FusedAttention, loadAttention } from 'attnflow';
import { plainFlowPairs } from '../../bench/peers/plain_dinic.mjs';
import { mixedLayers, syntheticAttention, syntheticNpy } from '../../bench/synthetic.mjs';

const ALPHA = 0.5;
// ~3 s each here; a solver that loops must fail the test, not stall the run.
const LIMIT = { timeout: 120_000 };

/**
 * The largest difference between raw flows of `rows` at the last layer of a .npy of `shape` and
 * the plain Dinic's, over `sinks`; with `everyRow`, the rows are read from a request for every
 * row (which the core settles mostly with its certificate) instead of a request for them alone.
 */
async function compareWithPlainDinic(shape, rows, sinks, { everyRow = false } = {}) {
  const attention = await loadAttention(syntheticNpy(shape), { name: 'large.npy' });
  const fused = await FusedAttention.create(attention);
  const request = everyRow ? 'all' : rows;
  const result = fused.compute('flow', { alpha: ALPHA, rows: request, normalize: false });
  fused.dispose();
  const mixed = mixedLayers(syntheticAttention(shape), shape, ALPHA);
  let worst = 0;
  for (const row of rows) {
    const ours = result.scoresFor(shape.layers, row);
    const pairs = sinks.map((sink) => [shape.layers, row, sink]);
    const { values } = plainFlowPairs(mixed, shape.tokens, pairs);
    sinks.forEach((sink, k) => {
      assert.ok(values[k] > 0, `row ${row}, sink ${sink}: a positive flow to compare`);
      worst = Math.max(worst, Math.abs(ours[sink] - values[k]));
    });
  }
  return worst;
}

test('an encoder of 512 tokens, heads focused on [CLS] and [SEP]: flow equals a plain max-flow',
  LIMIT, async () => {
  const shape = { layers: 12, heads: 2, tokens: 512, seed: 5, profile: 'focus' };
  const sinks = [0, 1, 255, 299, 300, 301, 510, 511];
  for (const everyRow of [false, true]) {
    const worst = await compareWithPlainDinic(shape, [0, 300, 511], sinks, { everyRow });
    assert.ok(worst <= 1e-9, `max |attnflow - plain Dinic| = ${worst} (every row: ${everyRow})`);
  }
});

test('a causal decoder of 1,024 tokens: flow of late rows equals a plain max-flow', LIMIT,
  async () => {
  const shape = { layers: 12, heads: 2, tokens: 1024, seed: 6, causal: true, profile: 'peaky' };
  const worst = await compareWithPlainDinic(shape, [700, 1023], [0, 1, 350, 650, 699, 700]);
  assert.ok(worst <= 1e-9, `max |attnflow - plain Dinic| = ${worst}`);
});
