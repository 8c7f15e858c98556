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
 * a Content-Security-Policy of `style-src 'self'` is enough. Drawing is one synchronous task:
 * keep `rows` to what a reader looks at (4 strips of 1,000 tokens took ~0.1 s with layout in
 * headless Chromium on a 2-vCPU VM; 32 strips of 512, ~0.4 s).
 *
 * Importing this module needs no DOM; calling it does. Bad arguments throw AttnflowError
 * E_OPTION (a layer or row not in the result, an unknown palette or scale, ...).
 * @returns the view's root element (class `attnflow-strips`), now the container's only child.
 */
export function renderTokenStrips(container: HTMLElement, result: ViewableResult, options?: TokenStripsOptions): HTMLElement;
