// The flow network as a layered graph: nodes (l, i) for layers 0..ℓ (inputs at the bottom), an
// edge (l, i) -> (l-1, j) for every residual-mixed attention weight A[l][i][j] above the
// threshold, width by weight. The minimum cut of the selected flow (source = target token at
// layer ℓ, sink = one input token) is drawn on top in vermillion.
import { textWidth } from '../dom.mjs';
import { FONT, svg } from '../../web/view/dom.mjs';
import { ellipsize, fmt, showToken } from '../../web/view/labels.mjs';
import { color, legendGroup } from '../colors.mjs';

export const MAX_EDGES = 6000;
const CUT = '#d55e00';
const EDGE = '#34466b';

/** Returns a function telling whether the current slice of work has run ~10 ms (then a new one starts). */
function timeSlicer(ms = 10) {
  let start = performance.now();
  return () => {
    if (performance.now() - start < ms) return false;
    start = performance.now();
    return true;
  };
}

/**
 * The graph as an <svg> element, built by a generator that yields wherever ~10 ms of work has
 * run, so that no main-thread task grows long (at L=24, n=512 building it was one task of 45-56 ms
 * on a 2.1 GHz VM: ~10 ms measuring the labels, ~28 ms the 512 input nodes); drain it, and its
 * return value is {svg, edgesShown, edgesTotal}.
 * @param {{tokens: string[], layer: number, target: number, sink: number,
 *   mixed: Float64Array[], threshold: number, filter: 'all'|'source'|'path',
 *   bottleneck: {value:number, cut:{layer:number,from:number,to:number,capacity:number}[], kind:string}|null,
 *   flowRow: Float64Array, alpha: number, discard?: number, width: number}} p mixed[l-1] is A[l], flat n*n.
 */
