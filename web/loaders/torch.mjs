// PyTorch files (torch.save, the zip format of PyTorch >= 1.6): what `torch.save(outputs.attentions,
// f)` writes for a Hugging Face model (a tuple of L per-layer tensors [B, H, n, n]), one stacked
// tensor ([L, H, n, n], [L, n, n] or [L, B, H, n, n]), or a dict with "attentions" (either of
// these) and optional "tokens" (a list of strings).
//
// The pickle (`<archive>/data.pkl`) is read by a data-only interpreter: it builds numbers,
// strings, lists, tuples and dicts, and knows only the few PyTorch names a saved tensor needs.
// Any other Python name is refused, so nothing in the file is ever run (torch.load would run it:
// a pickle may call any function). A tensor's values stay in their zip entry
// (`<archive>/data/<key>`, stored uncompressed) and are read a layer at a time, like a .npy.

import { fail } from '../errors.mjs';
import { readEntry, entrySource } from './zip.mjs';
import { fromTensor, shapeCount, shapeStr } from './tensor.mjs';
import { withArticle } from './data.mjs';

// The pickle of a torch.save zip: `<archive>/data.pkl`.
const DATA_PKL = /^[^/]+\/data\.pkl$/;

/** Whether zip entries are those of torch.save. */
export function isTorchZip(entries) {
  return entries.some((e) => DATA_PKL.test(e.name));
}

/** A data.pkl larger than this holds more than attentions (their values are in other entries). */
const MAX_PICKLE_BYTES = 64 << 20;

// Element types of PyTorch's storage classes, by name; the others are named in the error.
const STORAGE_DTYPES = {
  HalfStorage: { kind: 'f2', size: 2, label: 'float16' },
  BFloat16Storage: { kind: 'bf16', size: 2, label: 'bfloat16' },
  FloatStorage: { kind: 'f4', size: 4, label: 'float32' },
  DoubleStorage: { kind: 'f8', size: 8, label: 'float64' },
};
const OTHER_STORAGES = {
  ByteStorage: 'uint8', CharStorage: 'int8', ShortStorage: 'int16', IntStorage: 'int32', LongStorage: 'int64',
  BoolStorage: 'bool', ComplexFloatStorage: 'complex64', ComplexDoubleStorage: 'complex128',
};

class StorageType { constructor(name) { this.name = name; } }
class Storage { constructor(type, key, numel) { this.type = type; this.key = key; this.numel = numel; } }
class Tensor {
  constructor(storage, offset, shape, stride) {
    this.storage = storage; this.offset = offset; this.shape = shape; this.stride = stride;
  }
}
/** A callable Python name the interpreter knows: `call(args)` builds the value. */
class Callable { constructor(name, call) { this.name = name; this.call = call; } }

const isTensor = (x) => x instanceof Tensor;
const isSequence = (x) => Array.isArray(x);
const isDict = (x) => x instanceof Map;

function rebuildTensor(name) {
  return new Callable(name, (args) => {
    const [storage, offset, shape, stride] = args;
    const ints = (x) => isSequence(x) && x.every((v) => Number.isSafeInteger(v) && v >= 0);
    if (!(storage instanceof Storage) || !Number.isSafeInteger(offset) || offset < 0 || !ints(shape) || !ints(stride) ||
        shape.length !== stride.length) {
      return undefined;  // REDUCE reports a malformed tensor
    }
    return new Tensor(storage, offset, shape, stride);
  });
}

/** The Python names the interpreter resolves; `module.name` -> value. */
function knownGlobal(module, name) {
  const full = `${module}.${name}`;
  if (full === 'torch._utils._rebuild_tensor_v2' || full === 'torch._utils._rebuild_tensor') return rebuildTensor(full);
  if (full === 'collections.OrderedDict') return new Callable(full, () => new Map());
  if (module === 'torch' && (name in STORAGE_DTYPES || name in OTHER_STORAGES)) return new StorageType(name);
  return null;
}

/**
 * Runs the pickle `b` (protocols 2-5, as torch.save writes them) and returns its value: numbers,
 * strings, booleans, null, arrays (lists and tuples), Maps (dicts), Tensors.
 */
