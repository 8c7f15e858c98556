// A drop-in view for pages that embed attnflow: a Result drawn as token strips, one per row, each
// input token a cell shaded by its score. It brings its own small stylesheet and needs no build
// step and no CSS file. Token strings are untrusted: they only ever go in as text.
import { fail, shown } from './errors.mjs';
import { FONT, h } from './view/dom.mjs';
import { PALETTES, color, textColor } from './view/colors.mjs';
import { fmt, ranks, showToken, tokenLabel } from './view/labels.mjs';

const SCALES = ['row', 'absolute'];

// Class selectors only, all prefixed: nothing applies outside the view. One class outweighs a
// page's element rules (`button { ... }`); a page restyles the view with a more specific selector.
const CSS = `
.attnflow-strips { display: flex; flex-direction: column; gap: 10px; font-family: ${FONT}; }
.attnflow-caption { margin: 0 0 4px; font-size: 12px; line-height: 1.3; }
.attnflow-cells { display: flex; flex-wrap: wrap; gap: 3px; margin: 0; padding: 0; }
.attnflow-cell {
  box-sizing: border-box; min-width: 20px; max-width: 100%; height: 26px; margin: 0; padding: 0 6px;
  border: 0; border-radius: 3px; box-shadow: inset 0 0 0 1px rgba(0, 0, 0, 0.08);
  font: inherit; font-size: 14px; line-height: 26px; text-align: center;
  white-space: pre; overflow: hidden; text-overflow: ellipsis;
}
button.attnflow-cell { cursor: pointer; }
button.attnflow-cell:hover { filter: brightness(1.1); }
.attnflow-cell:focus-visible { outline: 3px solid #0a6cff; outline-offset: 2px; }
`;

let sheet = null;
/**
 * Adds the stylesheet once to the document or shadow root the container is in. A constructed
 * sheet, not a <style> element: a page whose Content-Security-Policy says `style-src 'self'`
 * blocks inline <style> but not this (nor colours set through element.style).
 */
function adoptStyles(container) {
  if (!sheet) {
    sheet = new CSSStyleSheet();
    sheet.replaceSync(CSS);
  }
  const root = container.getRootNode();
  const scope = root.adoptedStyleSheets ? root : document;
  if (!scope.adoptedStyleSheets.includes(sheet)) scope.adoptedStyleSheets = [...scope.adoptedStyleSheets, sheet];
}

/** The options with their defaults, checked against the result (AttnflowError E_OPTION). */
function resolveOptions(result, options) {
  if (options === null || typeof options !== 'object') fail('E_OPTION', `options must be an object (got ${options === null ? 'null' : typeof options})`);
  const layer = options.layer ?? Math.max(...result.layers);
  if (!result.layers.includes(layer)) {
    fail('E_OPTION', `layer ${shown(layer)} is not in this result (layers ${result.layers.join(', ')}; layers are 1-based)`);
  }
  const rows = options.rows ?? result.rows;
  if (!Array.isArray(rows)) fail('E_OPTION', `rows must be a list of the result's rows (got ${shown(rows)})`);
  for (const row of rows) {
    if (!result.rows.includes(row)) {
      fail('E_OPTION', `rows: ${shown(row)} is not in this result (rows ${result.rows.length > 10 ? `${result.rows.length} rows` : result.rows.join(', ')})`);
    }
  }
  const palette = options.palette ?? 'viridis';
  if (!Object.hasOwn(PALETTES, palette)) {
    fail('E_OPTION', `palette must be one of ${Object.keys(PALETTES).join(', ')} (got ${shown(palette)})`);
  }
  const scale = options.scale ?? 'row';
  if (!SCALES.includes(scale)) fail('E_OPTION', `scale must be one of ${SCALES.join(', ')} (got ${shown(scale)})`);
  const { onSelect } = options;
  if (onSelect !== undefined && typeof onSelect !== 'function') fail('E_OPTION', 'onSelect must be a function (index, row) => void');
  const defaultLabel = (row) => `${result.method}, layer ${layer}, target ${row} “${tokenLabel(result.tokens[row])}”`;
  const label = options.label ?? defaultLabel;
  if (typeof label !== 'function') fail('E_OPTION', 'label must be a function (row, layer) => string');
  return { layer, rows, palette, scale, onSelect, label };
}

