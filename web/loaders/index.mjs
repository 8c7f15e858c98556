// loadAttention: detects the format from the bytes (the file name is only a hint for messages),
// then dispatches to the reader of that format. See docs/FORMATS.md for the formats and
// web/loaders/data.mjs for when values are validated.

import { Gunzip } from '../vendor/fflate.mjs';
import { AttnflowError, fail, shown } from '../errors.mjs';
import { checkKnownOptions } from '../options.mjs';
import { parseJsonText, fromJsonValue } from './json.mjs';
import { isNpy, loadNpy } from './npy.mjs';
import { loadNpz } from './npz.mjs';
import { isTorchZip, loadTorch } from './torch.mjs';
import { listZip } from './zip.mjs';
import { crc32, crcCheckedSource, crcText } from './crc32.mjs';
import { isSafetensors, loadSafetensors } from './safetensors.mjs';
import { blobSource, bytesSource, canReadBlobsInPlace, inflatingSource, joinChunks } from './source.mjs';
import { withArticle } from './data.mjs';

export { MAX_WASM_BYTES, ROW_SUM_TOLERANCE } from './data.mjs';

/**
 * The container format of some bytes: 'gzip' | 'npz' (any zip: .npz or torch.save) | 'npy' |
 * 'safetensors' | 'json' | 'pickle' | null.
 * @param {Uint8Array} b
 */
/** Where JSON text would start in b: after a UTF-8 byte-order mark and white space. */
function textStart(b) {
  let k = b[0] === 0xef && b[1] === 0xbb && b[2] === 0xbf ? 3 : 0;
  while (k < b.length && (b[k] === 0x20 || b[k] === 0x0a || b[k] === 0x0d || b[k] === 0x09)) k++;
  return k;
}

export function detectFormat(b) {
  if (b.length >= 2 && b[0] === 0x1f && b[1] === 0x8b) return 'gzip';
  if (b.length >= 4 && b[0] === 0x50 && b[1] === 0x4b && (b[2] === 3 || b[2] === 5) && (b[3] === 4 || b[3] === 6)) return 'npz';
  if (isNpy(b)) return 'npy';
  if (isSafetensors(b)) return 'safetensors';
  if (b.length >= 2 && b[0] === 0x80 && b[1] >= 2 && b[1] <= 5) return 'pickle';  // PROTO opcode
  if ((b[0] === 0xff && b[1] === 0xfe) || (b[0] === 0xfe && b[1] === 0xff)) return 'json'; // UTF-16 BOM
  const k = textStart(b);
  if (k < b.length && (b[k] === 0x7b || b[k] === 0x5b)) return 'json';
  return null;
}

function checkOptions(options) {
  if (options === undefined || options === null) return {};
  if (typeof options !== 'object') fail('E_OPTION', 'options must be an object');
  checkKnownOptions(options, ['name', 'batch', 'tokens'], 'loadAttention');
  const { name, batch, tokens } = options;
  if (name !== undefined && typeof name !== 'string') fail('E_OPTION', 'options.name must be a string');
  if (batch !== undefined && batch !== null && !(Number.isInteger(batch) && batch >= 0)) {
    fail('E_OPTION', `options.batch must be a non-negative integer, got ${shown(batch)}`);
  }
  if (tokens !== undefined && tokens !== null) {
    if (!Array.isArray(tokens)) fail('E_OPTION', 'options.tokens must be an array of strings');
    tokens.forEach((t, i) => { if (typeof t !== 'string') fail('E_OPTION', `options.tokens[${i}] is not a string`); });
  }
  return { name, batch: batch ?? undefined, tokens: tokens ?? undefined };
}

/**
 * The longest JSON text read, in bytes: V8's longest string (2^29 - 24 UTF-16 units; a UTF-8
 * byte is at most one unit). TextDecoder is not asked to build a longer one: beyond 2 GB it kills
 * the process instead of throwing.
 */
const MAX_JSON_BYTES = 2 ** 29 - 24;

