/**
 * Component worker threads: the worker module (bundled to plain JavaScript when running from the
 * TypeScript sources), a pool of booted workers, and launch(), which hands a booted worker its
 * component and waits until the component is instantiated.
 */
import { fileURLToPath } from 'node:url';
import { MessageChannel, Worker, type MessagePort } from 'node:worker_threads';
import { bundledModule } from './bundled-module.ts';
import { noteLetGo } from '../memory.ts';
import { ComponentLoadError, DeadlineExceeded } from './errors.ts';
import type { FromWorker, Grants, ImportSpec, ToWorker, WorkerInit } from './protocol.ts';
import { WorkerLink } from './worker-link.ts';
import { workerExecArgv } from './worker-flags.ts';
import { serveNet } from './wasi-io/net-relay.ts';
import type { LoadedComponent } from './transpile-cache.ts';

// The worker boot is shared with the token counter (runtime/inference/): it sits on layer 0.
const BOOT = fileURLToPath(new URL('../worker-boot.mjs', import.meta.url));

/** The worker's module: worker.js beside this file's code, or bundled from the sources (bundled-module.ts). */
const ENTRY = await bundledModule('worker');

/**
 * Booted workers waiting for a component: booting (thread start, loader, WASI shim import) is the
 * bulk of an instance's start, so it happens ahead of time, off the critical path.
 */
class WorkerPool {
  private idle: { worker: Worker; booted: Promise<void>; expiry: NodeJS.Timeout | undefined }[] = [];
  /** A replacement about to boot (take() schedules it a moment later). */
  private replenishing: NodeJS.Timeout | undefined;
  /** Whether take() boots a replacement at all (not in a one-shot run: oneShot()). */
  private ahead = true;
  /**
   * @param target booted workers kept ready
   * @param idleMs how long a booted worker waits for a component before it is let go: it costs a
   *   whole worker thread (its own V8 heap, the WASI shim loaded), worth paying while instances
   *   are starting (a session opening, a script capsule's task per instance), not in a pod that
   *   serves an agent whose components all run already.
   */
  constructor(
    private readonly target: number,
    private readonly idleMs: number,
  ) {}

  /** Workers this pool has started, ever (tests, diagnostics: a run on the main thread starts none). */
  booted = 0;

  private boot(): { worker: Worker; booted: Promise<void>; expiry: NodeJS.Timeout | undefined } {
    this.booted++;
    const { link, workerData, transfer } = WorkerLink.create();
    const worker = new Worker(BOOT, {
      workerData: { entry: ENTRY, ...workerData },
      transferList: transfer,
      // Bounds the JS glue's heap; wasm linear memory is capped in the module bytes instead. A
      // young generation of 6 MiB (semi-spaces of 2 MiB; it was 32): what a task allocates in the
      // glue is short-lived, and a young generation once grown stays resident in every idle
      // component's worker (big strings and buffers go to the large-object space either way).
      resourceLimits: { maxOldGenerationSizeMb: 256, maxYoungGenerationSizeMb: 6 },
      stdout: true,
      stderr: true,
      env: {},
      execArgv: workerExecArgv(),
    });
    LINKS.set(worker, link);
    worker.once('exit', () => link.close());
    worker.stdout.resume();
    worker.stderr.resume();
    // An idle pooled worker must not keep the process alive.
    worker.unref();
    const booted = new Promise<void>((resolve, reject) => {
      const onMsg = (m: FromWorker): void => {
        if (m.type === 'booted') {
          worker.off('message', onMsg);
          resolve();
        }
      };
      worker.on('message', onMsg);
      worker.once('error', reject);
      worker.once('exit', () => reject(new Error('worker exited while booting')));
    });
    booted.catch(() => {});
    return { worker, booted, expiry: undefined };
  }

  /** Boots workers up to the target, each let go when no instance has taken it within idleMs. */
  private replenish(): void {
    while (this.idle.length < this.target) {
      const entry = this.boot();
      entry.expiry = setTimeout(() => {
        const i = this.idle.indexOf(entry);
        if (i < 0) return;
        this.idle.splice(i, 1);
        void entry.worker.terminate().then(() => noteLetGo('spare worker'));
      }, this.idleMs);
      entry.expiry.unref();
      this.idle.push(entry);
    }
  }

  /**
   * A booted worker (waits for one if none is ready), and starts booting its replacement unless
   * `replenish` is false (a session's thread: host/thread.ts says why).
   */
  async take(o: { replenish?: boolean } = {}): Promise<Worker> {
    const next = this.idle.shift() ?? this.boot();
    clearTimeout(next.expiry);
    // Boot the replacement a moment later, so it does not compete for the CPU with the
    // instantiation this worker is about to do (these machines have 2 cores).
    if (o.replenish !== false && this.ahead && !this.replenishing) {
      this.replenishing = setTimeout(() => {
        this.replenishing = undefined;
        this.replenish();
      }, 300);
      this.replenishing.unref();
    }
    await next.booted;
    next.worker.ref();
    return next.worker;
  }

  /**
   * A one-shot run (`mur run`): no worker is booted ahead any more. Its instances start once each,
   * mostly before a replacement would be ready, so a worker booted ahead was a whole isolate
   * (≈ 8 MiB) that nothing took, booted while the run still competed for the CPU. Each instance
   * boots its own, as the first one always did. Returns what undoes it (in-process callers).
   */
  oneShot(): () => void {
    this.ahead = false;
    clearTimeout(this.replenishing);
    this.replenishing = undefined;
    return () => {
      this.ahead = true;
    };
  }

  /** Booted workers waiting (tests, diagnostics). */
  idleCount(): number {
    return this.idle.length;
  }

