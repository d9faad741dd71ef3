/**
 * What the image contract tests (and bench/images.ts) share: the images by name, a bridge network
 * of their own per run (the engine has no default bridge: engine.sh), the scripted provider on that
 * network's gateway address (the host's side of the bridge, so only loopback and the containers'
 * network are used), a capsule folder, and a runtime container started as the operator's pod runs
 * it: non-root, read-only root filesystem, /var/lib/murmur a tmpfs (the pod's emptyDir).
 */
import { chmodSync, chownSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GenericContainer, Network, Wait, getContainerRuntimeClient, type StartedNetwork, type StartedTestContainer } from 'testcontainers';
import { startScriptedProvider, type ScriptTurn, type ScriptedProvider } from '../provider/scripted-provider.ts';
import { freePort } from '../cli/serve-kit.ts';

export const API_KEY = 'test-key-not-secret';

function required(name: string): string {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: the images project's global setup (test/images/global-setup.ts) did not run`);
  return v;
}
export const runtimeImage = () => required('CAPSULE_RUNTIME_IMAGE');
export const operatorImage = () => required('CAPSULE_OPERATOR_IMAGE');

/** GenericContainer plus a read-only root filesystem (testcontainers has no builder for it). */
export class ReadOnlyContainer extends GenericContainer {
  protected override async beforeContainerCreated(): Promise<void> {
    this.hostConfig.ReadonlyRootfs = true;
  }
}

export interface TestNetwork {
  network: StartedNetwork;
  /** The host's address on the network's bridge. */
  gateway: string;
  stop(): Promise<void>;
}

export async function startNetwork(): Promise<TestNetwork> {
  const network = await new Network().start();
  const client = await getContainerRuntimeClient();
  const info = (await client.network.getById(network.getId()).inspect()) as { IPAM?: { Config?: Array<{ Gateway?: string }> } };
  const gateway = info.IPAM?.Config?.[0]?.Gateway;
  if (!gateway) throw new Error(`network ${network.getName()} has no gateway address: ${JSON.stringify(info.IPAM)}`);
  return { network, gateway, stop: async () => void (await network.stop()) };
}

/** The scripted provider, listening on the network's gateway (reachable from its containers). */
export function providerOn(net: TestNetwork, turns: ScriptTurn[]): Promise<ScriptedProvider> {
  return startScriptedProvider({ turns }, { host: net.gateway });
}

export function capsuleDir(name = 'probe'): string {
  const dir = mkdtempSync(join(tmpdir(), 'image-capsule-'));
  writeFileSync(
    join(dir, 'murmur.yaml'),
    [
      `name: ${name}`,
      'version: 1.0.0',
      'artifacts:',
      '  - {name: driver-anthropic, version: 0.1.0, runtime: driver}', // from the image's built-in registry
      'inference:',
      '  driver: {artifact: driver-anthropic}',
      '  model: claude-test',
      'lifecycle:',
      '  task_acceptance: queue',
      '',
    ].join('\n'),
  );
  // The container runs as 65532: the mounted folder must be readable to it.
  chmodSync(dir, 0o755);
  chmodSync(join(dir, 'murmur.yaml'), 0o644);
  return dir;
}

/**
 * The runtime container as the operator's pod runs it (docs/operator.md, "Runtime container
 * contract"), its A2A port published on a fixed host port so the agent card can advertise it —
 * except authentication: `--anonymous`, as a Capsule with `a2a.auth.anonymous` renders it (the
 * default, `--token-review`, needs an API server; test/operator/pod-contract.test.ts covers it).
 */
export function runtimeContainer(o: {
  net: TestNetwork;
  provider: ScriptedProvider;
  capsule: string;
  a2aPort: number;
  workVolume?: string;
  env?: Record<string, string>;
}): GenericContainer {
  const c = new ReadOnlyContainer(runtimeImage()).withNetwork(o.net.network);
  const capsule = { source: o.capsule, target: '/etc/murmur/capsule', mode: 'ro' as const };
  // The work root: a tmpfs (an emptyDir that dies with the container), or a host folder (a
  // volume that outlives container restarts, as an emptyDir outlives a container's restart).
  // (withBindMounts replaces the list: one call.)
  if (o.workVolume) c.withBindMounts([capsule, { source: o.workVolume, target: '/var/lib/murmur', mode: 'rw' }]);
  else c.withBindMounts([capsule]).withTmpFs({ '/var/lib/murmur': 'rw,uid=65532,gid=65532,mode=0700' });
  return (
    c
      .withEnvironment({ MURMUR_INFERENCE_ENDPOINT: o.provider.url, MURMUR_INFERENCE_API_KEY: API_KEY, ...o.env })
      .withExposedPorts({ container: 8080, host: o.a2aPort }, 9090)
      .withCommand([
        'serve',
        '/etc/murmur/capsule',
        '--a2a-port',
        '8080',
        '--metrics-port',
        '9090',
        '--workdir',
        '/var/lib/murmur',
        '--host',
        '0.0.0.0',
        '--anonymous',
        '--public-url',
        `http://127.0.0.1:${o.a2aPort}/`,
      ])
      // The line mur serve prints once both servers listen (runtime/cli/serve.ts).
      .withWaitStrategy(Wait.forLogMessage(/serving \S+ \S+ at /))
      .withStartupTimeout(120_000)
  );
}

/** A runtime container serving a capsule against a scripted provider of its own, both on `net`. */
export interface RunningRuntime {
  container: StartedTestContainer;
  provider: ScriptedProvider;
  /** The A2A URL, on the host's published port. */
  a2aUrl: string;
  stop(): Promise<void>;
}

export async function startRuntime(o: {
  net: TestNetwork;
  turns: ScriptTurn[];
  capsule: string;
  workVolume?: string;
  env?: Record<string, string>;
}): Promise<RunningRuntime> {
  const provider = await providerOn(o.net, o.turns);
  const a2aPort = await freePort();
  const container = await runtimeContainer({ net: o.net, provider, capsule: o.capsule, a2aPort, workVolume: o.workVolume, env: o.env }).start();
  return {
    container,
    provider,
    a2aUrl: `http://127.0.0.1:${a2aPort}/`,
    async stop() {
      await container.stop();
      await provider.stop();
    },
  };
}

/** A folder for the container's work root, owned by its user (65532) as an emptyDir would be. */
export function workVolume(): string {
  const dir = mkdtempSync(join(tmpdir(), 'image-work-'));
  chownSync(dir, 65532, 65532);
  chmodSync(dir, 0o700);
  return dir;
}

/**
 * Resolves once the container's log (all of it, from its first start, followed) holds `n` lines
 * matching `re`; rejects if the log ends first. Returns the log so far.
 */
export async function logLines(c: StartedTestContainer, re: RegExp, n = 1): Promise<string> {
  const stream = await c.logs();
  let out = '';
  return new Promise((resolve, reject) => {
    const done = (): boolean => (out.split('\n').filter((l) => re.test(l)).length >= n ? (stream.destroy(), resolve(out), true) : false);
    stream.on('data', (d) => {
      out += String(d);
      done();
    });
    stream.once('end', () => done() || reject(new Error(`log ended with fewer than ${n} lines matching ${re}:\n${out}`)));
    stream.once('error', reject);
  });
}

/** Runs a command in the container; its exit code and output. */
export async function exec(c: StartedTestContainer, cmd: string[]): Promise<{ exitCode: number; output: string }> {
  const r = await c.exec(cmd);
  return { exitCode: r.exitCode, output: r.output };
}
