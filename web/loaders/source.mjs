// Random access to an input's bytes. The binary readers (.npy, .npz, safetensors) read the
// header, then one layer at a time while the heads are fused, so an input that is not already in
// memory (a File read in a worker, a file on disk read by the CLI) is never held whole: peak
// memory stays about one layer of heads plus the fused stack (issue 4). JSON and compressed data
// are read whole, as their parsers need.

import { AttnflowError, fail } from '../errors.mjs';

/**
 * @typedef {object} ByteSource
 * @property {number} size  bytes in the input
 * @property {(offset: number, length: number) => Uint8Array} read  bytes [offset, offset + length),
 *   clipped to the end of the input (so a read past the end returns fewer bytes)
 */

/** A source over bytes already in memory: reads are views, no copy. @returns {ByteSource} */
export function bytesSource(bytes) {
  return { size: bytes.length, read: (offset, length) => bytes.subarray(offset, offset + length) };
}

/** The chunks (`total` bytes in all) as one array, in order. */
export function joinChunks(chunks, total) {
  const bytes = new Uint8Array(total);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.length;
  }
  return bytes;
}

/** The part [start, start + size) of a source, as a source of its own. @returns {ByteSource} */
export function sliceSource(source, start, size) {
  return {
    size,
    read: (offset, length) => source.read(start + offset, Math.max(0, Math.min(length, size - offset))),
  };
}

const INFLATE_CHUNK = 1 << 16;

/**
 * The decompressed content of `compressed` (`size` bytes), read forward as it is inflated by a
 * fflate stream from `makeStream()`: only what was inflated but not yet read is held. Reads in
 * increasing order (the layers, as the heads are fused) cost one pass; a read behind the last one
 * starts inflating again from the beginning (a fusion done again). `corrupt(why)` throws.
 * @returns {ByteSource}
 */
export function inflatingSource(compressed, size, makeStream, corrupt) {
  let stream, consumed, produced, chunks, chunksStart;
  const restart = () => {
    stream = makeStream();
    stream.ondata = (d) => { chunks.push(d); produced += d.length; };
    consumed = 0; produced = 0; chunks = []; chunksStart = 0;
  };
  const dropBefore = (offset) => {
    while (chunks.length && chunksStart + chunks[0].length <= offset) chunksStart += chunks.shift().length;
  };
  restart();
  return {
    size,
    read(offset, length) {
      const end = Math.min(size, offset + length);
      if (offset < chunksStart) restart();
      while (produced < end) {
        if (consumed >= compressed.size) corrupt(`it inflates to ${produced} bytes, expected ${size}`);
        const next = compressed.read(consumed, INFLATE_CHUNK);
        consumed += next.length;
        try {
          stream.push(next, consumed >= compressed.size);
        } catch (err) {
          if (err instanceof AttnflowError) throw err;
          corrupt(err.message);
        }
        dropBefore(offset);
      }
      const out = new Uint8Array(Math.max(0, end - offset));
      for (let k = 0, at = chunksStart; k < chunks.length && at < end; at += chunks[k++].length) {
        const from = Math.max(offset, at), to = Math.min(end, at + chunks[k].length);
        if (from < to) out.set(chunks[k].subarray(from - at, to - at), from - offset);
      }
      return out;
    },
  };
}

/** Whether Blobs can be read synchronously here: FileReaderSync exists in dedicated workers only. */
export function canReadBlobsInPlace() {
  return typeof FileReaderSync === 'function';
}

/**
 * A source over a Blob or File, read a slice at a time with FileReaderSync (dedicated workers).
 * A File is a handle to the file on disk: if the file changes after it was chosen, the browser
 * refuses to read it again, which becomes E_INPUT here.
 * @param {Blob} blob @param {string|undefined} name @returns {ByteSource}
 */
export function blobSource(blob, name) {
  const reader = new FileReaderSync();
  return {
    size: blob.size,
    read(offset, length) {
      const end = Math.min(blob.size, offset + length);
      try {
        return new Uint8Array(reader.readAsArrayBuffer(blob.slice(offset, Math.max(offset, end))));
      } catch (error) {
        return fail('E_INPUT', `${name || 'the file'} can no longer be read (${error?.name ?? error}): was it ` +
          'changed, moved or deleted after it was opened? Open it again');
      }
    },
  };
}
