// The CLI against the independent Python reference (numpy + networkx, scripts/reference/) on
// inputs drawn at random, in every format both read, with random options: a live cross-check on
// inputs no one chose, beside the stored golden cases. Needs Debian's python3-numpy and
// python3-networkx (scripts/setup.sh installs them); .pt inputs only where python3-torch is.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { mulberry32 } from '../../bench/synthetic.mjs';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SWEEP = join(ROOT, 'scripts', 'reference', 'sweep.py');
const COMPARE = join(ROOT, 'scripts', 'reference', 'compare.py');

test('12 random inputs: raw, rollout and flow of the CLI agree with the reference within 1e-9', () => {
  const run = spawnSync('/usr/bin/python3', [SWEEP, '--seed', '2026', '--cases', '12', '--tol', '1e-9'],
    { cwd: ROOT, encoding: 'utf8', timeout: 300_000 });
  assert.equal(run.status, 0, `sweep failed:\n${run.stdout}\n${run.stderr}`);
  assert.match(run.stdout, /sweep: 12 of 12 cases agree within 1e-9/);
});

test('discard on weights with many exact ties agrees with the reference (equal values rank by position)', () => {
  // Weights in {0, 1/3, 2/3, 1} per head, rows normalised: many fused entries are equal in exact
  // arithmetic but come out a few ulps apart from attnflow (heads summed, then divided) and from
  // the reference (mean first). Ranked by their last bits, discard's threshold moved between the
  // two and the scores differed by up to 7e-3 (reference sweep, seed 20261206, case 207).
  const random = mulberry32(207);
  const [L, H, n] = [3, 2, 12];
  const attentions = Array.from({ length: L }, () => Array.from({ length: H }, () => Array.from({ length: n }, () => {
    const row = Array.from({ length: n }, () => Math.round(random() * 3) / 3);
    const sum = row.reduce((a, b) => a + b, 0);
    return row.map((v) => (sum > 0 ? v / sum : 0));
  })));
  const dir = mkdtempSync(join(tmpdir(), 'attnflow-ties-'));
  try {
    const path = join(dir, 'ties.json');
    writeFileSync(path, JSON.stringify({ tokens: Array.from({ length: n }, (_, i) => `t${i}`), attentions }));
    for (const options of [['--alpha', '1.0', '--discard', '0.5'], ['--discard', '0.3', '--layers', 'all']]) {
      const run = spawnSync('/usr/bin/python3', [COMPARE, path, '--tol', '1e-9', '--methods', 'rollout,flow', ...options],
        { cwd: ROOT, encoding: 'utf8', timeout: 120_000 });
      assert.equal(run.status, 0, `${options.join(' ')}:\n${run.stdout}\n${run.stderr}`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