function jsonTooLarge(name, size) {
  fail('E_TOO_LARGE', `${name ? `${name}: ` : ''}the JSON text (${size}) is larger than a JavaScript string can ` +
    'hold (about 512 MB); export .npy, .npz or safetensors instead');
}

const megabytes = (bytes) => `${(bytes / 2 ** 20).toFixed(0)} MB`;

const hex = (b) => Array.from(b.subarray(0, 8), (x) => x.toString(16).padStart(2, '0')).join(' ');

function decodeText(b, name) {
  if (b.length > MAX_JSON_BYTES) jsonTooLarge(name, megabytes(b.length));
  let enc = 'utf-8';
  if (b[0] === 0xff && b[1] === 0xfe) enc = 'utf-16le'; // e.g. PowerShell's `>` redirection
  else if (b[0] === 0xfe && b[1] === 0xff) enc = 'utf-16be';
  try {
    return new TextDecoder(enc, { fatal: true }).decode(b); // strips the BOM
  } catch (e) {
    if (e instanceof RangeError || /string longer|too large|Invalid string length/i.test(e.message)) {
      jsonTooLarge(name, megabytes(b.length));
    }
    fail('E_FORMAT', `${name ? `${name}: ` : ''}the JSON text is not valid ${enc.toUpperCase()}`);
  }
}

/** The first bytes read to tell the formats apart (JSON may start after much white space). */
const SNIFF_BYTES = 4096;

/**
 * The whole content of gzip data, inflated a chunk at a time, refused as soon as it passes what
 * a JSON text may hold: its size trailer counts modulo 4 GiB, so it cannot bound the output. A
 * trailer of more than that limit is refused before inflating (each worker of a pool inflated
 * such a file to the limit: ~0.7 GB of memory each).
 * `mismatch(computed)` throws when the content's CRC-32 is not the trailer's `expected`.
 */
function gunzipJson(source, name, gunzip, corrupt, expected, mismatch, isize) {
  if (isize > MAX_JSON_BYTES) jsonTooLarge(name, `${megabytes(isize)} once inflated, says the gzip trailer`);
  const chunks = [];
  let produced = 0;
  let crc = 0;
  const stream = gunzip();
  stream.ondata = (chunk) => {
    produced += chunk.length;
    if (produced > MAX_JSON_BYTES) jsonTooLarge(name, `more than ${megabytes(MAX_JSON_BYTES)} once inflated`);
    crc = crc32(crc, chunk);
    chunks.push(chunk);
  };
  for (let at = 0; at < source.size;) {
    const next = source.read(at, 1 << 16);
    at += next.length;
    try {
      stream.push(next, at >= source.size);
    } catch (e) {
      if (e instanceof AttnflowError) throw e;
      corrupt(e.message);
    }
  }
  if (crc !== expected) mismatch(crc);
  return joinChunks(chunks, produced);
}

/**
 * gzip: a binary tensor inside (.npy.gz) is inflated as its layers are read; JSON, which needs
 * its whole text, is inflated at once. Either way the content is checked against the trailer's
 * CRC-32, as Python's gzip module does.
 */
