/**
 * The session's WASM components: one ComponentInstance per tool and one for the driver, each with
 * its own grant, started lazily and kept for the session (a fault restarts the instance on the next
 * call), all in one worker thread of the session's (host/thread.ts; MURMUR_COMPONENT_THREADS), which
 * after MURMUR_COMPONENT_IDLE_MS without a call keeps its small instances and lets the large ones
 * go (MURMUR_COMPONENT_IDLE_KEEP_MIB), and itself when none is left, started again by the next call.
 * Host imports wired per world: tools get `murmur:task/task` and `murmur:text/chunks`, the driver
 * gets `murmur:text/chunks`; both are routed to whatever task is current.
 */
import {
  ComponentInstance,
  ComponentThread,
  componentIdleKeepBytes,
  componentIdleMs,
  componentSpinUs,
  componentThreads,
  loadComponent,
  type HostImports,
  type NetworkDenial,
} from '../host/index.ts';
import { heldInferenceKey } from '../host/inference-key.ts';
import { settleMs } from '../memory.ts';
import { holdSecret } from '../secrets.ts';
import { driverRetireGrowth } from '../host/retire.ts';
import type { ComponentKind } from '../trace/network-denied.ts';
import type { StagedArtifact, StagedCapsule } from '../session/stage.ts';
import { grantsFor, logFileFor, guestEnv } from '../host/grants.ts';
import { destinationOf } from '../net/allowlist.ts';
import { MurError } from '../errors.ts';

/** Per-task routing of the guest-side imports (chunks, request-input). */
export interface TaskIo {
  textChunk(s: string): void;
  thinkingChunk(s: string): void;
  /**
   * Undefined outside an A2A task: request-input then fails at once. `resume`: where the loop is
   * (resume-point.ts), so the task can continue in another process.
   */
  requestInput?: (prompt: string, resume?: object) => Promise<string>;
}

export const NO_TASK_IO: TaskIo = { textChunk: () => {}, thinkingChunk: () => {} };

export class SessionComponents {
  private tools = new Map<string, Promise<ComponentInstance>>();
  private driverInst: Promise<ComponentInstance> | undefined;
  /** The one thread the driver and the tools run in; none: a thread each (MURMUR_COMPONENT_THREADS=instance). */
  readonly thread: ComponentThread | undefined;
  /** MURMUR_COMPONENT_SPIN_US, read (and refused if wrong) as the session opens. */
  private readonly spinUs: number;
  io: TaskIo = NO_TASK_IO;

  constructor(
    private readonly staged: StagedCapsule,
    private readonly hostEnv: NodeJS.ProcessEnv = process.env,
    /** Where refused outgoing requests are reported (the session's trace). */
    private readonly denied: (kind: ComponentKind, name: string) => ((d: NetworkDenial) => void) | undefined = () => undefined,
  ) {
    this.thread =
      componentThreads(hostEnv) === 'session'
        ? new ComponentThread({ idleMs: componentIdleMs(hostEnv), keepBytes: componentIdleKeepBytes(hostEnv), settleMs: settleMs(hostEnv) })
        : undefined;
    this.spinUs = componentSpinUs(hostEnv);
  }

  private chunks(): Record<string, (s: string) => void> {
    return {
      emitChunk: (s: string) => this.io.textChunk(s),
      emitThinkingChunk: (s: string) => this.io.thinkingChunk(s),
    };
  }

  toolImports(): HostImports {
    return {
      'murmur:text/chunks': this.chunks(),
      'murmur:task/task': {
        requestInput: async (prompt: string) => {
          const ask = this.io.requestInput;
          // Outside an A2A task there is nobody to answer: fail the call at once.
          if (!ask) throw new Error('request-input is only available while the capsule runs an A2A task');
          return ask(prompt);
        },
      },
    };
  }

