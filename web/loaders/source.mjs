// Random access to an input's bytes. The binary readers (.npy, .npz, safetensors) read the
// header, then one layer at a time while the heads are fused, so an input that is not already in
// memory (a File read in a worker, a file on disk read by the CLI) is never held whole: peak
// memory stays about one layer of heads plus the fused stack (issue 4). JSON and compressed data
// are read whole, as their parsers need.

import { fail } from '../errors.mjs';

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

/** The part [start, start + size) of a source, as a source of its own. @returns {ByteSource} */
export function sliceSource(source, start, size) {
  return {
    size,
    read: (offset, length) => source.read(start + offset, Math.max(0, Math.min(length, size - offset))),
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