function unpickle(b, what) {
  const bad = (why) => fail('E_FORMAT', `${what}: the pickle (data.pkl) ${why}`);
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const dec = new TextDecoder('utf-8');
  const stack = [];
  const marks = [];
  const memo = new Map();
  let p = 0;
  const need = (count) => { if (p + count > b.length) bad('ends early (truncated?)'); };
  const u8 = () => { need(1); return b[p++]; };
  const u32 = () => { need(4); const v = dv.getUint32(p, true); p += 4; return v; };
  const u64 = () => {
    need(8);
    const v = dv.getUint32(p, true) + dv.getUint32(p + 4, true) * 2 ** 32;
    p += 8;
    if (!Number.isSafeInteger(v)) bad('has an impossible length');
    return v;
  };
  const text = (count) => { need(count); const s = dec.decode(b.subarray(p, p + count)); p += count; return s; };
  const line = () => {
    const end = b.indexOf(0x0a, p);
    if (end < 0) bad('ends early (truncated?)');
    const s = dec.decode(b.subarray(p, end));
    p = end + 1;
    return s;
  };
  const pop = () => { if (stack.length === 0) bad('is malformed (empty stack)'); return stack.pop(); };
  const top = () => { if (stack.length === 0) bad('is malformed (empty stack)'); return stack[stack.length - 1]; };
  const popMark = () => {
    if (marks.length === 0) bad('is malformed (no mark)');
    return stack.splice(marks.pop());
  };
  const global = (module, name) => {
    const value = knownGlobal(module, name);
    if (value) return value;
    const hint = module.startsWith('transformers')
      ? ': save outputs.attentions (a tuple of tensors), not the whole model output'
      : ': save a tensor, a tuple or list of per-layer tensors, or a dict of these and "tokens"';
    return fail('E_INPUT', `${what} holds a Python object of type ${module}.${name}, which attnflow does not ` +
      `read (it reads data, never runs code from a file)${hint}`);
  };
  const setItems = (dict, items) => {
    if (!isDict(dict)) bad('is malformed (items set on a non-dict)');
    for (let k = 0; k + 1 < items.length; k += 2) dict.set(items[k], items[k + 1]);
  };
  for (;;) {
    const op = u8();
    switch (op) {
      case 0x80: u8(); break;                                  // PROTO
      case 0x95: u64(); break;                                 // FRAME
      case 0x2e: return pop();                                 // STOP
      case 0x28: marks.push(stack.length); break;              // MARK
      case 0x29: stack.push([]); break;                        // EMPTY_TUPLE
      case 0x74: stack.push(popMark()); break;                 // TUPLE
      case 0x85: stack.push([pop()]); break;                   // TUPLE1
      case 0x86: { const y = pop(); stack.push([pop(), y]); break; }  // TUPLE2
      case 0x87: { const z = pop(); const y = pop(); stack.push([pop(), y, z]); break; }  // TUPLE3
      case 0x5d: stack.push([]); break;                        // EMPTY_LIST
      case 0x6c: stack.push(popMark()); break;                 // LIST
      case 0x61: { const x = pop(); const list = top(); if (!isSequence(list)) bad('is malformed'); list.push(x); break; }  // APPEND
      case 0x65: { const xs = popMark(); const list = top(); if (!isSequence(list)) bad('is malformed'); for (const x of xs) list.push(x); break; }  // APPENDS (a spread of many items overflows the stack)
      case 0x7d: stack.push(new Map()); break;                 // EMPTY_DICT
      case 0x64: { const dict = new Map(); setItems(dict, popMark()); stack.push(dict); break; }  // DICT
      case 0x73: { const v = pop(); const k = pop(); setItems(top(), [k, v]); break; }  // SETITEM
      case 0x75: { const items = popMark(); setItems(top(), items); break; }  // SETITEMS
      case 0x4e: stack.push(null); break;                      // NONE
      case 0x88: stack.push(true); break;                      // NEWTRUE
      case 0x89: stack.push(false); break;                     // NEWFALSE
      case 0x4b: stack.push(u8()); break;                      // BININT1
      case 0x4d: need(2); stack.push(dv.getUint16(p, true)); p += 2; break;  // BININT2
      case 0x4a: need(4); stack.push(dv.getInt32(p, true)); p += 4; break;   // BININT
      case 0x8a: {                                             // LONG1: little-endian two's complement
        const count = u8();
        if (count > 7) bad('has an integer too large to be a size');
        need(count);
        let v = 0;
        for (let k = count - 1; k >= 0; k--) v = v * 256 + b[p + k];
        if (count > 0 && b[p + count - 1] & 0x80) v -= 2 ** (8 * count);
        p += count;
        stack.push(v);
        break;
      }
      case 0x47: need(8); stack.push(dv.getFloat64(p, false)); p += 8; break;  // BINFLOAT
      case 0x58: stack.push(text(u32())); break;               // BINUNICODE
      case 0x8c: stack.push(text(u8())); break;                // SHORT_BINUNICODE
      case 0x8d: stack.push(text(u64())); break;               // BINUNICODE8
      case 0x43: { const count = u8(); need(count); stack.push(b.slice(p, p + count)); p += count; break; }  // SHORT_BINBYTES
      case 0x42: { const count = u32(); need(count); stack.push(b.slice(p, p + count)); p += count; break; }  // BINBYTES
      case 0x63: { const module = line(); stack.push(global(module, line())); break; }  // GLOBAL
      case 0x93: { const name = pop(); const module = pop(); stack.push(global(String(module), String(name))); break; }  // STACK_GLOBAL
      case 0x71: memo.set(u8(), top()); break;                 // BINPUT
      case 0x72: memo.set(u32(), top()); break;                // LONG_BINPUT
      case 0x94: memo.set(memo.size, top()); break;            // MEMOIZE
      case 0x68: case 0x6a: {                                  // BINGET, LONG_BINGET
        const key = op === 0x68 ? u8() : u32();
        if (!memo.has(key)) bad('is malformed (unknown memo entry)');
        stack.push(memo.get(key));
        break;
      }
      case 0x51: {                                             // BINPERSID: a storage
        const id = pop();
        if (!isSequence(id) || id[0] !== 'storage' || !(id[1] instanceof StorageType) || typeof id[2] !== 'string' ||
            !Number.isSafeInteger(id[4])) {
          bad('refers to something other than a tensor storage');
        }
        stack.push(new Storage(id[1], id[2], id[4]));
        break;
      }
      case 0x52: {                                             // REDUCE: call a known name
        const args = pop();
        const fn = pop();
        if (!(fn instanceof Callable) || !isSequence(args)) bad('is malformed (a call of something not callable)');
        const value = fn.call(args);
        if (value === undefined) bad(`has a tensor (${fn.name}) whose storage, offset, shape or strides are malformed`);
        stack.push(value);
        break;
      }
      case 0x62: pop(); break;                                 // BUILD: state of a known object (e.g. a tensor's attributes), not needed
      default:
        bad(`uses pickle opcode 0x${op.toString(16).padStart(2, '0')} at byte ${p - 1}, which attnflow does not read`);
    }
  }
}

