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

test('token labels: cut at 24 characters and at 8 marks in a row; titles at 1,000 characters', async () => {
  const { clipToken, tokenLabel } = await import('../../web/view/labels.mjs');
  assert.equal(tokenLabel('x'.repeat(30)), `${'x'.repeat(23)}…`);
  assert.equal(tokenLabel('naïve'), 'naïve');
  // Words whose letters carry several marks show as themselves (Myanmar "feed", pointed Hebrew).
  for (const word of ['\u1000\u103b\u103d\u1031\u1038', '\u05e9\u05b4\u05bc\u05c1\u0596']) assert.equal(tokenLabel(word), word);
  assert.equal(tokenLabel(`a${'\u0301'.repeat(10_000)}`), `a${'\u0301'.repeat(8)}…`);
  assert.equal(clipToken('w'.repeat(5_000)), `${'w'.repeat(1000)}…`);
  assert.equal(clipToken(`${'w'.repeat(999)}😀😀`), `${'w'.repeat(999)}…`, 'no half of a surrogate pair');
});
