// File-format readers: every format gives the same numbers as expected.json (all fixture values
// are multiples of 2^-8, exact in float16/bfloat16/float32/float64/JSON), and every bad input gets
// its error code and a message that says where. Fixtures: tests/fixtures/formats/make_formats.py
// and (PyTorch files) make_torch.py.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { once } from 'node:events';
import { createGzip } from 'node:zlib';
import { gzipSync, unzipSync, zipSync } from 'fflate';
import { AttnflowError, compute, loadAttention } from 'attnflow';
import { openAttentionFile } from 'attnflow/node';
import { loadAttentionSync, loadAttentionSource, detectFormat, MAX_WASM_BYTES } from '../../web/loaders/index.mjs';
import { bytesSource } from '../../web/loaders/source.mjs';
import { listZip } from '../../web/loaders/zip.mjs';
import { crc32 } from '../../web/loaders/crc32.mjs';
import { syntheticNpy } from '../../bench/synthetic.mjs';

const DIR = new URL('../fixtures/formats/', import.meta.url);
const file = (name) => new Uint8Array(readFileSync(new URL(name, DIR)));
const exp = JSON.parse(readFileSync(new URL('expected.json', DIR), 'utf8'));
const DEFAULT_TOKENS = ['0', '1', '2', '3'];

/** Flat head-major layer l of a nested [H][n][n] (or [n][n]) array. */
const flat = (nested) => nested.flat(2);

function checkSame(d, { tokens = exp.tokens, nested = exp.attentions, fused = false, format }) {
  assert.equal(d.format, format);
  assert.deepEqual(d.tokens, tokens);
  assert.equal(d.numLayers, exp.L);
  assert.equal(d.numHeads, fused ? 0 : exp.H);
  assert.equal(d.numTokens, exp.n);
  assert.equal(d.fused, fused);
  for (let l = 0; l < exp.L; l++) {
    const a = d.layer(l);
    assert.ok(a instanceof Float32Array || a instanceof Float64Array);
    assert.deepEqual(Array.from(a), flat(nested[l]), `layer ${l + 1} of ${format}`);
  }
  assert.deepEqual(d.warnings, []);
}

/** Runs fn; asserts it throws an AttnflowError with `code` and a message matching every pattern. */
async function rejects(fn, code, ...patterns) {
  let err;
  try { await fn(); } catch (e) { err = e; }
  assert.ok(err, `expected ${code}, nothing was thrown`);
  assert.ok(err instanceof AttnflowError, `expected an AttnflowError, got ${err && err.stack}`);
  assert.equal(err.code, code, err.message);
  for (const p of patterns) {
    if (typeof p === 'string') assert.ok(err.message.includes(p), `"${err.message}" should contain "${p}"`);
    else assert.match(err.message, p);
  }
  return err;
}

const load = (input, options) => loadAttention(input, options);
const hfBatch = (b) => exp.hf.map((layer) => layer[b]);

const FORMAT_CASES = [
  ['canonical.json', { format: 'json' }],
  ['bom.json', { format: 'json' }],
  ['canonical.json.gz', { format: 'json' }],
  ['bare.json', { format: 'json', tokens: DEFAULT_TOKENS }],
  ['hf.json', { format: 'hf-json' }],
  ['fused.json', { format: 'fused-json', nested: exp.fused, fused: true }],
  ['att_f16.npy', { format: 'npy', tokens: DEFAULT_TOKENS }],
  ['att_f16_be.npy', { format: 'npy', tokens: DEFAULT_TOKENS }],
  ['att_f32.npy', { format: 'npy', tokens: DEFAULT_TOKENS }],
  ['att_f32_be.npy', { format: 'npy', tokens: DEFAULT_TOKENS }],
  ['att_f64.npy', { format: 'npy', tokens: DEFAULT_TOKENS }],
  ['att_f32.npy.gz', { format: 'npy', tokens: DEFAULT_TOKENS }],
  ['fused_f32.npy', { format: 'npy', tokens: DEFAULT_TOKENS, nested: exp.fused, fused: true }],
  ['hf_f32.npy', { format: 'npy', tokens: DEFAULT_TOKENS }],
  ['att.npz', { format: 'npz' }],
  ['att_compressed.npz', { format: 'npz' }],
  ['att_unnamed.npz', { format: 'npz', tokens: DEFAULT_TOKENS }],
  ['att_tokens_jsonstr.npz', { format: 'npz' }],
  ['att_tokens_bytes.npz', { format: 'npz' }],
  ['att_f16.safetensors', { format: 'safetensors' }],
  ['att_bf16.safetensors', { format: 'safetensors' }],
  ['att_f32.safetensors', { format: 'safetensors' }],
  ['att_f64.safetensors', { format: 'safetensors' }],
  ['hf_f32.safetensors', { format: 'safetensors' }],
  ['hf_tuple.pt', { format: 'pytorch', tokens: DEFAULT_TOKENS }],
  ['att_views.pt', { format: 'pytorch', tokens: DEFAULT_TOKENS }],
  ['att_dict_f16.pt', { format: 'pytorch' }],
  ['att_list_bf16.pt', { format: 'pytorch', tokens: DEFAULT_TOKENS }],
  ['fused_f64.pt', { format: 'pytorch', tokens: DEFAULT_TOKENS, nested: exp.fused, fused: true }],
];

test('every format yields the same numbers and tokens', async () => {
  for (const [name, want] of FORMAT_CASES) {
    const d = await load(file(name), { name });
    checkSame(d, want);
  }
  assert.deepEqual((await load(file('canonical.json'))).meta, { model: 'fixture' });
  assert.deepEqual((await load(file('att_f32.safetensors'))).meta, { model: 'fixture' });
});

test('the batch option selects the item of a [L][B][H][n][n] input', async () => {
  const formats = { json: 'hf-json', npy: 'npy', safetensors: 'safetensors', pt: 'pytorch' };
  for (const name of ['hf.json', 'hf_f32.npy', 'hf_f32.safetensors', 'hf_tuple.pt']) {
    const tokens = /\.(npy|pt)$/.test(name) ? DEFAULT_TOKENS : exp.tokens;
    const format = formats[name.split('.').pop()];
    checkSame(await load(file(name), { batch: 1 }), { format, tokens, nested: hfBatch(1) });
    await rejects(() => load(file(name), { batch: 2 }), 'E_OPTION', 'batch 2', 'B = 2');
  }
  await rejects(() => load(file('canonical.json'), { batch: 1 }), 'E_OPTION', 'no batch axis');
  await rejects(() => load(file('att_f32.npy'), { batch: 1 }), 'E_OPTION', 'no batch axis');
  await rejects(() => load(file('canonical.json'), { batch: -1 }), 'E_OPTION', 'batch');
  await rejects(() => load(file('canonical.json'), { batch: 0.5 }), 'E_OPTION', 'batch');
  // Messages about a value say which batch item it is in ("layer 2, head 1, ..." sent the user to
  // another entry of attentions[l][b][h][i][j]).
  const hf = JSON.parse(readFileSync(new URL('hf.json', DIR), 'utf8'));
  hf.attentions[1][1][0][1][2] = -0.25;
  await rejects(() => load(JSON.stringify(hf), { batch: 1 }), 'E_INPUT', 'layer 2, batch 1, head 0, row 1, column 2 is negative');
  hf.attentions[1][1][0][1] = [0.5, 0.5];
  await rejects(() => load(JSON.stringify(hf), { batch: 1 }), 'E_INPUT', 'layer 2, batch 1, head 0, row 1 has 2 values');
  const npy = file('hf_f32.npy').slice();
  const [L, B, H, n] = [2, 2, 3, 4];  // the fixture's shape
  const at = npy.length - L * B * H * n * n * 4 + 4 * ((((1 * B + 1) * H + 1) * n + 2) * n + 0);
  new DataView(npy.buffer, npy.byteOffset).setFloat32(at, Number.NaN, true);
  await rejects(async () => {
    const d = await load(npy, { name: 'hf.npy', batch: 1 });
    for (let l = 0; l < d.numLayers; l++) d.layer(l);
  }, 'E_INPUT', 'layer 2, batch 1, head 1, row 2, column 0 is NaN');
});

