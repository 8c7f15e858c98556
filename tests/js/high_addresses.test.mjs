// Heap addresses past 2 GiB: wasm32 addresses go up to 4 GiB, but _malloc's i32 result reads as
// negative in JavaScript there, and heap views indexed with it (address >> 3) counted from the end
// of the heap: a BERT-large-size pre-fused input (L = 24, n = 1,950) gave flow rows summing to
// 1.012 with 49 zeros, and every score 0 at n = 2,400. Blocks allocated (never touched, so no
// memory is used) push this process's later allocations past 2 GiB.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { FusedAttention, loadAttention } from 'attnflow';
import { loadModule } from '../../web/engine.mjs';

async function everything(data) {
  const fused = await FusedAttention.create(data);
  try {
    fused.prepare({ layer: 'last', rows: [0] });
    return {
      flowRow: fused.compute('flow', { rows: [0] }).scores,
      flowAll: fused.compute('flow', { layers: 'all' }).scores,
      flowInto: fused.compute('flow', { rows: [1], into: new Float64Array(10) }).scores,
      rollout: fused.compute('rollout', { layers: 'all' }).scores,
      rolloutRows: fused.compute('rollout', { rows: [2, 5], receptiveField: true }).scores,
      raw: fused.compute('raw', { rows: [1, 2] }).scores,
      mixed: fused.mixedLayer(2),
      bottleneck: fused.bottleneck(6, 0, 3).value,
      certificateSources: fused.certificateSources({ rows: 'all', requestRows: 10 }),
    };
  } finally {
    fused.dispose();
  }
}

test('every method gives the same numbers when its heap memory lies past 2 GiB', async () => {
  const data = await loadAttention(await readFile(new URL('../../demo/examples/agreement-01.json', import.meta.url)));
  const low = await everything(data);
  const M = await loadModule();
  const blocks = [2 ** 30, 2 ** 30, 2 ** 27].map((bytes) => M._malloc(bytes) >>> 0);
  assert.ok(blocks.every(Boolean), 'the blocks were allocated');
  assert.ok(blocks[2] >= 2 ** 31, `the last block lies past 2 GiB (${blocks[2]})`);
  try {
    const high = await everything(data);
    for (const key of Object.keys(low)) assert.deepEqual(high[key], low[key], key);
  } finally {
    for (const block of blocks) M._free(block);
  }
});
