// The CLI (`node web/cli.mjs`) on golden inputs: its JSON must match the numbers of the
// independent Python reference stored in tests/fixtures/golden/ (see golden.test.mjs).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CLI = join(ROOT, 'web', 'cli.mjs');
const GOLDEN_DIR = join(ROOT, 'tests', 'fixtures', 'golden');
const TOLERANCE = 1e-9;

// An encoder with a head subset and max fusion, and a causal input with min fusion and alpha 1.
const CASES = ['enc_L3_H4_n6_heads20_max_a03', 'dec_L5_H4_n9_min_a1', 'zero_fused_row_a1', 'prefused_L4_n7_a03'];

function optionArgs({ fusion, heads, alpha }, fused) {
  const args = ['--alpha', String(alpha)];
  if (!fused) {
    args.push('--fusion', fusion);
    if (heads !== null) args.push('--heads', heads.join(','));
  }
  return args;
}

function runCli(args) {
  return JSON.parse(execFileSync(process.execPath, [CLI, ...args], { cwd: ROOT, encoding: 'utf8' }));
}

function assertMatches(out, golden, method, expectedScores, label) {
  const { layers, rows } = golden.expected;
  assert.equal(out.method, method, `${label}: method`);
  assert.deepEqual(out.tokens, golden.input.tokens, `${label}: tokens`);
  assert.deepEqual(out.layers, layers, `${label}: layers`);
  assert.deepEqual(out.rows, rows, `${label}: rows`);
  assert.equal(out.scores.length, layers.length, `${label}: scores has ${out.scores.length} layers`);
  let worst = { diff: 0, where: 'nowhere' };
  expectedScores.forEach((perLayer, l) => {
    assert.equal(out.scores[l].length, rows.length, `${label}: layer ${layers[l]} has ${out.scores[l].length} rows`);
    perLayer.forEach((want, r) => {
      const got = out.scores[l][r];
      assert.equal(got.length, want.length, `${label}: layer ${layers[l]} row ${rows[r]} length`);
      want.forEach((w, j) => {
        const diff = typeof got[j] === 'number' ? Math.abs(got[j] - w) : Infinity;
        if (!(diff <= worst.diff)) worst = { diff, where: `layer ${layers[l]} row ${rows[r]} token ${j} (cli ${got[j]}, reference ${w})` };
      });
    });
  });
  assert.ok(worst.diff <= TOLERANCE, `${label}: max |diff| ${worst.diff.toExponential(3)} > ${TOLERANCE} at ${worst.where}`);
}

const dir = mkdtempSync(join(tmpdir(), 'attnflow-golden-cli-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));

for (const name of CASES) {
  test(`CLI flow on golden ${name}`, () => {
    const golden = JSON.parse(readFileSync(join(GOLDEN_DIR, `${name}.json`), 'utf8'));
    const file = join(dir, `${name}.json`);
    writeFileSync(file, JSON.stringify(golden.input));
    const fused = !Array.isArray(golden.input.attentions[0][0][0]);
    const options = optionArgs(golden.options, fused);
    const common = ['--layers', 'all', '--rows', 'all', ...options];

    assertMatches(runCli(['flow', file, ...common]), golden, 'flow', golden.expected.flow, `${name} flow`);
    assertMatches(runCli(['flow', file, ...common, '--unnormalized']), golden, 'flow',
      golden.expected.flow_unnormalized, `${name} flow --unnormalized`);
    assertMatches(runCli(['rollout', file, ...common]), golden, 'rollout', golden.expected.rollout, `${name} rollout`);
    assertMatches(runCli(['raw', file, ...common]), golden, 'raw', golden.expected.raw, `${name} raw`);
  });
}

test('CLI defaults: last layer, all rows, mean fusion, alpha 0.5', () => {
  const golden = JSON.parse(readFileSync(join(GOLDEN_DIR, 'enc_L3_H4_n8_peaked.json'), 'utf8'));
  assert.deepEqual(golden.options, { fusion: 'mean', heads: null, alpha: 0.5 });
  const file = join(dir, 'defaults.json');
  writeFileSync(file, JSON.stringify(golden.input));
  const out = runCli(['flow', file]);
  const L = golden.expected.layers.length;
  assertMatches(out, { ...golden, expected: { ...golden.expected, layers: [L] } }, 'flow',
    [golden.expected.flow[L - 1]], 'defaults');
  const rows = runCli(['flow', file, '--rows', '0,5', '--layers', '1,3', '--unnormalized']);
  assertMatches(rows, { ...golden, expected: { ...golden.expected, layers: [1, 3], rows: [0, 5] } }, 'flow',
    [[golden.expected.flow_unnormalized[0][0], golden.expected.flow_unnormalized[0][5]],
      [golden.expected.flow_unnormalized[2][0], golden.expected.flow_unnormalized[2][5]]], 'rows 0,5 layers 1,3');
});
