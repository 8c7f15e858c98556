// AttentionData over one binary tensor (shared by .npy, .npz and safetensors): checks the shape,
// selects the batch item, and reads each layer from its source only when it is asked for.

import { fail } from '../errors.mjs';
import { checkSize, checkTokens, makeAttentionData } from './data.mjs';
import { readFloats } from './dtype.mjs';

export const shapeStr = (shape) => `(${shape.join(', ')}${shape.length === 1 ? ',' : ''})`;  // as Python prints it

/** Product of the dimensions, refusing header shapes no file could hold. */
export function shapeCount(shape, what) {
  let c = 1;
  for (const d of shape) {
    // A dimension of 2^53 or more was rounded when the header was parsed: its digits are lost.
    if (typeof d === 'number' && d >= 2 ** 53) fail('E_TOO_LARGE', `${what}: a dimension of 2^53 or more in its shape`);
    if (!Number.isSafeInteger(d) || d < 0) fail('E_FORMAT', `${what}: invalid dimension ${JSON.stringify(d)} in shape ${shapeStr(shape)}`);
    c *= d;
  }
  // As too large, like a shape that is only too large for wasm32 (a header cannot be checked
  // against its file's size before its count is known).
  if (!Number.isSafeInteger(c * 8)) fail('E_TOO_LARGE', `${what}: shape ${shapeStr(shape)} holds more values than any file can`);
  return c;
}

/**
 * Checks a tensor shape ([L,H,n,n], [L,n,n] or [L,B,H,n,n]), the batch option and the size
 * guard, from the header alone.
 * @returns {{L: number, B: number, H: number, n: number, batch: number}}
 */
export function tensorLayout(shape, what, options) {
  const nd = shape.length;
  if (nd < 3 || nd > 5) {
    fail('E_INPUT', `${what} has shape ${shapeStr(shape)} (${nd} dimensions): expected [L, H, n, n], ` +
      'pre-fused [L, n, n] or [L, B, H, n, n] with a batch axis');
  }
  const n = shape[nd - 1];
  if (shape[nd - 2] !== n) {
    fail('E_INPUT', `${what} has shape ${shapeStr(shape)}: the matrices are ${shape[nd - 2]}x${n}; they must be square`);
  }
  const L = shape[0];
  const B = nd === 5 ? shape[1] : 1;
  const H = nd === 3 ? 0 : shape[nd - 3];
  if (L === 0) fail('E_INPUT', `${what} has shape ${shapeStr(shape)}: no layers`);
  if (n === 0) fail('E_INPUT', `${what} has shape ${shapeStr(shape)}: no tokens`);
  if (nd !== 3 && H === 0) fail('E_INPUT', `${what} has shape ${shapeStr(shape)}: no heads`);
  const batch = options.batch ?? 0;
  if (nd === 5) {
    if (B === 0) fail('E_INPUT', `${what} has shape ${shapeStr(shape)}: no batch items`);
    if (batch >= B) fail('E_OPTION', `batch ${batch} is out of range: the input has B = ${B} batch item${B === 1 ? '' : 's'} (0..${B - 1})`);
  } else if (batch > 0) {
    fail('E_OPTION', `batch ${batch} was given but the input has no batch axis (shape ${shapeStr(shape)})`);
  }
  checkSize(L, H, n);
  return { L, B, H, n, batch };
}

/**
 * AttentionData over one tensor; each layer is read from `source` when it is asked for.
 * @param {object} t
 * @param {string} t.format 'npy' | 'npz' | 'safetensors'
 * @param {string} t.what   name used in messages, e.g. 'the .npy array' or 'tensor "attentions"'
 * @param {import('./source.mjs').ByteSource} t.source
 * @param {number} t.offset byte offset of the first element in `source`
 * @param {number[]} t.shape
 * @param {import('./dtype.mjs').Dtype} t.dtype
 * @param {string[]|undefined} t.tokens tokens found in the file
 * @param {{batch?: number, tokens?: string[]}} t.options
 * @param {Record<string, unknown>} [t.meta]
 * @param {() => void} [t.checkBytes] the container's byte-length check, run after the shape and
 *   size checks (so an absurd header shape is refused as too large before anything else)
 */
export function fromTensor(t) {
  const { shape, options } = t;
  const { L, B, H, n, batch } = tensorLayout(shape, t.what, options);
  if (t.checkBytes) t.checkBytes();
  const tokens = checkTokens(options.tokens ?? t.tokens, n, options.tokens ? 'options.tokens' : 'tokens');
  const per = Math.max(H, 1) * n * n; // elements of one layer of one batch item
  const { source, offset, dtype } = t;
  const layerBytes = per * dtype.size;
  return makeAttentionData({
    format: t.format, tokens, numLayers: L, numHeads: H, numTokens: n, meta: t.meta,
    batch: shape.length === 5 ? batch : undefined,
    readLayer: (l) => readFloats(source.read(offset + (l * B + batch) * layerBytes, layerBytes), 0, per, dtype),
    checked: false,
  });
}