test('input kinds: string, ArrayBuffer, Uint8Array at an odd offset, Blob, parsed object', async () => {
  const text = readFileSync(new URL('canonical.json', DIR), 'utf8');
  checkSame(await load(text), { format: 'json' });
  const u8 = file('att_f32.safetensors');
  checkSame(await load(u8.buffer.slice(u8.byteOffset, u8.byteOffset + u8.byteLength)), { format: 'safetensors' });
  checkSame(await load(JSON.parse(text)), { format: 'json' });
  // Node 20 has a global Blob; a File's name is used as the hint.
  checkSame(await load(new Blob([file('att.npz')])), { format: 'npz' });
  const err = await rejects(() => load(Object.assign(new Blob([new Uint8Array([1, 2, 3])]), { name: 'mine.npy' })),
    'E_FORMAT', 'mine.npy');
  assert.match(err.message, /\.npy/);
  // Unaligned bytes take the copying path and give the same values.
  for (const name of ['att_f16.npy', 'att_f32.npy', 'att_f64.npy', 'att_f32.safetensors', 'att_bf16.safetensors']) {
    const b = file(name);
    const odd = new Uint8Array(b.length + 1).subarray(1);
    odd.set(b);
    checkSame(await load(odd), { format: name.endsWith('.npy') ? 'npy' : 'safetensors',
      tokens: name.endsWith('.npy') ? DEFAULT_TOKENS : exp.tokens });
  }
  // A parsed object may carry typed-array rows.
  const typed = { tokens: exp.tokens, attentions: exp.attentions.map((l) => l.map((h) => h.map((r) => Float32Array.from(r)))) };
  checkSame(loadAttentionSync(typed), { format: 'json' });
  // A Float32Array is not the file's bytes.
  await rejects(() => load(new Float32Array(4)), 'E_INPUT', 'Float32Array');
});

test('UTF-16 JSON with a BOM (PowerShell redirection) is read', async () => {
  const text = '\ufeff' + readFileSync(new URL('canonical.json', DIR), 'utf8');
  const u16 = new Uint8Array(text.length * 2);
  for (let i = 0; i < text.length; i++) { u16[2 * i] = text.charCodeAt(i) & 0xff; u16[2 * i + 1] = text.charCodeAt(i) >> 8; }
  checkSame(await load(u16), { format: 'json' });
  checkSame(await load(text), { format: 'json' }); // a BOM in a JS string too
});

test('options.tokens supplies tokens and is checked against n', async () => {
  const tokens = ['a', 'b', 'c', 'd'];
  assert.deepEqual((await load(file('att_f32.npy'), { tokens })).tokens, tokens);
  assert.deepEqual((await load(file('bare.json'), { tokens })).tokens, tokens);
  await rejects(() => load(file('att_f32.npy'), { tokens: ['a'] }), 'E_INPUT', '1 tokens in options.tokens but the matrices are 4x4');
  await rejects(() => load(file('att_f32.npy'), { tokens: 'abcd' }), 'E_OPTION', 'tokens');
  await rejects(() => load(file('att_f32.npy'), { tokens: [1, 2, 3, 4] }), 'E_OPTION', 'tokens[0]');
});

test('binary layers are views of the file bytes when aligned, so no copy of the tensor is made', async () => {
  const b = file('att_f32.npy');
  const d = await load(b);
  assert.equal(d.layer(1).buffer, b.buffer);
  const s = file('att_f64.safetensors');
  assert.equal((await load(s)).layer(0).buffer, s.buffer);
  const z = file('att.npz'); // stored (np.savez): a view of the archive, aligned or copied per layer
  const dz = await load(z);
  assert.equal(dz.layer(0).length, exp.H * exp.n * exp.n);
});

// ---------------------------------------------------------------------------------------------
// Inputs read a slice at a time (a file on disk in the CLI, a File in a worker): a binary tensor is
// never read whole.

test('every format reads the same from a file on disk (attnflow/node) as from memory', async () => {
  for (const [name, want] of FORMAT_CASES) {
    const data = await openAttentionFile(fileURLToPath(new URL(name, DIR)));  // the path is the format hint
    try {
      checkSame(data, want);
    } finally {
      data.close();
    }
  }
});

test('openAttentionFile: a closed file refuses its layers; a missing file or a bad path is an E_INPUT', async () => {
  const path = fileURLToPath(new URL('att_f32.npy', DIR));
  const data = await openAttentionFile(path, { tokens: ['a', 'b', 'c', 'd'] });
  assert.deepEqual(data.tokens, ['a', 'b', 'c', 'd']);
  assert.deepEqual(Array.from(data.layer(1)), flat(exp.attentions[1]));
  data.close();
  data.close();  // twice is harmless
  assert.throws(() => data.layer(0), (e) => e instanceof AttnflowError && e.code === 'E_INPUT' && /att_f32\.npy has been closed: open it again/.test(e.message));
  await assert.rejects(openAttentionFile(join(tmpdir(), 'attnflow-no-such-file.npy')), (e) => e.code === 'E_INPUT' && /no such file/.test(e.message));
  await assert.rejects(openAttentionFile(''), (e) => e.code === 'E_INPUT' && /file path/.test(e.message));
  await assert.rejects(openAttentionFile(path, 'x.npy'), (e) => e.code === 'E_OPTION');
  // The path is the name in messages and the format hint, unless options.name is given.
  const dir = mkdtempSync(join(tmpdir(), 'attnflow-open-'));
  try {
    const bad = join(dir, 'bad.npy');
    writeFileSync(bad, 'not a tensor');
    await assert.rejects(openAttentionFile(bad), (e) => e.code === 'E_FORMAT' && e.message.startsWith(`${bad}: `) && /the name says \.npy/.test(e.message));
    await assert.rejects(openAttentionFile(bad, { name: 'upload' }), (e) => e.code === 'E_FORMAT' && e.message.startsWith('upload: ') && !/the name says/.test(e.message));
  } finally {
    rmSync(dir, { recursive: true });
  }
});

/** A source that copies what it reads, as a file does, and records every read's length. */
function recordingSource(bytes) {
  const inner = bytesSource(bytes);
  const reads = [];
  return { reads, size: inner.size, read: (offset, length) => { const b = inner.read(offset, length).slice(); reads.push(b.length); return b; } };
}

test('a binary tensor is read header first, then one read of one layer per layer', async () => {
  const shape = { layers: 3, heads: 4, tokens: 128 };
  const layerBytes = shape.heads * shape.tokens * shape.tokens * 4;
  const npy = syntheticNpy(shape);
  const fromMemory = loadAttentionSync(npy);
  const header = new TextEncoder().encode(JSON.stringify({ attentions: { dtype: 'F32', shape: [3, 4, 128, 128], data_offsets: [0, npy.length - 128] } }));
  const safetensors = new Uint8Array(8 + header.length + npy.length - 128);
  safetensors.set([header.length & 0xff, header.length >> 8]);
  safetensors.set(header, 8);
  safetensors.set(npy.subarray(128), 8 + header.length);
  assert.equal(npy[8] | (npy[9] << 8), 118); // the .npy header above is 128 bytes
  const inputs = {
    'a.npy': npy,
    'a.safetensors': safetensors,
    'a.npz': zipSync({ 'attentions.npy': npy }, { level: 0 }),  // np.savez stores its arrays
  };
  for (const [name, bytes] of Object.entries(inputs)) {
    const source = recordingSource(bytes);
    const d = loadAttentionSource(source, { name });
    const atLoad = source.reads.reduce((a, b) => a + b, 0);
    // The headers, and for a zip its last 64 KB (where the directory is) and an entry's first 64 KB.
    assert.ok(atLoad < layerBytes, `${name}: ${atLoad} bytes read at load, more than a layer (${layerBytes})`);
    for (let l = 0; l < shape.layers; l++) {
      source.reads.length = 0;
      assert.deepEqual(d.layer(l), fromMemory.layer(l), `${name} layer ${l + 1}`);
      assert.deepEqual(source.reads, [layerBytes], `${name} layer ${l + 1}`);
    }
  }
});

