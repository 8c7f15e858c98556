// How a Vision Transformer's tokens lie on the image: `skip` special tokens first ([CLS], and
// DeiT's distillation token), then the patches row by row. Shared by the drop-in view and the
// explorer, so both read an input the same way.
import { fail, shown } from '../errors.mjs';

// Tried in this order: ViT and most image models have [CLS], DeiT adds a distillation token,
// and some (e.g. pooled models) have none.
const SPECIAL_COUNTS = [1, 2, 0];

const isCount = (v) => Number.isInteger(v) && v >= 0;

/**
 * {skip, rows, cols} of n tokens. Defaults: the first of 1, 2, 0 special tokens that leaves a
 * square number of patches, and that square. Throws AttnflowError E_OPTION when the tokens do
 * not fill the grid, or when no default fits.
 */
export function patchLayout(n, { skip, grid } = {}) {
  if (grid !== undefined && !(Array.isArray(grid) && grid.length === 2 && grid.every((v) => isCount(v) && v > 0))) {
    fail('E_OPTION', `grid must be [rows, cols], two positive integers (got ${shown(grid)})`);
  }
  if (skip !== undefined && !(isCount(skip) && skip < n)) {
    fail('E_OPTION', `skip must be a whole number of special tokens from 0 to ${n - 1} (got ${shown(skip)})`);
  }
  const side = (k) => Math.round(Math.sqrt(n - k));
  const squares = (k) => k < n && side(k) ** 2 === n - k;
  skip ??= SPECIAL_COUNTS.find(squares);
  if (skip === undefined) {
    fail('E_OPTION', `${n} tokens are not 1, 2 or 0 special tokens followed by a square grid of patches: give grid ([rows, cols]) and skip`);
  }
  if (grid === undefined) {
    if (!squares(skip)) fail('E_OPTION', `${n} tokens less ${skip} special are ${n - skip} patches, not a square: give grid ([rows, cols])`);
    return { skip, rows: side(skip), cols: side(skip) };
  }
  const [rows, cols] = grid;
  if (rows * cols + skip !== n) {
    fail('E_OPTION', `grid ${rows} x ${cols} and skip ${skip} make ${rows * cols + skip} tokens, but the result has ${n}`);
  }
  return { skip, rows, cols };
}