/**
 * Draws one strip per row of `result` into `container` (its content is replaced): every input
 * token a cell shaded by its score at one layer. Returns the view's root element.
 * Types and options: web/view.d.ts.
 */
export function renderTokenStrips(container, result, options = {}) {
  if (typeof document === 'undefined') {
    fail('E_OPTION', 'renderTokenStrips draws into a web page: there is no document here (call it in a browser)');
  }
  if (container?.nodeType !== Node.ELEMENT_NODE) fail('E_OPTION', 'container must be an HTML element');
  if (!Array.isArray(result?.tokens) || !Array.isArray(result.layers) || result.layers.length === 0
      || !Array.isArray(result.rows) || typeof result.scoresFor !== 'function') {
    fail('E_OPTION', 'result must be a Result of compute() (tokens, layers, rows, scoresFor)');
  }
  const { layer, rows, palette, scale, onSelect, label } = resolveOptions(result, options);
  const { tokens } = result;

  const root = h('div', { class: 'attnflow-strips', 'data-layer': layer });
  for (const row of rows) {
    const values = result.scoresFor(layer, row);
    let max = 0;
    for (const v of values) if (v > max) max = v;
    const shade = scale === 'row' ? (v) => (max > 0 ? v / max : 0) : (v) => v;
    const rank = ranks(values);
    const caption = String(label(row, layer));
    // Buttons only when there is something to do; otherwise a list of labelled items.
    const cells = h('div', { class: 'attnflow-cells', role: onSelect ? 'group' : 'list', 'aria-label': caption || undefined });
    values.forEach((v, i) => {
      const name = `${tokens[i] === '' ? 'empty token' : showToken(tokens[i])}: ${fmt(v, 6)}, rank ${rank[i]} of ${values.length}`;
      const cell = h(onSelect ? 'button' : 'span', {
        class: 'attnflow-cell',
        type: onSelect ? 'button' : undefined,
        role: onSelect ? undefined : 'listitem',
        tabindex: onSelect ? (i === 0 ? 0 : -1) : undefined,  // one tab stop per strip (roving)
        'data-index': i,
        'data-value': String(v),
        title: name,
        'aria-label': name,
      }, tokenLabel(tokens[i]));
      // Through element.style, which a strict style-src allows (a style attribute it would not).
      const t = shade(v);
      cell.style.backgroundColor = color(t, palette);
      cell.style.color = textColor(t, palette);
      cells.append(cell);
    });
    root.append(h('div', { class: 'attnflow-strip', 'data-row': row }, [
      caption ? h('div', { class: 'attnflow-caption' }, caption) : null,
      cells,
    ]));
  }
  if (onSelect) wireSelection(root, onSelect);
  adoptStyles(container);
  container.replaceChildren(root);
  return root;
}

/**
 * Click (and Enter or Space, which click a button) calls onSelect; arrow keys, Home and End move
 * the focus within a strip and take its one tab stop along.
 */
function wireSelection(root, onSelect) {
  const cellOf = (e) => e.target.closest?.('.attnflow-cell');
  root.addEventListener('click', (e) => {
    const cell = cellOf(e);
    if (cell) onSelect(Number(cell.dataset.index), Number(cell.closest('.attnflow-strip').dataset.row));
  });
  root.addEventListener('keydown', (e) => {
    const cell = cellOf(e);
    if (!cell) return;
    const strip = cell.parentElement;
    const next = {
      ArrowRight: cell.nextElementSibling,
      ArrowLeft: cell.previousElementSibling,
      Home: strip.firstElementChild,
      End: strip.lastElementChild,
    }[e.key];
    if (!next) return;
    e.preventDefault();
    next.focus();
  });
  root.addEventListener('focusin', (e) => {
    const cell = cellOf(e);
    if (!cell) return;
    for (const other of cell.parentElement.querySelectorAll('[tabindex="0"]')) other.tabIndex = -1;
    cell.tabIndex = 0;
  });
}
