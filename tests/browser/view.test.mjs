// The drop-in view (attnflow/view, web/view.mjs) in Chromium, on a bare page of the test server's
// origin: no CSS of its own, and the explorer's strict Content-Security-Policy (style-src 'self'),
// as a careful embedder would serve it. The page computes flow itself and draws it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { OUT, ROOT, openBarePage, randomAttention, toJson, useServerAndBrowser } from './helpers.mjs';

const HOSTILE = '<img src=x onerror="window.pwned=1">';
const LONG = 'x'.repeat(40);
const TOKENS = [HOSTILE, '', ' ', LONG, '\u202e'];
// What the cells show: the visible form, cut to 24 characters.
const SHOWN = [`${HOSTILE.slice(0, 23)}…`, '∅', '·', `${LONG.slice(0, 23)}…`, '⟨RLO⟩'];
const ATTENTION = { tokens: TOKENS, attentions: JSON.parse(toJson(TOKENS, randomAttention({ L: 2, H: 1, n: 5, seed: 11 }), 2, 1)).attentions };
const VIRIDIS_TOP = 'rgb(253, 231, 37)';  // #fde725

const session = useServerAndBrowser();

/**
 * A bare page (no stylesheet, only a container) with the package imported and flow computed for
 * every layer and row: window.view = {renderTokenStrips, result, host}.
 */
async function openViewPage({ width = 1000 } = {}) {
  const { page, errors } = await openBarePage(session.browser, session.server, {
    width, body: '<body><h1>Embedder</h1><div id="host"></div><button id="outside">a page button</button>',
  });
  await page.evaluate(async (input) => {
    document.addEventListener('securitypolicyviolation', (e) => { window.violations = [...(window.violations ?? []), e.violatedDirective]; });
    const { renderTokenStrips } = await import('/web/view.mjs');
    const { compute, loadAttention } = await import('/web/index.mjs');
    const result = await compute(await loadAttention(input), 'flow', { layers: 'all', rows: 'all' });
    window.view = { renderTokenStrips, result, host: document.getElementById('host') };
  }, ATTENTION);
  return { page, errors };
}