function loadGzip(source, opts, gzDepth) {
  const pre = opts.name ? `${opts.name}: ` : '';
  const corrupt = (why) => fail('E_FORMAT', `${pre}the gzip data is truncated or corrupt (${why})`);
  if (gzDepth > 0) fail('E_FORMAT', `${pre}gzip inside gzip is not read`);
  if (source.size < 18) fail('E_FORMAT', `${pre}the gzip data is truncated (${source.size} bytes)`);
  // The trailer: the content's CRC-32, then ISIZE, its size. A truncated file makes it garbage,
  // and deflate cannot expand more than ~1032:1, so refuse an impossible size before allocating.
  const tail = source.read(source.size - 16, 16);
  const t = tail.subarray(8);
  const u32 = (p) => (t[p] | (t[p + 1] << 8) | (t[p + 2] << 16)) + t[p + 3] * 2 ** 24;
  const expected = u32(0), isize = u32(4);
  // Python reads the two layouts below too, but only the last member's trailer can be found
  // without inflating everything, and the binary path needs the content's size up front to read
  // it a layer at a time: a file that needs a second full pass is refused with what to do.
  const recompress = 'which attnflow does not read: decompress it and compress it again as one ' +
    '(gunzip -c FILE | gzip > NEW.gz)';
  // 16 zero bytes: a trailer of zeros alone is also a valid gzip of an empty file.
  if (source.size > 64 && tail.every((byte) => byte === 0)) {
    fail('E_FORMAT', `${pre}the gzip data ends in zero bytes (padding after its end?), ${recompress}`);
  }
  if (isize > source.size * 1032 + 1024) corrupt('its size trailer is impossible');
  const gunzip = () => {
    const stream = new Gunzip();
    stream.onmember = () => fail('E_FORMAT', `${pre}the gzip data holds several members (gzip files ` +
      `joined end to end), ${recompress}`);
    return stream;
  };
  const mismatch = (computed) => corrupt(`its content has the CRC-32 ${crcText(computed)}, the trailer records ${crcText(expected)}`);
  const inner = crcCheckedSource(inflatingSource(source, isize, gunzip, corrupt), expected, mismatch);
  const format = detectFormat(inner.read(0, SNIFF_BYTES));
  if (format === 'npy' || format === 'npz' || format === 'safetensors') return loadSource(inner, opts, gzDepth + 1);
  const json = gunzipJson(source, opts.name, gunzip, corrupt, expected, mismatch, isize);
  return loadSource(bytesSource(json), opts, gzDepth + 1);
}

/**
 * Loads from a ByteSource, synchronously. The binary formats keep the source and read a layer at
 * a time from it (through gzip too); JSON is read whole.
 */
function loadSource(source, opts, gzDepth) {
  const name = opts.name;
  if (source.size === 0) fail('E_INPUT', `${name ? `${name}: ` : ''}empty input (0 bytes)`);
  let b = source.read(0, SNIFF_BYTES);
  let format = detectFormat(b);
  if ((format === 'json' || (format === null && textStart(b) === b.length)) && b.length < source.size) {
    if (source.size > MAX_JSON_BYTES) jsonTooLarge(name, megabytes(source.size));
    b = source.read(0, source.size);
    format = detectFormat(b);
  }
  switch (format) {
    case 'gzip': return loadGzip(source, opts, gzDepth);
    case 'npz': {
      const entries = listZip(source, name || 'the .npz file');
      return isTorchZip(entries) ? loadTorch(source, entries, opts, name) : loadNpz(source, entries, opts, name);
    }
    case 'pickle':
      return fail('E_FORMAT', `${name ? `${name}: ` : ''}a Python pickle (pickle.dump, or torch.save with ` +
        '_use_new_zipfile_serialization=False), which attnflow does not read: save it with torch.save in its ' +
        'default (zip) format, or as .npy, .npz or safetensors');
    case 'npy': return loadNpy(source, opts, name);
    case 'safetensors': return loadSafetensors(source, opts, name);
    case 'json': return fromJsonValue(parseJsonText(decodeText(b, name), name), opts);
    default: return notAFormat(b, name);
  }
}

function notAFormat(b, name) {
  const hint = name && /\.(npy|npz|safetensors|gz|pt|pth|bin)$/i.test(name)
    ? ` (the name says ${name.slice(name.lastIndexOf('.'))}, but the content does not match: truncated or renamed?)` : '';
  fail('E_FORMAT', `${name ? `${name}: ` : ''}not a format attnflow reads${hint}: expected JSON, .npy, .npz, ` +
    `safetensors, PyTorch .pt or gzip of these; the data starts with bytes ${hex(b)}`);
}

/** The most a stream may give: the longest Uint8Array that Node allocates. */
const MAX_STREAM_BYTES = 2 ** 32 - 1;

/**
 * Collects the bytes of a stream (stdin, a pipe, a device) for loadAttention, refusing it as soon
 * as its content allows: a stream has no size to check up front, and /dev/zero never ends (it used
 * to be read until memory ran out). Unknown content is refused from its first bytes, JSON once it
 * passes what a string can hold, anything else past 4 GB.
 * @param {string} name for messages
 */
