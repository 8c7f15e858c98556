// The drop-in patch grid (renderPatchGrid of attnflow/view) in Chromium, on a bare page under the
// explorer's Content-Security-Policy: Vision-Transformer-shaped inputs (special tokens, then a
// grid of patches), computed in the page, drawn on a canvas whose pixels the tests read.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OUT, openBarePage, randomAttention, toJson, useServerAndBrowser } from './helpers.mjs';

/** {tokens, attentions} of L = 2, H = 1 with random softmax rows; `zero` [token] set to 0 in row 0 of layer 2. */
function vitInput(tokens, { seed, zero }) {
  const n = tokens.length;
  const { attentions } = JSON.parse(toJson(tokens, randomAttention({ L: 2, H: 1, n, seed }), 2, 1));
  if (zero !== undefined) {
    const row = attentions[1][0][0];
    row[zero] = 0;
    const sum = row.reduce((a, b) => a + b, 0);
    attentions[1][0][0] = row.map((v) => v / sum);
  }
  return { tokens, attentions };
}
const patches = (count) => Array.from({ length: count }, (_, k) => `patch ${k}`);
const VIT = vitInput(['[CLS]', ...patches(16)], { seed: 21, zero: 6 });  // token 6: patch 5, row 1, column 1
const DEIT = vitInput(['[CLS]', '[DIST]', ...patches(9)], { seed: 22 });
const NO_GRID = vitInput(['[CLS]', ...patches(11)], { seed: 23 });  // 12, 11 and 10: no squares

const session = useServerAndBrowser();

/**
 * A bare page with raw attention of every layer and row computed for each input:
 * window.patchView = {renderPatchGrid, results: {vit, deit, noGrid}, host, colorOf(t, palette)}.
 */
async function openPage() {
  const { page, errors } = await openBarePage(session.browser, session.server, { width: 800, body: '<body style="margin:0"><div id="host"></div>' });
  await page.evaluate(async (inputs) => {
    const { renderPatchGrid } = await import('/web/view.mjs');
    const { rgb } = await import('/web/view/colors.mjs');
    const { compute, loadAttention } = await import('/web/index.mjs');
    const results = {};
    for (const [name, input] of Object.entries(inputs)) {
      results[name] = await compute(await loadAttention(input), 'raw', { layers: 'all', rows: 'all' });
    }
    /** The canvas pixel [r, g, b] at the centre of patch (r, c) of a rows x cols grid. */
    const pixelAt = (canvas, r, c, rows, cols) => {
      const x = Math.floor(((c + 0.5) * canvas.width) / cols);
      const y = Math.floor(((r + 0.5) * canvas.height) / rows);
      return Array.from(canvas.getContext('2d').getImageData(x, y, 1, 1).data.slice(0, 3));
    };
    window.patchView = { renderPatchGrid, results, host: document.getElementById('host'), rgb, pixelAt };
  }, { vit: VIT, deit: DEIT, noGrid: NO_GRID });
  return { page, errors };
}

