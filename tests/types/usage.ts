// Compiled with `tsc --noEmit` by the test script: the .d.ts files must describe a usable API.
import { AttnflowError, FusedAttention, compute, init, loadAttention } from 'attnflow';
import type { Bottleneck, CertificateSinks, Result } from 'attnflow';
import { AttnflowWorker } from 'attnflow/client';
import type { WorkerResult } from 'attnflow/client';
import { ParallelAttention, computeParallel } from 'attnflow/parallel';
import { openAttentionFile } from 'attnflow/node';
import type { AttentionFile } from 'attnflow/node';
import { renderPatchGrid, renderTokenStrips } from 'attnflow/view';
import type { PatchGridOptions, Palette, TokenStripsOptions } from 'attnflow/view';

export async function usage(bytes: Uint8Array): Promise<number> {
  await init();
  const data = await loadAttention(bytes, { name: 'x.npy', batch: 0 });
  const flow: Result = await compute(data, 'flow', { rows: [0], layers: 'last', alpha: 0.5 });
  const fused = await FusedAttention.create(data, { fusion: 'max', heads: [0, 2] });
  const file: AttentionFile = await openAttentionFile('x.npy', { tokens: ['a', 'b'] });
  try {
    (await FusedAttention.create(file)).dispose();
  } finally {
    file.close();
  }
  const rollout = fused.compute('rollout', { layers: 'all', onProgress: (done, total) => done < total });
  const byPosition: boolean = fused.compute('rollout', { receptiveField: true, normalize: false }).options.receptiveField;
  const cut: Bottleneck = fused.bottleneck(fused.numLayers, 0, 1, { alpha: 1 });
  const mixed: Float64Array = fused.mixedLayer(1);
  fused.prepare({ alpha: 0.5, discard: 0.1, layer: 'last' });
  fused.prepare({ layer: 3 });
  const part: CertificateSinks = fused.certificateSinks({ layers: 'last' }, 64, 0, 64);
  fused.compute('flow', { rows: [0, 2], sinkValues: part.middleLayer ? part.values : undefined });
  const flags: Uint8Array = fused.certificateSources({ layers: 'last', rows: [0, 2] });
  fused.compute('flow', { rows: [0, 2], sourceFlags: flags, into: new Float64Array(2 * fused.numTokens) });
  const counter = new Int32Array(new SharedArrayBuffer(4));
  fused.compute('flow', { rows: 'all', claim: () => Atomics.add(counter, 0, 1) });
  fused.dispose();
  const worker = new AttnflowWorker();
  const remote: WorkerResult = await worker.compute('raw', { rows: 'all' });
  // @ts-expect-error: a worker cannot write into this thread's memory (E_OPTION at run time)
  await worker.compute('flow', { into: new Float64Array(4) });
  // @ts-expect-error: the fusion is load()'s or fuse()'s
  await worker.compute('flow', { fusion: 'max' });
  worker.terminate();
  const pool = await ParallelAttention.open({ bytes, name: 'x.npy' }, { workers: 2, fusion: 'mean', prepare: { alpha: 0.5, layer: 'last' }, balance: 'static' });
  const balance: 'dynamic' | 'static' = pool.balance;
  const shared: Result = await pool.compute('flow', { layers: 'all', signal: new AbortController().signal });
  pool.close();
  const once: Result = await computeParallel({ bytes }, 'flow', { rows: [0], workers: 2 });
  const fromDisk: Result = await computeParallel({ path: 'x.npy', name: 'x.npy' }, 'flow', { workers: 2 });
  const fromFile: Result = await computeParallel({ bytes: new Blob(['{}']) }, 'flow', { workers: 2 });
  try {
    return flow.scoresFor(flow.layers[0], 0)[0] + rollout.scores[0] + cut.value + mixed[0] + remote.numTokens + shared.numTokens + once.numTokens + fromDisk.numTokens + fromFile.numTokens + balance.length;
  } catch (error) {
    if (error instanceof AttnflowError && error.code === 'E_OPTION') return -1;
    throw error;
  }
}

// attnflow/view: a Result drawn into a page.
export function drawView(container: HTMLElement, result: Result, worker: WorkerResult): HTMLElement {
  const options: TokenStripsOptions = {
    layer: result.layers[0], rows: [0], palette: 'cividis', scale: 'absolute',
    onSelect: (index: number, row: number) => console.log(result.tokens[index], row),
    label: (row, layer) => `row ${row}, layer ${layer}`,
  };
  const palette: Palette = 'blues';
  renderTokenStrips(container, worker, { palette });
  // @ts-expect-error: not one of the palettes
  renderTokenStrips(container, result, { palette: 'jet' });
  return renderTokenStrips(container, result, options);
}

// attnflow/view: one row of a Vision Transformer drawn over its image patches.
export function drawPatches(container: HTMLElement, result: Result, image: HTMLImageElement): HTMLElement {
  const options: PatchGridOptions = {
    layer: result.layers[0], row: 0, skip: 1, grid: [14, 14], palette: 'viridis', scale: 'row',
    image, opacity: 0.5, size: 224, onSelect: (index: number) => console.log(result.tokens[index]),
  };
  // @ts-expect-error: grid is [rows, cols]
  renderPatchGrid(container, result, { grid: 196 });
  return renderPatchGrid(container, result, options);
}