  /** Whether a replacement is about to boot (tests, diagnostics). */
  get replenishScheduled(): boolean {
    return this.replenishing !== undefined;
  }

  async drain(): Promise<void> {
    clearTimeout(this.replenishing);
    this.replenishing = undefined;
    const all = this.idle.splice(0);
    for (const w of all) clearTimeout(w.expiry);
    await Promise.all(all.map((w) => w.worker.terminate()));
  }
}

/** Each component worker's call channel (host/worker-link.ts). */
const LINKS = new WeakMap<Worker, WorkerLink>();

/** A component worker's call channel: every worker this module starts has one. */
export function linkOf(worker: Worker): WorkerLink {
  const link = LINKS.get(worker);
  if (!link) throw new Error(`worker ${worker.threadId} is not a component worker`);
  return link;
}

/**
 * Posts a message to a component worker and rings its doorbell (host/doorbell.ts): every message to
 * a component worker goes through here, so the bell counts them all.
 */
export function send(worker: Worker, msg: ToWorker | { type: 'init'; init: WorkerInit }, transfer?: readonly MessagePort[]): void {
  linkOf(worker).send(worker, msg, transfer);
}

export const POOL = new WorkerPool(Number(process.env.MURMUR_WORKER_POOL ?? 1), Number(process.env.MURMUR_WORKER_IDLE_MS ?? 10_000));

/** `mur run`: this process boots no component worker ahead of the next instance (WorkerPool.oneShot). */
export function oneShotWorkers(): () => void {
  return POOL.oneShot();
}

/** A component instantiated (or instantiating) in a slot of a worker. */
export interface Launched {
  worker: Worker;
  /** Its slot in the worker: every message about it names it (protocol.ts). */
  slot: number;
  /** Host-import requests from the guest arrive here. */
  mainPort: MessagePort;
  /** Int32Array over shared memory: [0] = host-call reply flag. */
  flag: Int32Array;
  /**
   * Resolves once instantiated, with the grant-reading WASI calls made before the grants were
   * bound (always none when launched with grants). Rejects, with the worker terminated, when the
   * instantiation fails or outlives the deadline.
   */
  ready: Promise<string[]>;
  /** Lets go of what the main thread holds for the slot (its host-call port, its listeners): it was dropped. */
  release(): void;
}

/**
 * Instantiates a component in a slot of a booted worker: with its grants, or with none yet (a
 * spare, whose instance binds them later with a `bind` message). `withNet`: this is the worker's
 * first slot, which brings the thread its route for outgoing HTTP (the slots after it share it);
 * `ownWorker`: the worker is this instance's alone, and goes when its instantiation fails.
 */
export function instantiateIn(
  worker: Worker,
  slot: number,
  c: LoadedComponent,
  modules: Record<string, WebAssembly.Module>,
  importSpec: ImportSpec,
  grants: Grants | undefined,
  deadlineMs: number,
  o: { withNet: boolean; ownWorker: boolean },
): Launched {
  const { withNet, ownWorker } = o;
  const flagBuf = new SharedArrayBuffer(4);
  const { port1: mainPort, port2: hostPort } = new MessageChannel();
  const init: WorkerInit = { slot, jsPath: c.jsPath, component: c.name, modules, grants, importSpec, flag: flagBuf, hostPort };
  const transfer: MessagePort[] = [hostPort];
  if (withNet) {
    // The guest's outgoing HTTP, performed here (wasi-io/net-relay.ts).
    const netFlag = new SharedArrayBuffer(4);
    const { port1: netMain, port2: netPort } = new MessageChannel();
    serveNet(netMain, new Int32Array(netFlag));
    Object.assign(init, { netPort, netFlag });
    transfer.push(netPort);
    worker.once('exit', () => netMain.close());
  }
  send(worker, { type: 'init', init }, transfer);
  const onGone = (): void => void mainPort.close();
  worker.once('exit', onGone);
  const ready = new Promise<string[]>((resolve, reject) => {
    const done = (): void => {
      clearTimeout(timer);
      worker.off('message', onMsg);
      worker.off('exit', onExit);
    };
    // A hung instantiation stops the thread it hangs in (for a shared thread, its other slots too).
    const timer = setTimeout(() => {
      done();
      void worker.terminate();
      reject(new DeadlineExceeded(c.name, 'instantiate', deadlineMs));
    }, deadlineMs);
    const onMsg = (m: FromWorker): void => {
      if (m.type === 'booted' || m.type === 'collected' || m.slot !== slot) return;
      if (m.type === 'ready') {
        done();
        resolve(m.readBeforeBind);
      } else if (m.type === 'init-error') {
        done();
        // A shared thread's other slots are not hurt by a component that failed to instantiate.
        if (ownWorker) void worker.terminate();
        reject(new ComponentLoadError(c.name, `failed to instantiate: ${m.message}`));
      }
    };
    const onExit = (): void => {
      done();
      reject(new ComponentLoadError(c.name, 'worker exited during instantiation'));
    };
    worker.on('message', onMsg);
    worker.on('exit', onExit);
  });
  ready.catch(() => {});
  const release = (): void => {
    worker.off('exit', onGone);
    mainPort.close();
  };
  return { worker, slot, mainPort, flag: new Int32Array(flagBuf), ready, release };
}

/** Instantiates a component in a booted worker of its own (slot 0). */
export async function launch(
  c: LoadedComponent,
  modules: Record<string, WebAssembly.Module>,
  importSpec: ImportSpec,
  grants: Grants | undefined,
  deadlineMs: number,
): Promise<Launched> {
  const worker = await POOL.take();
  return instantiateIn(worker, 0, c, modules, importSpec, grants, deadlineMs, { withNet: true, ownWorker: true });
}