const typeOf = (x) => {
  if (isTensor(x)) return `a tensor of shape ${shapeStr(x.shape)}`;
  if (isSequence(x)) return `a list of ${x.length}`;
  if (isDict(x)) return `a dict with keys ${[...x.keys()].map((k) => JSON.stringify(k)).join(', ') || '(none)'}`;
  if (x === null) return 'None';
  return withArticle(typeof x);
};

/** Whether the tensor's elements are laid out in C order without gaps (size-1 dims may have any stride). */
function isContiguous({ shape, stride }) {
  let expected = 1;
  for (let d = shape.length - 1; d >= 0; d--) {
    if (shape[d] !== 1 && stride[d] !== expected) return false;
    expected *= shape[d];
  }
  return true;
}

/**
 * AttentionData from the entries of a torch.save zip (see the top of this file).
 * @param {import('./source.mjs').ByteSource} source
 * @param {import('./zip.mjs').ZipEntry[]} entries
 */
export function loadTorch(source, entries, options, name) {
  const what = name || 'the PyTorch file';
  const pkl = entries.find((e) => DATA_PKL.test(e.name));
  const prefix = pkl.name.slice(0, -'data.pkl'.length);
  if (pkl.usize > MAX_PICKLE_BYTES) fail('E_INPUT', `${what}: its data.pkl is ${pkl.usize} bytes, too large for saved attentions`);
  const root = unpickle(readEntry(source, pkl, what), what);
  const order = entries.find((e) => e.name === `${prefix}byteorder`);
  const littleEndian = !order || new TextDecoder().decode(readEntry(source, order, what)).trim() !== 'big';

  let attentions = root;
  let tokens;
  if (isDict(root)) {
    if (!root.has('attentions')) {
      fail('E_INPUT', `${what} holds ${typeOf(root)}; expected a key "attentions" (and optionally "tokens")`);
    }
    attentions = root.get('attentions');
    tokens = root.get('tokens') ?? undefined;  // checked against n by fromTensor
  }
  // One tensor, or a list of per-layer tensors of one shape (stacked on a new first axis).
  let layers;
  if (isTensor(attentions)) {
    layers = null;
  } else if (isSequence(attentions) && attentions.length > 0 && attentions.every(isTensor)) {
    layers = attentions;
    const first = shapeStr(layers[0].shape);
    layers.forEach((t, l) => {
      if (shapeStr(t.shape) !== first || t.storage.type.name !== layers[0].storage.type.name) {
        fail('E_INPUT', `${what}: layer ${l + 1} is a ${storageLabel(t.storage)} tensor of shape ${shapeStr(t.shape)}, ` +
          `layer 1 a ${storageLabel(layers[0].storage)} tensor of shape ${first}; every layer must have the same shape and type`);
      }
    });
  } else {
    const tensorWhat = isDict(root) ? `"attentions" is ${typeOf(attentions)}` : `holds ${typeOf(attentions)}`;
    fail('E_INPUT', `${what}: ${tensorWhat}; expected a tensor or a list/tuple of per-layer tensors ` +
      '(torch.save(outputs.attentions, f))');
  }
  const parts = layers ?? [attentions];
  const dtype = tensorDtype(parts[0], littleEndian, what);
  const shape = layers ? [layers.length, ...layers[0].shape] : attentions.shape;
  // Layer l of the stacked tensor is part l's bytes (each in its own zip entry); fromTensor reads
  // one layer of one batch item at a time, so a read never spans two parts.
  let sources;
  const partBytes = shapeCount(parts[0].shape, what) * dtype.size;
  const stacked = {
    size: partBytes * parts.length,
    read: (offset, length) => {
      const part = Math.floor(offset / partBytes);
      return sources[part].read(offset - part * partBytes, length);
    },
  };
  return fromTensor({
    format: 'pytorch', what: layers ? `${what}: the list of layer tensors` : `${what}: the tensor`, source: stacked,
    offset: 0, shape, dtype, tokens, options,
    checkBytes: () => {
      sources = parts.map((t, l) => tensorBytes(t, source, entries, prefix, dtype, layers ? `${what}: layer ${l + 1}` : what));
    },
  });
}

