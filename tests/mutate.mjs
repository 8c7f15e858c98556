// Random corruptions of a file's bytes for the tests that check bad input gets a coded error
// (tests/js/mutants.test.mjs, the explorer's browser test): bits flipped, truncated, a byte set to
// a digit, bracket, comma, minus, NUL or 0xff, eight bytes set to '9', a span repeated or cut out.
import { readFileSync, readdirSync } from 'node:fs';

export const FORMATS_DIR = new URL('./fixtures/formats/', import.meta.url);
/** The format fixtures: one small valid file per format and layout. */
export const FORMAT_FIXTURES = readdirSync(FORMATS_DIR)
  .filter((name) => !name.endsWith('.py') && name !== 'expected.json');

export function readFormatFixture(name) {
  return new Uint8Array(readFileSync(new URL(name, FORMATS_DIR)));
}

/** One random corruption of `bytes` (not changed): [mutant, description]. */
export function mutate(bytes, random) {
  const at = (length) => Math.floor(random() * length);
  const m = bytes.slice();
  const p = at(m.length);
  switch (at(6)) {
    case 0: {
      const flips = 1 + at(4);
      for (let k = 0; k < flips; k++) m[at(m.length)] ^= 1 << at(8);
      return [m, `${flips} bits flipped`];
    }
    case 1: return [m.subarray(0, p), `truncated to ${p} bytes`];
    case 2: m[p] = '9[],-\x00\xff'.charCodeAt(at(7)); return [m, `byte ${p} set to ${m[p]}`];
    case 3: m.fill(0x39, p, p + 8); return [m, `bytes ${p}.. set to '9'`];
    case 4: {
      const span = m.subarray(p, p + 1 + at(32));
      const out = new Uint8Array(m.length + span.length);
      out.set(m.subarray(0, p + span.length));
      out.set(m.subarray(p), p + span.length);
      return [out, `bytes ${p}..${p + span.length} repeated`];
    }
    default: {
      const cut = 1 + at(16);
      return [new Uint8Array([...m.subarray(0, p), ...m.subarray(p + cut)]), `bytes ${p}..${p + cut} cut out`];
    }
  }
}
