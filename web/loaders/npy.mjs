// NumPy .npy files (format versions 1.0, 2.0, 3.0): the header is a Python dict literal such as
// {'descr': '<f4', 'fortran_order': False, 'shape': (12, 12, 128, 128), }.

import { fail } from '../errors.mjs';
import { dtypeFromNumpy } from './dtype.mjs';
import { fromTensor, shapeCount, shapeStr } from './tensor.mjs';

export const NPY_MAGIC = [0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59]; // \x93NUMPY

export function isNpy(b) {
  return b.length >= 6 && NPY_MAGIC.every((c, i) => b[i] === c);
}

/** Where the header text of a .npy file lies, from its first 12 bytes (or all, if fewer). */
function headerSpan(bytes, what) {
  if (!isNpy(bytes)) fail('E_FORMAT', `${what} is not a .npy file (no \\x93NUMPY magic)`);
  if (bytes.length < 10) fail('E_FORMAT', `${what} is truncated: it ends inside the .npy header`);
  const major = bytes[6];
  if (major === 1) return { major, start: 10, hlen: bytes[8] | (bytes[9] << 8) };
  if (major === 2 || major === 3) {
    if (bytes.length < 12) fail('E_FORMAT', `${what} is truncated: it ends inside the .npy header`);
    return { major, start: 12, hlen: (bytes[8] | (bytes[9] << 8) | (bytes[10] << 16)) + bytes[11] * 2 ** 24 };
  }
  return fail('E_FORMAT', `${what}: unsupported .npy format version ${major}.${bytes[7]}`);
}

function checkHeaderFits(need, have, what) {
  if (need > have) fail('E_FORMAT', `${what} is truncated: the .npy header needs ${need} bytes, the file has ${have}`);
}

/**
 * Parses the header of a .npy file whose first bytes are `bytes` (the whole file, or at least
 * its header).
 * @param {Uint8Array} bytes @param {string} what name in messages
 * @returns {{descr: string, fortran: boolean, shape: number[], dataOffset: number}}
 */
