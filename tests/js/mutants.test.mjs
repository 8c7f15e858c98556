// Corrupt files get a coded error, never another exception: every format fixture, mutated at
// random (tests/mutate.mjs), is loaded, fused and computed (flow and rollout of every layer),
// from memory and from disk.
// Each mutant must either work or throw an AttnflowError with a documented code and a message
// that names no `undefined` or `[object ...]`. Seeded, so a failure names a reproducible mutant.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AttnflowError, FusedAttention, loadAttention } from 'attnflow';
import { openAttentionFile } from 'attnflow/node';
import { mulberry32 } from '../../bench/synthetic.mjs';
import { FORMAT_FIXTURES as FIXTURES, mutate, readFormatFixture } from '../mutate.mjs';

const CODES = new Set(['E_FORMAT', 'E_INPUT', 'E_TOO_LARGE']);

async function check(open, name, description) {
  let data;
  try {
    data = await open();
    const fused = await FusedAttention.create(data);
    try {
      fused.compute('flow', { layers: 'all', rows: [0] });
      fused.compute('rollout', { layers: 'all' });
    } finally {
      fused.dispose();
    }
  } catch (error) {
    const what = `${name}, ${description}: ${error?.constructor?.name} ${error?.code} ${error?.message}`;
    assert.ok(error instanceof AttnflowError && CODES.has(error.code), what);
    assert.doesNotMatch(error.message, /undefined|\[object /, what);
  } finally {
    data?.close?.();
  }
}

test('3000 mutated fixtures from memory: each loads or throws a coded error', async () => {
  const random = mulberry32(20261206);
  const originals = new Map(FIXTURES.map((name) => [name, readFormatFixture(name)]));
  for (let k = 0; k < 3000; k++) {
    const name = FIXTURES[Math.floor(random() * FIXTURES.length)];
    const [bytes, description] = mutate(originals.get(name), random);
    await check(() => loadAttention(bytes, { name }), name, `mutant ${k}, ${description}`);
  }
});

test('300 mutated fixtures from disk (openAttentionFile): each loads or throws a coded error', async () => {
  const random = mulberry32(6122026);
  const dir = mkdtempSync(join(tmpdir(), 'attnflow-mutants-'));
  try {
    for (let k = 0; k < 300; k++) {
      const name = FIXTURES[Math.floor(random() * FIXTURES.length)];
      const [bytes, description] = mutate(readFormatFixture(name), random);
      const path = join(dir, name);
      writeFileSync(path, bytes);
      await check(() => openAttentionFile(path), name, `mutant ${k}, ${description}`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
