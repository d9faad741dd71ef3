/**
 * Image benchmark (not a test), on the images test/images/build.sh builds from the Dockerfiles:
 *
 * - sizes: the base image (node:24-bookworm-slim, made locally), the layers the runtime and the
 *   operator image add on top of it (target for the runtime: ≤ 120 MB), totals unpacked, and the
 *   runtime's own layers one by one (the app, the registry, the seeded caches, the loader's chmod);
 * - start: a runtime container (read-only root, tmpfs work root, the built-in driver, as the
 *   operator's pod runs it) from `docker start` until its /readyz answers 200 (target ≤ 1.5 s),
 *   against a floor arm — a container of the same base image running a Node HTTP server that
 *   answers /readyz at once — so the ratio is the runtime's own share of the start. The arms
 *   alternate round by round; container create and removal are outside the timed span; /readyz
 *   is polled every 10 ms on the container's address (so the figure is ≤ 10 ms late). The machine's
 *   load average is printed with it (the start is CPU-bound: compare figures at similar load).
 *
 *   node --import tsx bench/images.ts [--rounds 7] [--baseline <runtime image>]
 *
 * With each start it reads the CPU time the container's cgroup used until /readyz answered: the
 * wall time grows with the machine's load, the CPU time hardly.
 *
 * --baseline adds a third arm: another runtime image (an earlier build) started the same way in the
 * same rounds, so an image change is measured against its predecessor under the same load.
 *
 * Starts the harness's engine and builds or loads the images as the images test project does
 * (test/images/global-setup.ts), and stops an engine it started.
 */
import './tmp-root.ts'; // first: this bench's temp dirs go under one folder, removed at exit
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { parseArgs } from 'node:util';
import type Dockerode from 'dockerode';
import setup from '../test/images/global-setup.ts';
import { capsuleDir } from '../test/images/kit.ts';
import { median, table } from './stats.ts';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '7' }, baseline: { type: 'string' } } });
const ROUNDS = Number(values.rounds);
/** Another runtime image (e.g. one built from an earlier commit) started in the same rounds. */
const BASELINE = values.baseline;

const teardown = setup();
const { getContainerRuntimeClient } = await import('testcontainers');
const docker = (await getContainerRuntimeClient()).container.dockerode as Dockerode;
const runtimeImage = process.env.CAPSULE_RUNTIME_IMAGE!;
const operatorImage = process.env.CAPSULE_OPERATOR_IMAGE!;
const BASE = 'node:24-bookworm-slim';
const net = await docker.createNetwork({ Name: `capsule-bench-${process.pid}`, Driver: 'bridge' });

const mb = (b: number) => `${(b / 1e6).toFixed(1)} MB`;
const stats = (xs: number[], f: (x: number) => string) => `min ${f(Math.min(...xs))}  median ${f(median(xs))}  max ${f(Math.max(...xs))}`;
const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

async function size(image: string): Promise<number> {
  return (await docker.getImage(image).inspect()).Size;
}

/**
 * CPU time the container's processes used so far, in ms: its cgroup's cpuacct.usage (cgroup v1,
 * under the engine's --cgroup-parent, engine.sh), or cpu.stat's usage_usec (v2); undefined where
 * neither is found. Unlike wall time it hardly depends on the machine's load.
 */
function cpuMs(id: string): number | undefined {
  for (const f of [`/sys/fs/cgroup/cpuacct/capsule-images/${id}/cpuacct.usage`, `/sys/fs/cgroup/capsule-images/${id}/cpu.stat`]) {
    try {
      const text = readFileSync(f, 'utf8');
      return f.endsWith('cpu.stat') ? Number(/usage_usec (\d+)/.exec(text)![1]) / 1000 : Number(text) / 1e6;
    } catch {
      /* the other layout */
    }
  }
  return undefined;
}

const cpu: Map<string, number[]> = new Map();

/** `docker start` → first 200 from http://<container>:<port>/readyz, in ms (CPU used by then: `cpu`). */
async function startToReady(opts: Dockerode.ContainerCreateOptions, port: number): Promise<number> {
  const c = await docker.createContainer({ ...opts, HostConfig: { ...opts.HostConfig, NetworkMode: net.id } });
  try {
    const t0 = performance.now();
    await c.start();
    const ip = Object.values((await c.inspect()).NetworkSettings.Networks)[0]!.IPAddress;
    for (;;) {
      const ok = await fetch(`http://${ip}:${port}/readyz`, { signal: AbortSignal.timeout(1000) }).then(
        (r) => r.status === 200,
        () => false,
      );
      if (ok) {
        const wall = performance.now() - t0;
        const used = cpuMs(c.id);
        if (used !== undefined) cpu.set(opts.Image!, [...(cpu.get(opts.Image!) ?? []), used]);
        return wall;
      }
      const state = (await c.inspect()).State;
      if (!state.Running) throw new Error(`container exited ${state.ExitCode} before /readyz answered 200`);
      if (performance.now() - t0 > 60_000) throw new Error('no /readyz 200 within 60 s');
      await new Promise((r) => setTimeout(r, 10));
    }
  } finally {
    await c.remove({ force: true });
  }
}

