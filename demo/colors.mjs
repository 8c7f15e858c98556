// Colour-blind-safe sequential scales, interpolated from small tables of stops (no dependency).
// viridis and cividis are perceptually uniform and readable with every common colour-vision
// deficiency (cividis is designed for it); "blues" is ColorBrewer's single-hue sequential scale.
import { svg } from './dom.mjs';

export const PALETTES = {
  viridis: ['#440154', '#482475', '#414487', '#355f8d', '#2a788e', '#21918c', '#22a884', '#44bf70', '#7ad151', '#bddf26', '#fde725'],
  cividis: ['#00204c', '#00336f', '#39486b', '#575c6e', '#707173', '#8a8779', '#a59c74', '#c3b369', '#e1cc55', '#f0dc48', '#fee838'],
  blues: ['#f7fbff', '#deebf7', '#c6dbef', '#9ecae1', '#6baed6', '#4292c6', '#2171b5', '#08519c', '#08306b'],
};

export const PALETTE_NAMES = { viridis: 'viridis', cividis: 'cividis', blues: 'blues (light)' };

const parsed = Object.fromEntries(Object.entries(PALETTES).map(([k, stops]) => [k, stops.map((h) => [
  parseInt(h.slice(1, 3), 16), parseInt(h.slice(3, 5), 16), parseInt(h.slice(5, 7), 16)])]));

let current = 'viridis';
export function setPalette(name) {
  if (parsed[name]) current = name;
}
export function paletteName() {
  return current;
}

/** [r, g, b] for t in [0, 1] (clamped; NaN -> 0). */
export function rgb(t, name = current) {
  const out = [0, 0, 0];
  rgbInto(out, 0, t, name);
  return out;
}

/**
 * rgb(t) written to out[o..o+2], allocating nothing: a 512-token heatmap colours 12,288 pixels,
 * and an array per pixel cost a few ms of its task, and garbage collections.
 */
export function rgbInto(out, o, t, name = current) {
  const stops = parsed[name];
  const x = Math.min(1, Math.max(0, Number.isFinite(t) ? t : 0)) * (stops.length - 1);
  const i = Math.min(stops.length - 2, Math.floor(x));
  const f = x - i;
  const a = stops[i];
  const b = stops[i + 1];
  for (let k = 0; k < 3; k++) out[o + k] = Math.round(a[k] + (b[k] - a[k]) * f);
}

const hex2 = (v) => v.toString(16).padStart(2, '0');
export function color(t, name = current) {
  const [r, g, b] = rgb(t, name);
  return `#${hex2(r)}${hex2(g)}${hex2(b)}`;
}

/** WCAG relative luminance of an [r, g, b] colour. */
function luminance(channels) {
  const [r, g, b] = channels.map((v) => {
    const c = v / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}

const DARK_TEXT = 0;  // black: against #111 the colours where both are equally good reach only 4.35:1
const contrast = (a, b) => (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);

/** Black or white, whichever has the higher WCAG contrast on colour(t): at least 4.58:1 (WCAG AA asks 4.5). */
export function textColor(t, name = current) {
  const background = luminance(rgb(t, name));
  return contrast(background, 1) >= contrast(background, DARK_TEXT) ? '#ffffff' : '#000000';
}

/** A compact number for labels: 0.1234, 1.2e-5. */
export function fmt(v, digits = 4) {
  if (!Number.isFinite(v)) return String(v);
  if (v === 0) return '0';
  const a = Math.abs(v);
  if (a >= 1e-3 && a < 1e4) return Number(v.toFixed(digits)).toString();
  return v.toExponential(2);
}

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
