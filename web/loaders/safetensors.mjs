// safetensors: u64 little-endian header length, a JSON header {name: {dtype, shape,
// data_offsets: [begin, end]}, "__metadata__": {string: string}}, then the raw little-endian data.
// Tokens travel as a JSON string in __metadata__.tokens.

import { fail } from '../errors.mjs';
import { dtypeFromSafetensors } from './dtype.mjs';
import { fromTensor, shapeCount, shapeStr } from './tensor.mjs';

const MAX_HEADER = 100 * 2 ** 20; // the reference implementation's own limit

/**
 * True when the bytes look like safetensors: a header starting with '{' after a length whose high
 * 3 bytes are 0. The length itself is checked by loadSafetensors, so that a corrupt one (up to
 * 2^40) is named as such rather than making the file "not a format". (No text format has NUL
 * bytes at 5-7.)
 */
export function isSafetensors(b) {
  if (b.length < 10) return false;
  return b[5] === 0 && b[6] === 0 && b[7] === 0 && b[8] === 0x7b;
}

/**
 * The data section's layout as the reference implementation requires it: every tensor's
 * data_offsets a pair [begin, end] of integers, and the tensors, in the order they begin, packed
 * from 0 without a gap or an overlap. Returns where the last one ends, which must be the end of
 * the file (checked with the file's size, after the size checks).
 */
function checkLayout(header, names, what) {
  const spans = names.map((k) => {
    const t = header[k];
    const offsets = t && typeof t === 'object' ? t.data_offsets : undefined;
    if (!Array.isArray(offsets) || offsets.length !== 2 || !offsets.every(Number.isSafeInteger) ||
      offsets[0] < 0 || offsets[1] < offsets[0]) {
      fail('E_FORMAT', `${what}: tensor ${JSON.stringify(k)} has ` +
        `${offsets === undefined ? 'no data_offsets' : `invalid data_offsets ${JSON.stringify(offsets)}`}`);
    }
    return { name: k, begin: offsets[0], end: offsets[1] };
  }).sort((a, b) => a.begin - b.begin || a.end - b.end);
  let end = 0;
  for (const span of spans) {
    if (span.begin !== end) {
      fail('E_FORMAT', `${what} is corrupt: tensor ${JSON.stringify(span.name)} begins at data byte ${span.begin}, ` +
        `where the tensors before it end at ${end} (safetensors packs tensors without gaps or overlaps)`);
    }
    end = span.end;
  }
  return end;
}

export function loadSafetensors(source, options, name) {
  const what = name || 'the safetensors file';
  const b = source.read(0, 8);
  const hlen = (b[0] | (b[1] << 8) | (b[2] << 16)) + b[3] * 2 ** 24 + b[4] * 2 ** 32;
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
  const md = header.__metadata__ ?? {};
  if (md?.tokens !== undefined && typeof md.tokens !== 'string') {
    fail('E_INPUT', `${what}: __metadata__.tokens must be a JSON string (write it with json.dumps(tokens))`);
  }
  if (typeof md !== 'object' || Array.isArray(md) || Object.values(md).some((v) => typeof v !== 'string')) {
    fail('E_FORMAT', `${what}: the safetensors __metadata__ must be an object of strings`);
  }
  const names = Object.keys(header).filter((k) => k !== '__metadata__');
  const dataEnd = checkLayout(header, names, what);
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
  if (!Array.isArray(t.shape)) fail('E_FORMAT', `${tWhat} has no valid shape`);
  const dtype = dtypeFromSafetensors(t.dtype);
  if (!dtype) {
    const found = t.dtype === undefined ? 'no dtype' : `dtype ${JSON.stringify(t.dtype)}`;
    fail('E_FORMAT', `${tWhat} has ${found}; attention weights must be F16, BF16, F32 or F64`);
  }
  const count = shapeCount(t.shape, tWhat);
  const [begin, end] = t.data_offsets;
  const dataStart = 8 + hlen;
  let tokens;
  if (md.tokens !== undefined) {
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
      if (dataStart + dataEnd !== source.size) {
        const gap = source.size - dataStart - dataEnd;
        fail('E_FORMAT', gap < 0
          ? `${what} is truncated: its last tensor ends at byte ${dataStart + dataEnd}, the file has ${source.size}`
          : `${what} is corrupt: ${gap} bytes follow its last tensor's data, where a safetensors file ends`);
      }
    },
  });
}
