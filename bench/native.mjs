// The native (C++) side of `npm run bench`: builds and runs the flow helper's benchmark of the
// core (bench/native/flow_bench.cpp) if it is there; otherwise the bench runs without it.
import { existsSync } from 'node:fs';
import { join } from 'node:path';

export async function nativeBench({ root, log }) {
  if (!existsSync(join(root, 'bench', 'native', 'flow_bench.cpp'))) {
    log('native: bench/native/flow_bench.cpp is not there yet; skipping the native column');
    return null;
  }
  log('native: flow_bench.cpp found, but no runner is wired up yet');
  return null;
}
