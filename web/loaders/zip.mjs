// A minimal zip reader for .npz: central directory (with zip64), stored and deflated entries,
// read from a ByteSource (./source.mjs). A stored entry (np.savez) is a slice of the source, so a
// large uncompressed .npz is read a layer at a time like a .npy; a deflated one
// (np.savez_compressed) is inflated by fflate as it is read, so it is not held whole either.
// Either way each entry's CRC-32 is checked as its bytes are read (./crc32.mjs).

import { inflateSync, Inflate } from '../vendor/fflate.mjs';
import { fail } from '../errors.mjs';
import { bytesSource, inflatingSource, sliceSource } from './source.mjs';
import { crcCheckedSource, crcText } from './crc32.mjs';

const u16 = (b, p) => b[p] | (b[p + 1] << 8);
const u32 = (b, p) => (b[p] | (b[p + 1] << 8) | (b[p + 2] << 16)) + b[p + 3] * 2 ** 24;
const u64 = (b, p) => u32(b, p) + u32(b, p + 4) * 2 ** 32;

/**
 * @typedef {{name: string, method: number, flags: number, crc: number, csize: number, usize: number, local: number}} ZipEntry
 * @returns {ZipEntry[]}
 */
export function listZip(source, what) {
  const bad = (why) => fail('E_FORMAT', `${what} is truncated or not a valid .npz (zip) file: ${why}`);
  // End of central directory: 22 bytes + a comment of up to 65535 bytes, scanned from the end.
  const tailStart = Math.max(0, source.size - 22 - 65535);
  const tail = source.read(tailStart, source.size - tailStart);
  let eocd = -1;
  for (let p = tail.length - 22; p >= 0; p--) {
    if (tail[p] === 0x50 && tail[p + 1] === 0x4b && tail[p + 2] === 5 && tail[p + 3] === 6) { eocd = p; break; }
  }
  if (eocd < 0) bad('no end-of-central-directory record');
  let count = u16(tail, eocd + 10), cdSize = u32(tail, eocd + 12), cdOff = u32(tail, eocd + 16);
  if (count === 0xffff || cdSize === 0xffffffff || cdOff === 0xffffffff) {
    const loc = tailStart + eocd - 20; // zip64 end-of-central-directory locator
    const locator = loc < 0 ? new Uint8Array(0) : source.read(loc, 20);
    if (locator.length < 20 || u32(locator, 0) !== 0x07064b50) bad('missing zip64 locator');
    const end64 = source.read(u64(locator, 8), 56);
    if (end64.length < 56 || u32(end64, 0) !== 0x06064b50) bad('missing zip64 end record');
    count = u64(end64, 32); cdSize = u64(end64, 40); cdOff = u64(end64, 48);
  }
  if (cdOff + cdSize > source.size) bad('the central directory lies past the end of the file');
  const b = source.read(cdOff, cdSize);
  const entries = [];
  const dec = new TextDecoder('utf-8');
  let p = 0;
  for (let k = 0; k < count; k++) {
    if (p + 46 > b.length || u32(b, p) !== 0x02014b50) bad('broken central directory');
    const flags = u16(b, p + 8), method = u16(b, p + 10), crc = u32(b, p + 16);
    let csize = u32(b, p + 20), usize = u32(b, p + 24), local = u32(b, p + 42);
    const nlen = u16(b, p + 28), elen = u16(b, p + 30), clen = u16(b, p + 32);
    const name = dec.decode(b.subarray(p + 46, p + 46 + nlen));
    // zip64 extra field: the 64-bit values present are those whose 32-bit field is 0xffffffff.
    for (let e = p + 46 + nlen; e + 4 <= p + 46 + nlen + elen;) {
      const id = u16(b, e), sz = u16(b, e + 2);
      if (id === 1) {
        let q = e + 4;
        if (usize === 0xffffffff) { usize = u64(b, q); q += 8; }
        if (csize === 0xffffffff) { csize = u64(b, q); q += 8; }
        if (local === 0xffffffff) { local = u64(b, q); q += 8; }
      }
      e += 4 + sz;
    }
    entries.push({ name, method, flags, crc, csize, usize, local });
    p += 46 + nlen + elen + clen;
  }
  return entries;
}

