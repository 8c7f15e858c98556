// The native (C++) column of `npm run bench`: builds the flow helper's benchmark of the core
// (bench/native/flow_bench.cpp, Release -O3, in build/bench) and runs it in its `--npy` mode on
// the very .npy file the WASM side reads, so both time the same numbers.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

function run(command, args, cwd) {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk) => { out += chunk; });
    child.stderr.on('data', (chunk) => { err += chunk; });
    child.on('error', (error) => resolve({ code: -1, out, err: String(error) }));
    child.on('close', (code) => resolve({ code, out, err }));
  });
}

/** Builds flow_bench; returns null (with a log line) when it is missing or does not build. */
export async function nativeBench({ root, log }) {
  const source = join(root, 'bench', 'native', 'flow_bench.cpp');
  if (!existsSync(source)) {
    log('native: bench/native/flow_bench.cpp is not there; no native column');
    return null;
  }
  const dir = join(root, 'build', 'bench');
  let binary;
  if (/add_subdirectory\(bench\/native\)/.test(readFileSync(join(root, 'CMakeLists.txt'), 'utf8'))) {
    log('native: building flow_bench (cmake, Release) in build/bench');
    const configure = await run('cmake', ['-S', '.', '-B', dir, '-DCMAKE_BUILD_TYPE=Release'], root);
    const build = configure.code === 0
      ? await run('cmake', ['--build', dir, '--target', 'flow_bench', '-j2'], root) : configure;
    if (build.code !== 0) {
      log(`native: build failed, no native column:\n${(build.err || build.out).split('\n').slice(-15).join('\n')}`);
      return null;
    }
    binary = join(dir, 'bench', 'native', 'flow_bench');
  } else {
    binary = join(dir, 'flow_bench');
    const sources = ['src/attnflow/fusion.cpp', 'src/attnflow/rollout.cpp', 'src/attnflow/maxflow.cpp', 'src/attnflow/attention_flow.cpp'];
    const newest = Math.max(...[source, ...sources.map((s) => join(root, s))].map((f) => statSync(f).mtimeMs));
    if (!existsSync(binary) || statSync(binary).mtimeMs < newest) {
      log('native: building flow_bench (g++ -O3) in build/bench');
      await run('mkdir', ['-p', dir], root);
      const build = await run('g++', ['-O3', '-DNDEBUG', '-std=c++17', '-Isrc', '-I/usr/include/eigen3', source, ...sources, '-o', binary], root);
      if (build.code !== 0) {
        log(`native: build failed, no native column:\n${build.err.split('\n').slice(-15).join('\n')}`);
        return null;
      }
    }
  }
  const caseArgs = (c, { layers, rows, path }) => ['--npy', path, '--alpha', String(c.alpha),
    '--layers', layers.length === c.shape.layers && c.layers === 'all' ? 'all' : layers.join(','),
    '--rows', rows.length === c.shape.tokens ? 'all' : rows.join(',')];
  return {
    binary,
    /** {seconds, runs} for a flow case on its .npy input, or null if the run failed. */
    async run(c, where) {
      const result = await run(binary, caseArgs(c, where), root);
      const line = result.out.trim().split('\n').at(-1);
      try {
        const parsed = JSON.parse(line);
        return { seconds: parsed.seconds, runs: parsed.runs };
      } catch {
        log(`native: ${c.id} failed (exit ${result.code}): ${result.err.trim().slice(0, 300)}`);
        return null;
      }
    },
    /**
     * The case's computation on request (`flow_bench --serve`), started on vCPU `cpu` with
     * taskset when given: {calls(k): median ms of k calls, close()}, or null if it did not start.
     */
    async serve(c, where, { cpu } = {}) {
      const args = [...caseArgs(c, where), '--serve'];
      const child = cpu === undefined ? spawn(binary, args, { cwd: root, stdio: ['pipe', 'pipe', 'ignore'] })
        : spawn('taskset', ['-c', String(cpu), binary, ...args], { cwd: root, stdio: ['pipe', 'pipe', 'ignore'] });
      const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
      const next = async () => {
        const { value, done } = await lines.next();
        if (done) throw new Error(`native: flow_bench --serve for ${c.id} ended early`);
        return JSON.parse(value);
      };
      child.on('error', () => {});  // a failed spawn ends stdout: next() reports it
      try {
        await next();  // {"ready": true}
      } catch (error) {
        log(String(error.message));
        child.kill();
        return null;
      }
      return {
        async calls(count) {
          child.stdin.write(`${count}\n`);
          return (await next()).ms;
        },
        close() { child.stdin.end(); },
      };
    },
  };
}