export function* graphSVG(p) {
  const { tokens, layer: top, target, sink, mixed, threshold, filter, bottleneck, flowRow, alpha, discard = 0 } = p;
  const n = tokens.length;
  const W = Math.max(480, p.width);
  const left = 64;
  const right = 18;
  const head = 34;
  const colW = (W - left - right) / n;
  const rowGap = Math.max(34, Math.min(72, 440 / Math.max(1, top)));
  const labelEvery = Math.max(1, Math.ceil(12 / colW));
  const labels = tokens.map((t) => ellipsize(showToken(t), 14));
  const rotate = labels.some((s, j) => j % labelEvery === 0 && textWidth(s, 11) > colW * labelEvery - 4);
  const labelLen = Math.max(...labels.map((s) => textWidth(s, 11)));
  const footer = (rotate ? labelLen * 0.8 + 16 : 22) + 58;
  const slice = timeSlicer();  // the labels were measured: ~10 ms for 512 tokens
  if (slice()) yield;
  const H = head + rowGap * top + 14 + footer;
  const x = (j) => left + (j + 0.5) * colW;
  const y = (l) => head + 10 + (top - l) * rowGap;

  // Which edges to draw: above the threshold, optionally only those reachable from the source
  // (and, for 'path', that can also reach the sink). At L=24, n=512 these scans read 6.3 million
  // weights (twice for 'path'): they yield (see the function's comment) when a slice has run long.
  const to = Array.from({ length: top + 1 }, () => new Uint8Array(n));
  to[0][sink] = 1;
  for (let l = 1; l <= top && filter === 'path'; l++) {
    const m = mixed[l - 1];
    for (let i = 0; i < n; i++) {
      for (let j = 0; j < n; j++) {
        const w = m[i * n + j];
        if (to[l - 1][j] && w >= threshold && w > 0) { to[l][i] = 1; break; }
      }
    }
    if (slice()) yield;
  }
  // Top down, one pass: from[l][i] (node (l, i) is reached from the source over edges above the
  // threshold) and the edges to draw, kept by layer so that they come out in layer order.
  const from = Array.from({ length: top + 1 }, () => new Uint8Array(n));
  from[top][target] = 1;
  const byLayer = Array.from({ length: top + 1 }, () => []);
  for (let l = top; l >= 1; l--) {
    const m = mixed[l - 1];
    for (let i = 0; i < n; i++) {
      if (filter !== 'all' && !from[l][i]) continue;
      for (let j = 0; j < n; j++) {
        const w = m[i * n + j];
        if (!(w >= threshold) || w <= 0) continue;
        from[l - 1][j] = 1;
        // On a path to the sink: j reaches it (and so, through this edge, does i).
        if (filter !== 'path' || to[l - 1][j]) byLayer[l].push([l, i, j, w]);
      }
    }
    if (slice()) yield;
  }
  const edges = byLayer.flat();
  let shown = edges;
  if (edges.length > MAX_EDGES) {
    shown = edges.sort((a, b) => b[3] - a[3]).slice(0, MAX_EDGES);
  }
  shown.sort((a, b) => a[3] - b[3]);  // heavy edges drawn last, on top

  const root = svg('svg', {
    xmlns: 'http://www.w3.org/2000/svg', viewBox: `0 0 ${W} ${H}`, width: W, height: H,
    'font-family': FONT, class: 'flowgraph', role: 'img',
    'aria-label': `Flow network from token ${target} at layer ${top} to the input tokens; minimum cut to token ${sink} highlighted`,
  });
  root.append(svg('rect', { width: W, height: H, fill: '#ffffff' }));
  root.append(svg('text', { x: left, y: 20, 'font-size': 13, 'font-weight': 600, fill: '#1d2430' },
    `Flow network: “${ellipsize(showToken(tokens[target]), 24)}” at layer ${top} → “${ellipsize(showToken(tokens[sink]), 24)}” (input), α = ${alpha}${discard ? `, discard ${discard}` : ''}`));

  // Layer guides and labels.
  for (let l = 0; l <= top; l++) {
    root.append(svg('line', { x1: left - 6, x2: W - right, y1: y(l), y2: y(l), stroke: '#eef0f3', 'stroke-width': 1 }));
    root.append(svg('text', { x: left - 12, y: y(l) + 4, 'font-size': 11, 'text-anchor': 'end', fill: '#4a4f57' },
      l === 0 ? 'input' : `L${l}`));
  }
  // Edges are grouped into a few width/opacity classes, one <path> per class: thousands of edges
  // then cost a handful of DOM nodes (fast to draw, small to export).
  const BUCKETS = 12;
  const paths = Array.from({ length: BUCKETS }, () => []);
  for (const [l, i, j, w] of shown) {
    const b = Math.min(BUCKETS - 1, Math.floor(w * BUCKETS));
    paths[b].push(`M${x(i).toFixed(1)} ${y(l).toFixed(1)}L${x(j).toFixed(1)} ${y(l - 1).toFixed(1)}`);
  }
  const edgeLayer = svg('g', { 'stroke-linecap': 'round', fill: 'none', stroke: EDGE });
  paths.forEach((segments, b) => {
    if (!segments.length) return;
    const w = (b + 0.5) / BUCKETS;
    edgeLayer.append(svg('path', {
      d: segments.join(''), 'stroke-width': (0.4 + 5.5 * w).toFixed(2), 'stroke-opacity': (0.18 + 0.62 * w).toFixed(3),
    }));
  });
  root.append(edgeLayer);
  const cutLayer = svg('g', { 'stroke-linecap': 'round' });
  const cut = bottleneck?.cut ?? [];
  for (const e of cut) {
    cutLayer.append(svg('line', {
      x1: x(e.from), y1: y(e.layer), x2: x(e.to), y2: y(e.layer - 1), stroke: CUT,
      'stroke-width': (1.5 + 5 * e.capacity).toFixed(2), 'stroke-opacity': 0.9, 'data-cut': '1',
    }, svg('title', {}, `cut edge L${e.layer}: ${showToken(tokens[e.from])} → ${showToken(tokens[e.to])} (capacity ${e.capacity})`)));
  }
  root.append(cutLayer);

  // Nodes. Input nodes are coloured by their flow score (normalised by the row's max).
  const r = Math.max(2, Math.min(6.5, colW * 0.3));
  let maxFlow = 0;
  for (const v of flowRow) if (v > maxFlow) maxFlow = v;
  const nodes = svg('g', {});
  // Inner nodes, as rings: every run of neighbouring nodes of one kind (active or idle) on a layer
  // is one subpath drawn twice with a dot per column (zero-length dashes with round caps), wide
  // in the ring's colour, then narrower in white. A few elements for any n, where a ring per node
  // (12,288 at L=24, n=512) took ~28 ms of one main-thread task to build and parse.
  const runs = { active: [], idle: [] };
  for (let l = 1; l <= top; l++) {
    let kind = null;
    let first = 0;
    for (let j = 0; j <= n; j++) {
      const next = j === n || (l === top && j === target) ? null : filter === 'all' || from[l][j] ? 'active' : 'idle';
      if (next === kind) continue;
      // Half a column past the last node: no dot is lost to rounding, and none is added.
      if (kind) runs[kind].push(`M${x(first).toFixed(2)} ${y(l).toFixed(1)}H${(x(j - 1) + colW / 2).toFixed(2)}`);
      kind = next;
      first = j;
    }
  }
  const dots = (d, stroke, width) => svg('path', {
    d, fill: 'none', stroke, 'stroke-width': width, 'stroke-linecap': 'round', 'stroke-dasharray': `0 ${colW.toFixed(3)}`,
  });
  for (const [kind, stroke] of [['idle', '#c9ced6'], ['active', '#5b6577']]) {
    if (!runs[kind].length) continue;
    const d = runs[kind].join('');
    nodes.append(dots(d, stroke, 2 * r + 1), dots(d, '#ffffff', 2 * r - 1));
  }
  nodes.append(svg('circle', { cx: x(target), cy: y(top), r: r + 2, fill: '#ffffff', stroke: CUT, 'stroke-width': 2.5 },
    svg('title', {}, `source: ${showToken(tokens[target])} at layer ${top}`)));
  for (let j = 0; j < n; j++) {
    // 512 of these took ~28 ms: a slice may end every 32.
    if (j % 32 === 0 && slice()) yield;
    const isSink = j === sink;
    nodes.append(svg('circle', {
      cx: x(j), cy: y(0), r: isSink ? r + 2 : r,
      fill: color(maxFlow > 0 ? flowRow[j] / maxFlow : 0),
      stroke: isSink ? CUT : '#5b6577', 'stroke-width': isSink ? 2.5 : 1,
      class: 'g-node g-input', 'data-layer': 0, 'data-index': j, 'data-value': String(flowRow[j]),
    }, svg('title', {}, `${showToken(tokens[j])}: flow ${fmt(flowRow[j], 6)}`)));
  }
  root.append(nodes);

  // Token labels under the inputs.
  const labelY = y(0) + 18;
  for (const [j, s] of labels.entries()) {
    if (j % labelEvery && j !== target && j !== sink) continue;
    if (j % 32 === 0 && slice()) yield;
    const bold = j === target || j === sink;
    root.append(svg('text', rotate
      ? { transform: `translate(${x(j) + 3},${labelY}) rotate(-50)`, 'font-size': 11, 'text-anchor': 'end', fill: bold ? CUT : '#30353d', 'font-weight': bold ? 700 : 400 }
      : { x: x(j), y: labelY, 'font-size': 11, 'text-anchor': 'middle', fill: bold ? CUT : '#30353d', 'font-weight': bold ? 700 : 400 }, s));
  }

  // Legend: edge widths, the cut, node colours.
  const ly = H - 34;
  const lg = svg('g', { transform: `translate(${left},${ly})`, 'font-size': 10, fill: '#4a4f57' });
  [0.1, 0.5, 1].forEach((w, k) => {
    const lx = k * 84;
    lg.append(svg('line', { x1: lx, x2: lx + 26, y1: 5, y2: 5, stroke: EDGE, 'stroke-width': 0.4 + 5.5 * w, 'stroke-opacity': 0.18 + 0.62 * w }));
    lg.append(svg('text', { x: lx + 31, y: 9 }, `A = ${w}`));
  });
  lg.append(svg('line', { x1: 262, x2: 288, y1: 5, y2: 5, stroke: CUT, 'stroke-width': 4 }));
  lg.append(svg('text', { x: 293, y: 9 }, 'minimum cut'));
  lg.append(svg('text', { x: 372, y: 9 }, `${shown.length}${edges.length > shown.length ? ` of ${edges.length}` : ''} edges ≥ ${fmt(threshold, 3)}`));
  root.append(lg);
  root.append(legendGroup({ x: Math.max(left + 520, W - right - 230), y: ly - 2, width: 140, min: 0, max: maxFlow || 1, label: 'flow (inputs)' }));
  return { svg: root, edgesShown: shown.length, edgesTotal: edges.length };
}
