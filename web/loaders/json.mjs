// JSON attention files: canonical {tokens, attentions: [L][H][n][n], meta?}, the Hugging Face
// layout [L][B][H][n][n], pre-fused [L][n][n], or a bare top-level array of any of these.
// Values are validated while they are packed into one Float64Array per layer (one linear pass).

import { fail } from '../errors.mjs';
import { checkSize, checkTokens, badValueMessage, where, typeName, makeAttentionData, RowSumTally } from './data.mjs';

const isArr = (x) => Array.isArray(x) || (ArrayBuffer.isView(x) && !(x instanceof DataView));

/**
 * Parses JSON text; on failure finds where and why (truncation, NaN/Infinity, other syntax).
 * @param {string} text @param {string} [name]
 */
export function parseJsonText(text, name) {
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1); // BOM (Windows editors, PowerShell)
  let k = 0;
  while (k < text.length && isWs(text.charCodeAt(k))) k++;
  if (k === text.length) fail('E_INPUT', `${name ? `${name}: ` : ''}empty input`);
  const c0 = text[k];
  if (c0 !== '{' && c0 !== '[') {
    const start = JSON.stringify(text.slice(k, k + 16));
    fail('E_FORMAT', `${name ? `${name}: ` : ''}not a format attnflow reads: expected JSON (an object or ` +
      `an array), .npy, .npz, safetensors or gzip, but the text starts with ${start}`);
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    if (!(e instanceof SyntaxError)) throw e;
    throw jsonSyntaxError(text, e.message, name);
  }
}

function isWs(c) { return c === 32 || c === 10 || c === 13 || c === 9; }

function lineCol(text, pos) {
  let line = 1, last = -1;
  for (let i = text.indexOf('\n'); i !== -1 && i < pos; i = text.indexOf('\n', i + 1)) { line++; last = i; }
  return `line ${line}, column ${pos - last}`;
}

/** Builds the AttnflowError for a JSON.parse failure, naming position and data location. */
function jsonSyntaxError(text, parseMessage, name) {
  const pre = name ? `${name}: ` : '';
  const r = locateJsonError(text);
  const mk = (code, msg) => { try { fail(code, pre + msg); } catch (err) { return err; } };
  if (!r) return mk('E_FORMAT', `invalid JSON: ${parseMessage}`);
  const inside = r.path ? `, inside ${r.path}` : '';
  if (r.kind === 'eof') {
    return mk('E_FORMAT', `the JSON ends early (truncated?) at position ${r.pos} (${lineCol(text, r.pos)})${inside}`);
  }
  if (r.kind === 'nonfinite') {
    const at = r.loc || r.path || 'a value';
    return mk('E_INPUT', `${at} is ${r.literal} (JSON ${lineCol(text, r.pos)}): values must be finite ` +
      'numbers (Python\'s json.dump writes NaN/Infinity for non-finite floats)');
  }
  const snippet = JSON.stringify(text.slice(Math.max(0, r.pos - 10), r.pos + 10));
  return mk('E_FORMAT', `invalid JSON at position ${r.pos} (${lineCol(text, r.pos)})${inside}, ` +
    `near ${snippet}: ${r.reason}`);
}

const VALUE = 0, VALUE_OR_CLOSE = 1, KEY = 2, KEY_OR_CLOSE = 3, COLON = 4, AFTER = 5;

/**
 * A small iterative JSON scanner run only after JSON.parse failed: returns the first error's
 * position, kind ('eof' | 'nonfinite' | 'syntax') and the path to it (e.g. attentions[1][0][3][4]).
 * No recursion, so nesting depth cannot overflow the stack.
 */
