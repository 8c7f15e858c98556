// The CLI as a user runs it: JSON on stdout, one-line errors on stderr with exit code 2.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { compute, loadAttention } from 'attnflow';

const CLI = fileURLToPath(new URL('../../web/cli.mjs', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'attnflow-cli-'));

function run(args, input, nodeFlags = []) {
  const result = spawnSync(process.execPath, [...nodeFlags, CLI, ...args], { input, encoding: 'utf8' });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

function file(name, content) {
  const path = join(dir, name);
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
  return path;
}

const uniform = (n) => Array.from({ length: n }, () => Array(n).fill(1 / n));
const identity = (n) => Array.from({ length: n }, (_, i) => Array.from({ length: n }, (_, j) => (i === j ? 1 : 0)));
const GOOD = { tokens: ['[CLS]', 'a', 'b'], attentions: [[uniform(3), identity(3)], [identity(3), uniform(3)]] };

test('flow --rows 0 prints the flow for the first token', () => {
  const { code, stdout, stderr } = run(['flow', file('good.json', GOOD), '--rows', '0']);
  assert.equal(code, 0, stderr);
  const out = JSON.parse(stdout);
  assert.equal(out.method, 'flow');
  assert.deepEqual(out.tokens, GOOD.tokens);
  assert.deepEqual(out.layers, [2]);
  assert.deepEqual(out.rows, [0]);
  assert.equal(out.scores.length, 1);
  assert.equal(out.scores[0].length, 1);
  assert.equal(out.scores[0][0].length, 3);
  assert.ok(Math.abs(out.scores[0][0].reduce((a, b) => a + b, 0) - 1) < 1e-12);
});

test('options reach the computation and the output reflects them', () => {
  const { code, stdout, stderr } = run(['rollout', file('opts.json', GOOD), '--layers', 'all', '--rows', '1,2',
    '--alpha', '1', '--fusion', 'max', '--heads', '1']);
  assert.equal(code, 0, stderr);
  const out = JSON.parse(stdout);
  assert.deepEqual(out.layers, [1, 2]);
  assert.deepEqual(out.rows, [1, 2]);
  assert.deepEqual(out.options, { fusion: 'max', heads: [1], alpha: 1, discard: 0, layers: [1, 2], rows: [1, 2], normalize: true, receptiveField: false });
  // alpha = 1 with head 1 only: layer 1 is the identity, layer 2 uniform, so rollout is uniform.
  for (const row of out.scores[1]) for (const v of row) assert.ok(Math.abs(v - 1 / 3) < 1e-12);
  assert.deepEqual(out.scores[0], [[0, 1, 0], [0, 0, 1]]);
});

test('reads stdin with "-" and reports timing as one JSON line on stderr', () => {
  const { code, stdout, stderr } = run(['raw', '-', '--timing'], JSON.stringify(GOOD));
  assert.equal(code, 0, stderr);
  assert.equal(JSON.parse(stdout).method, 'raw');
  const timing = JSON.parse(stderr.trim().split('\n').at(-1));
  assert.deepEqual(Object.keys(timing), ['load_ms', 'compute_ms']);
  assert.ok(timing.load_ms >= 0 && timing.compute_ms >= 0);
});

/** A random row-stochastic input {tokens, attentions} of L layers, 1 head, n tokens. */
function randomInput(L, n, seed) {
  let state = seed;
  const next = () => ((state = (state * 1103515245 + 12345) % 2147483648) / 2147483648);
  const layer = () => Array.from({ length: n }, () => {
    const row = Array.from({ length: n }, () => 0.05 + next());
    const sum = row.reduce((a, b) => a + b, 0);
    return row.map((v) => v / sum);
  });
  return { tokens: Array.from({ length: n }, (_, i) => `t${i}`), attentions: Array.from({ length: L }, () => [layer()]) };
}

test('output of megabytes is written in parts, the bytes of JSON.stringify(result)', async () => {
  // As one string, outputs of ~27 million scores passed V8's longest string: a crash.
  const input = randomInput(3, 150, 7);
  const path = file('big.json', input);
  const out = spawnSync(process.execPath, [CLI, 'rollout', path, '--layers', 'all'], { encoding: 'utf8', maxBuffer: 2 ** 26 });
  assert.equal(out.status, 0, out.stderr);
  assert.ok(out.stdout.length > 2 ** 20, `${out.stdout.length} characters: more than one part`);
  const want = await compute(await loadAttention(JSON.stringify(input)), 'rollout', { layers: 'all' });
  assert.equal(out.stdout, `${JSON.stringify(want)}\n`);
  // A reader that stops early (`| head`) ends the CLI quietly: it used to print an unhandled EPIPE.
  const quoted = (p) => `'${p.replaceAll("'", "'\\''")}'`;
  const early = spawnSync('bash', ['-c', `${quoted(process.execPath)} ${quoted(CLI)} rollout ${quoted(path)} --layers all | head -c 10`], { encoding: 'utf8' });
  assert.equal(early.stdout, out.stdout.slice(0, 10));
  assert.equal(early.stderr, '');
  // A pipe as the file (process substitution, /dev/stdin): read to its end. Its size (0) was
  // taken for the file's, and the CLI said "empty input".
  const piped = spawnSync('bash', ['-c', `${quoted(process.execPath)} ${quoted(CLI)} rollout <(cat ${quoted(path)}) --layers all`], { encoding: 'utf8', maxBuffer: 2 ** 26 });
  assert.equal(piped.stderr, '');
  assert.equal(piped.stdout, out.stdout);
  const good = file('good-piped.json', GOOD);
  const stdin = spawnSync('bash', ['-c', `cat ${quoted(good)} | ${quoted(process.execPath)} ${quoted(CLI)} raw /dev/stdin`], { encoding: 'utf8' });
  assert.equal(stdin.status, 0, stdin.stderr);
  assert.deepEqual(JSON.parse(stdin.stdout).tokens, GOOD.tokens);
  // Streams with no end, or no format, are refused from their first bytes: /dev/zero was read
  // until memory ran out (24 GB in a minute), stdin likewise.
  for (const command of [`${quoted(process.execPath)} ${quoted(CLI)} flow /dev/zero`,
    `head -c 100000000 /dev/zero | ${quoted(process.execPath)} ${quoted(CLI)} flow -`]) {
    const endless = spawnSync('bash', ['-c', command], { encoding: 'utf8', timeout: 30_000 });
    assert.equal(endless.status, 2, endless.stderr);
    assert.match(endless.stderr, /^attnflow: (\/dev\/zero|stdin): not a format attnflow reads: .* starts with bytes 00 00/);
  }
});

test('control characters from a file reach the terminal as \\uXXXX, not as escape sequences', () => {
  // A .npy whose dtype holds ESC [31m (it would turn the terminal red) and a newline.
  let header = "{'descr': '\u001b[31m<f4\n', 'fortran_order': False, 'shape': (1, 2, 2), }";
  header += ' '.repeat(63 - ((10 + header.length) % 64)) + '\n';
  const bytes = Buffer.concat([Buffer.from([0x93]), Buffer.from('NUMPY'), Buffer.from([1, 0, header.length & 0xff, header.length >> 8]),
    Buffer.from(header, 'latin1'), Buffer.alloc(16)]);
  const path = join(dir, 'escape.npy');
  writeFileSync(path, bytes);
  const { code, stderr } = run(['raw', path]);
  assert.equal(code, 2);
  assert.ok(!/[\u0000-\u0009\u000b-\u001f]/.test(stderr), JSON.stringify(stderr));
  assert.equal(stderr.trim().split('\n').length, 1);
  assert.match(stderr, /\\u001b\[31m/);
});

test('--workers splits the flow over worker threads and prints exactly the one-thread output', () => {
  // L >= 6 and >= 8 rows: the workers exchange the certificate's sink values and claim rows.
  const L = 7;
  const n = 10;
  const rowOf = (l, i) => {
    const row = Array.from({ length: n }, (_, j) => 1 + ((l * 7 + i * 3 + j * 5) % 11) + (j === i ? 9 : 0));
    const sum = row.reduce((a, b) => a + b, 0);
    return row.map((v) => v / sum);
  };
  const input = file('deep.json', {
    tokens: Array.from({ length: n }, (_, i) => `t${i}`),
    attentions: Array.from({ length: L }, (_, l) => [Array.from({ length: n }, (_, i) => rowOf(l, i))]),
  });
  const one = run(['flow', input, '--layers', 'all']);
  assert.equal(one.code, 0, one.stderr);
  for (const workers of ['1', '2']) {
    const split = run(['flow', input, '--layers', 'all', '--workers', workers, '--timing']);
    assert.equal(split.code, 0, split.stderr);
    assert.equal(split.stdout, one.stdout, `--workers ${workers}`);
    assert.deepEqual(Object.keys(JSON.parse(split.stderr.trim().split('\n').at(-1))), ['load_ms', 'compute_ms']);
  }
  // One (row, layer) is one unit of work, computed in this thread: the same output, and the same
  // check of --workers. Node's permission model without --allow-worker refuses to start a worker,
  // so these runs would fail if the CLI started the pool (Node 22.13+ calls the model --permission).
  const permission = process.allowedNodeEnvironmentFlags.has('--permission') ? '--permission' : '--experimental-permission';
  const noWorkers = [permission, '--allow-fs-read=*', '--no-warnings'];
  for (const request of [['--rows', '3'], ['--rows', '3', '--layers', '2']]) {
    const single = run(['flow', input, ...request, '--workers', '2'], undefined, noWorkers);
    assert.equal(single.code, 0, single.stderr);
    assert.equal(single.stdout, run(['flow', input, ...request]).stdout, request.join(' '));
  }
  const refused = run(['flow', input, '--rows', '3,4', '--workers', '2'], undefined, noWorkers);
  assert.equal(refused.code, 2);
  assert.match(refused.stderr, /^attnflow: cannot start a worker here: .+\n$/);
  for (const request of [[], ['--rows', '3']]) {
    const bad = run(['flow', input, ...request, '--workers', '0']);
    assert.equal(bad.code, 2);
    assert.equal(bad.stderr, 'attnflow: workers must be an integer from 1 to 64 (got 0)\n');
  }
  // With workers the file is read straight into shared memory (web/cli.mjs): the same errors.
  const missing = run(['flow', join(dir, 'missing.json'), '--workers', '2']);
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /^attnflow: cannot read .*missing\.json: no such file\n$/);
  const empty = run(['flow', file('empty.json', ''), '--workers', '2']);
  assert.equal(empty.code, 2);
  assert.equal(empty.stderr, run(['flow', join(dir, 'empty.json')]).stderr);
});

test('--unnormalized gives raw max-flow values', () => {
  const { stdout } = run(['flow', file('raw.json', GOOD), '--unnormalized', '--layers', '1']);
  const out = JSON.parse(stdout);
  assert.equal(out.options.normalize, false);
  // Layer 1: F = (uniform + I) / 2 has diagonal 2/3, so A[1] = (F + I) / 2 has diagonal 5/6.
  assert.ok(Math.abs(out.scores[0][0][0] - 5 / 6) < 1e-12);
});

test('--receptive-field divides by the scores of uniform attention over the mask', () => {
  // A causal input whose attention is uniform over the mask: every reachable score is exactly
  // what position alone predicts, a ratio of 1; tokens after the row are 0.
  const causalUniform = (n) => Array.from({ length: n }, (_, i) => Array.from({ length: n }, (_, j) => (j <= i ? 1 / (i + 1) : 0)));
  const path = file('causal.json', { tokens: ['a', 'b', 'c', 'd'], attentions: [[causalUniform(4)], [causalUniform(4)], [causalUniform(4)]] });
  for (const method of ['rollout', 'flow']) {
    const { code, stdout, stderr } = run([method, path, '--receptive-field', '--unnormalized', '--rows', '1,3']);
    assert.equal(code, 0, stderr);
    const out = JSON.parse(stdout);
    assert.equal(out.options.receptiveField, true);
    out.scores[0].forEach((row, k) => row.forEach((v, j) => {
      assert.ok(Math.abs(v - (j <= out.rows[k] ? 1 : 0)) < 1e-12, `${method} row ${out.rows[k]} token ${j}: ${v}`);
    }));
  }
});

test('--help prints usage and exits 0', () => {
  const { code, stdout } = run(['--help']);
  assert.equal(code, 0);
  assert.match(stdout, /usage: attnflow <raw\|rollout\|flow>/);
});

const BAD = [
  ['no arguments', [], /expected a method and a file/],
  ['unknown method', ['attention', 'x.json'], /unknown method "attention"/],
  ['unknown option', ['flow', 'x.json', '--beta', '1'], /Unknown option '--beta'/],
  ['missing file', ['flow', join(dir, 'missing.json')], /no such file/],
  ['alpha not a number', ['flow', '@GOOD', '--alpha', 'abc'], /--alpha must be a number/],
  ['alpha out of range', ['flow', '@GOOD', '--alpha', '2'], /alpha must be a number in \[0, 1\]/],
  ['negative alpha', ['flow', '@GOOD', '--alpha', '-1'], /alpha must be a number in \[0, 1\] \(got -1\)/],
  ['negative row', ['flow', '@GOOD', '--rows', '-1'], /rows: -1 is out of range/],
  ['batch not finite', ['flow', '@GOOD', '--batch', '1e400'], /^attnflow: --batch must be a non-negative integer \(got 1e400\)/],
  ['negative batch', ['flow', '@GOOD', '--batch', '-1'], /^attnflow: --batch must be a non-negative integer \(got -1\)/],
  ['row out of range', ['flow', '@GOOD', '--rows', '3'], /rows: 3 is out of range/],
  ['layer out of range', ['flow', '@GOOD', '--layers', '0'], /layers: 0 is out of range/],
  ['layer past the last', ['flow', '@GOOD', '--layers', '9'], /layers: 9 is out of range \(layers \(1-based\) 1\.\.2\)/],
  ['bad list', ['flow', '@GOOD', '--rows', '1,x'], /--rows must be/],
  ['head out of range', ['flow', '@GOOD', '--heads', '2'], /heads: 2 is out of range/],
  ['bad fusion', ['flow', '@GOOD', '--fusion', 'median'], /fusion must be one of mean, max, min/],
  ['discard out of range', ['rollout', '@GOOD', '--discard', '1'], /discard must be a number in \[0, 1\)/],
  ['empty file', ['flow', '@EMPTY'], /empty/i],
  ['truncated JSON', ['flow', '@TRUNCATED'], /truncated|ends/i],
  ['ragged row', ['flow', '@RAGGED'], /layer 1, head 1, row 2/],
  ['negative value', ['flow', '@NEGATIVE'], /layer 2, head 0, row 1.*negative/],
  ['non-number', ['flow', '@STRING'], /layer 1, head 0, row 0.*number/],
  ['token count mismatch', ['flow', '@TOKENS'], /4 tokens.*3/],
  ['wrong depth', ['flow', '@DEPTH'], /levels|depth|nesting/],
];

test('every bad input or option exits 2 with a one-line message naming the problem', () => {
  const clone = () => structuredClone(GOOD);
  const ragged = clone(); ragged.attentions[0][1][2] = [0.5, 0.5];
  const negative = clone(); negative.attentions[1][0][1] = [0.5, 0.7, -0.2];
  const string = clone(); string.attentions[0][0][0] = ['a', 0.5, 0.5];
  const tokens = clone(); tokens.tokens.push('c');
  const depth = { tokens: GOOD.tokens, attentions: uniform(3) };  // [n][n]: no layer axis
  const files = {
    '@GOOD': file('g.json', GOOD), '@EMPTY': file('empty.json', ''),
    '@TRUNCATED': file('trunc.json', JSON.stringify(GOOD).slice(0, 50)),
    '@RAGGED': file('ragged.json', ragged), '@NEGATIVE': file('neg.json', negative),
    '@STRING': file('str.json', string), '@TOKENS': file('tok.json', tokens), '@DEPTH': file('depth.json', depth),
  };
  for (const [what, args, message] of BAD) {
    const { code, stdout, stderr } = run(args.map((a) => files[a] ?? a));
    assert.equal(code, 2, `${what}: exit ${code}, stderr ${stderr}`);
    assert.equal(stdout, '', what);
    assert.equal(stderr.trim().split('\n').length, 1, `${what}: one line, got ${stderr}`);
    assert.match(stderr, /^attnflow: /, what);
    assert.match(stderr, message, `${what}: ${stderr}`);
  }
});
