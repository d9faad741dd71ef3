/**
 * The main thread's side of one component worker's call channel: its doorbells (host/doorbell.ts)
 * and the port its slots' answers come back on, routed to each slot's instance.
 *
 * Why a port of its own beside the worker's: the main thread can read a MessagePort synchronously
 * (receiveMessageOnPort) when it polls for a short call's answer, and cannot read a Worker's own
 * channel that way. Everything about a running call (its answer, refused network requests before
 * it) comes on this port, in the order the worker sent it; the worker's own channel keeps the
 * messages about starting (booted, ready, init-error).
 */
import { MessageChannel, receiveMessageOnPort, type MessagePort, type Worker } from 'node:worker_threads';
import { RecentTimes, TO_MAIN, TO_WORKER, newDoorbells, pollDoorbell, ring, rings, workerPollUs } from './doorbell.ts';
import type { FromWorker, ToWorker, WorkerInit } from './protocol.ts';

/** What a slot's instance receives about its calls. */
export type CallMessage = Extract<FromWorker, { type: 'result' | 'guest-error' | 'trap' | 'network-denied' | 'host-event' }>;

export class WorkerLink {
  readonly bells: Int32Array;
  private readonly answers: MessagePort;
  private readonly routes = new Map<number, (m: CallMessage) => void>();
  /** When the main thread last heard a call's answer (performance.now ms), and how soon it posted the next call after one. */
  private answeredAt: number | undefined;
  private readonly gaps = new RecentTimes();

  /** The link and what the worker gets of it (in its workerData, the port transferred). */
  static create(): { link: WorkerLink; workerData: { bells: SharedArrayBuffer; answers: MessagePort }; transfer: MessagePort[] } {
    const bells = newDoorbells();
    const { port1, port2 } = new MessageChannel();
    return { link: new WorkerLink(new Int32Array(bells), port1), workerData: { bells, answers: port2 }, transfer: [port2] };
  }

  private constructor(bells: Int32Array, answers: MessagePort) {
    this.bells = bells;
    this.answers = answers;
    answers.on('message', (m: CallMessage) => this.deliver(m));
    // A call in flight keeps the process alive by its deadline timer; the port itself must not.
    answers.unref();
  }

  /** Posts to the worker and rings its bell (a worker polling after its last answer reads it at once). */
  send(worker: Worker, msg: ToWorker | { type: 'init'; init: WorkerInit }, transfer?: readonly MessagePort[]): void {
    worker.postMessage(msg, transfer);
    ring(this.bells, TO_WORKER);
  }

  /**
   * For a call about to be sent: notes how soon it comes after the worker's last answer, and says
   * how long the worker should poll after answering it (host/doorbell.ts).
   */
  callPollUs(spinUs: number): number {
    if (this.answeredAt !== undefined) this.gaps.note((performance.now() - this.answeredAt) * 1000);
    this.answeredAt = undefined;
    return workerPollUs(spinUs, this.gaps.fastest());
  }

  /** The slot's instance hears about its calls through `fn` until unrouted. */
  route(slot: number, fn: (m: CallMessage) => void): void {
    this.routes.set(slot, fn);
  }

  unroute(slot: number, fn: (m: CallMessage) => void): void {
    if (this.routes.get(slot) === fn) this.routes.delete(slot);
  }

  /** The main thread's bell count now: read before posting a call whose answer it may poll for. */
  seen(): number {
    return rings(this.bells, TO_MAIN);
  }

  /**
   * Polls up to `us` for the worker to post something after `seen`, then delivers whatever its port
   * holds: the answer, if it came; otherwise (a host call, say) the event loop takes over.
   */
  pollAnswers(seen: number, us: number): void {
    if (!pollDoorbell(this.bells, TO_MAIN, seen, us)) return;
    for (let m = receiveMessageOnPort(this.answers); m; m = receiveMessageOnPort(this.answers)) this.deliver(m.message as CallMessage);
  }

  close(): void {
    this.routes.clear();
    this.answers.close();
  }

  private deliver(m: CallMessage): void {
    if (m.type !== 'network-denied' && m.type !== 'host-event') this.answeredAt = performance.now();
    this.routes.get(m.slot)?.(m);
  }
}