export function streamCollector(name) {
  const chunks = [];
  let total = 0;
  let limit = null;  // decided from the first bytes
  const decide = (first) => {
    const format = detectFormat(first);
    if (format === null && textStart(first) < first.length) notAFormat(first, name);
    if (format === 'pickle') loadSource(bytesSource(first), { name }, 0);  // refused with its own message
    limit = format === null || format === 'json' ? MAX_JSON_BYTES : MAX_STREAM_BYTES;
  };
  return {
    /** @param {Uint8Array} chunk */
    add(chunk) {
      chunks.push(chunk);
      total += chunk.length;
      if (limit === null && total >= SNIFF_BYTES) decide(joinChunks(chunks, total).subarray(0, SNIFF_BYTES));
      if (limit === MAX_JSON_BYTES && total > limit) jsonTooLarge(name, `more than ${megabytes(limit)}`);
      if (total > MAX_STREAM_BYTES) {
        fail('E_TOO_LARGE', `${name}: more than 4 GB from a stream, more than attnflow holds in memory: ` +
          'pass the file by its path, which is read a layer at a time');
      }
    },
    /** Everything added, in one array. */
    bytes: () => joinChunks(chunks, total),
  };
}

const loadBytes = (bytes, opts) => loadSource(bytesSource(bytes), opts, 0);

/**
 * loadAttention from a ByteSource (./source.mjs), e.g. a file on disk (./file.mjs): a binary
 * tensor is then read a layer at a time, never whole. The source must stay readable while the
 * data's layers are read.
 */
export function loadAttentionSource(source, options) {
  return loadSource(source, checkOptions(options), 0);
}

/**
 * Synchronous loadAttention for inputs already in memory (everything but Blob/File).
 * @param {string|ArrayBuffer|Uint8Array|object} input
 * @param {import('../index.d.ts').LoadOptions} [options]
 */
export function loadAttentionSync(input, options) {
  const opts = checkOptions(options);
  if (input === null || input === undefined) fail('E_INPUT', 'empty input (null or undefined)');
  if (typeof input === 'string') return fromJsonValue(parseJsonText(input, opts.name), opts);
  if (input instanceof ArrayBuffer || (typeof SharedArrayBuffer !== 'undefined' && input instanceof SharedArrayBuffer)) {
    return loadBytes(new Uint8Array(input), opts);
  }
  if (input instanceof Uint8Array) return loadBytes(input, opts);
  if (input instanceof DataView) return loadBytes(new Uint8Array(input.buffer, input.byteOffset, input.byteLength), opts);
  if (ArrayBuffer.isView(input)) {
    fail('E_INPUT', `a ${input.constructor.name} was given; pass the file's bytes (Uint8Array or ArrayBuffer) ` +
      'or an object {tokens, attentions}');
  }
  if (typeof input !== 'object') fail('E_INPUT', `cannot load ${withArticle(typeof input)}; pass JSON text, bytes, a Blob or an object`);
  return fromJsonValue(input, opts);
}

/**
 * Reads attention data (see web/index.d.ts).
 * @param {string|ArrayBuffer|Uint8Array|Blob|object} input
 * @param {import('../index.d.ts').LoadOptions} [options]
 * @returns {Promise<import('../index.d.ts').AttentionData>}
 */
export async function loadAttention(input, options) {
  if (input && typeof input === 'object' && typeof input.arrayBuffer === 'function' && typeof input.size === 'number') {
    // Blob or File: its name is the hint unless one was given. In a worker it is read a slice at
    // a time (a binary tensor a layer at a time, as the heads are fused); elsewhere, whole.
    const opts = { ...(options || {}) };
    if (opts.name === undefined && typeof input.name === 'string' && input.name) opts.name = input.name;
    if (canReadBlobsInPlace()) return loadSource(blobSource(input, opts.name), checkOptions(opts), 0);
    return loadAttentionSync(new Uint8Array(await input.arrayBuffer()), opts);
  }
  return loadAttentionSync(input, options);
}