  tool(a: StagedArtifact): Promise<ComponentInstance> {
    let p = this.tools.get(a.name);
    if (!p) {
      p = (async () => {
        if (!a.wasmPath) throw new MurError('E-RUN-010', `artifact '${a.name}' has no component to run`);
        const c = await loadComponent(a.wasmPath, {
          name: a.name,
          ...(a.wasmSha256 ? { sha256: a.wasmSha256 } : {}),
          ...(a.wasmIdentity ? { unchangedSince: a.wasmIdentity } : {}),
        });
        const wd = this.staged.workdir.dir;
        return new ComponentInstance(c, {
          grants: grantsFor(a.grant, wd, logFileFor(wd, 'tool', a.name), configEnv(a)),
          imports: this.toolImports(),
          onNetworkDenied: this.denied('tool', a.name),
          deadlineMs: a.grant.limits.deadlineSeconds * 1000,
          memoryBytes: a.grant.limits.memoryBytes,
          spinUs: this.spinUs,
          ...(this.thread ? { thread: this.thread } : {}),
        });
      })();
      this.tools.set(a.name, p);
      p.catch(() => this.tools.delete(a.name));
    }
    return p;
  }

  driver(): Promise<ComponentInstance> {
    if (!this.driverInst) {
      const d = this.staged.driver;
      const inf = this.staged.manifest.inference;
      if (!d || !inf) throw new MurError('E-RUN-011', 'this capsule has no inference driver', { hint: 'add inference.driver.artifact to murmur.yaml' });
      this.driverInst = (async () => {
        const c = await loadComponent(d.wasmPath!, {
          name: d.name,
          ...(d.wasmSha256 ? { sha256: d.wasmSha256 } : {}),
          ...(d.wasmIdentity ? { unchangedSince: d.wasmIdentity } : {}),
        });
        const endpoint = inf.endpoint ?? this.hostEnv.MURMUR_INFERENCE_ENDPOINT;
        if (!endpoint) {
          throw new MurError('E-RUN-012', 'no inference endpoint: set inference.endpoint in murmur.yaml or MURMUR_INFERENCE_ENDPOINT in the environment', {
            location: { file: this.staged.manifest.file, field: 'inference.endpoint' },
          });
        }
        const dest = destinationOf(endpoint);
        if (!dest)
          throw new MurError('E-RUN-013', `inference endpoint ${JSON.stringify(endpoint)} is not a URL`, { location: { field: 'inference.endpoint' } });
        const env: Record<string, string> = { MURMUR_INFERENCE_ENDPOINT: endpoint };
        // The key comes from inference.api_key (a ${VAR} of the runtime's environment, or a literal,
        // as in the reference runtime), else the runtime's environment (or the key file) — never
        // from a file in the workdir; `mur` takes it out of process.env at start (host/inference-key.ts).
        const key =
          inf.apiKey !== undefined
            ? resolveApiKey(inf.apiKey, this.hostEnv, this.staged.manifest.file)
            : (this.hostEnv.MURMUR_INFERENCE_API_KEY ?? heldInferenceKey());
        // Held for redaction (secrets.ts): a provider quoting it in an error body reaches no trace or answer.
        holdSecret(key);
        if (key) env.MURMUR_INFERENCE_API_KEY = key;
        if (inf.driver.config) env.MURMUR_INFERENCE_DRIVER_CONFIG = JSON.stringify(inf.driver.config);
        const wd = this.staged.workdir.dir;
        return new ComponentInstance(c, {
          // The driver alone may reach the provider, and nothing else; it sees no files.
          grants: {
            preopen: undefined,
            env: { ...guestEnv(d.grant.env.allow, this.hostEnv), ...env },
            ...(key ? { secrets: [key] } : {}),
            networkAllow: [`${dest.scheme}://${dest.host.includes(':') ? `[${dest.host}]` : dest.host}:${dest.port}`],
            logFile: logFileFor(wd, 'driver', d.name),
          },
          imports: { 'murmur:text/chunks': this.chunks() },
          onNetworkDenied: this.denied('driver', d.name),
          deadlineMs: d.grant.limits.deadlineSeconds * 1000,
          memoryBytes: d.grant.limits.memoryBytes,
          // A driver holds nothing between calls, so one whose memory keeps growing (a leaking guest)
          // is retired between calls instead of growing until its cap fails a task (host/retire.ts).
          retireAfterGrowthBytes: driverRetireGrowth(this.hostEnv),
          spinUs: this.spinUs,
          ...(this.thread ? { thread: this.thread } : {}),
        });
      })();
      this.driverInst.catch(() => {
        this.driverInst = undefined;
      });
    }
    return this.driverInst;
  }