test('patch grid: [CLS] left out, 4 x 4 cells coloured by score, described for screen readers', { timeout: 60_000 }, async () => {
  const { page, errors } = await openPage();
  const out = await page.evaluate(() => {
    const { renderPatchGrid, results, host, rgb, pixelAt } = window.patchView;
    const root = renderPatchGrid(host, results.vit);
    const canvas = root.querySelector('canvas');
    const scores = Array.from(results.vit.scoresFor(2, 0)).slice(1);
    const max = Math.max(...scores);
    return {
      isChild: host.firstElementChild === root,
      data: { ...root.dataset },
      role: canvas.getAttribute('role'),
      label: canvas.getAttribute('aria-label'),
      size: [canvas.width, canvas.height, canvas.getBoundingClientRect().width],
      scores,
      pixels: scores.map((_, p) => pixelAt(canvas, Math.floor(p / 4), p % 4, 4, 4)),
      expected: scores.map((v) => rgb(v / max, 'viridis')),
      info: root.querySelector('.attnflow-patch-info').textContent,
    };
  });
  await page.screenshot({ path: `${OUT}patches.png` });
  assert.ok(out.isChild);
  assert.deepEqual(out.data, { layer: '2', row: '0', grid: '4 x 4', skip: '1' }, 'defaults: deepest layer, first row, [CLS] then 4 x 4');
  assert.equal(out.role, 'img');
  assert.deepEqual(out.size, [320, 320, 320], 'default size 320 px (device pixel ratio 1)');
  const top = out.scores.indexOf(Math.max(...out.scores));
  assert.deepEqual(out.pixels[top], [253, 231, 37], 'the top patch has viridis\'s last colour');
  assert.equal(out.scores[5], 0, 'the input has a zero at token 6 (patch 5)');
  assert.deepEqual(out.pixels[5], [68, 1, 84], 'a zero-score patch has viridis\'s first colour');
  assert.deepEqual(out.pixels, out.expected, 'every cell: the palette at score / top patch score');
  // The three best patches, by position, token index and score, best first.
  const best = [...out.scores.keys()].sort((a, b) => out.scores[b] - out.scores[a]).slice(0, 3);
  const named = [...out.label.matchAll(/row (\d), column (\d) \(token (\d+)\) ([\d.e-]+)/g)].map((m) => m.slice(1).map(Number));
  assert.deepEqual(named.map(([r, c, token]) => [r, c, token]), best.map((p) => [Math.floor(p / 4), p % 4, p + 1]), out.label);
  named.forEach(([, , token, score]) => assert.ok(Math.abs(score - out.scores[token - 1]) < 1e-6, `${out.label}: ${out.scores[token - 1]}`));
  assert.match(out.label, /^raw, layer 2, token 0 “\[CLS\]”, over 4 × 4 image patches\. Top patches: /);
  assert.equal(out.info, 'raw, layer 2, token 0 “[CLS]”');
  assert.deepEqual(errors, []);
  await page.close();
});

test('patch grid: onSelect gets patch + skip on a click at a cell\'s centre, and from the keyboard; hover reads out the patch', { timeout: 60_000 }, async () => {
  const { page, errors } = await openPage();
  await page.evaluate(() => {
    const { renderPatchGrid, results, host } = window.patchView;
    window.selected = [];
    renderPatchGrid(host, results.deit, { row: 4, layer: 1, size: 300, onSelect: (index) => window.selected.push(index) });
  });
  // Keyboard-operable, so not an image to screen readers.
  assert.deepEqual(await page.$eval('canvas', (c) => [c.getAttribute('role'), c.getAttribute('aria-roledescription')]), ['application', 'patch grid']);
  const box = await page.locator('canvas').boundingBox();
  const centre = (r, c) => [box.x + (c + 0.5) * (box.width / 3), box.y + (r + 0.5) * (box.height / 3)];
  await page.mouse.click(...centre(0, 0));
  await page.mouse.click(...centre(1, 2));  // patch 5: token 7 after [CLS] and [DIST]
  await page.mouse.move(...centre(2, 1));  // patch 7: token 9
  const info = await page.textContent('.attnflow-patch-info');
  const expected = await page.evaluate(() => window.patchView.results.deit.scoresFor(1, 4)[9]);
  await page.mouse.move(box.x + box.width + 50, box.y);
  await page.keyboard.press('Home');  // the canvas has the focus from the clicks
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('ArrowRight');
  await page.keyboard.press('Enter');
  await page.keyboard.press('End');
  await page.keyboard.press(' ');
  const out = await page.evaluate(() => ({
    selected: window.selected,
    data: { ...document.querySelector('.attnflow-patches').dataset },
    cursor: !document.querySelector('.attnflow-patch-cursor').hidden,
  }));
  assert.deepEqual(out.data, { layer: '1', row: '4', grid: '3 x 3', skip: '2' }, 'DeiT: [CLS] and a distillation token, then 3 x 3');
  assert.deepEqual(out.selected, [2, 7, 6, 10]);
  assert.match(info, /^row 2, column 1 · token 9 · ([\d.e-]+), rank \d of 9$/);
  assert.ok(Math.abs(Number(info.match(/token 9 · ([\d.e-]+)/)[1]) - expected) < 1e-6);
  assert.ok(out.cursor, 'the focused patch stays outlined');
  // Redrawn from its onSelect (another layer), the grid keeps the keyboard focus.
  await page.evaluate(() => {
    const { renderPatchGrid, results, host } = window.patchView;
    const draw = (layer) => renderPatchGrid(host, results.deit, { row: 4, layer, onSelect: () => draw(layer) });
    draw(1);
  });
  await page.focus('canvas');
  await page.keyboard.press('Enter');
  assert.equal(await page.evaluate(() => document.activeElement === document.querySelector('canvas')), true);
  assert.deepEqual(errors, []);
  await page.close();
});

