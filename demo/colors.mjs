// The page's colours: the package's palettes (web/view/colors.mjs) in the palette the user chose,
// and the legends of the views.
import * as palette from '../web/view/colors.mjs';
import { fmt } from '../web/view/labels.mjs';
import { svg } from '../web/view/dom.mjs';

export { PALETTES } from '../web/view/colors.mjs';

export const PALETTE_NAMES = { viridis: 'viridis', cividis: 'cividis', blues: 'blues (light)' };

let current = 'viridis';
export function setPalette(name) {
  if (palette.PALETTES[name]) current = name;
}

/** The palette in use, by name (for the package's drop-in views). */
export const paletteName = () => current;

/** rgb(t) written to out[o..o+2], allocating nothing (heatmap pixels). */
export const rgbInto = (out, o, t) => palette.rgbInto(out, o, t, current);
export const color = (t) => palette.color(t, current);
/** Black or white, whichever reads better on color(t). */
export const textColor = (t) => palette.textColor(t, current);

/**
 * A horizontal legend as an SVG group: gradient bar from `min` to `max` with ticks.
 * Returns the <g>; the gradient gets a unique id (several legends can share a page).
 */
let legendId = 0;
export function legendGroup({ x = 0, y = 0, width = 160, height = 10, min = 0, max = 1, label = '' }) {
  const id = `af-legend-${++legendId}`;
  const stops = [];
  for (let k = 0; k <= 20; k++) stops.push(svg('stop', { offset: `${k * 5}%`, 'stop-color': color(k / 20) }));
  const g = svg('g', { transform: `translate(${x},${y})`, class: 'legend' }, [
    svg('defs', {}, [svg('linearGradient', { id, x1: '0', x2: '1', y1: '0', y2: '0' }, stops)]),
    svg('rect', { x: 0, y: 0, width, height, fill: `url(#${id})`, stroke: '#8a8f98', 'stroke-width': 0.5 }),
  ]);
  const steps = width >= 180 ? 4 : 2;  // fewer ticks on short bars, so labels never collide
  for (let k = 0; k <= steps; k++) {
    const tx = (k / steps) * width;
    g.append(svg('line', { x1: tx, x2: tx, y1: height, y2: height + 3, stroke: '#5b616b', 'stroke-width': 0.75 }));
    g.append(svg('text', {
      x: tx, y: height + 13, 'font-size': 10, fill: '#4a4f57',
      'text-anchor': k === 0 ? 'start' : k === steps ? 'end' : 'middle',
    }, fmt(min + (k / steps) * (max - min), 3)));
  }
  if (label) g.append(svg('text', { x: width + 8, y: height - 1, 'font-size': 10, fill: '#4a4f57' }, label));
  return g;
}
