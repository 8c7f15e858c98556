// The CLI against the independent Python reference (numpy + networkx, scripts/reference/) on
// inputs drawn at random, in every format both read, with random options: a live cross-check on
// inputs no one chose, beside the stored golden cases. Needs Debian's python3-numpy and
// python3-networkx (scripts/setup.sh installs them); .pt inputs only where python3-torch is.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SWEEP = join(ROOT, 'scripts', 'reference', 'sweep.py');

test('12 random inputs: raw, rollout and flow of the CLI agree with the reference within 1e-9', () => {
  const run = spawnSync('/usr/bin/python3', [SWEEP, '--seed', '2026', '--cases', '12', '--tol', '1e-9'],
    { cwd: ROOT, encoding: 'utf8', timeout: 300_000 });
  assert.equal(run.status, 0, `sweep failed:\n${run.stdout}\n${run.stderr}`);
  assert.match(run.stdout, /sweep: 12 of 12 cases agree within 1e-9/);
});
