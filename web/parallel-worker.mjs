// One worker of web/parallel.mjs: a worker_thread in Node, a module Web Worker in the browser
// (the same file; the environment is detected). It loads the input's bytes with the package's own
// loader, fuses the heads once, then computes the shares of work it is sent.
//
// Protocol (main -> worker):
//   {type:'load', bytes: Uint8Array, name?, batch?, tokens?, fusion, heads}
//        -> {type:'ready', summary: {tokens, numLayers, numHeads, numTokens, fused, format, warnings}}
//   {type:'sinks', id, options: {alpha, discard, layers}, shareRows, first, last}
//        -> {type:'sinks', id, middleLayer, values: Float64Array} (FusedAttention.certificateSinks)
//   {type:'compute', id, method, options: {alpha, discard, layers, rows, normalize, sinkValues?}}
//        -> {type:'progress', id, done, total} (flow only, throttled) ... then
//           {type:'result', id, scores: Float64Array} (transferred)
//   any failure -> {type:'error', id?, code, message}   (code null for a non-AttnflowError)
// Cancel is the main thread terminating this worker: a flow is one synchronous WebAssembly call,
// so no message can reach the worker while it runs.
import { FusedAttention, loadAttention } from './index.mjs';

const PROGRESS_MS = 25;

let fused = null;
let send;

async function handle(message) {
  try {
    if (message.type === 'load') {
      const { bytes, name, batch, tokens, fusion, heads } = message;
      const data = await loadAttention(bytes, { name, batch, tokens });
      fused = await FusedAttention.create(data, data.fused ? {} : { fusion, heads });
      send({
        type: 'ready',
        summary: {
          tokens: data.tokens,
          numLayers: data.numLayers,
          numHeads: data.numHeads,
          numTokens: data.numTokens,
          fused: data.fused,
          format: data.format,
          warnings: data.warnings ?? [],
        },
      });
    } else if (message.type === 'sinks') {
      const { id, options, shareRows, first, last } = message;
      if (!fused) throw new Error('parallel worker: sinks before load');
      const { middleLayer, values } = fused.certificateSinks(options, shareRows, first, last);
      send({ type: 'sinks', id, middleLayer, values }, [values.buffer]);
    } else if (message.type === 'compute') {
      const { id, method, options } = message;
      if (!fused) throw new Error('parallel worker: compute before load');
      let last = -Infinity;
      const onProgress = (done, total) => {
        const now = performance.now();
        if (done >= total || now - last >= PROGRESS_MS) {
          last = now;
          send({ type: 'progress', id, done, total });
        }
      };
      const { scores } = fused.compute(method, { ...options, onProgress: method === 'flow' ? onProgress : undefined });
      // Result scores are a fresh copy out of the heap: transferring hands the buffer over.
      send({ type: 'result', id, scores }, [scores.buffer]);
    }
  } catch (error) {
    send({ type: 'error', id: message.id, code: error?.code ?? null, message: String(error?.message ?? error) });
  }
}

if (typeof process === 'object' && typeof process.versions?.node === 'string') {
  const { parentPort } = await import('node:worker_threads');
  send = (value, transfer) => parentPort.postMessage(value, transfer);
  parentPort.on('message', handle);
} else {
  send = (value, transfer) => self.postMessage(value, transfer ?? []);
  self.onmessage = (event) => handle(event.data);
}