test('a compressed tensor (.npz of np.savez_compressed, .npy.gz) is inflated as its layers are read, in one pass', async () => {
  const shape = { layers: 4, heads: 8, tokens: 128 };  // 2 MB: above what an .npz inflates at once
  const npy = syntheticNpy(shape);
  const fromMemory = loadAttentionSync(npy);
  const inputs = { 'c.npz': zipSync({ 'attentions.npy': npy }, { level: 6 }), 'c.npy.gz': gzipSync(npy) };
  for (const [name, bytes] of Object.entries(inputs)) {
    const source = recordingSource(bytes);
    const d = loadAttentionSource(source, { name });
    const total = () => source.reads.reduce((a, b) => a + b, 0);
    const atLoad = total();
    assert.ok(atLoad < bytes.length / 2, `${name}: ${atLoad} bytes read at load, file ${bytes.length}`);
    for (let l = 0; l < shape.layers; l++) assert.deepEqual(d.layer(l), fromMemory.layer(l), `${name} layer ${l + 1}`);
    // Every compressed byte read once after loading (no restart): less than the file's size.
    assert.ok(total() - atLoad <= bytes.length, `${name}: ${total() - atLoad} bytes read for the layers, file ${bytes.length}`);
    assert.deepEqual(d.layer(1), fromMemory.layer(1), name);  // behind the last read: inflates again
    // Corrupt data (deflate carries no checksum): an AttnflowError when a layer reaches it, never
    // a crash or a layer returned half empty.
    const broken = bytes.slice();
    broken.fill(0xff, Math.floor(bytes.length * 0.6), Math.floor(bytes.length * 0.7));
    assert.throws(() => {
      const bad = loadAttentionSource(bytesSource(broken), { name });
      for (let l = 0; l < shape.layers; l++) bad.layer(l);
    }, (e) => e instanceof AttnflowError && /truncated or corrupt|^layer \d+, head \d+, row/.test(e.message), name);
  }
});

test('a file that shrinks after it was opened is refused when a layer is read', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'attnflow-'));
  try {
    const path = join(dir, 'a.npy');
    writeFileSync(path, file('att_f32.npy'));
    const d = await openAttentionFile(path);
    d.layer(0);
    truncateSync(path, 200);
    await rejects(() => d.layer(1), 'E_INPUT', `${path} shrank while it was being read`);
    d.close();
  } finally {
    rmSync(dir, { recursive: true });
  }
});

test('through the engine, every format gives the same rollout and flow', async () => {
  const names = ['canonical.json', 'canonical.json.gz', 'hf.json', 'att_f16.npy', 'att_f32_be.npy', 'att.npz',
    'att_compressed.npz', 'att_bf16.safetensors', 'att_f64.safetensors', 'hf_tuple.pt', 'att_list_bf16.pt'];
  const want = {};
  for (const method of ['rollout', 'flow']) {
    want[method] = (await compute(await load(file('canonical.json')), method, { layers: 'all' })).scores;
    assert.ok(want[method].length > 0);
    for (const name of names) {
      const r = await compute(await load(file(name)), method, { layers: 'all' });
      assert.deepEqual(r.scores, want[method], `${method} of ${name}`);
    }
  }
  // A NaN in a binary layer surfaces as E_INPUT with its location when the engine reads it.
  const b = npyWithValue('att_f16.npy', 1, 1, 0, 2, (dv) => dv.setUint16(0, 0x7e00, true));
  await rejects(async () => compute(await load(b), 'rollout'), 'E_INPUT', 'layer 2, head 1, row 0, column 2 is NaN');
});

// ---------------------------------------------------------------------------------------------
// JSON data errors: code and location (layer 1-based; head, row, column 0-based)

const base = () => JSON.parse(JSON.stringify({ tokens: exp.tokens, attentions: exp.attentions }));

test('ragged rows, short heads, missing heads, non-square', async () => {
  let x = base(); x.attentions[1][0][3].pop();
  await rejects(() => load(x), 'E_INPUT', 'layer 2, head 0, row 3 has 3 values, expected 4');
  x = base(); x.attentions[1][2].pop();
  await rejects(() => load(x), 'E_INPUT', 'layer 2, head 2 has 3 rows, expected 4');
  x = base(); x.attentions[1].pop();
  await rejects(() => load(x), 'E_INPUT', 'layer 2 has 2 heads, expected 3');
  x = base(); x.attentions = x.attentions.map((l) => l.map((h) => h.map((r) => r.slice(0, 3))));
  await rejects(() => load(x), 'E_INPUT', 'layer 1, head 0, row 0 has 3 values, expected 4', 'square');
  x = base(); x.attentions[0][1][2] = 5;
  await rejects(() => load(x), 'E_INPUT', 'layer 1, head 1, row 2 is a number');
  const fused = { attentions: exp.fused.map((l) => l.map((r) => r.slice())) };
  fused.attentions[1][2].push(0);
  await rejects(() => load(fused), 'E_INPUT', 'layer 2, row 2 has 5 values, expected 4');
});

test('non-numbers, null, NaN/Infinity strings, negatives', async () => {
  const cases = [
    ['abc', 'is the string "abc"'], [null, 'is null'], ['NaN', 'is the string "NaN"'],
    ['Infinity', 'is the string "Infinity"'], [-0.25, 'is negative (-0.25)'], [true, 'is a boolean'],
    [[0.5], 'is an array'], [NaN, 'is NaN'], [Infinity, 'is Infinity'], [{ v: 0.5 }, 'is an object'],
  ];
  for (const [v, msg] of cases) {
    const x = base(); x.attentions[1][2][3][1] = v;
    await rejects(() => load(x), 'E_INPUT', 'layer 2, head 2, row 3, column 1 ', msg);
  }
  // Python's json.dump writes NaN / Infinity literals, which JSON.parse rejects: located anyway.
  const text = JSON.stringify(base()).replace(/\[\[\[\[([0-9.]+),/, '[[[[NaN,');
  await rejects(() => load(text), 'E_INPUT', 'layer 1, head 0, row 0, column 0 is NaN', 'line 1');
  const hf = JSON.stringify({ attentions: exp.hf });
  const bad = hf.replace(/[0-9.]+(\]\]\]\]\]\}$)/, '-Infinity$1'); // the very last value
  await rejects(() => load(bad), 'E_INPUT', 'layer 2, batch 1, head 2, row 3, column 3 is -Infinity');
  const multi = '{\n  "attentions": [[[0.5, 0.5],\n  [Infinity, 0]]]\n}';
  await rejects(() => load(multi), 'E_INPUT', 'layer 1, row 1, column 0 is Infinity', 'line 3, column 4');
  // Finite values whose row sum overflows (it used to load, and the row came out as 0).
  const huge = base(); huge.attentions[1][2][3] = [1e308, 1e308, 0, 0];
  await rejects(() => load(huge), 'E_INPUT', 'layer 2, head 2, row 3 sums to Infinity', 'scale them down');
});

test('token problems', async () => {
  let x = base(); x.tokens.push('extra');
  await rejects(() => load(x), 'E_INPUT', '5 tokens but the matrices are 4x4');
  x = base(); x.tokens[2] = 7;
  await rejects(() => load(x), 'E_INPUT', 'tokens[2] is a number, expected a string');
  x = base(); x.tokens = 'abcd';
  await rejects(() => load(x), 'E_INPUT', 'tokens must be an array of strings');
  // Untrusted text is kept verbatim, never interpreted.
  x = base(); x.tokens = ['<img src=x onerror=alert(1)>', '${process.exit()}', '__proto__', ''];
  assert.deepEqual((await load(x)).tokens, x.tokens);
});

