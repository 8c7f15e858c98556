// Token strips: one row per (method, target); every input token shaded by its score at the
// selected layer. Cells follow the page's test contract (data-testid="token-score" etc.) and use
// a roving tabindex: Tab enters a strip, arrow keys move, Enter/Space makes the token the target.
import { placeChild, textWidth, trimChildren } from '../dom.mjs';
import { FONT, h, svg } from '../../web/view/dom.mjs';
import { cellShown, clipToken, fmt, ranks, showToken, tokenLabel } from '../../web/view/labels.mjs';
import { color, legendGroup, textColor } from '../colors.mjs';
import { METHOD_LABEL, METHOD_NOTE, paint, scaler, legendRange } from './common.mjs';

/** Cells built per step: a strip of 512 tokens took 15-17 ms to build on the 2-vCPU VMs measured,
 * and up to 52 ms in their slow spells, over a long task's 50 ms; half a strip stays under it. */
const CELLS_PER_STEP = 256;

/**
 * Draws the strips a part per step (a generator: the caller yields to the browser between steps,
 * so three 512-token strips are six tasks, each strip placed once whole, not one long task and
 * one long frame).
 * @param {HTMLElement} root
 * @param {{tokens: string[], layer: number, targets: number[], methods: string[],
 *          results: Record<string, import('../../web/client.mjs').WorkerResult>, scale: string,
 *          onSelect: (index: number, add: boolean) => void, onInspect: (info: object|null) => void}} p
 */
export function* renderStrips(root, p) {
  const { tokens, layer, targets, methods, results, scale } = p;
  const allRows = [];
  for (const m of methods) for (const t of targets) allRows.push(results[m].scoresFor(layer, t));
  const rowScaler = scaler(scale, allRows);
  let k = 0;
  for (const method of methods) {
    for (const target of targets) {
      const values = allRows[k++];
      const norm = rowScaler(values);
      const rank = ranks(values);
      // Exact ties at the top are common for flow (scores decided by the same cut): say so.
      const ties = rank.filter((r) => r === 1).length;
      const cells = h('div', { class: 'strip-cells', role: 'group', 'aria-label': `${METHOD_LABEL[method]}, layer ${layer}, target ${target}` });
      for (let i = 0; i < values.length; i++) {
        if (i > 0 && i % CELLS_PER_STEP === 0) yield;  // the strip is placed whole, below
        const v = values[i];
        const shown = cellShown(tokens[i]);
        const cell = h('button', {
          type: 'button',
          class: `tok${i === target ? ' is-target' : ''}`,
          'data-testid': 'token-score',
          'data-method': method,
          'data-layer': layer,
          'data-target': target,
          'data-index': i,
          'data-value': String(v),
          'data-tip': `${fmt(v, 6)} · rank ${rank[i]}`,
          'data-shown': shown,
          title: shown === undefined ? undefined : showToken(tokens[i]),
          'aria-label': `${tokens[i] === '' ? 'empty token' : showToken(tokens[i])}: ${String(v)}, rank ${rank[i]} of ${values.length}`,
          tabindex: i === target ? 0 : -1,
        }, clipToken(tokens[i]));
        paint(cell, norm(v));
        cells.append(cell);
      }
      placeChild(root, k - 1, h('div', { class: 'strip', 'data-method': method }, [
        h('div', { class: 'strip-label' }, [
          h('span', { class: `method-name m-${method}` }, METHOD_LABEL[method]),
          h('span', { class: 'strip-sub' }, targets.length > 1
            ? `target ${target} · ${METHOD_NOTE[method]}`
            : METHOD_NOTE[method]),
          ties > 1 ? h('span', { class: 'strip-ties' }, `${ties} tokens tie for the top score`) : null,
        ]),
        cells,
      ]));
      yield;
    }
  }
  trimChildren(root, k);
}

