// scripts/serve.mjs: MIME types, the Content-Security-Policy header, and nothing outside the
// repository root (traversal, encoded traversal, dotfiles).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startServer } from './helpers.mjs';

let server;
before(async () => { server = await startServer(); });
after(() => server?.close());

// Raw paths (no client-side normalisation of ../ or %2e%2e).
function get(path) {
  const { hostname, port } = new URL(server.origin);
  return new Promise((resolve, reject) => {
    const req = request({ hostname, port, path, method: 'GET' }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString('latin1') }));
    });
    req.on('error', reject);
    req.end();
  });
}

test('serves the page, modules and wasm with the right types and the CSP', async () => {
  const html = await get('/demo/');
  assert.equal(html.status, 200);
  assert.match(html.headers['content-type'], /^text\/html/);
  assert.match(html.headers['content-security-policy'], /default-src 'self'/);
  assert.match(html.headers['content-security-policy'], /script-src 'self' 'wasm-unsafe-eval'/);
  assert.doesNotMatch(html.headers['content-security-policy'], /'unsafe-inline'|'unsafe-eval'/);
  // The same policy is in the page itself, for other static servers.
  const meta = html.body.match(/http-equiv="Content-Security-Policy" content="([^"]+)"/);
  assert.equal(meta?.[1], html.headers['content-security-policy']);
  // Cross-origin isolation (the page's pool may then share memory between its workers).
  assert.equal(html.headers['cross-origin-opener-policy'], 'same-origin');
  assert.equal(html.headers['cross-origin-embedder-policy'], 'require-corp');
  assert.match((await get('/demo/app.mjs')).headers['content-type'], /^text\/javascript/);
  assert.match((await get('/web/client.mjs')).headers['content-type'], /^text\/javascript/);
  assert.equal((await get('/demo/examples/index.json')).headers['content-type'], 'application/json; charset=utf-8');
  const wasm = await get('/web/wasm/attnflow_wasm.wasm');
  if (wasm.status === 200) assert.equal(wasm.headers['content-type'], 'application/wasm');
  assert.equal((await get('/')).status, 302);
});

test('refuses paths outside the root and dotfiles', async () => {
  // '/../x' is normalised by URL parsing to '/x' (inside the root); every other path is refused.
  assert.equal((await get('/../package.json')).status, 200);
  for (const path of ['/..%2fpackage.json', '/..%2f..%2f..%2fetc%2fpasswd', '/demo/..%2f..%2f..%2fetc%2fpasswd',
    '/%2e%2e/%2e%2e/etc/passwd', '/demo/%2e%2e%2f%2e%2e%2fetc/passwd', '/.git/config', '/.gitignore', '/demo/%00']) {
    const r = await get(path);
    assert.ok(r.status >= 400, `${path}: ${r.status}`);
    assert.doesNotMatch(r.body, /root:x:0|\[core\]/, path);
  }
  assert.equal((await get('/.git/config')).status, 403);
  assert.equal((await get('/nope.html')).status, 404);
});

test('--help prints the usage without serving; an unknown argument exits 2', () => {
  const serve = fileURLToPath(new URL('../../scripts/serve.mjs', import.meta.url));
  const help = spawnSync(process.execPath, [serve, '--help'], { encoding: 'utf8', timeout: 10_000 });
  assert.equal(help.status, 0);
  assert.match(help.stdout, /^usage: .*node scripts\/serve.mjs \[--no-isolation\]/);
  const wrong = spawnSync(process.execPath, [serve, '--port', '9000'], { encoding: 'utf8', timeout: 10_000 });
  assert.equal(wrong.status, 2);
  assert.match(wrong.stderr, /unknown argument --port/);
});
