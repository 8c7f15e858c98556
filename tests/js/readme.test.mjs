// The README's JavaScript examples run as written (from the repository root, as a user would).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));
const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');

test('the first README example prints the tokens and their flow scores', () => {
  const example = readme.match(/```js\n([\s\S]*?)```/)[1];
  const run = spawnSync(process.execPath, ['--input-type=module', '-e', example], { cwd: root, encoding: 'utf8' });
  assert.equal(run.status, 0, run.stderr);
  assert.match(run.stdout, /\[CLS\]/);
  assert.match(run.stdout, /Float64Array\(10\)/);
});

test('the second README example runs after the first, as it says ("continuing with data")', () => {
  const [first, second] = [...readme.matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1]);
  assert.match(second, /continuing|FusedAttention\.create\(data/);
  const run = spawnSync(process.execPath, ['--input-type=module', '-e', `${first}\n${second}\nconsole.log(rowFlow.layers, kind);`],
    { cwd: root, encoding: 'utf8' });
  assert.equal(run.status, 0, run.stderr);
  assert.match(run.stdout, /\[ 6 \] (sink|source|inner)/);
});
