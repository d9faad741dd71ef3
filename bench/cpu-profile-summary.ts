/**
 * A V8 `.cpuprofile` (node --cpu-prof) summed by module for a window of it: self and inclusive time
 * per module (an npm package, a runtime/ file, a Node internal module, V8's GC and native code),
 * and the heaviest functions by self time. Used by bench/task-cpu.ts; also an entry:
 *
 *   node --import tsx bench/cpu-profile-summary.ts <file.cpuprofile> [fromUs toUs] [per]
 *
 * The window is in the profile's clock (CLOCK_MONOTONIC µs, the same as process.hrtime), so a
 * bench can cut start-up and shut-down out of the figures; `per` divides every figure (per task).
 */
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: Node[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** The module a frame belongs to: a package, a runtime file, a Node module or a V8 pseudo-frame. */
export function moduleOf(url: string, fn: string): string {
  if (!url) return fn.startsWith('(') ? fn : '(native)';
  const nm = url.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + '/node_modules/'.length).split('/');
    return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]!;
  }
  const rt = url.indexOf('/runtime/');
  if (rt >= 0) return url.slice(rt + 1).replace(/\.js$/, '');
  if (url.startsWith('node:')) return url.split('/').slice(0, 3).join('/');
  return url;
}

export function summarizeProfile(file: string, fromUs = -Infinity, toUs = Infinity, per = 1, top = 25): string {
  const p = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const self = new Map<string, number>();
  const incl = new Map<string, number>();
  const fnSelf = new Map<string, number>();
  const fnIncl = new Map<string, number>();
  let t = p.startTime;
  let total = 0;
  for (let i = 0; i < p.samples.length; i++) {
    t += p.timeDeltas[i]!;
    const w = (p.timeDeltas[i + 1] ?? 0) / 1000;
    if (t < fromUs || t > toUs) continue;
    const leaf = byId.get(p.samples[i]!)!;
    if (leaf.callFrame.functionName === '(idle)') continue;
    total += w;
    const mod = moduleOf(leaf.callFrame.url, leaf.callFrame.functionName);
    self.set(mod, (self.get(mod) ?? 0) + w);
    const key = (n: Node): string =>
      `${n.callFrame.functionName || '(anonymous)'} ${moduleOf(n.callFrame.url, n.callFrame.functionName)}:${n.callFrame.lineNumber + 1}`;
    fnSelf.set(key(leaf), (fnSelf.get(key(leaf)) ?? 0) + w);
    const mods = new Set<string>();
    const fns = new Set<string>();
    for (let id: number | undefined = leaf.id; id !== undefined; id = parent.get(id)) {
      const n = byId.get(id)!;
      mods.add(moduleOf(n.callFrame.url, n.callFrame.functionName));
      fns.add(key(n));
    }
    for (const m of mods) incl.set(m, (incl.get(m) ?? 0) + w);
    for (const f of fns) fnIncl.set(f, (fnIncl.get(f) ?? 0) + w);
  }
  const fmt = (ms: number): string => `${(ms / per).toFixed(3)} ms`;
  const rows = (m: Map<string, number>, n: number): string =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([k, v]) => `  ${fmt(v).padStart(10)}  ${((v / total) * 100).toFixed(1).padStart(5)}%  ${k}`)
      .join('\n');
  return [
    `busy (not idle): ${fmt(total)}`,
    'self by module:',
    rows(self, top),
    'inclusive by module:',
    rows(incl, top),
    'self by function:',
    rows(fnSelf, top),
    'inclusive by function:',
    rows(fnIncl, top * 2),
  ].join('\n');
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [file, from, to, per] = process.argv.slice(2);
  if (!file) {
    process.stderr.write('usage: node --import tsx bench/cpu-profile-summary.ts <file.cpuprofile> [fromUs toUs] [per]\n');
    process.exit(2);
  }
  console.log(summarizeProfile(file, from ? Number(from) : -Infinity, to ? Number(to) : Infinity, per ? Number(per) : 1));
}
