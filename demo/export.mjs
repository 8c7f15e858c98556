// Exports: views as SVG (serialised as they are drawn: presentation attributes only, no external
// CSS) and PNG (the same SVG rasterised through a blob: image on a canvas, at 2x), scores as JSON
// and CSV. Everything happens locally; files are offered as downloads.

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

export function svgString(svgEl) {
  const clone = svgEl.cloneNode(true);
  clone.setAttribute('xmlns', 'http://www.w3.org/2000/svg');
  clone.removeAttribute('class');
  return `<?xml version="1.0" encoding="UTF-8"?>\n${new XMLSerializer().serializeToString(clone)}\n`;
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
 * All results of the current view as one JSON document (each result as the CLI prints it).
 * `results[method].json` is {method, tokens, layers, rows, options, scores[layer][row][token]}.
 */
export function scoresJSON({ source, summary, results }) {
  return JSON.stringify({
    source,
    tokens: summary.tokens,
    numLayers: summary.numLayers,
    numHeads: summary.numHeads,
    results: Object.values(results).map((r) => r.json),
  }, null, 1);
}

const q = (s) => `"${String(s).replace(/"/g, '""')}"`;

/** Long CSV: one line per (method, layer, target, input token). Strings are always quoted. */
export function scoresCSV({ summary, results }) {
  const lines = ['method,layer,target,target_token,index,token,score,fusion,heads,alpha,discard,receptive_field'];
  for (const { json: r } of Object.values(results)) {
    const heads = r.options.heads ? r.options.heads.join(' ') : 'all';
    // Raw attention depends on neither the residual nor the receptive-field normalisation.
    const residual = r.method === 'raw' ? ['', '', ''] : [r.options.alpha, r.options.discard ?? 0, r.options.receptiveField ?? false];
    r.layers.forEach((layer, li) => {
      r.rows.forEach((row, ri) => {
        r.scores[li][ri].forEach((v, j) => {
          lines.push([r.method, layer, row, q(summary.tokens[row]), j, q(summary.tokens[j]), String(v),
            r.options.fusion, q(heads), ...residual].join(','));
        });
      });
    });
  }
  return `${lines.join('\n')}\n`;
}
