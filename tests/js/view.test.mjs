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