/** Wires the strip container once: delegation for click, keys, hover and focus. */
export function wireStrips(root, { onSelect, onInspect }) {
  const cellOf = (e) => e.target.closest?.('[data-testid="token-score"]');
  root.addEventListener('click', (e) => {
    const cell = cellOf(e);
    if (cell) onSelect(Number(cell.dataset.index), e.shiftKey || e.ctrlKey || e.metaKey);
  });
  root.addEventListener('keydown', (e) => {
    const cell = cellOf(e);
    if (!cell) return;
    const sib = { ArrowRight: 'nextElementSibling', ArrowLeft: 'previousElementSibling' }[e.key];
    let next = null;
    if (sib) next = cell[sib];
    else if (e.key === 'Home') next = cell.parentElement.firstElementChild;
    else if (e.key === 'End') next = cell.parentElement.lastElementChild;
    if (next) {
      e.preventDefault();
      cell.setAttribute('tabindex', '-1');
      next.setAttribute('tabindex', '0');
      next.focus();
    }
  });
  const show = (e) => {
    const cell = cellOf(e);
    if (cell) onInspect(cellInfo(cell));
  };
  root.addEventListener('mouseover', show);
  root.addEventListener('focusin', show);
  root.addEventListener('mouseleave', () => onInspect(null));
}

function cellInfo(cell) {
  const d = cell.dataset;
  return { method: d.method, layer: Number(d.layer), target: Number(d.target), index: Number(d.index), value: Number(d.value) };
}

/** The strips as a standalone SVG (for export), laid out like the page, wrapped at `maxWidth`. */
export function stripsSVG({ tokens, layer, targets, methods, results, scale, title }) {
  const maxWidth = 1100;
  const labelW = 150;
  const pad = 16;
  const cellH = 24;
  const gap = 4;
  const allRows = [];
  for (const m of methods) for (const t of targets) allRows.push(results[m].scoresFor(layer, t));
  const rowScaler = scaler(scale, allRows);
  const labels = tokens.map(tokenLabel);
  const widths = labels.map((t) => Math.max(18, textWidth(t, 13) + 12));
  const rowsSvg = [];
  let y = 48;
  let k = 0;
  for (const method of methods) {
    for (const target of targets) {
      const values = allRows[k++];
      const norm = rowScaler(values);
      const g = svg('g', {});
      g.append(svg('text', { x: pad, y: y + 16, 'font-size': 13, 'font-weight': 600, fill: '#1d2430' }, METHOD_LABEL[method]));
      if (targets.length > 1) g.append(svg('text', { x: pad, y: y + 30, 'font-size': 10, fill: '#5b616b' }, `target ${target}`));
      let x = pad + labelW;
      let lineY = y;
      values.forEach((v, i) => {
        if (x + widths[i] > maxWidth - pad) {
          x = pad + labelW;
          lineY += cellH + gap;
        }
        const t = norm(v);
        g.append(svg('rect', { x, y: lineY, width: widths[i], height: cellH, rx: 3, fill: color(t), stroke: i === target ? '#d55e00' : 'none', 'stroke-width': 2 }));
        g.append(svg('text', { x: x + widths[i] / 2, y: lineY + 16.5, 'font-size': 13, 'text-anchor': 'middle', fill: textColor(t) }, labels[i]));
        x += widths[i] + gap;
      });
      rowsSvg.push(g);
      y = lineY + cellH + 14;
    }
  }
  const range = legendRange(scale, allRows);
  const height = y + 36;
  return svg('svg', {
    xmlns: 'http://www.w3.org/2000/svg', width: maxWidth, height, viewBox: `0 0 ${maxWidth} ${height}`,
    'font-family': FONT,
  }, [
    svg('rect', { width: maxWidth, height, fill: '#ffffff' }),
    svg('text', { x: pad, y: 26, 'font-size': 15, 'font-weight': 600, fill: '#1d2430' }, title),
    ...rowsSvg,
    legendGroup({ x: pad + labelW, y: y + 2, width: 200, ...range }),
  ]);
}
