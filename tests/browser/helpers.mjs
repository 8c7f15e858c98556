// Shared by the browser tests: the static server, Chromium, and synthetic attention inputs.
import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { after, before } from 'node:test';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { mulberry32 } from '../../bench/synthetic.mjs';
import { CSP } from '../../scripts/serve.mjs';

/** mulberry32 (bench/synthetic.mjs): seeded, so every run uploads the same "never seen" files. */
export const rng = mulberry32;

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const OUT = fileURLToPath(new URL('./out/', import.meta.url));

/**
 * Starts scripts/serve.mjs on a free port; resolves {url, origin, close}. isolated: false serves
 * without the cross-origin isolation headers, as most static hosts do.
 */
export async function startServer({ isolated = true } = {}) {
  const child = spawn(process.execPath, [`${ROOT}scripts/serve.mjs`, ...(isolated ? [] : ['--no-isolation'])], {
    env: { ...process.env, PORT: '0' }, stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise((resolve, reject) => {
    let text = '';
    child.stdout.on('data', (d) => {
      text += d;
      const m = text.match(/http:\/\/\S+/);
      if (m) resolve(m[0]);
    });
    child.once('exit', (code) => reject(new Error(`serve.mjs exited with ${code}`)));
  });
  return { url, origin: new URL(url).origin, close: () => child.kill() };
}

/**
 * The explorer's server and a headless Chromium, started before the calling file's tests and
 * closed after them: read `session.server` and `session.browser` inside tests.
 */
export function useServerAndBrowser() {
  const session = { server: null, browser: null };
  before(async () => {
    mkdirSync(OUT, { recursive: true });
    session.server = await startServer();
    session.browser = await launch();
  });
  after(async () => {
    await session.browser?.close();
    session.server?.close();
  });
  return session;
}

export function launch() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
}


/** Softmax attention as one flat Float64Array [L][H][n][n] (causal: zero above the diagonal). */
export function randomAttention({ L, H, n, seed, causal = false, sharp = 3 }) {
  const rand = rng(seed);
  const a = new Float64Array(L * H * n * n);
  const z = new Float64Array(n);
  for (let lh = 0; lh < L * H; lh++) {
    for (let i = 0; i < n; i++) {
      let max = -Infinity;
      for (let j = 0; j < n; j++) {
        z[j] = sharp * rand() + (j === 0 ? 1 : 0) + (j === i - 1 ? 1 : 0);
        if (!(causal && j > i) && z[j] > max) max = z[j];
      }
      let sum = 0;
      for (let j = 0; j < n; j++) {
        const e = causal && j > i ? 0 : Math.exp(z[j] - max);
        z[j] = e;
        sum += e;
      }
      const base = (lh * n + i) * n;
      for (let j = 0; j < n; j++) a[base + j] = z[j] / sum;
    }
  }
  return a;
}

/** Canonical JSON {tokens, attentions: [L][H][n][n]} from a flat array. */
export function toJson(tokens, flat, L, H) {
  const n = tokens.length;
  const attentions = [];
  for (let l = 0; l < L; l++) {
    const heads = [];
    for (let h = 0; h < H; h++) {
      const rows = [];
      for (let i = 0; i < n; i++) rows.push(Array.from(flat.subarray(((l * H + h) * n + i) * n, ((l * H + h) * n + i + 1) * n)));
      heads.push(rows);
    }
    attentions.push(heads);
  }
  return JSON.stringify({ tokens, attentions });
}

/** A float32 .npy file of the given shape (little-endian, C order). */
export function toNpy(flat, shape) {
  const f32 = Float32Array.from(flat);
  let header = `{'descr': '<f4', 'fortran_order': False, 'shape': (${shape.join(', ')}), }`;
  const pre = 10;
  const pad = 64 - ((pre + header.length + 1) % 64);
  header += `${' '.repeat(pad % 64)}\n`;
  const out = Buffer.alloc(pre + header.length + f32.byteLength);
  out.write('\x93NUMPY', 0, 'latin1');
  out[6] = 1;
  out[7] = 0;
  out.writeUInt16LE(header.length, 8);
  out.write(header, pre, 'latin1');
  Buffer.from(f32.buffer).copy(out, pre + header.length);
  return out;
}

/**
 * Waits until the results are done and every token cell matches `expect`: {target, layer,
 * methods: [...], file: substring of the input line, count: number of cells}.
 */
export async function waitDone(page, expect = {}, timeout = 60_000) {
  try {
    await waitDoneOrThrow(page, expect, timeout);
  } catch (error) {
    // Say what the page was showing: a bare timeout tells nothing about where it stopped.
    const shown = await page.evaluate(() => ({
      state: document.querySelector('[data-testid="results"]')?.dataset.state,
      status: document.getElementById('status')?.textContent,
      cells: document.querySelectorAll('[data-testid="token-score"]').length,
    })).catch((e) => `unreadable: ${e.message}`);
    error.message += `\nthe page then: ${JSON.stringify(shown)}; expected ${JSON.stringify(expect)}`;
    throw error;
  }
}

function waitDoneOrThrow(page, expect, timeout) {
  return page.waitForFunction((e) => {
    const r = document.querySelector('[data-testid="results"]');
    if (r?.dataset.state !== 'done') return false;
    const cells = [...document.querySelectorAll('[data-testid="token-score"]')];
    if (!cells.length) return false;
    if (e.count !== undefined && cells.length !== e.count) return false;
    if (e.target !== undefined && !cells.every((c) => c.dataset.target === String(e.target))) return false;
    if (e.layer !== undefined && !cells.every((c) => c.dataset.layer === String(e.layer))) return false;
    if (e.methods && [...new Set(cells.map((c) => c.dataset.method))].sort().join() !== [...e.methods].sort().join()) return false;
    if (e.file && !document.getElementById('input-info').textContent.includes(e.file)) return false;
    return true;
  }, expect, { timeout });
}

/** The displayed token strips: [{method, layer, target, index, value, text}]. */
export function readCells(page) {
  return page.$$eval('[data-testid="token-score"]', (cells) => cells.map((c) => ({
    method: c.dataset.method,
    layer: Number(c.dataset.layer),
    target: Number(c.dataset.target),
    index: Number(c.dataset.index),
    value: Number(c.dataset.value),
    text: c.textContent,
  })));
}

/**
 * A bare page of the server's origin with only `body` (no stylesheet) under the explorer's
 * Content-Security-Policy, as a careful embedder would serve the package's views; resolves
 * {page, errors} (the page's uncaught errors, collected).
 */
export async function openBarePage(browser, server, { body, width = 1000 }) {
  const page = await browser.newPage({ viewport: { width, height: 700 } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  const url = `${server.origin}/bare-page.html`;
  await page.route(url, (route) => route.fulfill({
    status: 200,
    contentType: 'text/html; charset=utf-8',
    headers: { 'Content-Security-Policy': CSP },
    body: `<!doctype html><html lang="en"><meta charset="utf-8"><title>embedder</title>${body}`,
  }));
  await page.goto(url);
  return { page, errors };
}
