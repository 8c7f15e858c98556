// Corrupt files get a coded error, never another exception: every format fixture, mutated at
// random (bits flipped, truncated, bytes set to digits or brackets, a span repeated or cut out),
// is loaded, fused and computed (flow and rollout of every layer), from memory and from disk.
// Each mutant must either work or throw an AttnflowError with a documented code and a message
// that names no `undefined` or `[object ...]`. Seeded, so a failure names a reproducible mutant.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AttnflowError, FusedAttention, loadAttention } from 'attnflow';
import { openAttentionFile } from 'attnflow/node';
import { mulberry32 } from '../../bench/synthetic.mjs';

const DIR = new URL('../fixtures/formats/', import.meta.url);
const FIXTURES = readdirSync(DIR).filter((name) => !name.endsWith('.py') && name !== 'expected.json');
const CODES = new Set(['E_FORMAT', 'E_INPUT', 'E_TOO_LARGE']);

/** One random corruption of `bytes`: [mutant, description]. */
function mutate(bytes, random) {
  const at = (length) => Math.floor(random() * length);
  const m = bytes.slice();
  const p = at(m.length);
  switch (at(6)) {
    case 0: {
      const flips = 1 + at(4);
      for (let k = 0; k < flips; k++) m[at(m.length)] ^= 1 << at(8);
      return [m, `${flips} bits flipped`];
    }
    case 1: return [m.subarray(0, p), `truncated to ${p} bytes`];
    case 2: m[p] = '9[],-\x00\xff'.charCodeAt(at(7)); return [m, `byte ${p} set to ${m[p]}`];
    case 3: m.fill(0x39, p, p + 8); return [m, `bytes ${p}.. set to '9'`];
    case 4: {
      const span = m.subarray(p, p + 1 + at(32));
      const out = new Uint8Array(m.length + span.length);
      out.set(m.subarray(0, p + span.length)); out.set(m.subarray(p), p + span.length);
      return [out, `bytes ${p}..${p + span.length} repeated`];
    }
    default: {
      const cut = 1 + at(16);
      return [new Uint8Array([...m.subarray(0, p), ...m.subarray(p + cut)]), `bytes ${p}..${p + cut} cut out`];
    }
  }
}

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
  const originals = new Map(FIXTURES.map((name) => [name, new Uint8Array(readFileSync(new URL(name, DIR)))]));
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
      const [bytes, description] = mutate(new Uint8Array(readFileSync(new URL(name, DIR))), random);
      const path = join(dir, name);
      writeFileSync(path, bytes);
      await check(() => openAttentionFile(path), name, `mutant ${k}, ${description}`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