/** The entry's stored (compressed) data, as a slice of the source. */
function compressed(source, e, what) {
  const local = source.read(e.local, 30);
  if (local.length < 30 || u32(local, 0) !== 0x04034b50) fail('E_FORMAT', `${what}: broken local header of ${e.name}`);
  const start = e.local + 30 + u16(local, 26) + u16(local, 28);
  if (start + e.csize > source.size) fail('E_FORMAT', `${what} is truncated: entry ${e.name} runs past the end of the file`);
  if (e.flags & 1) fail('E_FORMAT', `${what}: entry ${e.name} is encrypted`);
  if (e.method !== 0 && e.method !== 8) fail('E_FORMAT', `${what}: entry ${e.name} uses compression method ${e.method} (only stored and deflate are read)`);
  return sliceSource(source, start, e.csize);
}

/** Deflated entries up to this size are inflated at once (tokens, small tensors). */
const INFLATE_AT_ONCE = 1 << 20;

/**
 * The entry's content as a source: a slice of the file when stored, inflated when deflated;
 * checked against the entry's CRC-32 as it is read.
 */
export function entrySource(source, e, what) {
  const content = uncheckedContent(source, e, what);
  // A CRC of 0 is taken as "not recorded": writers told not to compute checksums leave it 0, and
  // a real one is 0 once in 4 billion entries.
  if (e.crc === 0) return content;
  return crcCheckedSource(content, e.crc, (computed) => fail('E_FORMAT', `${what}: entry ${e.name} is corrupt: ` +
    `its bytes have the CRC-32 ${crcText(computed)}, the archive records ${crcText(e.crc)}`));
}

function uncheckedContent(source, e, what) {
  const c = compressed(source, e, what);
  if (e.method === 0) {
    if (e.csize !== e.usize) fail('E_FORMAT', `${what}: entry ${e.name} has inconsistent sizes`);
    return c;
  }
  // Deflate expands at most ~1032:1: a larger declared size is corruption, refused before reading.
  if (e.usize > e.csize * 1032 + 1024) fail('E_FORMAT', `${what}: entry ${e.name} declares an impossible size`);
  // Small entries (tokens, headers) at once; large ones (the tensor) as their layers are read.
  if (e.usize <= INFLATE_AT_ONCE) return bytesSource(inflate(c.read(0, c.size), e, what));
  return inflatingSource(c, e.usize, () => new Inflate(), (why) =>
    fail('E_FORMAT', `${what}: entry ${e.name} is truncated or corrupt (${why})`));
}

/**
 * Most bytes readEntry() reads: token lists and metadata are far smaller, and a zip entry can
 * claim gigabytes while taking under a megabyte of the file (deflate expands ~1032:1).
 */
const MAX_SMALL_ENTRY_BYTES = 64 * 2 ** 20;

/** The bytes of a small entry (tokens, a pickle, a byte-order mark), read whole. */
export function readEntry(source, e, what) {
  if (e.usize > MAX_SMALL_ENTRY_BYTES) {
    fail('E_TOO_LARGE', `${what}: entry ${e.name} holds ${(e.usize / 2 ** 20).toFixed(0)} MB; attnflow reads ` +
      `at most ${MAX_SMALL_ENTRY_BYTES / 2 ** 20} MB of tokens or metadata`);
  }
  const s = entrySource(source, e, what);
  return s.read(0, s.size);
}

function inflate(c, e, what) {
  let out;
  try {
    out = inflateSync(c, { out: new Uint8Array(e.usize) });
  } catch (err) {
    fail('E_FORMAT', `${what}: entry ${e.name} is truncated or corrupt (${err.message})`);
  }
  if (out.length !== e.usize) fail('E_FORMAT', `${what}: entry ${e.name} inflates to ${out.length} bytes, expected ${e.usize}`);
  return out;
}
