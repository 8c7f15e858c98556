#!/usr/bin/env node
// A tiny static server for the repository root (no dependencies), used by `npm start` and by the
// browser tests. It serves files only: the explorer page (demo/) runs entirely in the browser.
//
//   node scripts/serve.mjs                 # port from $PORT, else 8080
//   PORT=0 node scripts/serve.mjs          # any free port; the first stdout line says which
//   node scripts/serve.mjs --no-isolation  # without the COOP/COEP headers (see ISOLATION)
//
// The first line on stdout is always "attnflow explorer: http://127.0.0.1:<port>/demo/" so a
// script (or a test) can wait for it and read the port.
import { createServer } from 'node:http';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { extname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)));

const MIME = {
  '.html': 'text/html; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.wasm': 'application/wasm',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.md': 'text/markdown; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.ts': 'text/plain; charset=utf-8',
  '.npy': 'application/octet-stream',
  '.npz': 'application/octet-stream',
  '.gz': 'application/gzip',
  '.safetensors': 'application/octet-stream',
};

// The same policy is repeated in demo/index.html as <meta http-equiv>, so it also holds when the
// page is served by any other static server. 'wasm-unsafe-eval' lets the page compile WebAssembly
// without allowing eval(); nothing may be loaded from another origin.
export const CSP = [
  "default-src 'self'",
  "script-src 'self' 'wasm-unsafe-eval'",
  "worker-src 'self'",
  "img-src 'self' data: blob:",
  "style-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
].join('; ');

// Cross-origin isolation: with these two headers the page has SharedArrayBuffer, so its worker
// pool claims rows at run time (web/parallel.mjs, balance 'dynamic': on a trained model's rows,
// where the sink token's row costs ~25 others, the last layer at L=12, n=128 ran 1.84x on 2
// workers against 1.68x with rows dealt ahead). Everything the page loads is same-origin, so
// require-corp blocks nothing. Most static hosts cannot send headers: the page then deals rows
// ahead, with the same numbers.
export const ISOLATION = {
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Embedder-Policy': 'require-corp',
};

function send(res, status, text) {
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'Content-Security-Policy': CSP });
  res.end(text);
}

export function createStaticServer(root = ROOT, { isolated = true } = {}) {
  return createServer(async (req, res) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return send(res, 405, 'method not allowed\n');
    let pathname;
    try {
      pathname = decodeURIComponent(new URL(req.url, 'http://localhost').pathname);
    } catch {
      return send(res, 400, 'bad request\n');
    }
    if (pathname === '/') {
      res.writeHead(302, { Location: '/demo/' });
      return res.end();
    }
    if (pathname.includes('\0')) return send(res, 400, 'bad request\n');
    // No dotfiles or dot-directories (.git, .env, ...): only the project's files are served.
    if (pathname.split('/').some((part) => part.startsWith('.') && part !== '.' && part !== '..')) {
      return send(res, 403, 'forbidden\n');
    }
    // Resolve, then refuse anything that is not inside the root (../, encoded %2e%2e, absolute).
    let file = resolve(join(root, pathname));
    if (file !== root && !file.startsWith(root + sep)) return send(res, 403, 'forbidden\n');
    try {
      let info = await stat(file);
      if (info.isDirectory()) {
        if (!pathname.endsWith('/')) {
          res.writeHead(301, { Location: `${pathname}/` });
          return res.end();
        }
        file = join(file, 'index.html');
        info = await stat(file);
      }
      if (!info.isFile()) return send(res, 404, 'not found\n');
      res.writeHead(200, {
        'Content-Type': MIME[extname(file).toLowerCase()] ?? 'application/octet-stream',
        'Content-Length': info.size,
        'Content-Security-Policy': CSP,
        'X-Content-Type-Options': 'nosniff',
        'Cache-Control': 'no-cache',
        ...(isolated ? ISOLATION : {}),
      });
      if (req.method === 'HEAD') return res.end();
      createReadStream(file).on('error', () => res.destroy()).pipe(res);
    } catch {
      send(res, 404, 'not found\n');
    }
  });
}

const USAGE = `usage: [PORT=8080] [HOST=127.0.0.1] node scripts/serve.mjs [--no-isolation]
Serves the repository root; the explorer is at /demo/. PORT=0 picks a free port.
--no-isolation  leave out the COOP/COEP headers (the page then has no SharedArrayBuffer)`;

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const unknown = process.argv.slice(2).filter((arg) => arg !== '--no-isolation');
  if (unknown.length) {
    const help = unknown.includes('--help') || unknown.includes('-h');
    (help ? console.log : console.error)(help ? USAGE : `attnflow: unknown argument ${unknown[0]}\n${USAGE}`);
    process.exit(help ? 0 : 2);
  }
  const port = Number(process.env.PORT ?? 8080);
  const host = process.env.HOST ?? '127.0.0.1';
  const server = createStaticServer(ROOT, { isolated: !process.argv.includes('--no-isolation') });
  server.on('error', (error) => {
    console.error(`attnflow: cannot serve on ${host}:${port}: ${error.message}`);
    process.exit(1);
  });
  server.listen(port, host, () => {
    console.log(`attnflow explorer: http://${host}:${server.address().port}/demo/`);
  });
}
