#!/usr/bin/env node
// How long this machine takes to give a process fresh memory, apart from attnflow. A one-shot
// CLI flow of 64 rows at n=512 (bench case big-cli-flow-64rows) first-writes ~40 MB of solver
// state (~10,200 page faults) while it computes, and its compute time is bimodal (~60 or ~150 ms)
// with the same user time: the slow runs spend ~100 ms more in the kernel. This starts fresh
// processes that each hold a 400 MB buffer (like the loaded file) and then first-write 40 MB,
// and prints the time and system CPU of that write, to show whether the bimodality is the
// machine's (the same split here) or attnflow's. On 2026-12-05: 6 and 7 of 30 writes took
// ~110 ms against a median of 14 ms, the extra time all in system CPU for the same ~10,400
// faults; without the 400 MB buffer first, 0 of 30 (median 12 ms). The guest has virtio_balloon,
// so fresh guest pages the host has not backed yet are a likely cause (not proven).
//
//   node bench/first-touch.mjs [--processes 20]
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const PAGE = 4096;

function touchOnce() {
  const file = new Uint8Array(400 * 2 ** 20).fill(1);
  const before = process.resourceUsage();
  const started = performance.now();
  const fresh = new Uint8Array(40 * 2 ** 20);
  for (let i = 0; i < fresh.length; i += PAGE) fresh[i] = 1;
  const ms = performance.now() - started;
  const after = process.resourceUsage();
  return {
    ms, system_ms: (after.systemCPUTime - before.systemCPUTime) / 1000,
    faults: after.minorPageFault - before.minorPageFault, kept: file[0] + fresh[0],
  };
}

if (process.argv[2] === '--child') {
  process.stdout.write(JSON.stringify(touchOnce()));
} else {
  const { values } = parseArgs({ options: { processes: { type: 'string', default: '20' } } });
  const runs = Array.from({ length: Number(values.processes) }, () =>
    JSON.parse(execFileSync(process.execPath, [fileURLToPath(import.meta.url), '--child'], { encoding: 'utf8' })));
  for (const r of runs) console.log(`first write of 40 MB: ${r.ms.toFixed(1)} ms, system CPU ${r.system_ms.toFixed(1)} ms, ${r.faults} page faults`);
  const ms = runs.map((r) => r.ms).sort((a, b) => a - b);
  const median = ms[Math.floor(ms.length / 2)];
  const slow = ms.filter((v) => v > 3 * median).length;
  console.log(`median ${median.toFixed(1)} ms, max ${ms[ms.length - 1].toFixed(1)} ms; ${slow} of ${runs.length} runs over 3x the median`);
}