test('view: one cell per token per row, tokens as text, values and colours of the result, no page CSS needed', { timeout: 60_000 }, async () => {
  const { page, errors } = await openViewPage({ width: 360 });
  const out = await page.evaluate(async () => {
    const { renderTokenStrips, result, host } = window.view;
    const root = renderTokenStrips(host, result);
    await new Promise((resolve) => setTimeout(resolve, 200));  // an injected <img> would have fired onerror by now
    const strips = [...root.querySelectorAll('.attnflow-strip')];
    const hostBox = host.getBoundingClientRect();
    return {
      returnedIsChild: host.firstElementChild === root && host.children.length === 1,
      layer: root.dataset.layer,
      images: document.querySelectorAll('img').length,
      pwned: window.pwned,
      captions: strips.map((s) => s.querySelector('.attnflow-caption').textContent),
      strips: strips.map((s) => ({
        row: Number(s.dataset.row),
        expected: Array.from(result.scoresFor(2, Number(s.dataset.row)), String),
        cells: [...s.querySelectorAll('[data-index]')].map((c) => {
          const style = getComputedStyle(c);
          const box = c.getBoundingClientRect();
          return {
            index: c.dataset.index, value: c.dataset.value, text: c.textContent, title: c.title,
            label: c.getAttribute('aria-label'), tag: c.tagName, tabIndex: c.tabIndex,
            background: style.backgroundColor, color: style.color, fontSize: style.fontSize,
            top: box.top, right: box.right,
          };
        }),
      })),
      hostRight: hostBox.right,
      wrap: getComputedStyle(root.querySelector('.attnflow-cells')).flexWrap,
      pageSheets: document.styleSheets.length,
      adopted: document.adoptedStyleSheets.flatMap((s) => [...s.cssRules].map((r) => r.selectorText)),
      outsideButtonRadius: getComputedStyle(document.getElementById('outside')).borderTopLeftRadius,
      violations: window.violations ?? [],
    };
  });
  await page.screenshot({ path: `${OUT}view.png`, fullPage: true });

  assert.ok(out.returnedIsChild, 'the returned root is the container\'s only child');
  assert.equal(out.layer, '2', 'default layer: the deepest in the result');
  assert.equal(out.images, 0, 'no element was made from a token');
  assert.equal(out.pwned, undefined);
  assert.deepEqual(out.strips.map((s) => s.row), [0, 1, 2, 3, 4], 'default rows: all of the result\'s');
  assert.equal(out.captions[0], `flow, layer 2, target 0 “${SHOWN[0]}”`);
  assert.equal(out.captions[4], 'flow, layer 2, target 4 “⟨RLO⟩”');
  for (const strip of out.strips) {
    assert.equal(strip.cells.length, TOKENS.length);
    assert.deepEqual(strip.cells.map((c) => c.index), ['0', '1', '2', '3', '4']);
    assert.deepEqual(strip.cells.map((c) => c.text), SHOWN);
    assert.deepEqual(strip.cells.map((c) => c.value), strip.expected, 'data-value: the score, full precision');
    assert.ok(strip.cells.every((c) => c.tag === 'SPAN' && c.tabIndex === -1 && !c.title.includes('\u202e')), 'without onSelect cells are not focusable');
    assert.match(strip.cells[1].label, /^empty token: [\d.e-]+, rank [1-5] of 5$/);
    assert.match(strip.cells[0].title, /^<img src=x onerror="window\.pwned=1">: /, 'the title holds the whole token, as text');
    assert.match(strip.cells[4].title, /^⟨RLO⟩: /);
    // 'row' scale: the top score gets the palette's last colour, and black text on it (WCAG).
    const values = strip.expected.map(Number);
    const top = values.indexOf(Math.max(...values));
    assert.equal(strip.cells[top].background, VIRIDIS_TOP);
    assert.equal(strip.cells[top].color, 'rgb(0, 0, 0)');
    values.forEach((v, i) => {
      if (v < 0.9 * values[top]) assert.notEqual(strip.cells[i].background, VIRIDIS_TOP, `row ${strip.row}, token ${i}`);
    });
    assert.ok(new Set(strip.cells.map((c) => c.background)).size >= 2);
    // The view's own stylesheet applies (no page CSS); 360 px is too narrow for one line.
    assert.ok(strip.cells.every((c) => c.fontSize === '14px' && c.right <= out.hostRight + 0.5));
    assert.ok(new Set(strip.cells.map((c) => c.top)).size >= 2, 'cells wrap to the container width');
  }
  assert.equal(out.wrap, 'wrap');
  assert.equal(out.pageSheets, 0, 'no <style> or <link> was added to the page');
  assert.ok(out.adopted.length > 0 && out.adopted.every((s) => s.split(',').every((part) => part.includes('.attnflow-'))), out.adopted.join(' | '));
  assert.equal(out.outsideButtonRadius, '0px', 'the page\'s own buttons are not styled by the view');
  assert.deepEqual(out.violations, [], 'nothing the view does is refused by style-src \'self\'');
  assert.deepEqual(errors, []);
  await page.close();
});

