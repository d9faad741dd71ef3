/**
 * A component worker's doorbells: two counters in shared memory, one each way, bumped after each
 * message posted across, so a thread expecting a message within microseconds can poll for it
 * instead of going to sleep.
 *
 * Why: a call into an isolated component is two thread hand-offs (the call to the worker, the
 * answer back), and a thread that sleeps is woken by the kernel. On the 2-vCPU VMs this project
 * runs on, waking a sleeping thread costs 30–60 µs (a bare MessagePort ping-pong between two
 * threads: 78–124 µs median; Atomics.wait/notify: 60 µs; with both sides polling: 2–4 µs; Node 20
 * and 24; docs/component-host.md). A trivial call's cost was mostly those two wake-ups.
 *
 * Who polls, and for how long (MURMUR_COMPONENT_SPIN_US, default 50 µs — 0 on a single CPU, where
 * the polling thread would hold the CPU the other needs —, at most 10 000; 0 = never; host/thread.ts):
 * - the worker, after answering a call, when the main thread recently posted its next call to this
 *   worker within the budget of getting an answer (a script's tool loop, hooks fired back to back),
 *   not when calls come milliseconds apart (a driver's turns): it returns to its event loop as soon
 *   as the bell rings, and the loop finds the message waiting.
 * - the main thread, after posting a call, only when the call is expected to be answered within the
 *   budget (one of the instance's recent calls ran in the worker within it) and no other component
 *   call is in flight (host/instance.ts): the main thread serves everything else, so it never polls
 *   for a call that takes long or while other work waits on it. A host call or anything else the
 *   guest sends rings the bell too, ending the poll early.
 * Each side's rule is a pure function here, fed with recent times: the fastest of the last few,
 * not the last, since a thread just woken runs slower and would otherwise talk both out of polling.
 * Why not a library: this is one shared counter each way and a loop around Atomics.load; the
 * messages themselves still travel through the threads' ports, in order.
 */

/** The bell the main thread rings after posting to the worker. */
export const TO_WORKER = 0;
/** The bell the worker rings after posting to the main thread (answers, host calls). */
export const TO_MAIN = 1;

/** Both bells of one worker. */
export function newDoorbells(): SharedArrayBuffer {
  return new SharedArrayBuffer(8);
}

/** After posting across: a thread polling this bell stops and reads its port. */
export function ring(bells: Int32Array, which: number): void {
  Atomics.add(bells, which, 1);
}

/** A bell's count now (read before the message that will be answered is posted). */
export function rings(bells: Int32Array, which: number): number {
  return Atomics.load(bells, which);
}

const clock = (): number => performance.now();

/**
 * Polls until the bell has rung past `seen` or `us` microseconds have passed: true if it rang.
 * `now` is milliseconds with a fraction (performance.now), passed in so tests can drive the clock.
 */
export function pollDoorbell(bells: Int32Array, which: number, seen: number, us: number, now: () => number = clock): boolean {
  if (Atomics.load(bells, which) !== seen) return true;
  if (us <= 0) return false;
  const until = now() + us / 1000;
  for (;;) {
    // Several loads per clock read: the clock costs more than a load.
    for (let i = 0; i < 16; i++) if (Atomics.load(bells, which) !== seen) return true;
    if (now() >= until) return false;
  }
}

/**
 * The fastest of the last few durations of something (µs): what it takes when neither thread had
 * gone to sleep. Why not the last one alone: a call that reaches a worker which had gone to sleep
 * runs slower (measured: a trivial call 25–55 µs then, 3–6 µs awake), so judging by it would stop
 * the polling that keeps both threads awake.
 */
export class RecentTimes {
  private readonly times: number[] = [];
  private next = 0;

  constructor(private readonly size = 8) {}

  note(us: number): void {
    this.times[this.next] = us;
    this.next = (this.next + 1) % this.size;
  }

  /** The fastest of the recent ones (µs), or undefined before the first. */
  fastest(): number | undefined {
    return this.times.length === 0 ? undefined : Math.min(...this.times);
  }
}

/**
 * Whether the main thread polls for a call's answer: a budget is set, one of the instance's recent
 * calls ran (in the worker) within it, and this call is the only component call in flight.
 */
export function mainPolls(spinUs: number, recentGuestUs: number | undefined, callsInFlight: number): boolean {
  return spinUs > 0 && recentGuestUs !== undefined && recentGuestUs <= spinUs && callsInFlight === 1;
}

/**
 * How long the worker polls after answering this call (µs): the budget when the main thread has
 * recently posted a call to this worker within the budget of receiving its previous answer, else
 * not at all (a driver, a hook called once a turn: the next call is milliseconds away).
 */
export function workerPollUs(spinUs: number, recentGapUs: number | undefined): number {
  return recentGapUs !== undefined && recentGapUs <= spinUs ? spinUs : 0;
}