export function locateJsonError(text) {
  const N = text.length;
  const stack = []; // {arr: true, idx} | {arr: false, key}
  let i = 0, state = VALUE;
  const result = (kind, pos, extra) => ({ kind, pos, ...describePath(stack), ...extra });
  const syntax = (reason) => result('syntax', i, { reason });
  const eof = () => result('eof', N);
  // Returns the end index (after the closing quote), or -1 at EOF, or -2 on a control character.
  const scanString = () => {
    let j = i + 1;
    for (;;) {
      if (j >= N) return -1;
      const c = text.charCodeAt(j);
      if (c === 34) return j + 1;
      if (c === 92) j += 2;
      else if (c < 0x20) return -2;
      else j++;
    }
  };
  for (;;) {
    while (i < N && isWs(text.charCodeAt(i))) i++;
    if (i >= N) return stack.length === 0 && state === AFTER ? null : eof();
    const c = text[i];
    switch (state) {
      case VALUE_OR_CLOSE:
        if (c === ']') { stack.pop(); i++; state = AFTER; continue; }
        state = VALUE; // fall through to read a value
      // eslint-disable-next-line no-fallthrough
      case VALUE: {
        if (c === '{') { stack.push({ arr: false, key: null }); i++; state = KEY_OR_CLOSE; continue; }
        if (c === '[') { stack.push({ arr: true, idx: 0 }); i++; state = VALUE_OR_CLOSE; continue; }
        if (c === '"') {
          const e = scanString();
          if (e === -1) return eof();
          if (e === -2) return syntax('control character in a string');
          i = e; state = AFTER; continue;
        }
        for (const lit of ['NaN', 'Infinity', '-Infinity']) {
          if (text.startsWith(lit, i)) return result('nonfinite', i, { literal: lit });
        }
        if (c === '-' || (c >= '0' && c <= '9')) {
          const m = /-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/y;
          m.lastIndex = i;
          const mm = m.exec(text);
          const end = mm ? i + mm[0].length : i;
          if (end >= N) return eof();
          const nx = text[end];
          if (!mm || nx === '.' || nx === 'e' || nx === 'E' || (nx >= '0' && nx <= '9') || nx === '-') {
            if (end + 1 >= N) return eof();
            return syntax('malformed number');
          }
          i = end; state = AFTER; continue;
        }
        for (const lit of ['true', 'false', 'null']) {
          if (c === lit[0]) {
            const got = text.slice(i, i + lit.length);
            if (got === lit) { i += lit.length; state = AFTER; break; }
            if (i + got.length >= N && lit.startsWith(got)) return eof();
            return syntax(`unexpected ${JSON.stringify(got)}`);
          }
        }
        if (state === AFTER) continue;
        return syntax(`unexpected character ${JSON.stringify(c)} where a value was expected`);
      }
      case KEY_OR_CLOSE:
        if (c === '}') { stack.pop(); i++; state = AFTER; continue; }
      // eslint-disable-next-line no-fallthrough
      case KEY: {
        if (c !== '"') return syntax('expected a quoted key');
        const e = scanString();
        if (e === -1) return eof();
        if (e === -2) return syntax('control character in a string');
        let key;
        try { key = JSON.parse(text.slice(i, e)); } catch { return syntax('invalid escape in a key'); }
        stack[stack.length - 1].key = key;
        i = e; state = COLON; continue;
      }
      case COLON:
        if (c !== ':') return syntax('expected ":" after a key');
        i++; state = VALUE; continue;
      case AFTER: {
        const top = stack[stack.length - 1];
        if (!top) return syntax('unexpected data after the end of the JSON value');
        if (c === ',') {
          i++;
          if (top.arr) { top.idx++; state = VALUE; } else state = KEY;
          continue;
        }
        if ((c === ']' && top.arr) || (c === '}' && !top.arr)) { stack.pop(); i++; continue; }
        return syntax(`expected "," or "${top.arr ? ']' : '}'}"`);
      }
      default:
        return syntax('internal scanner state');
    }
  }
}