test('view: onSelect on click, Enter and Space; arrow keys, Home and End move one tab stop per strip', { timeout: 60_000 }, async () => {
  const { page, errors } = await openViewPage();
  await page.evaluate(() => {
    const { renderTokenStrips, result, host } = window.view;
    window.selected = [];
    renderTokenStrips(host, result, { layer: 1, rows: [3, 0], onSelect: (index, row) => window.selected.push([index, row]) });
  });
  const strip = (row) => `.attnflow-strip[data-row="${row}"]`;
  await page.click(`${strip(0)} [data-index="3"]`);
  await page.keyboard.press('Shift+Tab');  // back to the first strip (row 3): its one tab stop, the first cell
  await page.keyboard.press('ArrowRight');
  await page.keyboard.press('Enter');
  const stops = await page.$$eval(`${strip(3)} [data-index]`, (cells) => cells.map((c) => c.tabIndex));
  await page.keyboard.press('End');
  await page.keyboard.press(' ');
  await page.keyboard.press('Home');
  await page.keyboard.press('ArrowLeft');  // nothing before the first cell: the focus stays
  await page.keyboard.press('Enter');
  await page.keyboard.press('Tab');  // on to the next strip (row 0), where the click left its tab stop
  await page.keyboard.press('Enter');
  const out = await page.evaluate(() => ({
    selected: window.selected,
    tags: [...new Set([...document.querySelectorAll('.attnflow-cell')].map((c) => c.tagName))],
  }));
  assert.deepEqual(out.selected, [[3, 0], [1, 3], [4, 3], [0, 3], [3, 0]]);
  assert.deepEqual(stops, [-1, 0, -1, -1, -1], 'the tab stop moved with the focus');
  assert.deepEqual(out.tags, ['BUTTON']);

  // A page that redraws the view from onSelect (here: another layer) keeps the keyboard focus on
  // the same cell; it used to fall to the body.
  await page.evaluate(() => {
    const { renderTokenStrips, result, host } = window.view;
    const draw = (layer) => renderTokenStrips(host, result, { layer, rows: [3, 0], onSelect: () => draw(3 - layer) });
    draw(1);
  });
  await page.focus(`${strip(0)} [data-index="0"]`);
  await page.keyboard.press('ArrowRight');
  await page.keyboard.press('ArrowRight');
  await page.keyboard.press('Enter');
  const afterRedraw = await page.evaluate(() => ({
    layer: document.querySelector('.attnflow-strips').dataset.layer,
    row: document.activeElement.closest('.attnflow-strip')?.dataset.row,
    index: document.activeElement.dataset.index,
  }));
  assert.deepEqual(afterRedraw, { layer: '2', row: '0', index: '2' });
  await page.keyboard.press('ArrowRight');  // the keys go on working in the new view
  await page.keyboard.press('Enter');
  assert.equal(await page.evaluate(() => document.activeElement.dataset.index), '3');
  // The same inside a shadow root, whose focused element the document does not name.
  const inShadow = await page.evaluate(() => {
    const { renderTokenStrips, result } = window.view;
    const holder = document.body.appendChild(document.createElement('div'));
    const box = holder.attachShadow({ mode: 'open' }).appendChild(document.createElement('div'));
    renderTokenStrips(box, result, { layer: 1, rows: [3, 0], onSelect: () => {} });
    box.querySelector('.attnflow-strip[data-row="0"] [data-index="2"]').focus();
    renderTokenStrips(box, result, { layer: 2, rows: [3, 0], onSelect: () => {} });
    const focused = holder.shadowRoot.activeElement;
    return { row: focused?.closest('.attnflow-strip')?.dataset.row, index: focused?.dataset.index };
  });
  assert.deepEqual(inShadow, { row: '0', index: '2' });

  // On a right-to-left page the cells run from right to left, and so do the arrow keys.
  await page.evaluate(() => {
    const { renderTokenStrips, result, host } = window.view;
    document.documentElement.dir = 'rtl';
    window.selected = [];
    renderTokenStrips(host, result, { layer: 1, rows: [0], onSelect: (index) => window.selected.push(index) });
  });
  await page.focus(`${strip(0)} [data-index="0"]`);
  await page.keyboard.press('ArrowLeft');
  await page.keyboard.press('ArrowLeft');
  await page.keyboard.press('Enter');
  await page.keyboard.press('ArrowRight');
  await page.keyboard.press('Enter');
  const [first, second] = await page.$$eval(`${strip(0)} [data-index="0"], ${strip(0)} [data-index="1"]`, (cells) => cells.map((c) => c.getBoundingClientRect().x));
  assert.ok(second < first, 'cell 1 is left of cell 0');
  assert.deepEqual(await page.evaluate(() => window.selected), [2, 1]);
  assert.deepEqual(errors, []);
  await page.close();
});

