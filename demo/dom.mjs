// DOM helpers of the page. The safe builders (h, svg) and the token labels are the package's
// (web/view/), shared with its drop-in view.
import { FONT } from '../web/view/dom.mjs';

/**
 * Puts `el` as the `k`-th child of `root`, in place of the one there: a view redrawn a part per
 * task keeps its height meanwhile. Children after the last part are removed with trimChildren.
 */
export function placeChild(root, k, el) {
  const old = root.children[k];
  if (old) old.replaceWith(el);
  else root.append(el);
}

export function trimChildren(root, count) {
  while (root.children.length > count) root.lastElementChild.remove();
}

export function clear(node) {
  while (node.firstChild) node.firstChild.remove();
  return node;
}

let measureCtx = null;
let measureFont = '';
/** Width in px of `text` in the given font size (for laying out SVG text without the DOM). */
export function textWidth(text, size = 12, weight = 'normal') {
  measureCtx ??= document.createElement('canvas').getContext('2d');
  const font = `${weight} ${size}px ${FONT}`;
  // Setting the font parses it, even when unchanged: labels of 512 tokens are measured in a row.
  if (font !== measureFont) {
    measureCtx.font = font;
    measureFont = font;
  }
  return measureCtx.measureText(text).width;
}
