// Colour-blind-safe sequential scales, interpolated from small tables of stops (no dependency).
// viridis and cividis are perceptually uniform and readable with every common colour-vision
// deficiency (cividis is designed for it); "blues" is ColorBrewer's single-hue sequential scale.
// Every function takes the palette by name: the explorer keeps its current palette itself.

export const PALETTES = {
  viridis: ['#440154', '#482475', '#414487', '#355f8d', '#2a788e', '#21918c', '#22a884', '#44bf70', '#7ad151', '#bddf26', '#fde725'],
  cividis: ['#00204c', '#00336f', '#39486b', '#575c6e', '#707173', '#8a8779', '#a59c74', '#c3b369', '#e1cc55', '#f0dc48', '#fee838'],
  blues: ['#f7fbff', '#deebf7', '#c6dbef', '#9ecae1', '#6baed6', '#4292c6', '#2171b5', '#08519c', '#08306b'],
};

const parsed = Object.fromEntries(Object.entries(PALETTES).map(([k, stops]) => [k, stops.map((h) => [
  parseInt(h.slice(1, 3), 16), parseInt(h.slice(3, 5), 16), parseInt(h.slice(5, 7), 16)])]));

/** [r, g, b] of `palette` at t in [0, 1] (clamped; NaN -> 0). */
export function rgb(t, palette) {
  const out = [0, 0, 0];
  rgbInto(out, 0, t, palette);
  return out;
}

/**
 * rgb(t, palette) written to out[o..o+2], allocating nothing: a 512-token heatmap colours 12,288
 * pixels, and an array per pixel cost a few ms of its task, and garbage collections.
 */
export function rgbInto(out, o, t, palette) {
  const stops = parsed[palette];
  const x = Math.min(1, Math.max(0, Number.isFinite(t) ? t : 0)) * (stops.length - 1);
  const i = Math.min(stops.length - 2, Math.floor(x));
  const f = x - i;
  const a = stops[i];
  const b = stops[i + 1];
  for (let k = 0; k < 3; k++) out[o + k] = Math.round(a[k] + (b[k] - a[k]) * f);
}

const hex2 = (v) => v.toString(16).padStart(2, '0');
/** '#rrggbb' of `palette` at t in [0, 1]. */
export function color(t, palette) {
  const [r, g, b] = rgb(t, palette);
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

/** Black or white, whichever has the higher WCAG contrast on color(t, palette): at least 4.58:1 (WCAG AA asks 4.5). */
export function textColor(t, palette) {
  const background = luminance(rgb(t, palette));
  return contrast(background, 1) >= contrast(background, DARK_TEXT) ? '#ffffff' : '#000000';
}