test('view: options are checked (E_OPTION, the previous view stays); drawing again replaces the view', { timeout: 60_000 }, async () => {
  const { page, errors } = await openViewPage();
  const out = await page.evaluate(async () => {
    const { renderTokenStrips, result, host } = window.view;
    const { compute, loadAttention } = await import('/web/index.mjs');
    const attempt = (res, options) => {
      try {
        renderTokenStrips(host, res, options);
        return 'drawn';
      } catch (e) {
        return `${e.name} ${e.code}: ${e.message}`;
      }
    };
    const first = renderTokenStrips(host, result, { rows: [1] });
    const lastOnly = await compute(await loadAttention({ tokens: ['a', 'b'], attentions: [[[[1, 0], [0.5, 0.5]]], [[[1, 0], [0.5, 0.5]]]] }), 'rollout', { rows: [1] });
    const r = {
      layer3: attempt(result, { layer: 3 }),
      layerNotComputed: attempt(lastOnly, { layer: 1 }),
      palette: attempt(result, { palette: 'jet' }),
      scale: attempt(result, { scale: 'log' }),
      rows: attempt(result, { rows: [7] }),
      rowNotComputed: attempt(lastOnly, { rows: [0] }),
      onSelect: attempt(result, { onSelect: 'yes' }),
      misspelt: attempt(result, { layers: 1 }),
      notAResult: attempt({ tokens: ['a'] }),
      notAnElement: (() => { try { renderTokenStrips('#host', result); return 'drawn'; } catch (e) { return e.code; } })(),
      firstStays: host.firstElementChild === first,
    };
    // Twice into one container: one view, one stylesheet.
    renderTokenStrips(host, result, { palette: 'blues', scale: 'absolute', rows: [2], layer: 1, label: () => '' });
    const second = renderTokenStrips(host, lastOnly, { palette: 'blues', scale: 'absolute', label: (row, layer) => `row ${row} at ${layer}` });
    r.views = document.querySelectorAll('.attnflow-strips').length;
    r.children = host.children.length;
    r.secondIsChild = host.firstElementChild === second;
    r.sheets = document.adoptedStyleSheets.length;
    r.caption = second.querySelector('.attnflow-caption').textContent;
    // Screen readers hear the caption once: as the cells' label, not also as a text line.
    r.captionHidden = second.querySelector('.attnflow-caption').getAttribute('aria-hidden');
    r.groupLabel = second.querySelector('.attnflow-cells').getAttribute('aria-label');
    r.cells = [...second.querySelectorAll('[data-index]')].map((c) => [Number(c.dataset.value), getComputedStyle(c).backgroundColor]);
    return r;
  });
  assert.match(out.layer3, /^AttnflowError E_OPTION: layer 3 is not in this result \(layers 1, 2/);
  assert.match(out.layerNotComputed, /^AttnflowError E_OPTION: layer 1 is not in this result \(layers 2;/);
  assert.match(out.palette, /^AttnflowError E_OPTION: palette must be one of viridis, cividis, blues \(got "jet"\)/);
  assert.match(out.scale, /^AttnflowError E_OPTION: scale must be one of row, absolute/);
  assert.match(out.rows, /^AttnflowError E_OPTION: rows: 7 is not in this result \(rows 0, 1, 2, 3, 4\)/);
  assert.match(out.rowNotComputed, /^AttnflowError E_OPTION: rows: 0 is not in this result \(rows 1\)/);
  assert.match(out.onSelect, /^AttnflowError E_OPTION: onSelect must be a function/);
  assert.match(out.misspelt, /^AttnflowError E_OPTION: renderTokenStrips has no option "layers" \(its options: layer, rows,/);
  assert.match(out.notAResult, /^AttnflowError E_OPTION: result must be a Result/);
  assert.equal(out.notAnElement, 'E_OPTION');
  assert.ok(out.firstStays, 'a refused call leaves the view as it was');
  assert.equal(out.views, 1);
  assert.equal(out.children, 1);
  assert.ok(out.secondIsChild);
  assert.equal(out.sheets, 1, 'the stylesheet is added once');
  assert.equal(out.caption, 'row 1 at 2');
  assert.equal(out.captionHidden, 'true');
  assert.equal(out.groupLabel, 'row 1 at 2');
  // Rollout of A = [[1, 0], [0.25, 0.75]] (alpha 0.5) twice, row 1: [0.4375, 0.5625]. 'absolute'
  // colours the scores as they are: 3.5 and 4.5 stops along ColorBrewer blues (not its last stop,
  // which 'row' would give 0.5625).
  assert.deepEqual(out.cells.map(([v]) => v), [0.4375, 0.5625]);
  assert.deepEqual(out.cells.map(([, background]) => background), ['rgb(133, 188, 220)', 'rgb(87, 160, 206)']);
  assert.deepEqual(errors, []);
  await page.close();
});

test('view: the README\'s page runs as written (from the repository root, as a static server serves it)', { timeout: 60_000 }, async () => {
  const readme = readFileSync(`${ROOT}README.md`, 'utf8');
  const html = readme.slice(readme.indexOf('## A drop-in view')).match(/```html\n([\s\S]*?)```/)[1];
  const page = await session.browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  // Its inline scripts need a server without the explorer's policy, as the README says.
  const url = `${session.server.origin}/readme-view.html`;
  await page.route(url, (route) => route.fulfill({ status: 200, contentType: 'text/html; charset=utf-8', body: html }));
  await page.goto(url);
  await page.waitForSelector('.attnflow-strip[data-row="4"] [data-index="3"]', { timeout: 30_000 });
  await page.click('.attnflow-strip[data-row="4"] [data-index="3"]');
  const out = await page.evaluate(() => ({
    layer: document.querySelector('.attnflow-strips').dataset.layer,
    strips: document.querySelectorAll('.attnflow-strip').length,
    value: document.querySelector('.attnflow-strip[data-row="4"] [data-index="3"]').dataset.value,
    picked: document.getElementById('picked').textContent,
  }));
  assert.equal(out.layer, '3');
  assert.equal(out.strips, 2);
  assert.equal(out.picked, `target 4 draws ${out.value} on buses`);
  assert.deepEqual(errors, []);
  await page.close();
});

test('view: in a shadow root the styles are adopted there, not by the page; two palettes side by side; scoresFor may return any ArrayLike', { timeout: 60_000 }, async () => {
  const { page, errors } = await openViewPage();
  const out = await page.evaluate(() => {
    const { renderTokenStrips, result, host } = window.view;
    const shadow = host.attachShadow({ mode: 'open' });
    const [blues, viridis] = [document.createElement('div'), document.createElement('div')];
    shadow.append(blues, viridis);
    renderTokenStrips(blues, result, { rows: [0], palette: 'blues' });
    renderTokenStrips(viridis, result, { rows: [0], palette: 'viridis' });
    const top = (view) => {
      const cells = [...view.querySelectorAll('.attnflow-cell')];
      const best = cells.reduce((a, c) => (Number(c.dataset.value) > Number(a.dataset.value) ? c : a));
      return [getComputedStyle(best).backgroundColor, getComputedStyle(best).fontSize];
    };
    // What web/view.d.ts allows of scoresFor: indexed and with a length, not necessarily iterable.
    const arrayLike = { method: 'raw', tokens: ['a', 'b'], layers: [1], rows: [0], scoresFor: () => ({ length: 2, 0: 0.25, 1: 0.75 }) };
    const own = document.createElement('div');
    shadow.append(own);
    const values = [...renderTokenStrips(own, arrayLike).querySelectorAll('[data-value]')].map((c) => Number(c.dataset.value));
    return {
      shadowSheets: shadow.adoptedStyleSheets.length,
      documentSheets: document.adoptedStyleSheets.length,
      tops: [top(blues), top(viridis)],
      values,
    };
  });
  assert.equal(out.shadowSheets, 1, 'adopted by the shadow root, once');
  assert.equal(out.documentSheets, 0, 'nothing added to the page');
  assert.deepEqual(out.tops, [['rgb(8, 48, 107)', '14px'], [VIRIDIS_TOP, '14px']], 'each view its own palette, both styled');
  assert.deepEqual(out.values, [0.25, 0.75]);
  assert.deepEqual(errors, []);
  await page.close();
});

test('view: a view drawn into a detached container is styled where it is put later: a shadow root, or the page', { timeout: 60_000 }, async () => {
  const { page, errors } = await openViewPage();
  const out = await page.evaluate(() => {
    const { renderTokenStrips, result, host } = window.view;
    const fontSize = (view) => getComputedStyle(view.querySelector('.attnflow-cell')).fontSize;
    const intoShadow = document.createElement('div');
    renderTokenStrips(intoShadow, result, { rows: [0] });
    const before = document.adoptedStyleSheets.length;
    const shadow = host.attachShadow({ mode: 'open' });
    shadow.append(intoShadow);
    const shadowed = { sheets: shadow.adoptedStyleSheets.length, fontSize: fontSize(intoShadow) };
    const intoPage = document.createElement('div');
    renderTokenStrips(intoPage, result, { rows: [0] });
    document.body.append(intoPage);
    return { before, shadowed, pageSheets: document.adoptedStyleSheets.length, pageFontSize: fontSize(intoPage) };
  });
  assert.equal(out.before, 0, 'nothing adopted while detached');
  assert.deepEqual(out.shadowed, { sheets: 1, fontSize: '14px' }, 'styled in the shadow root it was moved into');
  assert.equal(out.pageSheets, 1);
  assert.equal(out.pageFontSize, '14px');
  assert.deepEqual(errors, []);
  await page.close();
});

test('view: a container in a same-origin iframe gets that document\'s own stylesheet, and an image of the iframe draws under the patches', { timeout: 60_000 }, async () => {
  const { page, errors } = await openViewPage();
  const out = await page.evaluate(async () => {
    const { renderTokenStrips, result, host } = window.view;
    const { renderPatchGrid } = await import('/web/view.mjs');
    const frame = document.createElement('iframe');
    host.append(frame);
    const inner = frame.contentDocument;
    const container = inner.createElement('div');
    inner.body.append(container);
    renderTokenStrips(container, result, { rows: [0] });  // threw NotAllowedError: one sheet shared across documents
    renderTokenStrips(host.appendChild(document.createElement('div')), result, { rows: [0] });  // and the page's own
    const cell = container.querySelector('.attnflow-cell');
    // A ViT-shaped result (1 + 2 x 2 tokens) over a canvas made in the iframe.
    const vit = { method: 'raw', tokens: ['c', 'a', 'b', 'd', 'e'], layers: [1], rows: [0], scoresFor: () => [0, 1, 0, 0, 0] };
    const image = inner.createElement('canvas');
    image.width = 4;
    image.height = 4;
    const grid = renderPatchGrid(inner.body.appendChild(inner.createElement('div')), vit, { image });
    return {
      innerSheets: inner.adoptedStyleSheets.length,
      pageSheets: document.adoptedStyleSheets.length,
      sameSheet: inner.adoptedStyleSheets[0] === document.adoptedStyleSheets[0],
      fontSize: frame.contentWindow.getComputedStyle(cell).fontSize,
      grid: grid.dataset.grid,
    };
  });
  assert.deepEqual(out, { innerSheets: 1, pageSheets: 1, sameSheet: false, fontSize: '14px', grid: '2 x 2' });
  assert.deepEqual(errors, []);
  await page.close();
});
