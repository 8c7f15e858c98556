#!/usr/bin/env node
// Writes the explorer's bundled examples into demo/examples/ (run: node scripts/make_examples.mjs).
//
// - agreement-*.json: copied from ../shared/examples/agreement (a trained 6-layer, 8-head encoder
//   on subject-verb agreement, with [CLS]; meta has label, prediction, blankout and gradient).
// - synthetic-decoder.json, synthetic-encoder.json: SYNTHETIC attention (softmax of seeded random
//   logits plus typical head patterns), not from any trained model; they show what causal masks
//   and a [CLS]/[SEP] encoder look like. Deterministic: same output on every run.
// - index.json: the list the page's example menu reads; the first entry is loaded on start.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { mulberry32 as rng } from '../bench/synthetic.mjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const OUT = join(ROOT, 'demo', 'examples');
const SHARED = join(ROOT, '..', 'shared', 'examples', 'agreement');
mkdirSync(OUT, { recursive: true });


const round6 = (x) => Number(x.toPrecision(6));

/** Softmax attention [L][H][n][n] from a logit function; causal masks j > i. */
function attention({ L, H, n, seed, causal, logit }) {
  const rand = rng(seed);
  const out = [];
  for (let l = 0; l < L; l++) {
    const heads = [];
    for (let h = 0; h < H; h++) {
      const rows = [];
      for (let i = 0; i < n; i++) {
        const z = [];
        for (let j = 0; j < n; j++) z.push(causal && j > i ? -Infinity : logit(l, h, i, j, rand));
        const m = Math.max(...z);
        const e = z.map((v) => (v === -Infinity ? 0 : Math.exp(v - m)));
        const s = e.reduce((a, b) => a + b, 0);
        rows.push(e.map((v) => round6(v / s)));
      }
      heads.push(rows);
    }
    out.push(heads);
  }
  return out;
}

function writeJson(name, value) {
  writeFileSync(join(OUT, name), `${JSON.stringify(value)}\n`);
}

const examples = [];

// 1. The trained agreement model (real attention). 04 first: 14 tokens, one mismatching attractor.
const agreement = [
  ['04', 'the hospitals under the tall guards no loud wolf uses [MASK] often .'],
  ['01', 'the brave buses [MASK] behind a beautiful letter .'],
  ['03', 'their bird from their dishes [MASK] .'],
  ['05', 'our drivers under his cabinet without the parties that my busy mountain fixes [MASK] very quiet .'],
  ['06', 'from all foreign songs , the angry beautiful church near several rivers [MASK] the army … (misclassified)'],
  ['08', 'my friends who bought our blue player above his neighbor above their writer [MASK] in the camera .'],
  ['07', 'my table under my expensive reports on the doors who built our brave systems [MASK] …'],
  ['02', 'near her problem , each heavy officer who admired the lazy store … [MASK] the wooden soldiers .'],
];
for (const [id, sentence] of agreement) {
  const file = `agreement-${id}.json`;
  const source = join(SHARED, `${id}.json`);
  if (existsSync(source)) writeFileSync(join(OUT, file), readFileSync(source));  // not copyFile: keep the mode writable
  else if (!existsSync(join(OUT, file))) throw new Error(`missing ${source}`);
  const data = JSON.parse(readFileSync(join(OUT, file), 'utf8'));
  examples.push({
    file,
    title: `Agreement ${id}: ${sentence}`,
    group: 'Trained encoder (6 layers × 8 heads, [CLS]) — subject-verb agreement',
    synthetic: false,
    numTokens: data.tokens.length,
  });
}

// 2. Synthetic encoder with [CLS] and [SEP]: heads that attend to [CLS], to [SEP] (a "no-op"
// sink), to neighbours, broadly, and to one content word.
{
  const tokens = ['[CLS]', 'the', 'keys', 'to', 'the', 'old', 'cabinet', 'are', 'on', 'the', 'table', '[SEP]'];
  const n = tokens.length;
  const L = 6;
  const H = 4;
  const content = [2, 6, 10];
  const attentions = attention({
    L, H, n, seed: 20200501, causal: false,
    logit(l, h, i, j, rand) {
      let z = 1.2 * rand();
      const kind = (h + l) % H;
      if (kind === 0) z += j === 0 ? 2.5 : 0;                               // to [CLS]
      if (kind === 1) z += j === n - 1 ? 3 - 0.3 * l : 0;                   // to [SEP]
      if (kind === 2) z += Math.abs(i - j) === 1 ? 2.2 : i === j ? 1 : 0;   // neighbours
      if (kind === 3) z += content.includes(j) ? 1.5 + 0.2 * l : 0;         // content words
      return z;
    },
  });
  writeJson('synthetic-encoder.json', {
    tokens, attentions,
    meta: { synthetic: true, description: 'SYNTHETIC encoder attention: seeded random logits with [CLS], [SEP], neighbour and content-word head patterns. Not a trained model.' },
  });
  examples.push({ file: 'synthetic-encoder.json', title: 'Synthetic encoder with [CLS] (6 layers × 4 heads)', group: 'Synthetic (not from a trained model)', synthetic: true, numTokens: n });
}

// 3. Synthetic causal decoder: previous-token heads, an attention sink on the first token, and
// heads that look back to the subject; causal masks (j <= i).
{
  const tokens = ['<s>', 'The', 'keys', 'to', 'the', 'cabinet', 'are', 'on', 'the', 'table', '.'];
  const n = tokens.length;
  const L = 4;
  const H = 4;
  const attentions = attention({
    L, H, n, seed: 5000928, causal: true,
    logit(l, h, i, j, rand) {
      let z = 1.0 * rand();
      if (h === 0) z += j === 0 ? 3 : 0;                 // attention sink on <s>
      if (h === 1) z += j === i - 1 ? 3 : 0;             // previous token
      if (h === 2) z += j === 2 ? 2 + 0.3 * l : 0;       // the subject "keys"
      if (h === 3) z += j === i ? 1.5 : 0;               // self
      return z;
    },
  });
  writeJson('synthetic-decoder.json', {
    tokens, attentions,
    meta: { synthetic: true, description: 'SYNTHETIC causal (decoder) attention: seeded random logits with sink, previous-token, subject and self heads. Not a trained model.' },
  });
  examples.push({ file: 'synthetic-decoder.json', title: 'Synthetic causal decoder (4 layers × 4 heads)', group: 'Synthetic (not from a trained model)', synthetic: true, numTokens: n });
}

writeJson('index.json', examples);
console.log(`wrote ${examples.length} examples to ${OUT}`);