/** The layers `image` adds on top of BASE (docker history, newest first), largest first. */
async function addedLayers(image: string): Promise<Array<{ size: number; by: string }>> {
  const baseLayers = new Set((await docker.getImage(BASE).inspect()).RootFS.Layers ?? []);
  const history = (await docker.getImage(image).history()) as Array<{ Size: number; CreatedBy: string }>;
  const own = ((await docker.getImage(image).inspect()).RootFS.Layers ?? []).filter((l) => !baseLayers.has(l)).length;
  // History lists every instruction, newest first; the ones with a size made the image's own layers.
  return history
    .slice(0, history.length - 1)
    .filter((h) => h.Size > 0)
    .slice(0, own)
    .map((h) => ({
      size: h.Size,
      by: h.CreatedBy.replace(/^\/bin\/sh -c (#\(nop\) )?/, '')
        .replace(/\s+/g, ' ')
        .slice(0, 90),
    }))
    .sort((a, b) => b.size - a.size);
}

const load = () =>
  os
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');

try {
  const [base, runtime, operator] = await Promise.all([size(BASE), size(runtimeImage), size(operatorImage)]);
  const layers = await addedLayers(runtimeImage);
  const loadBefore = load();
  const capsule = capsuleDir('bench');
  const runtimeOpts: Dockerode.ContainerCreateOptions = {
    Image: runtimeImage,
    // Never called at start: the driver is loaded at the first task.
    Env: ['MURMUR_INFERENCE_ENDPOINT=http://127.0.0.1:9', 'MURMUR_INFERENCE_API_KEY=unused'],
    HostConfig: { ReadonlyRootfs: true, Tmpfs: { '/var/lib/murmur': 'rw,uid=65532,gid=65532,mode=0700' }, Binds: [`${capsule}:/etc/murmur/capsule:ro`] },
  };
  const floorOpts: Dockerode.ContainerCreateOptions = {
    Image: BASE,
    User: '65532:65532',
    Cmd: ['node', '-e', "require('node:http').createServer((q, r) => r.end('ok')).listen(9090, '0.0.0.0')"],
    HostConfig: { ReadonlyRootfs: true },
  };
  const baselineOpts: Dockerode.ContainerCreateOptions | undefined = BASELINE ? { ...runtimeOpts, Image: BASELINE } : undefined;
  const arms: Array<{ opts: Dockerode.ContainerCreateOptions; xs: number[] }> = [
    { opts: runtimeOpts, xs: [] },
    { opts: floorOpts, xs: [] },
    ...(baselineOpts ? [{ opts: baselineOpts, xs: [] }] : []),
  ];
  // One unmeasured start of each (page cache, overlay mounts).
  for (const a of arms) await startToReady(a.opts, 9090);
  for (let i = 0; i < ROUNDS; i++) {
    // Each round starts the arms in another order (rotating), so load drifts hit all of them.
    for (let k = 0; k < arms.length; k++) {
      const a = arms[(i + k) % arms.length]!;
      a.xs.push(await startToReady(a.opts, 9090));
    }
  }
  // The unmeasured starts' CPU figures go too.
  for (const a of arms) cpu.get(a.opts.Image!)?.shift();
  const rt = arms[0]!.xs;
  const floor = arms[1]!.xs;
  const ratio = rt.map((x, i) => x / floor[i]!);
  console.log('images: sizes unpacked (docker image inspect .Size); start = docker start → /readyz 200');
  console.log(
    table([
      ['base node:24-bookworm-slim', mb(base)],
      [`runtime ${runtimeImage}: added layers`, mb(runtime - base), `total ${mb(runtime)}  (target ≤ 120 MB added)`],
      [`operator ${operatorImage}: added layers`, mb(operator - base), `total ${mb(operator)}`],
    ]),
  );
  console.log('  runtime image layers over the base, largest first:');
  console.log(table(layers.map((l) => [`  ${l.by}`, mb(l.size)])));
  console.log(`  start → /readyz 200, ${ROUNDS} alternating rounds (load average 1/5/15 min: before ${loadBefore}, after ${load()}):`);
  console.log(
    table([
      ['runtime (built-in driver, read-only root)', stats(rt, s), '(target ≤ 1.5 s)'],
      ['floor (base image, node http server)', stats(floor, s)],
      ['ratio runtime / floor', stats(ratio, (x) => x.toFixed(2))],
      ...(BASELINE
        ? ([
            [`baseline ${BASELINE}`, stats(arms[2]!.xs, s)],
            [
              'ratio runtime / baseline',
              stats(
                rt.map((x, i) => x / arms[2]!.xs[i]!),
                (x) => x.toFixed(2),
              ),
            ],
          ] as [string, string][])
        : []),
    ]),
  );
  const cpuRows = arms.filter((a) => cpu.get(a.opts.Image!)?.length).map((a) => [`  ${a.opts.Image}`, stats(cpu.get(a.opts.Image!)!, s)] as [string, string]);
  if (cpuRows.length) {
    console.log('  CPU time the container used from docker start to /readyz 200 (its cgroup; hardly load-dependent):');
    console.log(table(cpuRows));
  }
} finally {
  await net.remove().catch(() => {});
  teardown();
}
