// Safe DOM builders. Text (tokens are untrusted) only ever goes in through createTextNode, never
// as markup; attributes are set one by one with setAttribute (no "on*" names accepted).
const SVG_NS = 'http://www.w3.org/2000/svg';

/** The system UI font stack of the explorer and the drop-in view (no web font is loaded). */
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
