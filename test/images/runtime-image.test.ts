/**
 * The runtime image's contract (docs/operator.md, "Runtime container contract"), on the image
 * built from `Dockerfile` as it is (test/images/build.sh), run by testcontainers against the
 * harness's Docker engine: non-root on a read-only root filesystem, agent card and /readyz served,
 * a task completed against the scripted provider, and only what it runs inside.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Wait, type StartedTestContainer } from 'testcontainers';
import { PRESTOP_COMMAND } from '../../operator/translate/builders/deployment.ts';
import { entrypointFlags } from '../../bench/serving.ts';
import { sendMessage } from '../../runtime/a2a/peers/client.ts';
import { freePort } from '../cli/serve-kit.ts';
import type { ScriptedProvider } from '../provider/scripted-provider.ts';
import { API_KEY, capsuleDir, exec, providerOn, runtimeContainer, startNetwork, type TestNetwork } from './kit.ts';

let net: TestNetwork;
let provider: ScriptedProvider;
let container: StartedTestContainer;
let a2aUrl = '';
let metricsUrl = '';

beforeAll(async () => {
  net = await startNetwork();
  provider = await providerOn(net, [{ text: 'hello from the scripted provider', usage: { input: 12, output: 5 } }]);
  const a2aPort = await freePort();
  container = await runtimeContainer({ net, provider, capsule: capsuleDir('probe'), a2aPort }).start();
  a2aUrl = `http://127.0.0.1:${a2aPort}/`;
  metricsUrl = `http://127.0.0.1:${container.getMappedPort(9090)}`;
}, 300_000);

afterAll(async () => {
  await container?.stop();
  await provider?.stop();
  await net?.stop();
});

describe('the runtime image', () => {
  it('runs as a non-root user on a read-only root filesystem', async () => {
    const id = await exec(container, ['id', '-u']);
    expect(id.output.trim()).toBe('65532');
    const write = await exec(container, ['sh', '-c', 'touch /app/probe']);
    expect(write.exitCode).not.toBe(0);
    expect(write.output).toMatch(/Read-only file system/);
    // …while its work root (the pod's emptyDir) takes the session workdir and transpile cache.
    const work = await exec(container, ['sh', '-c', 'ls /var/lib/murmur']);
    expect(work.output).toMatch(/ses_/);
    // The seeded caches (components, Node's compile cache, token tables) are root's: no tool can plant code there.
    const seeds = await exec(container, [
      'sh',
      '-c',
      'ls /opt/murmur/components /opt/murmur/compile-cache /opt/murmur/tokens | grep -c . ; find /opt/murmur ! -user 0 | head -3',
    ]);
    expect(Number(seeds.output.trim().split('\n')[0])).toBeGreaterThan(2);
    expect(seeds.output.trim().split('\n').slice(1)).toEqual([]);
  });

  it("its node, started with the ENTRYPOINT's flags, finds the seeded compile cache (V8 keys the cache by those flags)", async () => {
    const flags = entrypointFlags().join(' ');
    const r = await exec(container, ['sh', '-c', `NODE_DEBUG_NATIVE=COMPILE_CACHE node ${flags} /app/bin/mur --help 2>&1`]);
    expect(r.exitCode, r.output).toBe(0);
    expect(r.output).not.toMatch(/Cannot create cache directory|was rejected/);
    expect((r.output.match(/V8 code cache for ESM \S+ was accepted/g) ?? []).length, r.output.slice(0, 2000)).toBeGreaterThanOrEqual(5);
  });

  it("runs the capsule pods' preStop command (the pause before SIGTERM) as its own user", async () => {
    const r = await exec(container, PRESTOP_COMMAND);
    expect(r.exitCode, r.output).toBe(0);
  });

  it("is non-dumpable: a process of the runtime's own user cannot read its environment (the provider key)", async () => {
    // The image's dynamic loader is execute-only, so the kernel marked node non-dumpable at exec:
    // its /proc files belong to root although it runs as 65532.
    const loader = await exec(container, ['sh', '-c', 'stat -c %a "$(readlink -f /lib64/ld-linux-x86-64.so.2)"']);
    expect(loader.output.trim()).toBe('711');
    const owner = await exec(container, ['stat', '-c', '%u', '/proc/1/environ']);
    expect(owner.output.trim()).toBe('0');
    // One stream (2>&1 in the shell): testcontainers merges docker's two streams as their chunks
    // arrive, which once split "sh: 1: <error>" around the stdout line.
    const read = await exec(container, ['sh', '-c', 'exec 2>&1; id -u; cat /proc/1/environ; tr "\\0" "\\n" < /proc/1/environ']);
    expect(read.output).toMatch(/^65532$/m);
    expect(read.output).toMatch(/Permission denied/);
    expect(read.output).not.toContain(API_KEY);
    // …while the process itself still runs as the image's user.
    const user = await exec(container, ['sh', '-c', "awk '/^Uid:/{print $2}' /proc/1/status"]);
    expect(user.output.trim()).toBe('65532');
  });

  it('serves its agent card and /readyz', async () => {
    const card = (await (await fetch(`${a2aUrl}.well-known/agent-card.json`)).json()) as { name: string; version: string; url: string };
    expect(card).toMatchObject({ name: 'probe', version: '1.0.0', url: a2aUrl });
    const ready = await fetch(`${metricsUrl}/readyz`);
    expect(ready.status).toBe(200);
    const a2aReady = (await (await fetch(`${a2aUrl}readyz`)).json()) as { ready: boolean };
    expect(a2aReady.ready).toBe(true);
  });

  it('completes a task against the scripted provider, with the built-in driver', async () => {
    const r = await sendMessage({ peerUrl: a2aUrl, text: 'say hello', allow: [a2aUrl], wait: true });
    const logs = async () => {
      const s = await container.logs();
      let out = '';
      for await (const chunk of s) out += String(chunk);
      return out;
    };
    expect(r, r.ok ? '' : `${r.error}\n${await logs()}`).toMatchObject({ ok: true, state: 'completed', text: 'hello from the scripted provider' });
    // The built-in driver came from the image's seed (transpiled and capped at build time): the
    // start and the task transpiled nothing into the writable cache.
    const transpiled = await exec(container, ['sh', '-c', 'ls -A /var/lib/murmur/cache/components 2>/dev/null | wc -l']);
    expect(transpiled.output.trim()).toBe('0');
    // …and the token counter's rank tables too: read from the image's seed, not built by a worker
    // (which would have written them into the writable cache).
    const seeded = await exec(container, [
      'sh',
      '-c',
      'head -c 7 /opt/murmur/tokens/cl100k_base.v1.tables; echo; ls -A /var/lib/murmur/cache/tokens 2>/dev/null | wc -l',
    ]);
    expect(seeded.output.trim().split('\n')).toEqual(['MURBPE1', '0']);
    // The driver inside the container called the provider with the key from the environment.
    expect(provider.requests).toHaveLength(1);
    expect(provider.requests[0]!.headers['x-api-key']).toBe(API_KEY);
    expect((provider.requests[0]!.body as { model: string }).model).toBe('claude-test');
  });

  it('runs compiled JavaScript and carries no Kubernetes client, TypeScript loader or build-time package', async () => {
    const modules = await exec(container, ['sh', '-c', 'cd /app/node_modules && ls -d * @*/*']);
    const names = modules.output.split(/\s+/).filter(Boolean);
    expect(names).toContain('@bytecodealliance/jco');
    for (const absent of [
      '@kubernetes/client-node',
      'tsx',
      'typescript',
      'esbuild',
      '@bytecodealliance/componentize-js',
      'binaryen',
      'vitest',
      '@vercel/nft',
      'testcontainers',
    ]) {
      expect(names).not.toContain(absent);
    }
    const ts = await exec(container, ['sh', '-c', "find /app -name '*.ts' -not -name '*.d.ts' | head -5"]);
    expect(ts.output.trim()).toBe('');
  });

  it("starts a component worker, on the image's Node, without loading undici, http2, tls or zlib", async () => {
    // An ES import of node:http runs every lazy export on Node 24 (undici among them): 6 MiB more
    // RSS in every component worker. The worker bundle takes built-ins through getBuiltinModule.
    const probe = [
      "const { MessageChannel, Worker } = require('node:worker_threads');",
      // What the pool gives every component worker (host/worker-link.ts): its doorbells and call port.
      'const { port2: answers } = new MessageChannel();',
      'const w = new Worker(`const { parentPort } = require("node:worker_threads"); const before = new Set(process.moduleLoadList);',
      'import("file:///app/dist/runtime/cli/worker.js").then(() => parentPort.postMessage({ loaded: process.moduleLoadList.filter((m) => !before.has(m)) }));`, { eval: true, env: {}, workerData: { bells: new SharedArrayBuffer(8), answers }, transferList: [answers] });',
      "w.on('message', (m) => { if (m.loaded) { console.log(JSON.stringify({ node: process.version, loaded: m.loaded })); process.exit(0); } });",
    ].join('\n');
    const r = await exec(container, ['node', '-e', probe]);
    expect(r.exitCode, r.output).toBe(0);
    const { node, loaded } = JSON.parse(r.output.trim().split('\n').pop()!) as { node: string; loaded: string[] };
    expect(node).toMatch(/^v24\./);
    // The probe sees what the module loads: the HTTP module the WASI shim's header checks use…
    expect(loaded).toContain('NativeModule http');
    // …and nothing an ES namespace import of it would have pulled in.
    expect(loaded.filter((m) => /undici|http2|\btls\b|zlib/.test(m))).toEqual([]);
  });
});

