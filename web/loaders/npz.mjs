// NumPy .npz archives: the array "attentions" (or the only 3- to 5-D float array) and optional
// tokens: "tokens" as a numpy string array ('<U' or '|S'), or a "tokens.json" entry.

import { fail } from '../errors.mjs';
import { readEntry, entrySource } from './zip.mjs';
import { readNpyHeader, checkFloatNpy, checkNpyBytes, npyStrings } from './npy.mjs';
import { dtypeFromNumpy } from './dtype.mjs';
import { fromTensor } from './tensor.mjs';

const base = (name) => name.replace(/\.npy$/, '');

/** @param {import('./zip.mjs').ZipEntry[]} allEntries the archive's entries (listZip) */
export function loadNpz(source, allEntries, options, name) {
  const what = name || 'the .npz file';
  const entries = allEntries.filter((e) => !e.name.endsWith('/'));
  if (entries.length === 0) fail('E_INPUT', `${what} holds no arrays`);
  let att = entries.find((e) => e.name === 'attentions.npy');
  if (!att) {
    // The only float array of 3 to 5 dimensions, found from the headers alone.
    const cands = [];
    for (const e of entries) {
      if (!e.name.endsWith('.npy')) continue;
      let h;
      try { h = readNpyHeader(entrySource(source, e, what), `${what}: ${e.name}`); } catch { continue; }
      if (dtypeFromNumpy(h.descr) && h.shape.length >= 3 && h.shape.length <= 5) cands.push(e);
    }
    if (cands.length !== 1) {
      const names = entries.map((e) => JSON.stringify(base(e.name))).join(', ');
      fail('E_INPUT', `${what}: ${cands.length ? 'several' : 'no'} candidate attention arrays among ${names}; ` +
        'name the array "attentions" (np.savez(f, attentions=a, tokens=np.array(tokens)))');
    }
    att = cands[0];
  }
  const attWhat = `${what}: array "${base(att.name)}"`;
  // A large entry is inflated only as it is read, so nothing is allocated for it here; fromTensor
  // checks the shape against the size guard, then against the entry's declared size.
  const data = entrySource(source, att, what);
  const h = readNpyHeader(data, attWhat);
  const dtype = checkFloatNpy(h, attWhat);

  let tokens;
  const tokNpy = entries.find((e) => e.name === 'tokens.npy');
  const tokJson = entries.find((e) => e.name === 'tokens.json');
  if (tokNpy) {
    tokens = npyStrings(readEntry(source, tokNpy, what), `${what}: array "tokens"`);
  } else if (tokJson) {
    const text = new TextDecoder('utf-8').decode(readEntry(source, tokJson, what));
    try { tokens = JSON.parse(text); } catch { fail('E_INPUT', `${what}: tokens.json is not valid JSON`); }
  }
  return fromTensor({
    format: 'npz', what: attWhat, source: data, offset: h.dataOffset, shape: h.shape, dtype, tokens, options,
    checkBytes: () => checkNpyBytes(h, dtype, data.size, attWhat),
  });
}