test('patch grid: an image under the grid shows through by 1 - opacity', { timeout: 60_000 }, async () => {
  const { page, errors } = await openPage();
  const out = await page.evaluate(() => {
    const { renderPatchGrid, results, host, rgb, pixelAt } = window.patchView;
    // Half red (left), half blue (right), and wider than high: the canvas takes its shape.
    const image = document.createElement('canvas');
    image.width = 80;
    image.height = 40;
    const ctx = image.getContext('2d');
    ctx.fillStyle = '#ff0000';
    ctx.fillRect(0, 0, 40, 40);
    ctx.fillStyle = '#0000ff';
    ctx.fillRect(40, 0, 40, 40);
    const root = renderPatchGrid(host, results.vit, { image, opacity: 0.75, palette: 'cividis', scale: 'absolute', size: 400 });
    const canvas = root.querySelector('canvas');
    const scores = Array.from(results.vit.scoresFor(2, 0)).slice(1);
    return {
      size: [canvas.width, canvas.height],
      cells: scores.map((v, p) => ({ pixel: pixelAt(canvas, Math.floor(p / 4), p % 4, 4, 4), grid: rgb(v, 'cividis'), left: p % 4 < 2 })),
    };
  });
  assert.deepEqual(out.size, [400, 200], 'the longer side is `size`, in the image\'s shape');
  for (const { pixel, grid, left } of out.cells) {
    const under = left ? [255, 0, 0] : [0, 0, 255];
    const mixed = grid.map((g, k) => 0.75 * g + 0.25 * under[k]);
    assert.ok(pixel.every((v, k) => Math.abs(v - mixed[k]) <= 2), `pixel ${pixel}, expected ${mixed.map(Math.round)}`);
  }
  assert.deepEqual(errors, []);
  await page.close();
});

