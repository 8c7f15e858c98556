// A drop-in view for pages that embed attnflow: a Result drawn as token strips, one per row, each
// input token a cell shaded by its score, or, for a Vision Transformer, one row drawn over the
// image's patches. It brings its own small stylesheet and needs no build step and no CSS file.
// Token strings are untrusted: they only ever go in as text.
import { fail, shown } from './errors.mjs';
import { checkKnownOptions } from './options.mjs';
import { FONT, h } from './view/dom.mjs';
import { PALETTES, color, textColor } from './view/colors.mjs';
import { fmt, ranks, showToken, tokenLabel } from './view/labels.mjs';
import { patchLayout } from './view/patches.mjs';

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
.attnflow-cell:focus-visible, .attnflow-patch-canvas:focus-visible { outline: 3px solid #0a6cff; outline-offset: 2px; }
.attnflow-patches { display: inline-flex; flex-direction: column; gap: 4px; margin: 0; font-family: ${FONT}; }
.attnflow-patch-area { position: relative; line-height: 0; }
.attnflow-patch-canvas { display: block; }
.attnflow-patch-canvas.attnflow-selectable { cursor: pointer; }
.attnflow-patch-cursor {
  position: absolute; box-sizing: border-box; pointer-events: none;
  border: 2px solid #ffffff; box-shadow: 0 0 0 1px #000000, inset 0 0 0 1px #000000;
}
.attnflow-patch-info { font-size: 12px; line-height: 1.3; min-height: 1.3em; }
`;

// One sheet per document: a constructed sheet can be adopted only by the document that made it
// (and its shadow roots), so a view drawn into a same-origin iframe needs that frame's own.
const sheets = new WeakMap();
/**
 * Adds the stylesheet once to the document or shadow root `node` is in. A constructed sheet, not
 * a <style> element: a page whose Content-Security-Policy says `style-src 'self'` blocks inline
 * <style> but not this (nor colours set through element.style).
 */
function adoptStylesAt(node) {
  const doc = node.ownerDocument;
  let sheet = sheets.get(doc);
  if (!sheet) {
    sheet = new doc.defaultView.CSSStyleSheet();
    sheet.replaceSync(CSS);
    sheets.set(doc, sheet);
  }
  const root = node.getRootNode();
  const scope = root.adoptedStyleSheets ? root : doc;
  if (!scope.adoptedStyleSheets.includes(sheet)) scope.adoptedStyleSheets = [...scope.adoptedStyleSheets, sheet];
}

// A hidden element that adopts the stylesheet wherever it is connected (its connectedCallback),
// for views drawn into a container that is not in a document yet: drawn detached and then moved
// into a shadow root, such a view used to get the document's styles only, which do not reach
// into the shadow root. Defined once per window (a same-origin iframe has its own registry).
const STYLE_ANCHOR = 'attnflow-styles';
function styleAnchor(doc) {
  const win = doc.defaultView;
  if (!win.customElements.get(STYLE_ANCHOR)) {
    win.customElements.define(STYLE_ANCHOR, class extends win.HTMLElement {
      connectedCallback() { adoptStylesAt(this); }
    });
  }
  const anchor = doc.createElement(STYLE_ANCHOR);
  anchor.hidden = true;
  return anchor;
}

/** Styles for a view's `root` about to go into `container`: now if it is connected, else once it is. */
function adoptStyles(container, root) {
  if (container.isConnected) adoptStylesAt(container);
  else root.append(styleAnchor(container.ownerDocument));
}

/** The arguments every view checks: a document to draw in, an element, a Result (E_OPTION). */
function checkArguments(name, container, result, options) {
  if (typeof document === 'undefined') {
    fail('E_OPTION', `${name} draws into a web page: there is no document here (call it in a browser)`);
  }
  if (container?.nodeType !== Node.ELEMENT_NODE) fail('E_OPTION', 'container must be an HTML element');
  if (!Array.isArray(result?.tokens) || !Array.isArray(result.layers) || result.layers.length === 0
      || !Array.isArray(result.rows) || typeof result.scoresFor !== 'function') {
    fail('E_OPTION', 'result must be a Result of compute() (tokens, layers, rows, scoresFor)');
  }
  if (options === null || typeof options !== 'object') fail('E_OPTION', `options must be an object (got ${options === null ? 'null' : typeof options})`);
}

const rowsText = (result) => (result.rows.length > 10 ? `${result.rows.length} rows` : result.rows.join(', '));

/** The options both views share, with their defaults (E_OPTION when bad). */
function resolveShared(result, options) {
  const layer = options.layer ?? Math.max(...result.layers);
  if (!result.layers.includes(layer)) {
    fail('E_OPTION', `layer ${shown(layer)} is not in this result (layers ${result.layers.join(', ')}; layers are 1-based)`);
  }
  const palette = options.palette ?? 'viridis';
  if (!Object.hasOwn(PALETTES, palette)) {
    fail('E_OPTION', `palette must be one of ${Object.keys(PALETTES).join(', ')} (got ${shown(palette)})`);
  }
  const scale = options.scale ?? 'row';
  if (!SCALES.includes(scale)) fail('E_OPTION', `scale must be one of ${SCALES.join(', ')} (got ${shown(scale)})`);
  return { layer, palette, scale };
}

/** The options of the token strips with their defaults, checked against the result. */
function resolveStripOptions(result, options) {
  checkKnownOptions(options, ['layer', 'rows', 'palette', 'scale', 'onSelect', 'label'], 'renderTokenStrips');
  const { layer, palette, scale } = resolveShared(result, options);
  const rows = options.rows ?? result.rows;
  if (!Array.isArray(rows)) fail('E_OPTION', `rows must be a list of the result's rows (got ${shown(rows)})`);
  for (const row of rows) {
    if (!result.rows.includes(row)) fail('E_OPTION', `rows: ${shown(row)} is not in this result (rows ${rowsText(result)})`);
  }
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
  checkArguments('renderTokenStrips', container, result, options);
  const { layer, rows, palette, scale, onSelect, label } = resolveStripOptions(result, options);
  const { tokens } = result;

  const root = h('div', { class: 'attnflow-strips', 'data-layer': layer });
  for (const row of rows) {
    // An array: scoresFor may return any ArrayLike (web/view.d.ts), which need not iterate.
    const values = Array.from(result.scoresFor(layer, row));
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
      // Hidden from screen readers, which hear it once as the cells' group label.
      caption ? h('div', { class: 'attnflow-caption', 'aria-hidden': 'true' }, caption) : null,
      cells,
    ]));
  }
  if (onSelect) wireSelection(root, onSelect);
  adoptStyles(container, root);
  replaceKeepingFocus(container, root, (focused) => {
    const cell = focused.closest('.attnflow-cell');
    const row = cell?.closest('.attnflow-strip')?.dataset.row;
    return root.querySelector(`.attnflow-strip[data-row="${row}"] .attnflow-cell[data-index="${cell?.dataset.index}"]`)
      ?? root.querySelector('.attnflow-cell[tabindex="0"]');
  });
  return root;
}

