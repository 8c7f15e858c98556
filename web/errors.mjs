// The one error type of the package. Every failure a user can cause carries a stable code, so
// callers (the CLI, the worker, the page) can react without parsing messages.

/** @typedef {'E_FORMAT'|'E_INPUT'|'E_OPTION'|'E_TOO_LARGE'|'E_CANCELLED'} ErrorCode */

export class AttnflowError extends Error {
  /** @param {ErrorCode} code @param {string} message */
  constructor(code, message) {
    super(message);
    this.name = 'AttnflowError';
    this.code = code;
  }
}

/** Shorthand used by loaders and option checks: `fail('E_INPUT', 'layer 3, head 2, row 5: ...')`. */
export function fail(code, message) {
  throw new AttnflowError(code, message);
}

/**
 * A value as a message shows it: JSON, but numbers as JavaScript prints them (NaN, Infinity) and
 * BigInts with their n (JSON.stringify throws a TypeError on them).
 */
export const shown = (value) => {
  if (typeof value === 'number') return String(value);
  if (typeof value === 'bigint') return `${value}n`;
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return Object.prototype.toString.call(value);  // a BigInt inside, or a cycle
  }
};
