// attnflow/view: a drop-in view of a Result for pages that embed attnflow.
import type { Method } from './index.js';

/** What the view reads of a result: a Result of compute(), FusedAttention, ParallelAttention or AttnflowWorker. */
export interface ViewableResult {
  readonly method: Method;
  /** Untrusted text: the view sets it as text only, never as HTML. */
  readonly tokens: string[];
  /** 1-based layers held by the result. */
  readonly layers: number[];
  /** 0-based target rows held by the result. */
  readonly rows: number[];
  scoresFor(layer: number, row: number): ArrayLike<number>;
}

/** The colour-blind-safe sequential scales: viridis, cividis and ColorBrewer's blues. */
export type Palette = 'viridis' | 'cividis' | 'blues';

export interface TokenStripsOptions {
  /** 1-based layer to show; one of result.layers. Default: the deepest layer of the result. */
  layer?: number;
  /** Rows to draw, a strip each, in this order; each one of result.rows. Default: all of them. */
  rows?: number[];
  /** Default 'viridis'. */
  palette?: Palette;
  /**
   * 'row' (default): each strip's colours run from 0 to its own largest score, so the top token
   * of every strip gets the palette's last colour. 'absolute': from 0 to 1 (larger is clamped).
   */
  scale?: 'row' | 'absolute';
  /**
   * Called when a token cell is clicked or activated with Enter or Space, with the token's
   * 0-based index and the strip's row. When given, cells are buttons, each strip one tab stop
   * (arrow keys, Home and End move within it); without it, cells are not focusable.
   */
  onSelect?: (index: number, row: number) => void;
  /**
   * The caption of a strip (plain text; '' for none). Default: e.g. `flow, layer 12, target 0 “[CLS]”`.
   */
  label?: (row: number, layer: number) => string;
}

/**
 * Draws one strip per row of `result` into `container`, replacing its content (so calling it
 * again redraws): every input token a cell shaded by its score at one layer, its text the
 * token's visible form (blank, whitespace and direction-control characters shown by sign, e.g.
 * `∅`, `·`, `⟨RLO⟩`; longer than 24 characters cut with `…`). Each cell carries `data-index`
 * (the token) and `data-value` (the score, full precision), and a title and aria-label with the
 * token, score and rank; each strip carries `data-row`.
 *
 * The view's styles (class names beginning `attnflow-`) are adopted once by the document or
 * shadow root the container is in, as a constructed stylesheet, so a page needs no CSS file and
 * a Content-Security-Policy of `style-src 'self'` is enough. A view drawn into a container that
 * is in neither yet carries a hidden `<attnflow-styles>` element (a custom element defined on
 * first use) that adopts them wherever the view is connected later, a shadow root included.
 * Drawing is one synchronous task: keep `rows` to what a reader looks at (4 strips of 1,000
 * tokens took ~0.1 s with layout in headless Chromium on a 2-vCPU VM; 32 strips of 512, ~0.4 s).
 *
 * Importing this module needs no DOM; calling it does. Bad arguments throw AttnflowError
 * E_OPTION (a layer or row not in the result, an unknown palette or scale, ...).
 * To update, draw again into the same container (from onSelect too): the keyboard focus stays
 * on the same cell. To remove, empty the container (`container.replaceChildren()`).
 * @returns the view's root element (class `attnflow-strips`), now the container's only child.
 */
export function renderTokenStrips(container: HTMLElement, result: ViewableResult, options?: TokenStripsOptions): HTMLElement;

export interface PatchGridOptions {
  /** 1-based layer to show; one of result.layers. Default: the deepest layer of the result. */
  layer?: number;
  /** The row (target token) whose scores are drawn; one of result.rows. Default: result.rows[0]. */
  row?: number;
  /**
   * How many special tokens come before the patches ([CLS]; DeiT's distillation token). Default:
   * the first of 1, 2 and 0 that leaves a square number of patches.
   */
  skip?: number;
  /**
   * [rows, cols] of patches, row by row from the top left after the special tokens; rows * cols
   * + skip must be the number of tokens. Default: the square, e.g. [14, 14] for 197 tokens.
   */
  grid?: [number, number];
  /** Default 'viridis'. */
  palette?: Palette;
  /**
   * 'row' (default): colours run from 0 to the largest patch score (the special tokens are not
   * drawn and do not count), so the top patch gets the palette's last colour. 'absolute': 0 to 1.
   */
  scale?: 'row' | 'absolute';
  /**
   * The image the model saw, drawn under the grid (stretched to the canvas, which takes its
   * shape). An <img> must have loaded (`await img.decode()`). It is only drawn in this page.
   */
  image?: HTMLImageElement | HTMLCanvasElement | ImageBitmap | OffscreenCanvas;
  /** How opaque the grid is over `image`, 0 to 1. Default 0.6 (without an image, cells are opaque). */
  opacity?: number;
  /**
   * Called with the token index (patch + skip) of a clicked patch, or of the patch chosen with
   * the arrow keys, Home and End and activated with Enter or Space. When given, the canvas is
   * one tab stop.
   */
  onSelect?: (index: number) => void;
  /** CSS pixels of the canvas's longer side. Default 320. */
  size?: number;
}

/**
 * Draws the scores of one row at one layer over a Vision Transformer's image patches (ViT,
 * DeiT, ...), into `container`, replacing its content: a canvas of rows x cols cells coloured by
 * score, optionally over the image, as vit-explain overlays its mask. The special tokens are
 * left out. The canvas has role="img" (with onSelect, role="application", as it then takes arrow
 * keys) and an aria-label naming the method, layer, row and the
 * top 3 patches (row, column, token index, score); pointing at a patch (or moving to it with the
 * keyboard) outlines it and reads out its row and column (0-based from the top left), token
 * index, score and rank in the line under the grid. The root carries `data-layer`, `data-row`,
 * `data-grid` ("rows x cols") and `data-skip`: patch (r, c) is token skip + r * cols + c of
 * `result.scoresFor(layer, row)`. Its styles come as renderTokenStrips's do.
 *
 * Importing this module needs no DOM; calling it does. Bad arguments throw AttnflowError
 * E_OPTION (e.g. a token count that is no square grid after 1, 2 or 0 special tokens, without
 * `grid`; a grid that does not hold the tokens).
 * @returns the view's root element (a <figure>, class `attnflow-patches`), now the container's only child.
 */
export function renderPatchGrid(container: HTMLElement, result: ViewableResult, options?: PatchGridOptions): HTMLElement;
