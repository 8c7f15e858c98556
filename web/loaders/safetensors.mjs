// safetensors: u64 little-endian header length, a JSON header {name: {dtype, shape,
// data_offsets: [begin, end]}, "__metadata__": {string: string}}, then the raw little-endian data.
// Tokens travel as a JSON string in __metadata__.tokens.

import { fail } from '../errors.mjs';
import { dtypeFromSafetensors } from './dtype.mjs';
import { fromTensor, shapeCount, shapeStr } from './tensor.mjs';

const MAX_HEADER = 100 * 2 ** 20; // the reference implementation's own limit

/**
 * True when the bytes look like safetensors: a header starting with '{' after a length whose high
 * 4 bytes are 0. The length itself is checked by loadSafetensors, so that a corrupt one is named
 * as such rather than making the file "not a format". (No text format has NUL bytes at 4-7.)
 */
export function isSafetensors(b) {
  if (b.length < 10) return false;
  const hi = b[4] | (b[5] << 8) | (b[6] << 16) | (b[7] << 24);
  return hi === 0 && b[8] === 0x7b;
}

export function loadSafetensors(source, options, name) {
  const what = name || 'the safetensors file';
  const b = source.read(0, 8);
  const hlen = (b[0] | (b[1] << 8) | (b[2] << 16)) + b[3] * 2 ** 24;
  if (hlen < 2 || hlen > MAX_HEADER) {
    fail('E_FORMAT', `${what} is corrupt: its header length field says ${hlen} bytes, where safetensors allows 2 to ` +
      `${MAX_HEADER} (100 MB)`);
  }
  if (8 + hlen > source.size) {
    fail('E_FORMAT', `${what} is truncated: its header needs ${8 + hlen} bytes, the file has ${source.size}`);
  }
  let header;
  try {
    header = JSON.parse(new TextDecoder('utf-8').decode(source.read(8, hlen)));
  } catch (e) {
    fail('E_FORMAT', `${what}: the safetensors header is not valid JSON (${e.message})`);
  }
  if (header === null || typeof header !== 'object' || Array.isArray(header)) fail('E_FORMAT', `${what}: the safetensors header is not an object`);
  const md = header.__metadata__ && typeof header.__metadata__ === 'object' ? header.__metadata__ : {};
  const names = Object.keys(header).filter((k) => k !== '__metadata__');
  let key = names.includes('attentions') ? 'attentions' : null;
  if (!key) {
    const cands = names.filter((k) => {
      const t = header[k];
      return t && dtypeFromSafetensors(t.dtype) && Array.isArray(t.shape) && t.shape.length >= 3 && t.shape.length <= 5;
    });
    if (cands.length !== 1) {
      fail('E_INPUT', `${what}: ${cands.length ? 'several' : 'no'} candidate attention tensors among ` +
        `${names.map((k) => JSON.stringify(k)).join(', ') || 'none'}; name the tensor "attentions"`);
    }
    key = cands[0];
  }
  const t = header[key];
  const tWhat = `${what}: tensor "${key}"`;
  if (!t || typeof t !== 'object' || !Array.isArray(t.shape) || !Array.isArray(t.data_offsets) || t.data_offsets.length !== 2) {
    fail('E_FORMAT', `${tWhat} has no valid shape and data_offsets`);
  }
  const dtype = dtypeFromSafetensors(t.dtype);
  if (!dtype) {
    const found = t.dtype === undefined ? 'no dtype' : `dtype ${JSON.stringify(t.dtype)}`;
    fail('E_FORMAT', `${tWhat} has ${found}; attention weights must be F16, BF16, F32 or F64`);
  }
  const count = shapeCount(t.shape, tWhat);
  const [begin, end] = t.data_offsets;
  const dataStart = 8 + hlen;
  if (!Number.isSafeInteger(begin) || !Number.isSafeInteger(end) || begin < 0 || end < begin) {
    fail('E_FORMAT', `${tWhat} has invalid data_offsets ${JSON.stringify(t.data_offsets)}`);
  }
  let tokens;
  if (md.tokens !== undefined) {
    if (typeof md.tokens !== 'string') fail('E_INPUT', `${what}: __metadata__.tokens must be a JSON string`);
    try { tokens = JSON.parse(md.tokens); } catch {
      fail('E_INPUT', `${what}: __metadata__.tokens is not valid JSON (write it with json.dumps(tokens))`);
    }
  }
  const rest = Object.fromEntries(Object.entries(md).filter(([k]) => k !== 'tokens'));
  return fromTensor({
    format: 'safetensors', what: tWhat, source, offset: dataStart + begin, shape: t.shape, dtype, tokens, options,
    meta: Object.keys(rest).length ? rest : undefined,
    checkBytes: () => {
      if (end - begin !== count * dtype.size) {
        fail('E_FORMAT', `${tWhat}: shape ${shapeStr(t.shape)} ${dtype.label} needs ${count * dtype.size} bytes, ` +
          `data_offsets span ${end - begin}`);
      }
      if (dataStart + end > source.size) {
        fail('E_FORMAT', `${what} is truncated: tensor "${key}" ends at byte ${dataStart + end}, the file has ${source.size}`);
      }
    },
  });
}
