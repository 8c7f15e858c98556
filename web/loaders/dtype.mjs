// Element types of binary tensors and their conversion to JS typed arrays, one layer at a time.
// Little-endian float32/float64 at an aligned offset are returned as zero-copy views; float16,
// bfloat16, big-endian or unaligned data are converted into a fresh array of that layer only.

import { fail } from '../errors.mjs';

/** @typedef {{kind: 'f2'|'f4'|'f8'|'bf16', le: boolean, size: number, label: string}} Dtype */

/** numpy descr ('<f4', '>f8', '<f2', '=f4') -> Dtype, or null when it is not a float type. */
export function dtypeFromNumpy(descr) {
  const m = /^([<>=|])f([248])$/.exec(descr);
  if (!m) return null;
  const size = Number(m[2]);
  return { kind: `f${size}`, le: m[1] !== '>', size, label: `float${size * 8}` };
}

/** safetensors dtype ('F16', 'F32', 'F64', 'BF16') -> Dtype, or null. Always little-endian. */
export function dtypeFromSafetensors(name) {
  switch (name) {
    case 'F16': return { kind: 'f2', le: true, size: 2, label: 'float16' };
    case 'BF16': return { kind: 'bf16', le: true, size: 2, label: 'bfloat16' };
    case 'F32': return { kind: 'f4', le: true, size: 4, label: 'float32' };
    case 'F64': return { kind: 'f8', le: true, size: 8, label: 'float64' };
    default: return null;
  }
}

let F16_TABLE = null; // all 65536 half values as float32, built on first use (256 KB)
function f16Table() {
  if (F16_TABLE) return F16_TABLE;
  const t = new Float32Array(65536);
  for (let b = 0; b < 65536; b++) {
    const s = b & 0x8000 ? -1 : 1, e = (b >> 10) & 0x1f, f = b & 0x3ff;
    if (e === 0) t[b] = s * f * 2 ** -24;
    else if (e === 31) t[b] = f ? NaN : s * Infinity;
    else t[b] = s * (1 + f / 1024) * 2 ** (e - 15);
  }
  F16_TABLE = t;
  return t;
}

/** Decodes one IEEE half (for tests and small reads). */
export function halfToFloat(bits) { return f16Table()[bits & 0xffff]; }

/**
 * `count` elements of `dtype` starting at byte `offset` of `bytes`.
 * @param {Uint8Array} bytes @param {number} offset @param {number} count @param {Dtype} dtype
 * @returns {Float32Array|Float64Array}
 */
export function readFloats(bytes, offset, count, dtype) {
  const abs = bytes.byteOffset + offset;
  const nat = dtype.le; // every platform JS runs on is little-endian in practice
  if (dtype.kind === 'f4' || dtype.kind === 'f8') {
    const T = dtype.kind === 'f4' ? Float32Array : Float64Array;
    if (nat && abs % dtype.size === 0) return new T(bytes.buffer, abs, count);
    const out = new T(count);
    const dv = new DataView(bytes.buffer, abs, count * dtype.size);
    if (dtype.kind === 'f4') for (let k = 0; k < count; k++) out[k] = dv.getFloat32(k * 4, dtype.le);
    else for (let k = 0; k < count; k++) out[k] = dv.getFloat64(k * 8, dtype.le);
    return out;
  }
  const out = new Float32Array(count);
  if (dtype.kind === 'f2') {
    const t = f16Table();
    if (nat && abs % 2 === 0) {
      const u = new Uint16Array(bytes.buffer, abs, count);
      for (let k = 0; k < count; k++) out[k] = t[u[k]];
    } else {
      const lo = dtype.le ? 0 : 1, hi = 1 - lo;
      for (let k = 0, p = offset; k < count; k++, p += 2) out[k] = t[bytes[p + lo] | (bytes[p + hi] << 8)];
    }
    return out;
  }
  if (dtype.kind === 'bf16') {
    // bfloat16 is the top half of a float32.
    const u32 = new Uint32Array(out.buffer);
    for (let k = 0, p = offset; k < count; k++, p += 2) u32[k] = ((bytes[p] | (bytes[p + 1] << 8)) << 16) >>> 0;
    return out;
  }
  return fail('E_FORMAT', `unsupported element type ${dtype.label}`);
}
