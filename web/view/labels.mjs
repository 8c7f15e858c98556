// How tokens and scores read in cells, captions and tooltips. Tokens are untrusted text: these
// functions only make them visible and short; they go into a page as text nodes, never as markup.

/** Shortens long tokens for axis labels (the full text stays available in titles and tooltips). */
export function ellipsize(text, max = 14) {
  // Only the start is split into code points: a token may be megabytes long.
  const chars = [...text.slice(0, 2 * max + 2)];  // at least max + 1 code points, if the text has them
  return chars.length > max ? `${chars.slice(0, max - 1).join('')}…` : text;
}

/** The most characters of one token that go into the page (a cell's text, a title, a label). */
export const MAX_TOKEN_SHOWN = 1000;

/**
 * A token cut to MAX_TOKEN_SHOWN characters, with an ellipsis: a file may hold a token of
 * megabytes (the whole text as one token), whose text nodes, titles and labels froze the page for
 * seconds to minutes per view. The full token stays in results and exports.
 */
export function clipToken(text) {
  if (text.length <= MAX_TOKEN_SHOWN) return text;
  const end = /[\ud800-\udbff]/.test(text[MAX_TOKEN_SHOWN - 1]) ? MAX_TOKEN_SHOWN - 1 : MAX_TOKEN_SHOWN;
  return `${text.slice(0, end)}…`;
}

// Characters that change the direction of the text around them: inside a token they would
// reorder the page's own text after it (a caption, the read-out), so they are shown by name.
const BIDI_CONTROLS = {
  '\u061c': 'ALM', '\u200e': 'LRM', '\u200f': 'RLM', '\u202a': 'LRE', '\u202b': 'RLE', '\u202c': 'PDF',
  '\u202d': 'LRO', '\u202e': 'RLO', '\u2066': 'LRI', '\u2067': 'RLI', '\u2068': 'FSI', '\u2069': 'PDI',
};
const BIDI_PATTERN = new RegExp(`[${Object.keys(BIDI_CONTROLS).join('')}]`, 'g');

// Other characters that show as nothing or as a box, or that XML 1.0 does not allow (an SVG
// export holding one would not open): C0 and C1 controls, zero-width characters, noncharacters
// U+FFFE/U+FFFF and lone surrogates. Shown by code point.
/** A UTF-16 surrogate without its pair: a JavaScript string may hold one, XML and UTF-8 cannot. */
export const LONE_SURROGATE = '[\\ud800-\\udbff](?![\\udc00-\\udfff])|(?<![\\ud800-\\udbff])[\\udc00-\\udfff]';
const HIDDEN_PATTERN = new RegExp(`[\\u0000-\\u0008\\u000b-\\u001f\\u007f-\\u009f\\u00ad\\u200b-\\u200d\\u2060\\ufeff\\ufffe\\uffff]|${LONE_SURROGATE}`, 'g');
const codePoint = (c) => `⟨U+${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}⟩`;

/**
 * A visible form of a token: whitespace, direction controls and invisible characters made
 * visible, so " ", "\n" and "" tokens do not vanish, no token reorders the text around it, and
 * every character can be written into an SVG file.
 */
export function showToken(text) {
  if (text === '') return '∅';
  return clipToken(text).replace(/\n/g, '⏎').replace(/\t/g, '⇥').replace(/^ +| +$/g, (m) => '·'.repeat(m.length))
    .replace(BIDI_PATTERN, (c) => `⟨${BIDI_CONTROLS[c]}⟩`).replace(HIDDEN_PATTERN, codePoint);
}

/**
 * A token as a cell shows it: its visible form, at most 24 characters (longer would widen the
 * page), and at most 8 non-spacing marks in a row (a pile of thousands drew a line down the page;
 * Myanmar and pointed Hebrew put up to 4 on a letter, so fewer would cut real words).
 */
export const tokenLabel = (text) => ellipsize(showToken(text).replace(/(\p{Mn}{8})\p{Mn}+…?/gu, '$1…'), 24);

/**
 * The label of a token cell whose text (the token itself, as the explorer's test contract says)
 * would not show as it is: blank, invisible or direction-changing characters, or too long. The
 * cell shows it instead (CSS, `data-shown`); undefined when the token shows as itself.
 */
export function cellShown(text) {
  const label = tokenLabel(text);
  return label === text ? undefined : label;
}

/** A compact number for labels: 0.1234, 1.2e-5. */
export function fmt(v, digits = 4) {
  if (!Number.isFinite(v)) return String(v);
  if (v === 0) return '0';
  const a = Math.abs(v);
  if (a >= 1e-3 && a < 1e4) return Number(v.toFixed(digits)).toString();
  return v.toExponential(2);
}

/** 1-based rank of each value (1 = largest), ties share the best rank. */
export function ranks(values) {
  const order = [...values.keys()].sort((a, b) => values[b] - values[a]);
  const r = new Array(values.length);
  let prev = NaN;
  let rank = 0;
  order.forEach((idx, k) => {
    if (!(Math.abs(values[idx] - prev) <= 1e-12)) rank = k + 1;
    prev = values[idx];
    r[idx] = rank;
  });
  return r;
}