describe('the runtime image idle (issue 18: what a pod pays per capsule)', () => {
  it('carries its memory addon, built for its Node, and keeps iconv-lite’s code-page tables out of the serve chunk', async () => {
    const addon = await exec(container, ['node', '-e', "console.log(typeof require('/app/dist/runtime/native/memory.node').trim())"]);
    expect(addon.output.trim()).toBe('boolean');
    // esbuild names each inlined module's wrapper require_<file>: none for the tables, which stay
    // files of the package, required from the bundle's folder when a codec needs one.
    const inlined = await exec(container, ['sh', '-c', 'grep -l -E "require_(cp936|cp949|cp950|eucjp|shiftjis)\\b" /app/dist/runtime/cli/*.js | wc -l']);
    expect(inlined.output.trim()).toBe('0');
    const table = await exec(container, [
      'node',
      '-e',
      "console.log(require(require.resolve('iconv-lite/encodings/tables/cp936.json', { paths: ['/app/dist/runtime/cli'] })).length > 100)",
    ]);
    expect(table.output.trim()).toBe('true');
  });

  it("collects its component thread's garbage and lets the token tables go when idle, returns the freed memory, then serves the next task", async () => {
    const p = await providerOn(net, [{ text: 'before the idle' }, { text: 'after the idle' }]);
    const a2aPort = await freePort();
    const c = await runtimeContainer({
      net,
      provider: p,
      capsule: capsuleDir('idle'),
      a2aPort,
      env: { MURMUR_COMPONENT_IDLE_MS: '300', MURMUR_TOKEN_TABLES_IDLE_MS: '300', MURMUR_TOKEN_WORKER_IDLE_MS: '100' },
    }).start();
    try {
      const url = `http://127.0.0.1:${a2aPort}/`;
      const first = await sendMessage({ peerUrl: url, text: 'one', allow: [url], wait: true });
      expect(first).toMatchObject({ ok: true, text: 'before the idle' });
      // The container's own log line, once both have gone (one release or two).
      const lines = await new Promise<string[]>((resolve, reject) => {
        const seen: string[] = [];
        void c.logs().then((stream) => {
          stream.on('data', (d: Buffer | string) => {
            for (const l of String(d).split('\n')) if (l.startsWith('idle (')) seen.push(l);
            if (seen.some((l) => l.includes('component thread')) && seen.some((l) => l.includes('token tables'))) resolve(seen);
          });
          stream.on('end', () => reject(new Error(`the container's log ended without the idle lines: ${seen.join(' | ')}`)));
        }, reject);
      });
      for (const l of lines) expect(l).toMatch(/^idle \([^)]+ let go\): RSS \d+\.\d → \d+\.\d MiB$/);
      const second = await sendMessage({ peerUrl: url, text: 'two', allow: [url], wait: true });
      expect(second).toMatchObject({ ok: true, text: 'after the idle' });
    } finally {
      await c.stop();
      await p.stop();
    }
  });
});

describe('the runtime image at start', () => {
  it('is ready only when it can run a task: the first task, sent the moment /readyz answers 200, completes', async () => {
    const p = await providerOn(net, [{ text: 'answered at once' }]);
    const a2aPort = await freePort();
    // Started until /readyz on the metrics port (the pod's readiness probe) answers 200, not until
    // the serving line: the task below goes out with nothing in between.
    const c = await runtimeContainer({ net, provider: p, capsule: capsuleDir('first'), a2aPort })
      .withWaitStrategy(Wait.forHttp('/readyz', 9090).forStatusCode(200).withReadTimeout(1000))
      .start();
    try {
      const url = `http://127.0.0.1:${a2aPort}/`;
      const r = await sendMessage({ peerUrl: url, text: 'first', allow: [url], wait: true });
      expect(r).toMatchObject({ ok: true, state: 'completed', text: 'answered at once' });
    } finally {
      await c.stop();
      await p.stop();
    }
  });
});