test('wrong depth, empty input, empty attentions, bad meta', async () => {
  await rejects(() => load({ attentions: [[0.5, 0.5], [0.5, 0.5]] }), 'E_INPUT', '4 levels', 'found 2 levels', 'attentions[0][0] is a number');
  await rejects(() => load({ attentions: [[[[exp.hf]]]] }), 'E_INPUT', 'more than 7 levels');
  await rejects(() => load({ attentions: [[[[[[0.5]]]]]] }), 'E_INPUT', 'found 6 levels');
  for (const empty of ['', '  \n', new Uint8Array(0), new ArrayBuffer(0), null, undefined]) {
    await rejects(() => load(empty), 'E_INPUT', 'empty input');
  }
  await rejects(() => load('{"attentions": []}'), 'E_INPUT', 'attentions is empty');
  await rejects(() => load('[]'), 'E_INPUT', 'attentions is empty');
  await rejects(() => load('{"attentions": [[]]}'), 'E_INPUT', 'attentions[0] is an empty array');
  await rejects(() => load('{}'), 'E_INPUT', 'no "attentions"');
  await rejects(() => load('{"tokens": ["a"], "attention": []}'), 'E_INPUT', 'no "attentions"', '"attention"');
  await rejects(() => load('{"attentions": 3}'), 'E_INPUT', '"attentions" must be an array');
  await rejects(() => load('42'), 'E_FORMAT', 'not a format');
  await rejects(() => load(42), 'E_INPUT', 'cannot load a number');
  const x = base(); x.meta = [1];
  await rejects(() => load(x), 'E_INPUT', '"meta" must be an object');
});

test('rows far from summing to 1 give one summarising warning, not an error', async () => {
  const x = base();
  x.attentions[0][1][2] = [0.5, 0, 0, 0];
  x.attentions[1][0][0] = [0.25, 0.25, 0.25, 0.2]; // 0.95: off by more than 1e-2
  x.attentions[1][0][1] = [0.25, 0.25, 0.25, 0.245]; // 0.995: within tolerance
  const d = await load(x);
  assert.equal(d.warnings.length, 1);
  assert.match(d.warnings[0], /^2 of 24 rows do not sum to 1/);
  assert.ok(d.warnings[0].includes('first: layer 1, head 1, row 2 sums to 0.5'), d.warnings[0]);
});

// ---------------------------------------------------------------------------------------------
// Binary data errors: values are checked once per layer, when layer(l) first reads it.

/** A DataView of the value at [l][h][i][j] in the bytes b of the fixture `name`. */
function npyValueView(b, name, l, h, i, j) {
  const hlen = b[8] | (b[9] << 8);
  const size = name.includes('f16') ? 2 : name.includes('f64') ? 8 : 4;
  const k = ((l * exp.H + h) * exp.n + i) * exp.n + j;
  return new DataView(b.buffer, b.byteOffset + 10 + hlen + k * size, size);
}

function npyWithValue(name, l, h, i, j, write) {
  const b = file(name);
  write(npyValueView(b, name, l, h, i, j));
  return b;
}

test('NaN, Infinity and negatives in binary tensors are located when the layer is read', async () => {
  const cases = [
    ['att_f32.npy', (dv) => dv.setFloat32(0, NaN, true), 'is NaN'],
    ['att_f64.npy', (dv) => dv.setFloat64(0, -0.5, true), 'is negative (-0.5)'],
    ['att_f16.npy', (dv) => dv.setUint16(0, 0x7c00, true), 'is Infinity'],
    ['att_f32_be.npy', (dv) => dv.setFloat32(0, -Infinity, false), 'is -Infinity'],
  ];
  for (const [name, write, msg] of cases) {
    const d = await load(npyWithValue(name, 1, 2, 3, 1, write));
    assert.equal(d.layer(0).length, exp.H * exp.n * exp.n); // layer 1 is clean
    await rejects(() => d.layer(1), 'E_INPUT', 'layer 2, head 2, row 3, column 1 ', msg);
    await rejects(() => d.layer(1), 'E_INPUT', 'layer 2, head 2, row 3, column 1 '); // still refused
  }
  const fusedBytes = file('fused_f32.npy');
  const hlen = fusedBytes[8] | (fusedBytes[9] << 8);
  new DataView(fusedBytes.buffer, fusedBytes.byteOffset).setFloat32(10 + hlen + 4 * (16 + 4 + 2), NaN, true);
  const d = await load(fusedBytes);
  await rejects(() => d.layer(1), 'E_INPUT', 'layer 2, row 1, column 2 is NaN');
  // safetensors: the data follows the 8-byte length and the header.
  const s = file('att_f32.safetensors');
  const shl = s[0] | (s[1] << 8);
  new DataView(s.buffer, s.byteOffset).setFloat32(8 + shl + 4 * 5, -1, true);
  await rejects(async () => (await load(s)).layer(0), 'E_INPUT', 'layer 1, head 0, row 1, column 1 is negative');
  // Finite values whose row sum overflows: no value is named, the row is.
  const huge = file('att_f64.npy');
  for (const j of [0, 1]) npyValueView(huge, 'att_f64.npy', 1, 2, 3, j).setFloat64(0, 1e308, true);
  await rejects(async () => (await load(huge)).layer(1), 'E_INPUT', 'layer 2, head 2, row 3 sums to Infinity', 'scale them down');
});

test('binary row-sum warnings cover the layers read so far', async () => {
  const b = npyWithValue('att_f64.npy', 1, 0, 2, 0, (dv) => dv.setFloat64(0, 3, true));
  const d = await load(b);
  assert.deepEqual(d.warnings, []);
  d.layer(0);
  assert.deepEqual(d.warnings, []);
  d.layer(1);
  assert.equal(d.warnings.length, 1);
  assert.match(d.warnings[0], /^1 of 24 rows .*first: layer 2, head 0, row 2 sums to/);
  d.layer(1); // counted once
  assert.match(d.warnings[0], /^1 of 24 rows/);
  await rejects(() => d.layer(2), 'E_OPTION', 'out of range');
  await rejects(() => d.layer(-1), 'E_OPTION', 'out of range');
});

