/**
 * A route for a guest's outgoing HTTP performed on the guest's own thread (net-request.ts), for
 * guests that suspend while they wait (JSPI: runtime/host/wasi-io/suspend.ts) instead of blocking
 * the thread. Each request then costs no hand-off to the main thread and back: the relay's
 * (net-relay.ts) two per request were 4 of the 10 thread hand-offs of a task with a tool turn,
 * each a wake-up that waits for its share of the cores (docs/measurements/reference.md).
 *
 * Nothing arrives while the thread is blocked, so a wait is a promise (`next`), never a sleep.
 */
import type { NetRequest, ToGuest } from './net-protocol.ts';
import { SHARED_AGENTS, type NetAgents } from './net-pool.ts';
import { startRequest, type LiveRequest } from './net-request.ts';
import { applyToGuest, type Exchange, type NetRoute } from './net-route.ts';

export class LocalNet implements NetRoute {
  readonly #agents: NetAgents;
  /** Exchanges the guest still waits on (an exchange leaves once ended or failed). */
  readonly #live = new Map<number, Exchange>();
  /** Requests still running, the guest's own and dropped ones being drained. */
  readonly #running = new Map<number, LiveRequest>();
  #waiters: (() => void)[] = [];
  #next = 0;

  constructor(agents: NetAgents = SHARED_AGENTS) {
    this.#agents = agents;
  }

  send(r: Omit<NetRequest, 'op' | 'rid'>): { rid: number; exchange: Exchange } {
    const rid = ++this.#next;
    const exchange: Exchange = { chunks: [], ended: false };
    this.#live.set(rid, exchange);
    this.#running.set(
      rid,
      startRequest(
        { op: 'request', rid, ...r },
        (m) => this.#arrive(m),
        this.#agents,
        () => this.#running.delete(rid),
      ),
    );
    return { rid, exchange };
  }

  abort(rid: number): void {
    if (!this.#live.delete(rid)) return;
    this.#running.get(rid)?.abort();
  }

  /** Arrivals are applied as they come. */
  drain(): void {}

  get inFlight(): boolean {
    return this.#live.size > 0;
  }

  next(timeoutMs: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = Number.isFinite(timeoutMs) ? setTimeout(wake, Math.max(0, timeoutMs)) : undefined;
      function wake(): void {
        clearTimeout(timer);
        resolve();
      }
      this.#waiters.push(wake);
    });
  }

  /** Stops everything still running (the thread's guests are gone). */
  close(): void {
    for (const r of [...this.#running.values()]) r.destroy();
    this.#running.clear();
    this.#live.clear();
  }

  #arrive(m: ToGuest): void {
    applyToGuest(this.#live, m);
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const w of waiters) w();
  }
}