export function parseNpyHeader(bytes, what = 'the .npy file') {
  const { major, start, hlen } = headerSpan(bytes, what);
  checkHeaderFits(start + hlen, bytes.length, what);
  const header = new TextDecoder(major === 3 ? 'utf-8' : 'latin1').decode(bytes.subarray(start, start + hlen));
  // numpy's own reader keeps the last of repeated keys, this one would take the first: refused, so
  // that the same bytes never read as two different tensors.
  for (const key of ['descr', 'fortran_order', 'shape']) {
    if ((header.match(new RegExp(`['"]${key}['"]\\s*:`, 'g')) ?? []).length > 1) {
      fail('E_FORMAT', `${what}: the .npy header gives '${key}' more than once: ${JSON.stringify(header.slice(0, 120))}`);
    }
  }
  const descr = /['"]descr['"]\s*:\s*['"]([^'"]*)['"]/.exec(header);
  const fortran = /['"]fortran_order['"]\s*:\s*(True|False)/.exec(header);
  const shape = /['"]shape['"]\s*:\s*\(([^)]*)\)/.exec(header);
  if (!descr || !fortran || !shape) {
    const why = /['"]descr['"]\s*:\s*\[/.test(header) ? ' (a structured dtype, which attnflow does not read)' : '';
    fail('E_FORMAT', `${what}: cannot read the .npy header${why}: ${JSON.stringify(header.slice(0, 120))}`);
  }
  const dims = shape[1].split(',').map((s) => s.trim()).filter((s) => s !== '');
  if (!dims.every((s) => /^[0-9]+L?$/.test(s))) fail('E_FORMAT', `${what}: invalid shape (${shape[1]}) in the .npy header`);
  return {
    descr: descr[1],
    fortran: fortran[1] === 'True',
    shape: dims.map((s) => Number.parseInt(s, 10)),
    dataOffset: start + hlen,
  };
}

/**
 * Checks that a parsed .npy header describes a C-ordered float array; returns its dtype.
 */
export function checkFloatNpy(h, what) {
  const dtype = dtypeFromNumpy(h.descr);
  if (!dtype) {
    fail('E_FORMAT', `${what} has dtype '${h.descr}'; attention weights must be float16, float32 or float64`);
  }
  if (h.fortran) {
    fail('E_FORMAT', `${what} is in Fortran order (fortran_order: True); save a C-ordered array ` +
      '(np.save(f, np.ascontiguousarray(a)))');
  }
  shapeCount(h.shape, what);
  return dtype;
}

/** The header of the .npy file in `source`, reading only the header's bytes. */
export function readNpyHeader(source, what) {
  const { start, hlen } = headerSpan(source.read(0, 12), what);
  checkHeaderFits(start + hlen, source.size, what);
  return parseNpyHeader(source.read(0, start + hlen), what);
}

/** Checks that the data after the header is exactly what the shape and dtype need. */
export function checkNpyBytes(h, dtype, fileSize, what) {
  const need = shapeCount(h.shape, what) * dtype.size, have = fileSize - h.dataOffset;
  if (have < need) {
    fail('E_FORMAT', `${what} is truncated: shape ${shapeStr(h.shape)} ${dtype.label} needs ${need} bytes of data, ` +
      `only ${have} follow the header`);
  }
  if (have > need) {
    fail('E_FORMAT', `${what} does not match its header: shape ${shapeStr(h.shape)} ${dtype.label} needs ${need} ` +
      `bytes of data, but ${have} follow the header`);
  }
}

/** Reads a .npy file: its header now, its layers when asked for. */
export function loadNpy(source, options, name) {
  const what = name || 'the .npy file';
  const h = readNpyHeader(source, what);
  const dtype = checkFloatNpy(h, what);
  return fromTensor({
    format: 'npy', what: name ? `${name} (.npy)` : 'the .npy array', source, offset: h.dataOffset,
    shape: h.shape, dtype, tokens: undefined, options, checkBytes: () => checkNpyBytes(h, dtype, source.size, what),
  });
}

/**
 * Decodes a numpy string array ('<U' UTF-32, '|S' bytes) into JS strings; used for npz tokens.
 * A 0-d string array holding a JSON list (np.savez(f, tokens=json.dumps(tokens))) is also read.
 * @returns {string[]}
 */
export function npyStrings(bytes, what) {
  const h = parseNpyHeader(bytes, what);
  const m = /^([<>|=])([USO])([0-9]*)$/.exec(h.descr);
  if (!m) fail('E_INPUT', `${what} has dtype '${h.descr}'; tokens must be a string array (numpy dtype '<U')`);
  if (m[2] === 'O') {
    fail('E_INPUT', `${what} is an object array (pickled), which attnflow does not read; save the tokens ` +
      'with np.array(tokens, dtype=str)');
  }
  if (h.shape.length > 1) fail('E_INPUT', `${what} has shape ${shapeStr(h.shape)}; tokens must be 1-D`);
  const width = Number(m[3] || 0);
  const unit = m[2] === 'U' ? 4 : 1;
  const count = shapeCount(h.shape, what);
  const need = count * width * unit;
  if (bytes.length - h.dataOffset !== need) fail('E_FORMAT', `${what} is truncated or does not match its header`);
  const out = new Array(count);
  const dv = new DataView(bytes.buffer, bytes.byteOffset + h.dataOffset, need);
  const le = m[1] !== '>';
  const utf8 = new TextDecoder('utf-8');
  // numpy pads each string with NULs and strips only the trailing ones: a NUL inside stays.
  for (let k = 0; k < count; k++) {
    const base = k * width * unit;
    if (unit === 4) {
      let end = width;
      while (end > 0 && dv.getUint32(base + (end - 1) * 4, le) === 0) end--;
      let s = '';
      for (let c = 0; c < end; c++) {
        const cp = dv.getUint32(base + c * 4, le);
        if (cp > 0x10ffff) fail('E_INPUT', `${what}[${k}] holds an invalid code point ${cp}`);
        s += String.fromCodePoint(cp);
      }
      out[k] = s;
    } else {
      let end = width;
      while (end > 0 && bytes[h.dataOffset + base + end - 1] === 0) end--;
      out[k] = utf8.decode(bytes.subarray(h.dataOffset + base, h.dataOffset + base + end));
    }
  }
  if (h.shape.length === 0) {
    let v;
    try { v = JSON.parse(out[0]); } catch { v = undefined; }
    if (!Array.isArray(v)) fail('E_INPUT', `${what} is a single string; expected an array of tokens or a JSON list of strings`);
    return v;
  }
  return out;
}