test('npy shape, dtype and order problems', async () => {
  await rejects(() => load(file('fortran_f32.npy')), 'E_FORMAT', 'Fortran order');
  const npy = (descr, shape, dataBytes) => {
    let h = `{'descr': '${descr}', 'fortran_order': False, 'shape': (${shape.join(', ')}${shape.length === 1 ? ',' : ''}), }`;
    h += ' '.repeat(63 - ((10 + h.length) % 64)) + '\n';
    const b = new Uint8Array(10 + h.length + dataBytes);
    b.set([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0, h.length & 0xff, h.length >> 8]);
    for (let i = 0; i < h.length; i++) b[10 + i] = h.charCodeAt(i);
    return b;
  };
  await rejects(() => load(npy('<i4', [1, 1, 2, 2], 16)), 'E_FORMAT', "dtype '<i4'", 'float16, float32 or float64');
  await rejects(() => load(npy('<f4', [2, 2], 16)), 'E_INPUT', 'shape (2, 2)', 'expected [L, H, n, n]');
  await rejects(() => load(npy('<f4', [1, 1, 2, 3], 24)), 'E_INPUT', 'the matrices are 2x3');
  await rejects(() => load(npy('<f4', [0, 1, 2, 2], 0)), 'E_INPUT', 'no layers');
  await rejects(() => load(npy('<f4', [1, 1, 2, 2], 12)), 'E_FORMAT', 'truncated', 'needs 16 bytes', 'only 12');
  await rejects(() => load(npy('<f4', [1, 1, 2, 2], 20)), 'E_FORMAT', 'needs 16 bytes', 'but 20');
  // A header shape far beyond wasm32 is refused as too large before anything else (no data needed).
  const big = await rejects(() => load(npy('<f2', [24, 16, 40000, 40000], 0)), 'E_TOO_LARGE',
    'L=24, H=16, n=40000', 'pre-fuse the heads', 'fewer tokens');
  assert.match(big.message, /3\.50 GB/);
  assert.equal(MAX_WASM_BYTES, 3.5 * 2 ** 30);
  await rejects(() => load(npy('<f4', [1e20, 1, 2, 2], 0)), 'E_TOO_LARGE', 'a dimension of 2^53 or more');
  // Shapes whose count no file can hold are too large, as the shapes merely too large for wasm32.
  await rejects(() => load(npy('<f4', [1, 1, 2 ** 32 + 1, 2 ** 32 + 1], 0)), 'E_TOO_LARGE', 'holds more values than any file can');
  await rejects(() => load(npy('<f4', [16], 0)), 'E_INPUT', 'has shape (16,)');
  // BERT-large (L=24, H=16, n=512) is fine for the guard: only the byte count fails here.
  await rejects(() => load(npy('<f4', [24, 16, 512, 512], 0)), 'E_FORMAT', 'truncated');
  await rejects(() => load(npy('<f4', [1, 1, 2, 2, 2], 32), { batch: 1 }), 'E_OPTION', 'B = 1');
  // A key given twice: numpy keeps the last, a reader of the first would see another tensor.
  const twice = npy('<f4', [1, 1, 2, 2], 16);
  const hlen = twice[8] | (twice[9] << 8);
  const text = new TextDecoder('latin1').decode(twice.subarray(10, 10 + hlen));
  const extra = "'shape': (1, 2, 2), ";
  const repeated = text.replace('}', `${extra}}`).replace(new RegExp(` {${extra.length}}\n$`), '\n');
  assert.equal(repeated.length, hlen);
  twice.set(Uint8Array.from(repeated, (c) => c.charCodeAt(0)), 10);
  await rejects(() => load(twice), 'E_FORMAT', "gives 'shape' more than once");
});

test('JSON objects too large for wasm32 are refused before packing', async () => {
  const mat = new Array(40000); // sparse: n = 40000 without the memory
  mat[0] = [0];
  await rejects(() => load({ attentions: [[mat]] }), 'E_TOO_LARGE', 'n=40000');
});

// ---------------------------------------------------------------------------------------------
// Truncated and unknown files

test('truncated files of every format get E_FORMAT', async () => {
  const text = readFileSync(new URL('canonical.json', DIR), 'utf8');
  await rejects(() => load(text.slice(0, 200)), 'E_FORMAT', 'the JSON ends early (truncated?) at position 200', 'line 1');
  // Positions count characters of the decoded text (the tokens hold multi-byte UTF-8).
  const cut = file('canonical.json').subarray(0, 300);
  const chars = new TextDecoder().decode(cut).length;
  await rejects(() => load(cut, { name: 'a.json' }), 'E_FORMAT',
    `a.json: the JSON ends early (truncated?) at position ${chars} `);
  await rejects(() => load(file('att_f32.npy').subarray(0, 500)), 'E_FORMAT', 'truncated', 'only');
  await rejects(() => load(file('att_f32.npy').subarray(0, 40)), 'E_FORMAT', 'truncated', 'header');
  await rejects(() => load(file('att_f32.npy').subarray(0, 8)), 'E_FORMAT', 'truncated');
  const gz = file('canonical.json.gz');
  await rejects(() => load(gz.subarray(0, gz.length - 30)), 'E_FORMAT', 'gzip', 'truncated');
  await rejects(() => load(gz.subarray(0, 12)), 'E_FORMAT', 'gzip', 'truncated');
  for (const name of ['att.npz', 'att_compressed.npz']) {
    const z = file(name);
    await rejects(() => load(z.subarray(0, z.length - 40)), 'E_FORMAT', 'truncated');
    await rejects(() => load(z.subarray(0, 200)), 'E_FORMAT', 'truncated');
  }
  const s = file('att_f32.safetensors');
  await rejects(() => load(s.subarray(0, s.length - 4)), 'E_FORMAT', 'truncated');
  await rejects(() => load(s.subarray(0, 60)), 'E_FORMAT', 'truncated');
});

