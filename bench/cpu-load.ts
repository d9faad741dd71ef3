/**
 * Background CPU load for a bench: `n` processes that each spin on a core until stopped, at the
 * bench's own priority, so a comparison can be read on a busy node as well as on a quiet one
 * (issue 42: the per-task ratio against the reference must not grow under load). Both arms of a
 * paired bench get the same load while they are measured.
 *
 * Why processes, not worker threads of the bench: a thread of the bench's own process would share
 * its event loop's process and its GC; a process competes for the cores the way another pod's
 * work does. Each burner reports when it spins, so `start` returns once the load is on.
 */
import { spawn, type ChildProcess } from 'node:child_process';

/** A spinning child: busy until killed; prints `spinning` once its loop runs. */
const SPIN = `process.stdout.write('spinning\\n'); for (;;) { for (let i = 0; i < 1e6; i++); }`;

export interface CpuLoad {
  /** Burner processes running now. */
  readonly pids: number[];
  /** Ends every burner (by PID, the processes this started) and waits for them to exit. */
  stop(): Promise<void>;
}

/** Starts `n` burners (0: none); resolves once each spins. */
export async function startCpuLoad(n: number): Promise<CpuLoad> {
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