function storageLabel(storage) {
  return STORAGE_DTYPES[storage.type.name]?.label ?? OTHER_STORAGES[storage.type.name];
}

function tensorDtype(tensor, littleEndian, what) {
  const d = STORAGE_DTYPES[tensor.storage.type.name];
  if (!d) {
    fail('E_INPUT', `${what}: the attentions are ${storageLabel(tensor.storage)}; they must be float16, bfloat16, ` +
      'float32 or float64');
  }
  return { ...d, le: littleEndian };
}

/** The bytes of one contiguous tensor, as a source, after checking they lie inside its storage. */
function tensorBytes(tensor, source, entries, prefix, dtype, what) {
  if (!isContiguous(tensor)) {
    fail('E_INPUT', `${what} is not contiguous (a transposed or sliced view); save tensor.contiguous() instead`);
  }
  const count = shapeCount(tensor.shape, what);
  const { storage } = tensor;
  if (tensor.offset + count > storage.numel) fail('E_FORMAT', `${what}: the tensor runs past the end of its storage`);
  const entry = entries.find((e) => e.name === `${prefix}data/${storage.key}`);
  if (!entry) fail('E_FORMAT', `${what}: the storage ${JSON.stringify(storage.key)} is missing from the file (truncated?)`);
  const data = entrySource(source, entry, what);
  if (data.size < storage.numel * dtype.size) {
    fail('E_FORMAT', `${what} is truncated: storage ${JSON.stringify(storage.key)} holds ${data.size} bytes, ` +
      `expected ${storage.numel * dtype.size}`);
  }
  const start = tensor.offset * dtype.size;
  return { size: count * dtype.size, read: (offset, length) => data.read(start + offset, length) };
}