  /**
   * Starts the driver's and every tool's worker now, in the background, instead of on the first
   * task: `mur serve` calls it once the front door listens, so instantiation (≈ 100–300 ms per
   * SpiderMonkey component on these machines) overlaps start-up instead of delaying the first
   * answer. Never rejects: a component that cannot start fails the call that needs it, with its
   * own error, exactly as without pre-warming.
   */
  /**
   * Loads the driver and the tools now (no instance starts): a component not transpiled yet is
   * transpiled in a child process (host/transpile-child-run.ts), so `mur serve` calls this before
   * it opens its store and listens, and a first run's transpiles overlap its start-up on the other
   * core. From a warm cache a load is a stat and a small read. Never rejects: a load that fails
   * fails the call that needs the component, with its own error.
   */
  preload(tools: StagedArtifact[]): void {
    if (this.staged.driver && this.staged.manifest.inference) this.driver().catch(() => undefined);
    for (const t of tools) if (t.wasmPath) this.tool(t).catch(() => undefined);
  }

  async prewarm(tools: StagedArtifact[]): Promise<void> {
    // One after another, the driver first (the first task needs it first): compiling two 12 MB
    // modules at once doubles V8's compile-time peak, and glibc keeps those freed pages in its
    // per-thread arenas — measured 471 MiB RSS after one task against 335 MiB one at a time.
    // Their loads, though, all at once: a component not transpiled yet is transpiled in a child
    // process of its own (host/transpile-child-run.ts), so on a first run the transpiles use the
    // other core while this thread serves, and none of their memory is this process's.
    const loads: Promise<ComponentInstance>[] = [];
    if (this.staged.driver && this.staged.manifest.inference) loads.push(this.driver());
    for (const t of tools) if (t.wasmPath) loads.push(this.tool(t));
    for (const l of loads) l.catch(() => undefined);
    for (const l of loads) await l.then((i) => i.start()).catch(() => undefined);
  }

  /** Stops a running driver call (cancel): its worker is terminated; the next call starts fresh. */
  async interruptDriver(): Promise<void> {
    const p = this.driverInst;
    this.driverInst = undefined;
    if (p) await (await p.catch(() => undefined))?.close();
  }

  async interruptTool(name: string): Promise<void> {
    const p = this.tools.get(name);
    this.tools.delete(name);
    if (p) await (await p.catch(() => undefined))?.close();
  }

  async close(): Promise<void> {
    const all = [...this.tools.values(), ...(this.driverInst ? [this.driverInst] : [])];
    this.tools.clear();
    this.driverInst = undefined;
    await Promise.all(all.map(async (p) => (await p.catch(() => undefined))?.close()));
    await this.thread?.close();
  }
}

/** An artifact's `config:` mapping reaches it as MURMUR_ARTIFACT_CONFIG (compact JSON). */
function configEnv(a: StagedArtifact): Record<string, string> {
  return a.entry?.config ? { MURMUR_ARTIFACT_CONFIG: JSON.stringify(a.entry.config) } : {};
}

/** `inference.api_key`: `${VAR}` from the runtime's environment (unset is refused), else the literal. */
export function resolveApiKey(spec: string, env: Record<string, string | undefined>, file: string): string {
  const m = /^\$\{([A-Z][A-Z0-9_]*)\}$/.exec(spec);
  if (!m) return spec;
  const v = env[m[1]!];
  if (v === undefined || v === '') {
    throw new MurError('E-RUN-015', `inference.api_key names \${${m[1]}}, which is not set in the runtime's environment`, {
      hint: `export ${m[1]}=<key> before mur run (in a cluster: put it in the capsule's Secret), or remove inference.api_key to use MURMUR_INFERENCE_API_KEY`,
      location: { file, field: 'inference.api_key' },
    });
  }
  return v;
}
