// Exports: views as SVG (serialised as they are drawn: presentation attributes only, no external
// CSS) and PNG (the same SVG rasterised through a blob: image on a canvas, at 2x), scores as JSON
// and CSV. Everything happens locally; files are offered as downloads.
import { LONE_SURROGATE } from '../web/view/labels.mjs';

export function download(blob, filename) {
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = filename;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

// Characters XML 1.0 does not allow, which XMLSerializer writes as they are: a file holding one
// does not parse (nor rasterise for the PNG). Views show tokens through showToken(), which names
// them; this keeps any other text from breaking an export.
const NOT_XML = new RegExp(`[\\u0000-\\u0008\\u000b\\u000c\\u000e-\\u001f\\ufffe\\uffff]|${LONE_SURROGATE}`, 'g');

export function svgString(svgEl) {
  const clone = svgEl.cloneNode(true);
  clone.setAttribute('xmlns', 'http://www.w3.org/2000/svg');
  clone.removeAttribute('class');
  const text = new XMLSerializer().serializeToString(clone).replace(NOT_XML, '\ufffd');
  return `<?xml version="1.0" encoding="UTF-8"?>\n${text}\n`;
}

export function svgBlob(svgEl) {
  return new Blob([svgString(svgEl)], { type: 'image/svg+xml' });
}

export async function pngBlob(svgEl, scale = 2) {
  const width = Number(svgEl.getAttribute('width'));
  const height = Number(svgEl.getAttribute('height'));
  const url = URL.createObjectURL(svgBlob(svgEl));
  try {
    const img = new Image();
    img.src = url;
    await img.decode();
    const canvas = document.createElement('canvas');
    canvas.width = Math.round(width * scale);
    canvas.height = Math.round(height * scale);
    const ctx = canvas.getContext('2d');
    ctx.fillStyle = '#ffffff';
    ctx.fillRect(0, 0, canvas.width, canvas.height);
    ctx.drawImage(img, 0, 0, canvas.width, canvas.height);
    return await new Promise((resolve, reject) => canvas.toBlob((b) => (b ? resolve(b) : reject(new Error('PNG encoding failed'))), 'image/png'));
  } finally {
    URL.revokeObjectURL(url);
  }
}

/**
 * Gives the main thread back about every 30 ms while an export is written: the scores of every
 * row of every layer at n = 128 are ~600,000 numbers (as one task: 0.7 s for the CSV, 5 s at
 * n = 256), and the page must stay responsive meanwhile.
 */
function pacer() {
  let since = performance.now();
  return async () => {
    if (performance.now() - since < 30) return;
    await new Promise((resolve) => setTimeout(resolve, 0));
    since = performance.now();
  };
}

/**
 * Text collected for a Blob a megabyte at a time: each megabyte becomes a Blob of its own (UTF-8
 * encoded then), so no single task encodes the whole file (60 MB of CSV took 0.3 s).
 */
class BlobParts {
  #texts = [];
  #length = 0;
  parts = [];

  push(text) {
    this.#texts.push(text);
    this.#length += text.length;
    if (this.#length >= 2 ** 20) this.flush();
  }

  flush() {
    if (this.#texts.length) this.parts.push(new Blob(this.#texts));
    this.#texts = [];
    this.#length = 0;
    return this.parts;
  }
}

/**
 * All results of the current view as one JSON document (each result as the CLI prints it), as
 * Blob parts. Each of `results` is {method, tokens, layers, rows, options, scoresFor(layer,
 * row)}; in the file, scores[layer][row][token].
 */
export async function scoresJSON({ source, summary, results }) {
  const pace = pacer();
  const head = JSON.stringify({ source, tokens: summary.tokens, numLayers: summary.numLayers, numHeads: summary.numHeads });
  const parts = new BlobParts();
  parts.push(`${head.slice(0, -1)},"results":[`);
  for (const [k, { scoresFor, ...described }] of Object.values(results).entries()) {
    parts.push(`${k ? ',' : ''}\n${JSON.stringify(described).slice(0, -1)},"scores":[`);
    for (const [li, layer] of described.layers.entries()) {
      parts.push(li ? ',[' : '[');
      for (const [ri, row] of described.rows.entries()) {
        parts.push(`${ri ? ',' : ''}\n${JSON.stringify(Array.from(scoresFor(layer, row)))}`);
        await pace();
      }
      parts.push(']');
    }
    parts.push(']}');
  }
  parts.push(']}\n');
  return parts.flush();
}

/**
 * A CSV field, always quoted. A leading =, +, -, @, tab or return makes spreadsheets read the
 * field as a formula (a token is untrusted text): those get a leading apostrophe, which they show
 * as plain text (OWASP's advice for CSV injection).
 */
const q = (s) => {
  const text = String(s);
  return `"${/^[=+\-@\t\r]/.test(text) ? "'" : ''}${text.replace(/"/g, '""')}"`;
};

/** Long CSV: one line per (method, layer, target, input token), as Blob parts. */
export async function scoresCSV({ summary, results }) {
  const pace = pacer();
  const parts = new BlobParts();
  parts.push('method,layer,target,target_token,index,token,score,fusion,heads,alpha,discard,receptive_field\n');
  const tokens = summary.tokens.map(q);
  for (const r of Object.values(results)) {
    const heads = q(r.options.heads ? r.options.heads.join(' ') : 'all');
    // Raw attention depends on neither the residual nor the receptive-field normalisation.
    const residual = r.method === 'raw' ? ',,' : `${r.options.alpha},${r.options.discard ?? 0},${r.options.receptiveField ?? false}`;
    for (const layer of r.layers) {
      for (const row of r.rows) {
        const prefix = `${r.method},${layer},${row},${tokens[row]},`;
        const suffix = `,${r.options.fusion},${heads},${residual}\n`;
        const lines = Array.from(r.scoresFor(layer, row), (v, j) => `${prefix}${j},${tokens[j]},${v}${suffix}`);
        parts.push(lines.join(''));
        await pace();
      }
    }
  }
  return parts.flush();
}
