// Layer x input-token heatmap of one method for one target row (the paper's figure: how the
// attribution to each input token evolves with depth). The SVG is both what the page shows and
// what is exported, so it uses presentation attributes only.
import { textWidth } from '../dom.mjs';
import { FONT, svg } from '../../web/view/dom.mjs';
import { ellipsize, fmt, showToken } from '../../web/view/labels.mjs';
import { color, legendGroup, rgbInto } from '../colors.mjs';
import { METHOD_LABEL, legendRange, scaler } from './common.mjs';

const MAX_RECTS = 1200;  // above this the cells are drawn as one image (fast to draw and export)
const PENDING_RGB = [238, 240, 243];

/**
 * @returns {SVGSVGElement} with data-method; cells carry data-layer / data-index / data-value.
 */
export function heatmapSVG({ tokens, method, result, target, layer, scale, width = 420, title, legend = true, numLayers }) {
  const n = tokens.length;
  const layers = Array.from({ length: numLayers ?? Math.max(...result.layers) }, (_, k) => k + 1);
  const L = layers.length;
  // Layers not computed yet (big inputs get flow for every layer second) are drawn as pending.
  const pending = new Float64Array(n).fill(NaN);
  const rows = layers.map((l) => (result.has(l, target) ? result.scoresFor(l, target) : pending));
  const ready = rows.filter((r) => r !== pending);
  const rowScaler = scaler(scale, ready);
  const left = 36;
  const right = 10;
  const top = 30;
  const cw = Math.max(2, Math.min(28, (width - left - right) / n));
  const ch = Math.max(8, Math.min(20, 240 / L));
  const gridW = cw * n;
  const gridH = ch * L;
  const labelEvery = Math.max(1, Math.ceil(11 / cw));
  const labels = tokens.map((t) => ellipsize(showToken(t), 12));
  const labelLen = Math.max(20, ...labels.map((s, i) => (i % labelEvery ? 0 : textWidth(s, 10))));
  const bottom = labelLen * 0.82 + 18 + (legend ? 34 : 0);
  const w = Math.max(left + gridW + right, 240);
  const hgt = top + gridH + bottom;
  const root = svg('svg', {
    xmlns: 'http://www.w3.org/2000/svg', viewBox: `0 0 ${w} ${hgt}`, width: w, height: hgt,
    'font-family': FONT, 'data-method': method, class: 'heatmap', role: 'img',
    'aria-label': `${METHOD_LABEL[method]} heatmap: layers 1 to ${L} by input token, target ${target}`,
  });
  root.append(svg('rect', { width: w, height: hgt, fill: '#ffffff' }));
  root.append(svg('text', { x: left, y: 18, 'font-size': 13, 'font-weight': 600, fill: '#1d2430' }, title ?? METHOD_LABEL[method]));
  const grid = svg('g', { transform: `translate(${left},${top})` });
  const yOf = (li) => (L - 1 - li) * ch;  // last layer on top, like the flow graph
  if (n * L <= MAX_RECTS) {
    rows.forEach((row, li) => {
      if (row === pending) return;
      const norm = rowScaler(row);
      row.forEach((v, j) => {
        grid.append(svg('rect', {
          x: j * cw, y: yOf(li), width: cw + 0.02, height: ch + 0.02, fill: color(norm(v)),
          'data-layer': layers[li], 'data-index': j, 'data-value': String(v), class: 'hm-cell',
        }));
      });
    });
  } else {
    const canvas = document.createElement('canvas');
    canvas.width = n;
    canvas.height = L;
    const ctx = canvas.getContext('2d');
    const img = ctx.createImageData(n, L);
    rows.forEach((row, li) => {
      const norm = rowScaler(row);
      const y = L - 1 - li;
      for (let j = 0; j < n; j++) {
        const o = (y * n + j) * 4;
        if (row === pending) img.data.set(PENDING_RGB, o);
        else rgbInto(img.data, o, norm(row[j]));
        img.data[o + 3] = 255;
      }
    });
    ctx.putImageData(img, 0, 0);
    grid.append(svg('image', {
      href: canvas.toDataURL('image/png'), x: 0, y: 0, width: gridW, height: gridH,
      preserveAspectRatio: 'none', 'image-rendering': 'pixelated', class: 'hm-image',
      'data-n': n, 'data-layers': layers.join(','),
    }));
  }
  // Pending layers: one grey band with a note.
  const waiting = layers.filter((l, li) => rows[li] === pending);
  if (waiting.length) {
    const top = Math.min(...waiting.map((l) => yOf(l - 1)));
    const bottomY = Math.max(...waiting.map((l) => yOf(l - 1))) + ch;
    grid.append(svg('rect', { x: 0, y: top, width: gridW, height: bottomY - top, fill: '#eef0f3' }));
    grid.append(svg('text', { x: gridW / 2, y: (top + bottomY) / 2 + 4, 'font-size': 11, 'text-anchor': 'middle', fill: '#6b717b' },
      `computing layers ${Math.min(...waiting)}–${Math.max(...waiting)}…`));
  }
  // Selected layer and target column.
  const sel = layers.indexOf(layer);
  if (sel >= 0) grid.append(svg('rect', { x: -1, y: yOf(sel) - 1, width: gridW + 2, height: ch + 2, fill: 'none', stroke: '#d55e00', 'stroke-width': 2, 'pointer-events': 'none' }));
  grid.append(svg('path', { d: `M${(target + 0.5) * cw},${gridH + 2} l-4,6 h8 z`, fill: '#d55e00' }));
  // Layer labels.
  const layerEvery = Math.max(1, Math.ceil(11 / ch));
  layers.forEach((l, li) => {
    if ((L - 1 - li) % layerEvery && li !== sel) return;
    grid.append(svg('text', {
      x: -6, y: yOf(li) + ch / 2 + 3.5, 'font-size': 10, 'text-anchor': 'end',
      fill: li === sel ? '#d55e00' : '#4a4f57', 'font-weight': li === sel ? 700 : 400,
    }, `L${l}`));
  });
  // Token labels, rotated.
  labels.forEach((s, j) => {
    if (j % labelEvery && j !== target) return;
    const x = (j + 0.5) * cw;
    grid.append(svg('text', {
      transform: `translate(${x + 3},${gridH + 12}) rotate(-55)`, 'font-size': 10, 'text-anchor': 'end',
      fill: j === target ? '#d55e00' : '#30353d', 'font-weight': j === target ? 700 : 400,
    }, s));
  });
  root.append(grid);
  if (legend) {
    const range = legendRange(scale, ready);
    root.append(legendGroup({ x: left, y: hgt - 30, width: Math.min(150, Math.max(100, gridW * 0.6)), ...range }));
  }
  return root;
}

/** The cell under a pointer event on a heatmap (rect or image), as {layer, index, value}. */
export function heatmapCellAt(event, result, target) {
  const el = event.target;
  if (el?.classList?.contains('hm-cell')) {
    return { layer: Number(el.dataset.layer), index: Number(el.dataset.index), value: Number(el.dataset.value) };
  }
  if (el?.classList?.contains('hm-image')) {
    const box = el.getBoundingClientRect();
    const n = Number(el.dataset.n);
    const layers = el.dataset.layers.split(',').map(Number);
    const j = Math.min(n - 1, Math.floor(((event.clientX - box.left) / box.width) * n));
    const yi = Math.min(layers.length - 1, Math.floor(((event.clientY - box.top) / box.height) * layers.length));
    const layer = layers[layers.length - 1 - yi];
    if (!result.has(layer, target)) return null;
    return { layer, index: j, value: result.scoresFor(layer, target)[j] };
  }
  return null;
}

export { fmt };