test('a byte changed inside a zip entry or a gzip member fails its CRC-32, as in Python', async () => {
  assert.equal(crc32(0, new TextEncoder().encode('123456789')), 0xcbf43926);  // the standard check value
  assert.equal(crc32(crc32(0, new TextEncoder().encode('1234')), new TextEncoder().encode('56789')), 0xcbf43926);
  // One bit of one float32 of the stored tensor: still a valid number, caught by the CRC only.
  // Binary layers are read when asked for: the check ends with the last one.
  const loadAll = async (input, options) => {
    const d = await load(input, options);
    for (let l = 0; l < d.numLayers; l++) d.layer(l);
    return d;
  };
  const u16 = (z, p) => z[p] | (z[p + 1] << 8);
  // Flips the lowest bit of byte at(z, start) of a stored entry whose content begins at `start`.
  const flipInEntry = (name, entryName, at) => {
    const z = file(name).slice();
    const e = listZip(bytesSource(z), name).find((entry) => entry.name === entryName);
    const start = e.local + 30 + u16(z, e.local + 26) + u16(z, e.local + 28);
    z[at(z, start)] ^= 1;
    return z;
  };
  // np.savez (stored): the 6th value's lowest mantissa byte, after the .npy header.
  const npz = flipInEntry('att.npz', 'attentions.npy', (z, start) => start + 10 + u16(z, start + 8) + 20);
  await rejects(() => loadAll(npz, { name: 'a.npz' }), 'E_FORMAT', 'a.npz: entry attentions.npy is corrupt', 'CRC-32', 'the archive records 0x');
  // Every pass over the layers fails, not only the first: a second one (fusing the heads again,
  // as a second compute on the same input does) read the corrupt bytes without the check.
  const failsEveryPass = async (input, options, ...parts) => {
    const d = await load(input, options);
    for (let pass = 0; pass < 3; pass++) {
      await rejects(async () => { for (let l = 0; l < d.numLayers; l++) d.layer(l); }, 'E_FORMAT', ...parts);
    }
  };
  await failsEveryPass(npz, { name: 'a.npz' }, 'entry attentions.npy is corrupt');
  // The same read from disk, a layer at a time.
  const dir = mkdtempSync(join(tmpdir(), 'attnflow-crc-'));
  try {
    writeFileSync(join(dir, 'a.npz'), npz);
    await rejects(async () => {
      const d = await openAttentionFile(join(dir, 'a.npz'));
      for (let l = 0; l < d.numLayers; l++) d.layer(l);
    }, 'E_FORMAT', 'attentions.npy is corrupt');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  // torch.save: a byte of a tensor's storage entry.
  const pt = file('att_list_bf16.pt');
  const storage = listZip(bytesSource(pt), 'pt').find((e) => /\/data\/\d+$/.test(e.name));
  await rejects(() => loadAll(flipInEntry('att_list_bf16.pt', storage.name, (z, start) => start + 3)), 'E_FORMAT', `entry ${storage.name} is corrupt`);
  // np.savez_compressed: the recorded CRC changed (a changed deflate stream mostly fails to inflate).
  const compressed = file('att_compressed.npz').slice();
  const { crc } = listZip(bytesSource(compressed), 'c').find((e) => e.name === 'attentions.npy');
  const le = [0, 8, 16, 24].map((shift) => (crc >>> shift) & 0xff);
  for (let p = 0; p + 4 <= compressed.length; p++) {
    if (le.every((byte, k) => compressed[p + k] === byte)) compressed[p] ^= 1;  // local and central headers
  }
  await rejects(() => loadAll(compressed), 'E_FORMAT', 'attentions.npy is corrupt');
  // gzip: the trailer's CRC, for a tensor (read a layer at a time) and for JSON (inflated whole).
  for (const name of ['att_f32.npy.gz', 'canonical.json.gz']) {
    const gz = file(name).slice();
    gz[gz.length - 8] ^= 1;
    await rejects(() => loadAll(gz, { name }), 'E_FORMAT', `${name}: the gzip data is truncated or corrupt (its content has the CRC-32`);
  }
  // A CRC recorded as 0 (a writer told not to compute checksums) is not checked.
  const unrecorded = zipSync({ 'attentions.npy': file('att_f32.npy') }, { level: 0 });
  const [{ local }] = listZip(bytesSource(unrecorded), 'u');
  const central = unrecorded.findIndex((_, p) => u16(unrecorded, p) === 0x4b50 && u16(unrecorded, p + 2) === 0x0201);
  unrecorded.fill(0, local + 14, local + 18);
  unrecorded.fill(0, central + 16, central + 20);
  assert.equal(listZip(bytesSource(unrecorded), 'u')[0].crc, 0);
  checkSame(await loadAll(unrecorded), { format: 'npz', tokens: DEFAULT_TOKENS });
});

test('a "meta" nested more than 100 levels deep is left out with a warning (a page could not post it)', async () => {
  const nested = (depth) => {
    let meta = {};
    for (let k = 1; k < depth; k++) meta = { k: meta };
    return meta;
  };
  const input = (depth) => JSON.stringify({ tokens: ['a', 'b'], attentions: [[[[1, 0], [0.5, 0.5]]]], meta: nested(depth) });
  const kept = await load(input(100));
  assert.deepEqual(kept.meta, nested(100));
  assert.deepEqual(kept.warnings, []);
  const deep = await load(input(2000));  // 2,000 levels: postMessage overflowed the stack
  assert.equal(deep.meta, undefined);
  assert.deepEqual(deep.warnings, ['"meta" is nested more than 100 levels deep and was left out (a page could not pass it to its worker)']);
});

test('unknown content, invalid JSON, nested gzip', async () => {
  await rejects(() => load(new Uint8Array([0, 1, 2, 3, 4, 5, 6, 7, 8, 9])), 'E_FORMAT', 'not a format attnflow reads', '00 01 02');
  await rejects(() => load(new Uint8Array([0, 1, 2, 3]), { name: 'model.safetensors' }), 'E_FORMAT', 'model.safetensors', '.safetensors');
  await rejects(() => load('hello'), 'E_FORMAT', 'not a format', '"hello"');
  await rejects(() => load('{"attentions": [1, 2,, 3]}'), 'E_FORMAT', 'invalid JSON at position 21', 'attentions[2]');
  await rejects(() => load('[[[1]]] trailing'), 'E_FORMAT', 'after the end');
  await rejects(() => load('{"attentions" [1]}'), 'E_FORMAT', 'expected ":"');
  await rejects(() => load(gzipSync(gzipSync(file('canonical.json')))), 'E_FORMAT', 'gzip inside gzip');
  const gz = file('canonical.json.gz').slice();
  gz[gz.length - 1] = 0xff; // size trailer far beyond what deflate can expand to
  await rejects(() => load(gz), 'E_FORMAT', 'gzip', 'corrupt');
  await rejects(() => load(new Uint8Array([0xc3, 0x28, 0x7b])), 'E_FORMAT');
});

test('gzip members joined end to end, or zero padding after the data: refused with what to do', async () => {
  // Python's gzip reads both; attnflow reads a .npy.gz a layer at a time, which needs the
  // content's size up front, and only the last member's trailer gives one without inflating all.
  const loadAll = async (input, options) => {
    const d = await load(input, options);
    for (let l = 0; l < d.numLayers; l++) d.layer(l);
    return d;
  };
  const joined = (bytes) => {
    const half = bytes.length >> 1;
    return new Uint8Array([...gzipSync(bytes.subarray(0, half)), ...gzipSync(bytes.subarray(half))]);
  };
  const padded = (bytes) => new Uint8Array([...gzipSync(bytes), ...new Uint8Array(512)]);
  // A gzip of an empty file ends in a trailer of zeros too (CRC 0, size 0): it is empty, not padded.
  const empty = gzipSync(new Uint8Array(0), { filename: 'x'.repeat(80) });
  assert.ok(empty.length > 64);
  await rejects(() => load(empty, { name: 'e.gz' }), 'E_INPUT', 'empty input');
  for (const name of ['canonical.json', 'att_f32.npy']) {
    await rejects(() => loadAll(joined(file(name)), { name: 'a.gz' }), 'E_FORMAT',
      'a.gz: the gzip data holds several members', 'gunzip -c FILE | gzip > NEW.gz');
    await rejects(() => loadAll(padded(file(name)), { name: 'a.gz' }), 'E_FORMAT',
      'a.gz: the gzip data ends in zero bytes', 'gunzip -c FILE | gzip > NEW.gz');
  }
});

test('small files that claim gigabytes are refused before they are inflated or read whole', async () => {
  // gzip of 520 MB of spaces and "{}" (0.5 MB): more JSON text than a string holds. It used to be
  // inflated whole and decoded; beyond 2 GB TextDecoder killed the process.
  const zipped = [];
  const gz = createGzip({ level: 1 });
  gz.on('data', (chunk) => zipped.push(chunk));
  const spaces = Buffer.alloc(1 << 20, 0x20);
  for (let k = 0; k < 520; k++) if (!gz.write(spaces)) await once(gz, 'drain');
  gz.end('{}');
  await once(gz, 'end');
  const bomb = new Uint8Array(Buffer.concat(zipped));
  // Refused at its size trailer, before anything is inflated (each worker of a pool inflated it).
  await rejects(() => load(bomb, { name: 'big.json.gz' }), 'E_TOO_LARGE', 'big.json.gz', '520 MB once inflated, says the gzip trailer');
  // A trailer that says less (it counts modulo 4 GiB: 4.1 GB reads as 100 MB): refused as the
  // output passes the limit.
  const lying = bomb.slice();
  new DataView(lying.buffer).setUint32(lying.length - 4, 100 * 2 ** 20, true);
  await rejects(() => load(lying, { name: 'big.json.gz' }), 'E_TOO_LARGE', 'big.json.gz', 'more than 512 MB once inflated');
  // A file of 3 GB: JSON (or white space before it) is refused at its size; unknown content is
  // refused from its first bytes, never read whole.
  const huge = (first) => ({ size: 3 * 2 ** 30, read: (offset, length) => {
    assert.ok(length <= 1 << 16, `read ${length} bytes at ${offset}`);
    return offset === 0 ? first : new Uint8Array(0);
  } });
  await rejects(() => loadAttentionSource(huge(new TextEncoder().encode('{"attentions": [')), { name: 'a.json' }), 'E_TOO_LARGE', 'a.json', '3072 MB');
  await rejects(() => loadAttentionSource(huge(new Uint8Array(4096).fill(0x20))), 'E_TOO_LARGE', 'JSON text');
  await rejects(() => loadAttentionSource(huge(new Uint8Array([1, 2, 3, 4]))), 'E_FORMAT', 'not a format', '01 02 03 04');
  // An .npz whose tokens entry inflates to 65 MB (its file: 64 KB).
  const tokens = new TextEncoder().encode(`[${' '.repeat(65 * 2 ** 20)}]`);
  const npz = zipSync({ 'attentions.npy': file('att_f32.npy'), 'tokens.json': tokens }, { level: 1 });
  await rejects(() => load(npz, { name: 't.npz' }), 'E_TOO_LARGE', 't.npz', 'tokens.json holds 65 MB', 'at most 64 MB');
});

test('nesting and pickles that used to escape as TypeError or RangeError', async () => {
  // Hugging Face layout: the depth is checked along batch item 0; another item may differ.
  const item = [[[0.5, 0.5], [0.5, 0.5]]];
  for (const other of [5, [], 'ab', [5]]) {
    await rejects(() => load({ attentions: [[item, other]] }, { batch: 1 }), 'E_INPUT', 'layer 1, batch 1', 'batch 0 is an array of heads');
  }
  // A matrix that is not square is reported as such, not as a token count.
  await rejects(() => load({ tokens: ['a', 'b'], attentions: [[[0.5, 0.5], [0.5, 0.5], [0.5, 0.5]]] }), 'E_INPUT', 'row 0 has 2 values, expected 3', 'square');
  // APPENDS of 300,000 items (a spread of them overflowed the call stack).
  const appends = `\x80\x02](${'K\x00'.repeat(300000)}e.`;
  const pt = zipSync({ 'archive/data.pkl': Uint8Array.from(appends, (c) => c.charCodeAt(0)) }, { level: 0 });
  await rejects(() => load(pt), 'E_INPUT');
});

test('npz: tokens dtypes, candidates, pickled tokens', async () => {
  const npyOf = (name) => file(name);
  // Two candidate float arrays and none named "attentions".
  const two = zipSync({ 'a.npy': npyOf('att_f32.npy'), 'b.npy': npyOf('att_f64.npy') }, { level: 0 });
  await rejects(() => load(two), 'E_INPUT', 'several candidate', '"a"', 'attentions');
  const none = zipSync({ 'tokens.json': new TextEncoder().encode('[]') }, { level: 0 });
  await rejects(() => load(none), 'E_INPUT', 'no candidate');
  // tokens.json entry, deflated.
  const tj = zipSync({ 'attentions.npy': npyOf('att_f32.npy'), 'tokens.json': new TextEncoder().encode(JSON.stringify(exp.tokens)) });
  checkSame(await load(tj), { format: 'npz' });
  const wrongCount = zipSync({ 'attentions.npy': npyOf('att_f32.npy'), 'tokens.json': new TextEncoder().encode('["a"]') });
  await rejects(() => load(wrongCount), 'E_INPUT', '1 tokens but the matrices are 4x4');
  // Pickled object tokens are refused, never unpickled.
  let h = "{'descr': '|O', 'fortran_order': False, 'shape': (4,), }";
  h += ' '.repeat(63 - ((10 + h.length) % 64)) + '\n';
  const obj = new Uint8Array(10 + h.length + 8);
  obj.set([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0, h.length, 0]);
  for (let i = 0; i < h.length; i++) obj[10 + i] = h.charCodeAt(i);
  const pick = zipSync({ 'attentions.npy': npyOf('att_f32.npy'), 'tokens.npy': obj }, { level: 0 });
  await rejects(() => load(pick), 'E_INPUT', 'pickled');
  // Fixed-width strings lose only their trailing NULs, as numpy reads them (a NUL inside stays:
  // "a\0b" was read as "a").
  const strings = (descr, unit, tokens) => {
    let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': (${tokens.length},), }`;
    header += ' '.repeat(63 - ((10 + header.length) % 64)) + '\n';
    const out = new Uint8Array(10 + header.length + tokens.length * 3 * unit);
    out.set([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0, header.length, 0]);
    for (let i = 0; i < header.length; i++) out[10 + i] = header.charCodeAt(i);
    tokens.forEach((t, k) => [...t].forEach((c, i) => { out[10 + header.length + (k * 3 + i) * unit] = c.charCodeAt(0); }));
    return out;
  };
  for (const [descr, unit] of [['<U3', 4], ['|S3', 1]]) {
    const npz = zipSync({ 'attentions.npy': npyOf('att_f32.npy'), 'tokens.npy': strings(descr, unit, ['a\0b', '', 'c', 'dd']) }, { level: 0 });
    assert.deepEqual((await load(npz)).tokens, ['a\0b', '', 'c', 'dd'], descr);
  }
});

test('PyTorch files: only data is read; other objects, dtypes and layouts get a clear error', async () => {
  await rejects(() => load(file('att_transposed.pt'), { name: 'a.pt' }), 'E_INPUT', 'a.pt', 'not contiguous', 'contiguous()');
  await rejects(() => load(file('att_int64.pt')), 'E_INPUT', 'int64', 'float16, bfloat16, float32 or float64');
  await rejects(() => load(file('model_output.pt')), 'E_INPUT', '__main__.ModelOutput', 'never runs code');
  await rejects(() => load(file('att_legacy.pt'), { name: 'old.pt' }), 'E_FORMAT', 'old.pt: a Python pickle', 'zip');
  const torchZip = (pickle, more = {}) => zipSync({ 'archive/data.pkl': Uint8Array.from(pickle, (c) => c.charCodeAt(0)), ...more }, { level: 0 });
  // A pickle that would run os.system("ls") under pickle.load/torch.load: refused at the name.
  const evil = torchZip('\x80\x02cos\nsystem\nq\x00X\x02\x00\x00\x00lsq\x01\x85q\x02Rq\x03.');
  await rejects(() => load(evil), 'E_INPUT', 'os.system', 'never runs code');
  const transformers = torchZip('\x80\x02ctransformers.modeling_outputs\nBaseModelOutput\nq\x00.');
  await rejects(() => load(transformers), 'E_INPUT', 'BaseModelOutput', 'save outputs.attentions');
  await rejects(() => load(torchZip('\x80\x02}q\x00X\x01\x00\x00\x00aK\x01s.')), 'E_INPUT', 'a dict with keys "a"', '"attentions"');
  await rejects(() => load(torchZip('\x80\x02K\x07.')), 'E_INPUT', 'holds a number', 'torch.save(outputs.attentions, f)');
  await rejects(() => load(torchZip('\x80\x02]q\x00(K\x01')), 'E_FORMAT', 'ends early');
  await rejects(() => load(torchZip('\x80\x02\xff.')), 'E_FORMAT', 'opcode 0xff');
  // Layers of different shapes; a storage entry missing; a storage shorter than it says.
  const [a, b] = ['att_list_bf16.pt', 'fused_f64.pt'].map((name) => unzipSync(file(name)));
  const pkl = (files) => Object.entries(files).find(([k]) => k.endsWith('/data.pkl'));
  const [aName, aPickle] = pkl(a);
  const prefix = aName.slice(0, -'data.pkl'.length);
  const missing = Object.fromEntries(Object.entries(a).filter(([k]) => k !== `${prefix}data/1`));
  await rejects(() => load(zipSync(missing, { level: 0 })), 'E_FORMAT', 'layer 2', 'missing');
  const short = { ...a, [`${prefix}data/0`]: a[`${prefix}data/0`].subarray(0, 10) };
  await rejects(() => load(zipSync(short, { level: 0 })), 'E_FORMAT', 'layer 1 is truncated');
  assert.ok(aPickle.length > 0 && pkl(b));
  const mixed = torchZip('\x80\x02(' + tensorPickle('0', 'FloatStorage', 16, [4, 4]) + tensorPickle('1', 'FloatStorage', 9, [3, 3]) + 't.');
  await rejects(() => load(mixed), 'E_INPUT', 'layer 2 is a float32 tensor of shape (3, 3)', 'same shape');
  // Two strides for a shape of two, then one (it used to be reported as "holds None").
  const oneStride = tensorPickle('0', 'FloatStorage', 16, [4, 4]).replace('(K\x04K\x01t', '(K\x04t');
  await rejects(() => load(torchZip(`\x80\x02${oneStride}.`)), 'E_FORMAT', 'shape or strides are malformed');
});

/** Pickle text (protocol 2 opcodes) of one contiguous tensor of `shape` on storage `key`. */
function tensorPickle(key, storage, numel, shape) {
  const int1 = (v) => `K${String.fromCharCode(v)}`;
  const str = (t) => `X${String.fromCharCode(t.length)}\x00\x00\x00${t}`;
  const strides = shape.map((_, d) => shape.slice(d + 1).reduce((x, y) => x * y, 1));
  return `ctorch._utils\n_rebuild_tensor_v2\n((${str('storage')}ctorch\n${storage}\n${str(key)}${str('cpu')}${int1(numel)}tQ` +
    `${int1(0)}(${shape.map(int1).join('')}t(${strides.map(int1).join('')}t\x89ccollections\nOrderedDict\n)RtR`;
}

test('safetensors header problems', async () => {
  const st = (header, data = new Uint8Array(0)) => {
    const h = new TextEncoder().encode(JSON.stringify(header));
    const b = new Uint8Array(8 + h.length + data.length);
    new DataView(b.buffer).setUint32(0, h.length, true);
    b.set(h, 8); b.set(data, 8 + h.length);
    return b;
  };
  const f32 = new Uint8Array(16);
  await rejects(() => load(st({ attentions: { dtype: 'I32', shape: [1, 1, 2, 2], data_offsets: [0, 16] } }, f32)),
    'E_FORMAT', 'dtype "I32"');
  await rejects(() => load(st({ attentions: { dtypf: 'F32', shape: [1, 1, 2, 2], data_offsets: [0, 16] } }, f32)),
    'E_FORMAT', 'tensor "attentions" has no dtype; attention weights must be');
  await rejects(() => load(st({ attentions: { dtype: 'F32', shape: [1, 1, 2, 2], data_offsets: [0, 12] } }, f32)),
    'E_FORMAT', 'needs 16 bytes');
  await rejects(() => load(st({ attentions: { dtype: 'F32', shape: [1, 1, 2, 2], data_offsets: [0, 16] },
    __metadata__: { tokens: 'a b' } }, f32)), 'E_INPUT', '__metadata__.tokens is not valid JSON');
  await rejects(() => load(st({ attentions: { dtype: 'F32', shape: [1, 1, 2, 2], data_offsets: [0, 16] },
    __metadata__: { tokens: ['a', 'b'] } }, f32)), 'E_INPUT', '__metadata__.tokens must be a JSON string (write it with json.dumps');
  await rejects(() => load(st({ attentions: { dtype: 'F32', shape: [1, 1, 2, 2], data_offsets: [0, 16] },
    __metadata__: { tokens: '["a", 2]' } }, f32)), 'E_INPUT', 'tokens[1] is a number');
  await rejects(() => load(st({ attentions: { dtype: 'F16', shape: [48, 64, 30000, 30000], data_offsets: [0, 16] } }, f32)),
    'E_TOO_LARGE', 'n=30000');
  await rejects(() => load(st({ x: { dtype: 'F32', shape: [4], data_offsets: [0, 16] } }, f32)), 'E_INPUT', 'no candidate');
  // A corrupt length field is named as such, not "not a format": past 100 MB, 0, or past the file.
  for (const [length, message] of [[2 ** 31 + 5, 'is corrupt: its header length field says 2147483653 bytes, where safetensors allows 2 to'],
    [0, 'is corrupt: its header length field says 0 bytes'],
    [2 ** 32 + 70, 'is corrupt: its header length field says 4294967366 bytes'],
    [5000, 'is truncated: its header needs 5008 bytes']]) {
    const b = st({ attentions: { dtype: 'F32', shape: [1, 1, 2, 2], data_offsets: [0, 16] } }, f32);
    new DataView(b.buffer).setBigUint64(0, BigInt(length), true);
    await rejects(() => load(b, { name: 'a.safetensors' }), 'E_FORMAT', `a.safetensors ${message}`);
  }
  // The layout the reference implementation (safetensors.safe_open) requires: metadata of
  // strings; tensors packed from byte 0 without a gap or an overlap, up to the end of the file.
  const att = { dtype: 'F32', shape: [1, 1, 2, 2], data_offsets: [0, 16] };
  for (const [header, data, message] of [
    [{ attentions: att, __metadata__: 'tokens' }, f32, ': the safetensors __metadata__ must be an object of strings'],
    [{ attentions: att, __metadata__: { layers: 1 } }, f32, ': the safetensors __metadata__ must be'],
    [{ attentions: att, bias: { dtype: 'F32', shape: [2], data_offsets: [8, 16] } }, f32,
      ' is corrupt: tensor "bias" begins at data byte 8, where the tensors before it end at 16'],
    [{ attentions: { ...att, data_offsets: [8, 24] } }, new Uint8Array(24),
      ' is corrupt: tensor "attentions" begins at data byte 8, where the tensors before it end at 0'],
    [{ attentions: att, bias: { dtype: 'F32', shape: [2], data_offsets: [16, '24'] } }, new Uint8Array(24),
      ': tensor "bias" has invalid data_offsets [16,"24"]'],
    [{ attentions: att }, new Uint8Array(20), ' is corrupt: 4 bytes follow its last tensor\'s data'],
    [{ attentions: att, bias: { dtype: 'F32', shape: [2], data_offsets: [16, 24] } }, f32,
      ' is truncated: its last tensor ends at byte'],
  ]) {
    await rejects(async () => (await load(st(header, data), { name: 'a.safetensors' })).layer(0), 'E_FORMAT',
      `a.safetensors${message}`);
  }
  const withBias = st({ bias: { dtype: 'F32', shape: [2], data_offsets: [16, 24] }, attentions: att,
    __metadata__: { tokens: '["a", "b"]' } }, new Uint8Array(24));
  assert.deepEqual((await load(withBias)).tokens, ['a', 'b']);
  const ok = await load(st({ attentions: { dtype: 'F32', shape: [1, 1, 2, 2], data_offsets: [0, 16] } }, f32));
  assert.equal(ok.warnings.length, 0);
  ok.layer(0);
  assert.match(ok.warnings[0], /^2 of 2 rows do not sum to 1/); // zero rows
});

test('detectFormat by content, not by name', () => {
  // torch.save writes a zip (read as .npz is, then told apart by its data.pkl), or with
  // _use_new_zipfile_serialization=False a bare pickle.
  const want = { json: 'json', gz: 'gzip', npy: 'npy', npz: 'npz', safetensors: 'safetensors', pt: 'npz' };
  for (const name of readdirSync(DIR).filter((n) => !n.endsWith('.py'))) {
    const ext = name.split('.').pop();
    assert.equal(detectFormat(file(name)), name === 'att_legacy.pt' ? 'pickle' : want[ext], name);
  }
});

// ---------------------------------------------------------------------------------------------
// Robustness: every prefix of a JSON file is "truncated"; random corruption of every fixture
// gives either data or an AttnflowError, never another exception.

test('every strict prefix of a JSON file is reported as truncated at its length', () => {
  const text = readFileSync(new URL('fused.json', DIR), 'utf8').trimEnd();
  for (let k = 1; k < text.length; k++) {
    let err;
    try { loadAttentionSync(text.slice(0, k)); } catch (e) { err = e; }
    assert.ok(err instanceof AttnflowError, `prefix ${k}: ${err}`);
    assert.equal(err.code, 'E_FORMAT', `prefix ${k}: ${err.message}`);
    assert.ok(err.message.includes(`ends early (truncated?) at position ${k} `), `prefix ${k}: ${err.message}`);
  }
});

test('random truncation and byte corruption never escape as a non-AttnflowError', () => {
  let seed = 12345;
  const rand = () => { seed = (Math.imul(seed, 1103515245) + 12345) >>> 0; return seed / 2 ** 32; };
  let loaded = 0, refused = 0;
  for (const name of readdirSync(DIR).filter((n) => !n.endsWith('.py') && n !== 'expected.json')) {
    const orig = file(name);
    for (let t = 0; t < 60; t++) {
      let b = orig.slice();
      if (t % 3 === 0) b = b.subarray(0, Math.floor(rand() * b.length));
      else for (let k = 0; k < 1 + (t % 4); k++) b[Math.floor(rand() * b.length)] = Math.floor(rand() * 256);
      // From memory, and through a source that copies what it reads (a file on disk, a File).
      for (const from of [() => loadAttentionSync(b, { name }), () => loadAttentionSource(recordingSource(b), { name })]) {
        try {
          const d = from();
          for (let l = 0; l < d.numLayers; l++) d.layer(l);
          void d.warnings;
          loaded++;
        } catch (e) {
          if (!(e instanceof AttnflowError)) assert.fail(`${name} trial ${t}: ${e && e.stack}`);
          refused++;
        }
      }
    }
  }
  assert.ok(loaded > 0 && refused > 0);
});
