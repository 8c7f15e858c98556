// Safe DOM builders. Text (tokens are untrusted) only ever goes in through createTextNode, never
// as markup; attributes are set one by one with setAttribute (no "on*" names accepted).
const SVG_NS = 'http://www.w3.org/2000/svg';

export const FONT = 'system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif';

function fill(node, attrs, children) {
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (v === undefined || v === null || v === false) continue;
    if (/^on/i.test(k)) throw new Error(`refusing event-handler attribute ${k}`);
    node.setAttribute(k, v === true ? '' : String(v));
  }
  const list = children === undefined || children === null ? [] : Array.isArray(children) ? children : [children];
  for (const c of list) {
    if (c === null || c === undefined || c === false) continue;
    node.append(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c);
  }
  return node;
}

/** An HTML element: h('button', {class: 'x'}, ['text', child]). */
export function h(tag, attrs, children) {
  return fill(document.createElement(tag), attrs, children);
}

/** An SVG element with presentation attributes (no CSS needed, so exports look the same). */
export function svg(tag, attrs, children) {
  return fill(document.createElementNS(SVG_NS, tag), attrs, children);
}

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

/** Shortens long tokens for axis labels (the full text stays available in titles and tooltips). */
export function ellipsize(text, max = 14) {
  const chars = [...text];
  return chars.length > max ? `${chars.slice(0, max - 1).join('')}…` : text;
}

// Characters that change the direction of the text around them: inside a token they would
// reorder the page's own text after it (a caption, the read-out), so they are shown by name.
const BIDI_CONTROLS = {
  '\u061c': 'ALM', '\u200e': 'LRM', '\u200f': 'RLM', '\u202a': 'LRE', '\u202b': 'RLE', '\u202c': 'PDF',
  '\u202d': 'LRO', '\u202e': 'RLO', '\u2066': 'LRI', '\u2067': 'RLI', '\u2068': 'FSI', '\u2069': 'PDI',
};
const BIDI_PATTERN = new RegExp(`[${Object.keys(BIDI_CONTROLS).join('')}]`, 'g');

/**
 * A visible form of a token: whitespace and direction controls made visible, so " ", "\n" and
 * "" tokens do not vanish and no token reorders the text around it.
 */
export function showToken(text) {
  if (text === '') return '∅';
  return text.replace(/\n/g, '⏎').replace(/\t/g, '⇥').replace(/^ +| +$/g, (m) => '·'.repeat(m.length))
    .replace(BIDI_PATTERN, (c) => `⟨${BIDI_CONTROLS[c]}⟩`);
}

/** A token as a cell shows it: its visible form, at most 24 characters (longer would widen the page). */
export const tokenLabel = (text) => ellipsize(showToken(text), 24);

/**
 * The label of a token cell whose text (the token itself, as the page's test contract says)
 * would not show as it is: blank, invisible or direction-changing characters, or too long. The
 * cell shows it instead (CSS, `data-shown`); undefined when the token shows as itself.
 */
export function cellShown(text) {
  const label = tokenLabel(text);
  return label === text ? undefined : label;
}