/** Path string and, for leaves of the attentions tensor, a layer/head/row/column location. */
function describePath(stack) {
  if (stack.length === 0) return { path: '', loc: '' };
  let path = '';
  for (const s of stack) {
    if (s.arr) path += `[${s.idx}]`;
    else if (s.key !== null) path += (path ? '.' : '') + s.key;
  }
  // Thousands of levels of nesting would make a message of that many brackets.
  if (path.length > 120) path = `${path.slice(0, 50)}...(${stack.length} levels)...${path.slice(-50)}`;
  // Index chain of the tensor: from the root array, or after an "attentions" key at the top.
  let idx = null;
  if (stack[0].arr) idx = stack.map((s) => (s.arr ? s.idx : null));
  else if (stack[0].key === 'attentions' && stack.length > 1) idx = stack.slice(1).map((s) => (s.arr ? s.idx : null));
  let loc = '';
  if (idx && !idx.includes(null)) {
    if (idx.length === 3) loc = `layer ${idx[0] + 1}, row ${idx[1]}, column ${idx[2]}`;
    else if (idx.length === 4) loc = `layer ${idx[0] + 1}, head ${idx[1]}, row ${idx[2]}, column ${idx[3]}`;
    else if (idx.length === 5) loc = `layer ${idx[0] + 1}, batch ${idx[1]}, head ${idx[2]}, row ${idx[3]}, column ${idx[4]}`;
  }
  return { path, loc };
}

/** The deepest "meta" kept: a structured clone (postMessage) of 2,000 levels overflowed the stack. */
const MAX_META_DEPTH = 100;

/** How deeply a JSON value nests, counted without recursion (it may be thousands deep). */
function nestingDepth(value) {
  let deepest = 0;
  const stack = [[value, 1]];
  while (stack.length) {
    const [v, depth] = stack.pop();
    if (v === null || typeof v !== 'object') continue;
    deepest = Math.max(deepest, depth);
    if (deepest > MAX_META_DEPTH) break;
    for (const child of Object.values(v)) stack.push([child, depth + 1]);
  }
  return deepest;
}

/**
 * Builds AttentionData from a parsed JSON value (or an object the caller built).
 * @param {unknown} value @param {{batch?: number, tokens?: string[]}} options
 */
