// The package, imported as users do, against the golden files of tests/fixtures/golden/: numbers
// computed by an independent Python implementation of SEMANTICS.md (numpy + networkx max flow,
// scripts/reference/attnflow_reference.py; regenerate with tests/fixtures/golden/make_golden.py).
// Also checks invariants of SEMANTICS.md on the package's own results.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { FusedAttention, compute, init, loadAttention } from 'attnflow';

const GOLDEN_DIR = fileURLToPath(new URL('../fixtures/golden/', import.meta.url));
const TOLERANCE = 1e-9;

export function goldenCases() {
  return readdirSync(GOLDEN_DIR)
    .filter((name) => name.endsWith('.json'))
    .sort()
    .map((name) => JSON.parse(readFileSync(join(GOLDEN_DIR, name), 'utf8')));
}

/** Largest |actual - expected| over [layers][rows][n], with where it occurs. */
function maxDifference(result, expected) {
  let worst = { diff: 0, where: 'nowhere', actual: NaN, wanted: NaN };
  expected.layers.forEach((layer, l) => {
    expected.rows.forEach((row, r) => {
      const got = result.scoresFor(layer, row);
      const want = expected.scores[l][r];
      assert.equal(got.length, want.length, `layer ${layer} row ${row}: ${got.length} scores, expected ${want.length}`);
      for (let j = 0; j < want.length; j++) {
        // NaN never compares as close: a NaN in the result counts as an infinite difference.
        const diff = Number.isNaN(got[j]) ? Infinity : Math.abs(got[j] - want[j]);
        if (!(diff <= worst.diff)) worst = { diff, where: `layer ${layer} row ${row} token ${j}`, actual: got[j], wanted: want[j] };
      }
    });
  });
  return worst;
}

function assertClose(result, golden, method, expectedScores, label) {
  const { layers, rows } = golden.expected;
  assert.deepEqual(result.layers, layers, `${label}: layers`);
  assert.deepEqual(result.rows, rows, `${label}: rows`);
  assert.equal(result.method, method, `${label}: method`);
  assert.deepEqual(result.tokens, golden.input.tokens, `${label}: tokens`);
  assert.equal(result.scores.length, layers.length * rows.length * golden.input.tokens.length, `${label}: scores length`);
  const worst = maxDifference(result, { layers, rows, scores: expectedScores });
  assert.ok(worst.diff <= TOLERANCE,
    `${label}: max |diff| ${worst.diff.toExponential(3)} > ${TOLERANCE} at ${worst.where} (package ${worst.actual}, reference ${worst.wanted})`);
  return worst.diff;
}

const cases = goldenCases();

test('golden files exist', () => {
  assert.ok(cases.length >= 20, `only ${cases.length} golden files in ${GOLDEN_DIR}`);
});

for (const golden of cases) {
  test(`golden ${golden.case}: ${golden.description}`, async () => {
    await init();
    const data = await loadAttention(golden.input);
    const { fusion, heads, alpha } = golden.options;
    const fusionOptions = data.fused ? {} : { fusion, heads };
    assert.equal(data.fused, golden.input.attentions[0][0][0].length === undefined, 'fused detection');
    const all = { layers: 'all', rows: 'all', alpha };
    const label = (method) => `${golden.case} ${method} (fusion ${fusion}, heads ${JSON.stringify(heads)}, alpha ${alpha})`;

    // One-shot API, every method.
    const raw = await compute(data, 'raw', { ...fusionOptions, ...all });
    assertClose(raw, golden, 'raw', golden.expected.raw, label('raw'));
    const rollout = await compute(data, 'rollout', { ...fusionOptions, ...all });
    assertClose(rollout, golden, 'rollout', golden.expected.rollout, label('rollout'));
    const flow = await compute(data, 'flow', { ...fusionOptions, ...all, normalize: true });
    assertClose(flow, golden, 'flow', golden.expected.flow, label('flow'));
    const flowRaw = await compute(data, 'flow', { ...fusionOptions, ...all, normalize: false });
    assertClose(flowRaw, golden, 'flow', golden.expected.flow_unnormalized, label('flow --unnormalized'));

    // The reusable handle gives the same numbers (fused once, computed many times).
    const fused = await FusedAttention.create(data, fusionOptions);
    try {
      assertClose(fused.compute('flow', { ...all, normalize: false }), golden, 'flow',
        golden.expected.flow_unnormalized, label('FusedAttention flow unnormalized'));
      assertClose(fused.compute('rollout', all), golden, 'rollout', golden.expected.rollout, label('FusedAttention rollout'));
    } finally {
      fused.dispose();
    }

    // Normalised by receptive field (docs/SEMANTICS.md), on every rollout path: all rows (the
    // cached full product) and one row (vector-matrix products) at every layer.
    const receptive = { ...fusionOptions, ...all, receptiveField: true };
    assertClose(await compute(data, 'rollout', receptive), golden, 'rollout', golden.expected.rollout_receptive, label('rollout --receptive-field'));
    assertClose(await compute(data, 'flow', receptive), golden, 'flow', golden.expected.flow_receptive, label('flow --receptive-field'));
    assertClose(await compute(data, 'flow', { ...receptive, normalize: false }), golden, 'flow',
      golden.expected.flow_receptive_unnormalized, label('flow --receptive-field --unnormalized'));
    {
      const lastRow = golden.input.tokens.length - 1;
      const oneRow = await compute(data, 'rollout', { ...receptive, rows: [lastRow] });
      golden.expected.layers.forEach((layer, l) => {
        const got = oneRow.scoresFor(layer, lastRow);
        golden.expected.rollout_receptive[l][lastRow].forEach((want, j) => assert.ok(Math.abs(got[j] - want) <= TOLERANCE,
          `${label('rollout --receptive-field, one row')}: ${got[j]} vs ${want} at layer ${layer} row ${lastRow} token ${j}`));
      });
    }

    // Invariants, on the package's own numbers.
    const n = golden.input.tokens.length;
    const L = golden.expected.layers.length;
    // Column sums of A[1], from the package's own residual-mixed first layer.
    const colsum = new Float64Array(n);
    {
      const handle = await FusedAttention.create(data, fusionOptions);
      try {
        const A1 = handle.mixedLayer(1, { alpha });
        for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) colsum[j] += A1[i * n + j];
      } finally {
        handle.dispose();
      }
    }
    for (let layer = 1; layer <= L; layer++) {
      for (let i = 0; i < n; i++) {
        const r = rollout.scoresFor(layer, i);
        const f = flowRaw.scoresFor(layer, i);
        if (golden.stochastic) {
          const sum = r.reduce((a, b) => a + b, 0);
          assert.ok(Math.abs(sum - 1) <= 1e-12, `${golden.case}: rollout row sum ${sum} at layer ${layer} row ${i}`);
        }
        for (let j = 0; j < n; j++) {
          const bound = Math.min(1, colsum[j]) + 1e-12;
          assert.ok(f[j] >= 0 && f[j] <= bound,
            `${golden.case}: raw flow ${f[j]} outside [0, min(1, colsum A1) = ${bound}] at layer ${layer} row ${i} token ${j}`);
          assert.ok(r[j] <= f[j] + 1e-12,
            `${golden.case}: rollout ${r[j]} > raw flow ${f[j]} at layer ${layer} row ${i} token ${j}`);
        }
      }
    }
  });
}
