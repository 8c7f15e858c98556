// Shared by the views: method names, colour scaling and the value read-out.
import { color, textColor } from '../colors.mjs';

export const METHODS = ['raw', 'rollout', 'flow'];
export const METHOD_LABEL = { raw: 'Raw attention', rollout: 'Attention rollout', flow: 'Attention flow' };
export const METHOD_NOTE = {
  raw: 'fused heads of this layer, no residual',
  rollout: 'products of residual-mixed layers 1…ℓ',
  flow: 'exact max-flow through layers 1…ℓ',
};

/**
 * Maps a row of scores to [0, 1] for colouring. mode 'row': divide by the row's max (shows the
 * distribution at every layer); 'view': by the max over all rows given; 'abs': the score itself.
 */
export function scaler(mode, rows) {
  if (mode === 'abs') return () => (v) => v;
  if (mode === 'view') {
    let m = 0;
    for (const r of rows) for (const v of r) if (v > m) m = v;
    return () => (v) => (m > 0 ? v / m : 0);
  }
  return (row) => {
    let m = 0;
    for (const v of row) if (v > m) m = v;
    return (v) => (m > 0 ? v / m : 0);
  };
}

export function legendRange(mode, rows) {
  if (mode === 'abs') return { min: 0, max: 1, label: 'score' };
  if (mode === 'view') {
    let m = 0;
    for (const r of rows) for (const v of r) if (v > m) m = v;
    return { min: 0, max: m || 1, label: 'score' };
  }
  return { min: 0, max: 1, label: '× row max' };
}

export function paint(el, t) {
  el.style.backgroundColor = color(t);
  el.style.color = textColor(t);
}
