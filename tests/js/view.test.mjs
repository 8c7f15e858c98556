// attnflow/view as a Node program sees it: importing it needs no DOM (server-side code and
// bundlers may import it), and calling it without one says so instead of failing deep inside.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compute, loadAttention } from 'attnflow';

test('attnflow/view imports in Node; drawing without a DOM is a clear E_OPTION', async () => {
  assert.equal(typeof globalThis.document, 'undefined');
  const { renderTokenStrips } = await import('attnflow/view');
  assert.equal(typeof renderTokenStrips, 'function');
  const result = await compute(await loadAttention({ tokens: ['a', 'b'], attentions: [[[[1, 0], [0.5, 0.5]]]] }), 'flow');
  assert.throws(() => renderTokenStrips({}, result), (e) => e.name === 'AttnflowError' && e.code === 'E_OPTION'
    && /renderTokenStrips draws into a web page: there is no document here/.test(e.message));
});

test('token labels: cut at 24 characters and at 3 combining marks; titles at 1,000 characters', async () => {
  const { clipToken, tokenLabel } = await import('../../web/view/labels.mjs');
  assert.equal(tokenLabel('x'.repeat(30)), `${'x'.repeat(23)}…`);
  assert.equal(tokenLabel('naïve'), 'naïve');
  assert.equal(tokenLabel('e\u0301\u0302'), 'e\u0301\u0302');  // two marks, as some scripts write
  assert.equal(tokenLabel(`a${'\u0301'.repeat(10_000)}`), `a${'\u0301'.repeat(3)}…`);
  assert.equal(clipToken('w'.repeat(5_000)), `${'w'.repeat(1000)}…`);
  assert.equal(clipToken(`${'w'.repeat(999)}😀😀`), `${'w'.repeat(999)}…`, 'no half of a surrogate pair');
});
