/**
 * Background CPU load for a bench: `n` processes that each spin on a core until stopped, at the
 * bench's own priority, so a comparison can be read on a busy node as well as on a quiet one
 * (issue 42: the per-task ratio against the reference must not grow under load). Both arms of a
 * paired bench get the same load while they are measured.
 *
 * Why processes, not worker threads of the bench: a thread of the bench's own process would share
 * its event loop's process and its GC; a process competes for the cores as other work does. Each
 * burner reports when it spins, so `start` returns once the load is on.
 *
 * Two layouts ({@link benchLoad}, a bench's `--load-as`):
 * - `processes` (the default): the burners and the serving process in the bench's own cgroup, so
 *   the kernel shares the cores thread by thread — a pod's own containers, or a bare machine;
 * - `pods`: the burners in one cgroup and the serving process tree in another of the same weight
 *   (cpu-groups.ts), as kubelet lays out a capsule's pod beside a busy neighbour pod on a node.
 *   The scripted provider and the client stay in the bench's cgroup (on a node they are elsewhere).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { cpuGroup, cpuHierarchy, type CpuGroup } from './cpu-groups.ts';
import { choiceArg } from './paired.ts';
import { treePids } from './proc-tree.ts';

/** A spinning child: busy until killed; prints `spinning` once its loop runs. */
const SPIN = `process.stdout.write('spinning\\n'); for (;;) { for (let i = 0; i < 1e6; i++); }`;

export interface CpuLoad {
  /** Burner processes running now. */
  readonly pids: number[];
  /** Ends every burner (by PID, the processes this started) and waits for them to exit. */
  stop(): Promise<void>;
}

/** Starts `n` burners (0: none), each moved into `group` if given; resolves once each spins. */
export async function startCpuLoad(n: number, group?: CpuGroup): Promise<CpuLoad> {
  if (!Number.isInteger(n) || n < 0) throw new RangeError(`cpu load: expected a whole number of burners ≥ 0, got ${n}`);
  const procs: ChildProcess[] = [];
  const stop = async (): Promise<void> => {
    await Promise.all(
      procs.map(
        (p) =>
          new Promise<void>((resolve) => {
            if (p.exitCode !== null || p.signalCode !== null) return resolve();
            p.once('exit', () => resolve());
            p.kill('SIGKILL');
          }),
      ),
    );
  };
  try {
    await Promise.all(
      Array.from({ length: n }, () => {
        const p = spawn(process.execPath, ['-e', SPIN], { stdio: ['ignore', 'pipe', 'inherit'] });
        procs.push(p);
        group?.add([p.pid!]);
        return new Promise<void>((resolve, reject) => {
          p.stdout!.once('data', () => resolve());
          p.once('exit', (code, signal) => reject(new Error(`cpu load: a burner exited (${code ?? signal}) before it spun`)));
        });
      }),
    );
  } catch (e) {
    await stop();
    throw e;
  }
  return { pids: procs.map((p) => p.pid!), stop };
}

/** Where a bench's load runs relative to the serving process (see the header). */
export type LoadAs = 'processes' | 'pods';
export const LOAD_LAYOUTS = ['processes', 'pods'] as const;

/** A bench's `--load-as processes|pods` (default processes). */
export function loadAsArg(argv: readonly string[] = process.argv): LoadAs {
  return choiceArg('load-as', LOAD_LAYOUTS, 'processes', argv);
}

/** What a bench's header says of the layout after its "N spinning processes …". */
export function layoutNote(as: LoadAs): string {
  return as === 'pods' ? ", in a cgroup of their own beside the serving process tree's, as two pods" : '';
}

/** A bench's load for its whole run: started beside each arm's serving process, its groups removed at the end. */
export interface BenchLoad {
  /** Starts the burners beside the serving process `servingPid` (with `pods`, its tree moved into its group first). */
  start(servingPid: number): Promise<CpuLoad>;
  /** Removes the groups it made (`pods`); whatever is still inside goes back to the root group. */
  close(): void;
}

/** `n` burners laid out as `as` says; with `pods` the groups are made at once, so a missing controller or root stops the bench before anything runs. */
export function benchLoad(n: number, as: LoadAs, name = `mur-bench-${process.pid}`): BenchLoad {
  if (as === 'processes' || n === 0) return { start: () => startCpuLoad(n), close: () => {} };
  const h = cpuHierarchy();
  const serving = cpuGroup(h, `${name}-serving`);
  let load: CpuGroup;
  try {
    load = cpuGroup(h, `${name}-load`);
  } catch (e) {
    serving.remove();
    throw e;
  }
  return {
    start(servingPid) {
      serving.add(treePids(servingPid));
      return startCpuLoad(n, load);
    },
    close() {
      serving.remove();
      load.remove();
    },
  };
}

/**
 * Runs a bench's rounds with its load: with `pods` the groups are made first (a missing controller
 * or root stops the bench before any arm runs) and removed however the rounds end.
 */
export async function withBenchLoad<T>(n: number, as: LoadAs, rounds: (load: BenchLoad) => Promise<T>): Promise<T> {
  const load = benchLoad(n, as);
  try {
    return await rounds(load);
  } finally {
    load.close();
  }
}
