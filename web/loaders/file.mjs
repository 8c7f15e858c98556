// A ByteSource over a file on disk (Node only; web/node.mjs and web/cli.mjs use it): each read is
// a positioned read into fresh memory, so a 400 MB tensor is never held whole while its heads are
// fused.

import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { fail } from '../errors.mjs';
import { streamCollector } from './index.mjs';
import { bytesSource } from './source.mjs';

/**
 * Everything a pipe (or a character device, a socket) gives until its end: such a file has no size
 * and no positions to read at (`attnflow flow <(zcat x.json.gz)`, or `/dev/stdin`).
 */
function readStream(fd, path) {
  const collected = streamCollector(path);
  for (;;) {
    const chunk = new Uint8Array(1 << 20);
    let n;
    try {
      n = readSync(fd, chunk, 0, chunk.length, null);
    } catch (error) {
      if (error.code === 'EAGAIN') continue;  // a non-blocking pipe with nothing in it yet
      fail('E_INPUT', `cannot read ${path}: ${error.message}`);
    }
    if (n === 0) break;
    collected.add(chunk.subarray(0, n));
  }
  return collected.bytes();
}

/**
 * Opens `path` for reading; call close() when the data read from it is no longer needed.
 * @returns {import('./source.mjs').ByteSource & {close(): void}}
 */
export function openFileSource(path) {
  let fd, stat;
  let closed = false;
  try {
    fd = openSync(path, 'r');
    stat = fstatSync(fd);
  } catch (error) {
    if (fd !== undefined) closeSync(fd);
    fail('E_INPUT', `cannot read ${path}: ${error.code === 'ENOENT' ? 'no such file' : error.message}`);
  }
  if (stat.isFIFO() || stat.isCharacterDevice() || stat.isSocket()) {
    try {
      return { ...bytesSource(readStream(fd, path)), close() {} };
    } finally {
      closeSync(fd);
    }
  }
  const { size } = stat;
  return {
    size,
    read(offset, length) {
      if (closed) fail('E_INPUT', `${path} has been closed: open it again to read its layers`);
      const out = new Uint8Array(Math.max(0, Math.min(length, size - offset)));
      for (let got = 0; got < out.length;) {
        let n;
        try {
          n = readSync(fd, out, got, out.length - got, offset + got);
        } catch (error) {
          fail('E_INPUT', `cannot read ${path}: ${error.message}`);
        }
        if (n === 0) fail('E_INPUT', `${path} shrank while it was being read (${size} bytes when opened)`);
        got += n;
      }
      return out;
    },
    /** Safe to call more than once. */
    close() {
      if (closed) return;
      closed = true;
      closeSync(fd);
    },
  };
}
