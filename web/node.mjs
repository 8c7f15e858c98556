// The Node-only part of the package (import from 'attnflow/node'): attention files read from disk.
// The rest of the package takes bytes, which for a 400 MB tensor means holding the whole file
// while its heads are fused; a file opened here is read a layer at a time instead, as the CLI
// and the worker pool read it (peak memory on BERT-large: bench/README.md).
import { fail } from './errors.mjs';
import { loadAttentionSource } from './loaders/index.mjs';
import { openFileSource } from './loaders/file.mjs';

/**
 * Opens an attention file on disk (any format loadAttention reads; the path is the format hint
 * unless options.name is given) and returns its AttentionData plus close(). A binary tensor
 * (.npy, .npz, safetensors, .npy.gz) is read when layer(l) asks for a layer, so the file must
 * stay open, and unchanged, until the heads are fused (FusedAttention.create reads every layer);
 * JSON is read whole here.
 * @param {string} path
 * @param {import('./index.d.ts').LoadOptions} [options]
 * @returns {Promise<import('./node.d.ts').AttentionFile>}
 */
export async function openAttentionFile(path, options) {
  if (typeof path !== 'string' || path === '') fail('E_INPUT', 'openAttentionFile takes a file path (a non-empty string)');
  // Anything but an object or nothing is passed on for the loader to refuse.
  const named = options == null ? { name: path } : typeof options === 'object' ? { ...options, name: options.name ?? path } : options;
  const source = openFileSource(path);
  let data;
  try {
    data = loadAttentionSource(source, named);
  } catch (error) {
    source.close();
    throw error;
  }
  // The data is frozen: copy its properties (the warnings getter too) into the object returned.
  const file = Object.defineProperties({}, Object.getOwnPropertyDescriptors(data));
  file.close = () => source.close();
  return Object.freeze(file);
}
