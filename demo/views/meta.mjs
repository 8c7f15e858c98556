// The input file's "meta" (if any): the model's label and prediction, per-token importance from
// other methods (blank-out, gradient) as strips, and Spearman's rank correlation of each
// attention method with them, layer by layer (the paper's Table 2 analysis, for the target row).
import { textWidth } from '../dom.mjs';
import { FONT, h, svg } from '../../web/view/dom.mjs';
import { cellShown, clipToken, ellipsize, fmt, showToken, tokenLabel } from '../../web/view/labels.mjs';
import { color, textColor } from '../colors.mjs';
import { METHOD_LABEL, paint, scaler } from './common.mjs';

const MEASURES = { blankout: 'Blank-out', gradient: 'Input gradient' };

/** The importance arrays of `meta` that match the tokens: [{key, label, values}]. */
export function importance(meta, n) {
  if (!meta || typeof meta !== 'object') return [];
  return Object.keys(MEASURES)
    .filter((k) => Array.isArray(meta[k]) && meta[k].length === n && meta[k].every((v) => typeof v === 'number' && Number.isFinite(v)))
    .map((k) => ({ key: k, label: MEASURES[k], values: meta[k] }));
}

function averageRanks(values) {
  const idx = [...values.keys()].sort((a, b) => values[a] - values[b]);
  const r = new Array(values.length);
  for (let k = 0; k < idx.length;) {
    let e = k;
    while (e + 1 < idx.length && Math.abs(values[idx[e + 1]] - values[idx[k]]) <= 1e-12) e++;
    for (let q = k; q <= e; q++) r[idx[q]] = (k + e) / 2 + 1;
    k = e + 1;
  }
  return r;
}

/** Spearman's rho with average ranks for ties (NaN when a side is constant). */
export function spearman(a, b) {
  const ra = averageRanks(Array.from(a));
  const rb = averageRanks(Array.from(b));
  const n = ra.length;
  const ma = ra.reduce((s, v) => s + v, 0) / n;
  const mb = rb.reduce((s, v) => s + v, 0) / n;
  let num = 0;
  let da = 0;
  let db = 0;
  for (let i = 0; i < n; i++) {
    num += (ra[i] - ma) * (rb[i] - mb);
    da += (ra[i] - ma) ** 2;
    db += (rb[i] - mb) ** 2;
  }
  return da > 0 && db > 0 ? num / Math.sqrt(da * db) : NaN;
}

/**
 * Renders into `root` (an element that is replaced wholesale). Returns false when the input has
 * no meta to show.
 */