export function fromJsonValue(value, options = {}) {
  let att, fileTokens, meta;
  const warnings = [];
  if (isArr(value)) {
    att = value;
  } else if (value !== null && typeof value === 'object') {
    if (!('attentions' in value)) {
      const keys = Object.keys(value).slice(0, 8).map((k) => JSON.stringify(k)).join(', ');
      fail('E_INPUT', `no "attentions" in the input object (keys: ${keys || 'none'}); expected ` +
        '{"tokens": [...], "attentions": [L][H][n][n]} or a bare [L][H][n][n] array');
    }
    att = value.attentions;
    fileTokens = value.tokens;
    meta = value.meta;
    if (meta === null) meta = undefined;
    if (meta !== undefined && (typeof meta !== 'object' || Array.isArray(meta))) {
      fail('E_INPUT', `"meta" must be an object, found ${typeName(meta)}`);
    }
    if (meta !== undefined && nestingDepth(meta) > MAX_META_DEPTH) {
      meta = undefined;
      warnings.push(`"meta" is nested more than ${MAX_META_DEPTH} levels deep and was left out ` +
        '(a page could not pass it to its worker)');
    }
  } else {
    fail('E_INPUT', `expected an object with "attentions" or an array, found ${typeName(value)}`);
  }
  if (!isArr(att)) fail('E_INPUT', `"attentions" must be an array, found ${typeName(att)}`);
  if (att.length === 0) fail('E_INPUT', 'attentions is empty (no layers)');

  // Depth along the first element of every level.
  let depth = 0, x = att, p = 'attentions';
  while (isArr(x) && depth < 8) {
    if (x.length === 0) fail('E_INPUT', `${p} is an empty array`);
    x = x[0]; depth++; p += '[0]';
  }
  if (depth < 3 || depth > 5) {
    fail('E_INPUT', 'attentions must be [L][H][n][n] (4 levels), the Hugging Face layout ' +
      '[L][B][H][n][n] (5 levels) or pre-fused [L][n][n] (3 levels); found ' +
      `${depth >= 8 ? 'more than 7' : depth} levels of nesting (${p} is ${typeName(x)})`);
  }
  const L = att.length;
  const batch = options.batch ?? 0;
  let B = 0, H = 0, n;
  if (depth === 5) {
    B = att[0].length;
    if (batch >= B) fail('E_OPTION', `batch ${batch} is out of range: the input has B = ${B} batch item${B === 1 ? '' : 's'} (0..${B - 1})`);
    // The depth was checked along batch item 0 only.
    const item = att[0][batch];
    if (!isArr(item) || item.length === 0 || !isArr(item[0]) || item[0].length === 0 || !isArr(item[0][0])) {
      fail('E_INPUT', `layer 1, batch ${batch} is ${isArr(item) && item.length === 0 ? 'an empty array' : typeName(item)}` +
        ' where batch 0 is an array of heads [H][n][n]; expected the same shape in every batch item');
    }
    H = item.length;
    n = item[0].length;
  } else {
    if (batch > 0) fail('E_OPTION', `batch ${batch} was given but the input has no batch axis`);
    if (depth === 4) { H = att[0].length; n = att[0][0].length; } else n = att[0].length;
  }
  checkSize(L, H, n);

  const heads = Math.max(H, 1);
  const item = depth === 5 ? batch : undefined;  // named in messages about a batch layout
  const inItem = item === undefined ? '' : `, batch ${item}`;
  const tally = new RowSumTally(item);
  const layers = new Array(L);
  for (let l = 0; l < L; l++) {
    let node = att[l];
    if (depth === 5) {
      if (!isArr(node)) fail('E_INPUT', `layer ${l + 1} is ${typeName(node)}, expected an array of ${B} batch items`);
      if (node.length !== B) fail('E_INPUT', `layer ${l + 1} has ${node.length} batch items, expected ${B} (as in layer 1)`);
      node = node[batch];
    }
    const out = new Float64Array(heads * n * n);
    let k = 0;
    for (let h = 0; h < heads; h++) {
      let mat = node;
      const hh = H ? h : -1;
      const whereMat = H ? `layer ${l + 1}${inItem}, head ${h}` : `layer ${l + 1}${inItem}`;
      if (H) {
        if (!isArr(node)) fail('E_INPUT', `layer ${l + 1}${inItem} is ${typeName(node)}, expected an array of ${H} heads`);
        if (node.length !== H) fail('E_INPUT', `layer ${l + 1}${inItem} has ${node.length} heads, expected ${H} (as in layer 1)`);
        mat = node[h];
      }
      if (!isArr(mat)) fail('E_INPUT', `${whereMat} is ${typeName(mat)}, expected an array of ${n} rows`);
      if (mat.length !== n) fail('E_INPUT', `${whereMat} has ${mat.length} rows, expected ${n}`);
      for (let i = 0; i < n; i++) {
        const row = mat[i];
        if (!isArr(row)) fail('E_INPUT', `${where(l, hh, i, item)} is ${typeName(row)}, expected an array of ${n} numbers`);
        if (row.length !== n) {
          const sq = l === 0 && h === 0 && i === 0 ? ` (matrices must be square: ${n} rows, so ${n} values per row)` : '';
          fail('E_INPUT', `${where(l, hh, i, item)} has ${row.length} value${row.length === 1 ? "" : "s"}, expected ${n}${sq}`);
        }
        let sum = 0;
        for (let j = 0; j < n; j++) {
          const v = row[j];
          if (typeof v !== 'number' || !(v >= 0) || v === Infinity) fail('E_INPUT', badValueMessage(l, hh, i, j, v, item));
          out[k++] = v;
          sum += v;
        }
        tally.add(l, hh, i, sum);
      }
    }
    layers[l] = out;
  }
  // After the matrices: a matrix that is not square is then reported as such, not as a token count.
  const tokens = checkTokens(options.tokens ?? fileTokens, n, options.tokens ? 'options.tokens' : 'tokens');
  return makeAttentionData({
    format: depth === 5 ? 'hf-json' : depth === 4 ? 'json' : 'fused-json',
    tokens, numLayers: L, numHeads: H, numTokens: n,
    readLayer: (l) => layers[l], checked: true, tally, meta, warnings,
  });
}