/**
 * Replaces the container's content with `root` and, if the focus was inside the old view, moves
 * it to `counterpart(focused)` in the new one: a page that redraws the view from its onSelect
 * (another layer or row) would otherwise drop a keyboard user's focus to the start of the page.
 */
function replaceKeepingFocus(container, root, counterpart) {
  const focused = container.getRootNode().activeElement;  // in a shadow root, its own focused element
  const next = focused && focused !== container && container.contains(focused) ? counterpart(focused) : null;
  container.replaceChildren(root);
  next?.focus();
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
    // The cells flow in the page's direction: on a right-to-left page the next one is on the left.
    const rtl = getComputedStyle(strip).direction === 'rtl';
    const next = {
      [rtl ? 'ArrowLeft' : 'ArrowRight']: cell.nextElementSibling,
      [rtl ? 'ArrowRight' : 'ArrowLeft']: cell.previousElementSibling,
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

// What a canvas can draw, as an image under the grid (looked up on use: importing needs no DOM),
// in this page's realm or the container's (an <img> of a same-origin iframe is that frame's).
const IMAGE_TYPES = ['HTMLImageElement', 'HTMLCanvasElement', 'ImageBitmap', 'OffscreenCanvas'];
const isImage = (image, realms) => realms.some((realm) => IMAGE_TYPES.some((type) => realm?.[type] && image instanceof realm[type]));

/** The options of the patch grid with their defaults, checked against the result. */
function resolvePatchOptions(container, result, options) {
  checkKnownOptions(options, ['layer', 'row', 'palette', 'scale', 'skip', 'grid', 'image', 'opacity', 'size',
    'onSelect'], 'renderPatchGrid');
  const { layer, palette, scale } = resolveShared(result, options);
  const row = options.row ?? result.rows[0];
  if (!result.rows.includes(row)) fail('E_OPTION', `row ${shown(row)} is not in this result (rows ${rowsText(result)})`);
  const { skip, rows, cols } = patchLayout(result.tokens.length, { skip: options.skip, grid: options.grid });
  const { image, onSelect } = options;
  let imageSize = null;
  if (image !== undefined) {
    if (!isImage(image, [globalThis, container.ownerDocument.defaultView])) {
      fail('E_OPTION', 'image must be an HTMLImageElement, HTMLCanvasElement, ImageBitmap or OffscreenCanvas');
    }
    imageSize = [image.naturalWidth ?? image.width, image.naturalHeight ?? image.height];
    if (!(imageSize[0] > 0 && imageSize[1] > 0)) fail('E_OPTION', 'image has no pixels: not loaded yet (await img.decode() first) or closed');
  }
  const opacity = options.opacity ?? 0.6;
  if (!(typeof opacity === 'number' && opacity >= 0 && opacity <= 1)) fail('E_OPTION', `opacity must be a number from 0 to 1 (got ${shown(opacity)})`);
  const size = options.size ?? 320;
  if (!(typeof size === 'number' && size > 0 && Number.isFinite(size))) fail('E_OPTION', `size must be a positive number of pixels (got ${shown(size)})`);
  if (onSelect !== undefined && typeof onSelect !== 'function') fail('E_OPTION', 'onSelect must be a function (index) => void');
  return { layer, row, palette, scale, skip, rows, cols, image, imageSize, opacity, size, onSelect };
}

/**
 * Draws the scores of one row at one layer over the image patches of a Vision Transformer, as
 * a grid of coloured cells on a canvas (under it, optionally, the image), into `container` (its
 * content is replaced). Returns the view's root element. Types and options: web/view.d.ts.
 */
export function renderPatchGrid(container, result, options = {}) {
  checkArguments('renderPatchGrid', container, result, options);
  const o = resolvePatchOptions(container, result, options);
  const { rows, cols, skip } = o;
  const all = result.scoresFor(o.layer, o.row);
  const scores = Array.from({ length: rows * cols }, (_, p) => all[skip + p]);
  let max = 0;
  for (const v of scores) if (v > max) max = v;
  const shade = o.scale === 'row' ? (v) => (max > 0 ? v / max : 0) : (v) => v;
  const rank = ranks(scores);

  // The longer side is `size`; the shape is the image's (a ViT sees its input stretched to the
  // grid, so that is where each patch lies), else square cells.
  const [shapeW, shapeH] = o.imageSize ?? [cols, rows];
  const scaleBy = o.size / Math.max(shapeW, shapeH);
  const width = Math.round(shapeW * scaleBy);
  const height = Math.round(shapeH * scaleBy);
  const caption = `${result.method}, layer ${o.layer}, token ${o.row} “${tokenLabel(result.tokens[o.row])}”`;
  const where = (p) => `row ${Math.floor(p / cols)}, column ${p % cols}`;
  const top = [...scores.keys()].sort((a, b) => scores[b] - scores[a]).slice(0, 3);
  const description = `${caption}, over ${rows} × ${cols} image patches. Top patches: `
    + `${top.map((p) => `${where(p)} (token ${p + skip}) ${fmt(scores[p], 6)}`).join('; ')}`;

  // Backing pixels at the screen's density, so cells stay sharp on high-DPI screens.
  const dpr = globalThis.devicePixelRatio || 1;
  const canvas = h('canvas', {
    class: `attnflow-patch-canvas${o.onSelect ? ' attnflow-selectable' : ''}`,
    width: Math.round(width * dpr), height: Math.round(height * dpr),
    // With onSelect it takes arrow keys: "application" asks screen readers in browse mode to pass
    // them on (an "img" would not), and the live read-out line says where they lead.
    role: o.onSelect ? 'application' : 'img', 'aria-roledescription': o.onSelect ? 'patch grid' : undefined,
    'aria-label': description, tabindex: o.onSelect ? 0 : undefined,
  });
  canvas.style.width = `${width}px`;
  canvas.style.height = `${height}px`;
  const ctx = canvas.getContext('2d');
  if (o.image) ctx.drawImage(o.image, 0, 0, canvas.width, canvas.height);
  ctx.globalAlpha = o.image ? o.opacity : 1;
  // Cell edges on whole pixels: neighbours neither overlap (which would darken the seams over an
  // image) nor leave gaps.
  const edge = (k, count, total) => Math.round((k * total) / count);
  scores.forEach((v, p) => {
    const r = Math.floor(p / cols);
    const c = p % cols;
    const x = edge(c, cols, canvas.width);
    const y = edge(r, rows, canvas.height);
    ctx.fillStyle = color(shade(v), o.palette);
    ctx.fillRect(x, y, edge(c + 1, cols, canvas.width) - x, edge(r + 1, rows, canvas.height) - y);
  });

  const cursor = h('div', { class: 'attnflow-patch-cursor', hidden: true });
  cursor.style.width = `${100 / cols}%`;
  cursor.style.height = `${100 / rows}%`;
  // Live when the keyboard moves over the patches, so that each one is read out.
  const info = h('figcaption', { class: 'attnflow-patch-info', 'aria-live': o.onSelect ? 'polite' : undefined }, caption);
  const root = h('figure', {
    class: 'attnflow-patches', 'data-layer': o.layer, 'data-row': o.row, 'data-grid': `${rows} x ${cols}`, 'data-skip': skip,
  }, [h('div', { class: 'attnflow-patch-area' }, [canvas, cursor]), info]);
  // As wide as the canvas: a wider read-out would otherwise widen the figure, and the patch area
  // with it, and the cursor (placed in % of that area) would miss its patch. The read-out wraps.
  root.style.width = `${width}px`;

  // The patch under the pointer, or moved to with the keyboard: outlined, and read out below.
  let current = top[0];
  const point = (p) => {
    current = p;
    cursor.style.left = `${(100 * (p % cols)) / cols}%`;
    cursor.style.top = `${(100 * Math.floor(p / cols)) / rows}%`;
    cursor.hidden = false;
    info.textContent = `${where(p)} · token ${p + skip} · ${fmt(scores[p], 6)}, rank ${rank[p]} of ${scores.length}`;
  };
  const leave = () => {
    cursor.hidden = true;
    info.textContent = caption;
  };
  const patchAt = (e) => {
    const box = canvas.getBoundingClientRect();
    const c = Math.min(cols - 1, Math.max(0, Math.floor(((e.clientX - box.left) / box.width) * cols)));
    const r = Math.min(rows - 1, Math.max(0, Math.floor(((e.clientY - box.top) / box.height) * rows)));
    return r * cols + c;
  };
  canvas.addEventListener('pointermove', (e) => point(patchAt(e)));
  canvas.addEventListener('pointerleave', () => {
    // :focus, not document.activeElement, which in a shadow root is the host, not the canvas.
    if (canvas.matches(':focus')) point(current);  // back to the keyboard's patch
    else leave();
  });
  if (o.onSelect) {
    canvas.addEventListener('click', (e) => o.onSelect(patchAt(e) + skip));
    canvas.addEventListener('focus', () => point(current));
    canvas.addEventListener('blur', leave);
    canvas.addEventListener('keydown', (e) => {
      const r = Math.floor(current / cols);
      const c = current % cols;
      const moved = {
        ArrowRight: r * cols + Math.min(cols - 1, c + 1), ArrowLeft: r * cols + Math.max(0, c - 1),
        ArrowDown: Math.min(rows - 1, r + 1) * cols + c, ArrowUp: Math.max(0, r - 1) * cols + c,
        Home: 0, End: rows * cols - 1,
      }[e.key];
      if (moved !== undefined) point(moved);
      else if (e.key === 'Enter' || e.key === ' ') o.onSelect(current + skip);
      else return;
      e.preventDefault();
    });
  }
  adoptStyles(container, root);
  replaceKeepingFocus(container, root, () => (o.onSelect ? canvas : null));
  return root;
}
