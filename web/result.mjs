// Scores that carry their own description (method, layers, rows, options), so a view or an export
// never has to guess what it shows. One class for every producer: the package in this thread,
// the worker client and the parallel pool.
import { fail, shown } from './errors.mjs';

export class Result {
  /** scores: flat Float64Array [layers.length][rows.length][tokens.length]. */
  constructor({ method, tokens, layers, rows, options, scores }) {
    this.method = method;
    this.tokens = Array.from(tokens);  // its own: a caller changing it changes no other result
    this.layers = layers;
    this.rows = rows;
    this.numTokens = tokens.length;
    this.options = options;
    this.scores = scores;
    Object.freeze(this);
  }

  /** True when (1-based layer, 0-based row) is in this result. */
  has(layer, row) {
    return this.layers.includes(layer) && this.rows.includes(row);
  }

  scoresFor(layer, row) {
    const l = this.layers.indexOf(layer);
    const r = this.rows.indexOf(row);
    if (l < 0 || r < 0) {
      fail('E_OPTION', `layer ${shown(layer)}, row ${shown(row)} is not in this result (layers ${this.layers.join(',')}; rows ${this.rows.length > 10 ? `${this.rows.length} rows` : this.rows.join(',')})`);
    }
    const start = (l * this.rows.length + r) * this.numTokens;
    return this.scores.subarray(start, start + this.numTokens);
  }

  toJSON() {
    const scores = this.layers.map((layer) => this.rows.map((row) => Array.from(this.scoresFor(layer, row))));
    const { method, tokens, layers, rows, options } = this;
    return { method, tokens, layers, rows, options, scores };
  }
}