test('patch grid: bad options and grids that do not hold the tokens throw E_OPTION; an explicit grid works', { timeout: 60_000 }, async () => {
  const { page, errors } = await openPage();
  const out = await page.evaluate(() => {
    const { renderPatchGrid, results, host } = window.patchView;
    const attempt = (result, options) => {
      try {
        return `drawn ${renderPatchGrid(host, result, options).dataset.grid}`;
      } catch (e) {
        return `${e.name} ${e.code}: ${e.message}`;
      }
    };
    const image = new Image();  // never loaded
    return {
      noGrid: attempt(results.noGrid),
      noGridGiven: attempt(results.noGrid, { grid: [3, 4], skip: 0 }),
      wide: attempt(results.vit, { grid: [2, 8] }),
      wrongGrid: attempt(results.vit, { grid: [3, 5] }),
      badGrid: attempt(results.vit, { grid: [4, 0] }),
      skip: attempt(results.vit, { skip: 17 }),
      notSquare: attempt(results.vit, { skip: 2 }),
      row: attempt(results.vit, { row: 17 }),
      layer: attempt(results.vit, { layer: 3 }),
      palette: attempt(results.vit, { palette: 'jet' }),
      opacity: attempt(results.vit, { opacity: 2 }),
      misspelt: attempt(results.vit, { colour: 'red' }),
      size: attempt(results.vit, { size: 0 }),
      image: attempt(results.vit, { image: 'cat.png' }),
      unloaded: attempt(results.vit, { image }),
      onSelect: attempt(results.vit, { onSelect: 1 }),
      options: attempt(results.vit, null),
    };
  });
  assert.match(out.noGrid, /^AttnflowError E_OPTION: 12 tokens are not 1, 2 or 0 special tokens followed by a square grid of patches: give grid/);
  assert.equal(out.noGridGiven, 'drawn 3 x 4');
  assert.equal(out.wide, 'drawn 2 x 8');
  assert.equal(out.wrongGrid, 'AttnflowError E_OPTION: grid 3 x 5 and skip 1 make 16 tokens, but the result has 17');
  assert.match(out.badGrid, /^AttnflowError E_OPTION: grid must be \[rows, cols\], two positive integers \(got \[4,0\]\)/);
  assert.match(out.skip, /^AttnflowError E_OPTION: skip must be a whole number of special tokens from 0 to 16 \(got 17\)/);
  assert.match(out.notSquare, /^AttnflowError E_OPTION: 17 tokens less 2 special are 15 patches, not a square/);
  assert.match(out.row, /^AttnflowError E_OPTION: row 17 is not in this result \(rows 17 rows\)/);
  assert.match(out.layer, /^AttnflowError E_OPTION: layer 3 is not in this result/);
  assert.match(out.palette, /^AttnflowError E_OPTION: palette must be one of/);
  assert.match(out.opacity, /^AttnflowError E_OPTION: opacity must be a number from 0 to 1 \(got 2\)/);
  assert.match(out.misspelt, /^AttnflowError E_OPTION: renderPatchGrid has no option "colour" \(its options: layer, row,/);
  assert.match(out.size, /^AttnflowError E_OPTION: size must be a positive number/);
  assert.match(out.image, /^AttnflowError E_OPTION: image must be an HTMLImageElement, HTMLCanvasElement, ImageBitmap or OffscreenCanvas$/);
  assert.match(out.unloaded, /^AttnflowError E_OPTION: image has no pixels: not loaded yet/);
  assert.match(out.onSelect, /^AttnflowError E_OPTION: onSelect must be a function/);
  assert.match(out.options, /^AttnflowError E_OPTION: options must be an object/);
  assert.deepEqual(errors, []);
  await page.close();
});

test('patch grid: the cursor outlines the patch under the pointer when the read-out is wider than the canvas; in a shadow root the focused patch stays outlined', { timeout: 60_000 }, async () => {
  const { page, errors } = await openPage();
  await page.evaluate(() => {
    const { renderPatchGrid, results, host } = window.patchView;
    const inner = document.createElement('div');
    host.attachShadow({ mode: 'open' }).append(inner);
    // 120 px: narrower than the caption and the read-out line under it.
    renderPatchGrid(inner, results.vit, { size: 120, onSelect: () => {} });
  });
  const canvas = page.locator('#host canvas');
  const box = await canvas.boundingBox();
  const widths = () => page.evaluate(() => {
    const root = document.getElementById('host').shadowRoot;
    const info = root.querySelector('.attnflow-patch-info');
    return {
      figure: root.querySelector('.attnflow-patches').getBoundingClientRect().width,
      infoScrolls: info.scrollWidth > info.clientWidth,
      cursor: root.querySelector('.attnflow-patch-cursor').hidden ? null : root.querySelector('.attnflow-patch-cursor').getBoundingClientRect().toJSON(),
      info: info.textContent,
    };
  });
  const before = await widths();
  await page.mouse.move(box.x + 3.5 * (box.width / 4), box.y + 3.5 * (box.height / 4));  // patch (3, 3)
  const hovered = await widths();
  await page.mouse.click(box.x + 1.5 * (box.width / 4), box.y + 0.5 * (box.height / 4));  // patch (0, 1): focuses the canvas
  await page.keyboard.press('ArrowDown');  // patch (1, 1)
  await page.mouse.move(box.x + box.width + 100, box.y + box.height + 100);
  const left = await widths();
  assert.deepEqual([before.figure, hovered.figure], [box.width, box.width], 'the figure is as wide as the canvas, whatever the read-out says');
  assert.ok(!hovered.infoScrolls, 'the read-out wraps within it');
  assert.match(hovered.info, /^row 3, column 3 · token 16 · /);
  const cell = box.width / 4;
  const near = (a, b) => Math.abs(a - b) <= 1;
  assert.ok(near(hovered.cursor.x, box.x + 3 * cell) && near(hovered.cursor.width, cell) && near(hovered.cursor.y, box.y + 3 * cell), JSON.stringify(hovered.cursor));
  assert.ok(left.cursor && near(left.cursor.x, box.x + cell) && near(left.cursor.y, box.y + cell), 'the pointer left, the keyboard\'s patch stays outlined');
  assert.match(left.info, /^row 1, column 1 · token 6 · /);
  assert.deepEqual(errors, []);
  await page.close();
});