export function renderMeta(root, { tokens, meta, methods, results, target, layer, scale, numLayers }) {
  const measures = importance(meta, tokens.length);
  const parts = [];
  const facts = [];
  const cls = (v) => (v === 0 ? 'singular (0)' : v === 1 ? 'plural (1)' : String(v));
  if (meta && (typeof meta.label === 'number' || typeof meta.prediction === 'number')) {
    if (typeof meta.label === 'number') facts.push(['label', cls(meta.label)]);
    if (typeof meta.prediction === 'number') facts.push(['prediction', cls(meta.prediction)]);
    if (typeof meta.label === 'number' && typeof meta.prediction === 'number') {
      facts.push(['', meta.label === meta.prediction ? '✓ correct' : '✗ misclassified']);
    }
  }
  if (meta && typeof meta.description === 'string') facts.push(['note', meta.description]);
  if (!measures.length && !facts.length) return false;
  if (facts.length) {
    parts.push(h('dl', { class: 'facts' }, facts.flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v)])));
  }
  for (const m of measures) {
    const norm = scaler(scale === 'abs' ? 'row' : scale, [m.values])(m.values);
    const cells = h('div', { class: 'strip-cells' });
    m.values.forEach((v, i) => {
      const cell = h('span', {
        class: 'tok static', 'data-testid': 'meta-score', 'data-measure': m.key, 'data-index': i,
        'data-value': String(v), 'data-tip': fmt(v, 6), tabindex: -1, 'data-shown': cellShown(tokens[i]),
      }, clipToken(tokens[i]));
      paint(cell, norm(v));
      cells.append(cell);
    });
    parts.push(h('div', { class: 'strip' }, [
      h('div', { class: 'strip-label' }, [h('span', { class: 'method-name' }, m.label), h('span', { class: 'strip-sub' }, 'from the input file (meta)')]),
      cells,
    ]));
  }
  if (measures.length) {
    const head = h('tr', {}, [h('th', { scope: 'col' }, 'layer'),
      ...methods.flatMap((meth) => measures.map((m) => h('th', { scope: 'col' }, [h('span', { class: `method-name m-${meth}` }, METHOD_LABEL[meth].replace('Attention ', '').replace(' attention', '')), h('br'), `vs ${m.label.toLowerCase()}`])))]);
    const layers = Array.from({ length: numLayers }, (_, k) => k + 1);
    const body = layers.map((l) => h('tr', { class: l === layer ? 'is-layer' : '' }, [
      h('th', { scope: 'row' }, `L${l}`),
      ...methods.flatMap((meth) => measures.map((m) => {
        if (!results[meth].has(l, target)) return h('td', {}, '…');
        const rho = spearman(results[meth].scoresFor(l, target), m.values);
        const cell = h('td', { 'data-rho': String(rho) }, Number.isFinite(rho) ? rho.toFixed(2) : '–');
        // A light single-hue scale for rho >= 0 (negative stays white): the table stays readable.
        if (Number.isFinite(rho)) {
          cell.style.backgroundColor = color(Math.max(0, rho) * 0.85, 'blues');
          cell.style.color = textColor(Math.max(0, rho) * 0.85, 'blues');
        }
        return cell;
      })),
    ]));
    // Focusable, so the table scrolls from the keyboard where it is wider than the screen.
    parts.push(h('div', { class: 'table-wrap', tabindex: 0, role: 'region', 'aria-label': 'Spearman correlations, per layer' }, [
      h('table', { class: 'corr' }, [
        h('caption', {}, [`Spearman’s ρ between each method’s scores for target ${target} (“`, ellipsize(showToken(tokens[target]), 30), '”) and the importance scores, per layer']),
        h('thead', {}, head), h('tbody', {}, body)]),
    ]));
  }
  root.replaceChildren(...parts);
  return true;
}

/** The importance strips as SVG (export). */
export function metaSVG({ tokens, meta, title }) {
  const measures = importance(meta, tokens.length);
  const W = 1100;
  const pad = 16;
  const labelW = 150;
  const labels = tokens.map(tokenLabel);
  const widths = labels.map((t) => Math.max(18, textWidth(t, 13) + 12));
  const out = [];
  let y = 48;
  for (const m of measures) {
    const norm = scaler('row', [m.values])(m.values);
    out.push(svg('text', { x: pad, y: y + 16, 'font-size': 13, 'font-weight': 600, fill: '#1d2430' }, m.label));
    let x = pad + labelW;
    m.values.forEach((v, i) => {
      if (x + widths[i] > W - pad) { x = pad + labelW; y += 28; }
      const t = norm(v);
      out.push(svg('rect', { x, y, width: widths[i], height: 24, rx: 3, fill: color(t) }));
      out.push(svg('text', { x: x + widths[i] / 2, y: y + 16.5, 'font-size': 13, 'text-anchor': 'middle', fill: textColor(t) }, labels[i]));
      x += widths[i] + 4;
    });
    y += 38;
  }
  return svg('svg', { xmlns: 'http://www.w3.org/2000/svg', width: W, height: y + 10, viewBox: `0 0 ${W} ${y + 10}`, 'font-family': FONT }, [
    svg('rect', { width: W, height: y + 10, fill: '#ffffff' }),
    svg('text', { x: pad, y: 26, 'font-size': 15, 'font-weight': 600, fill: '#1d2430' }, title),
    ...out,
  ]);
}
