import type { MessagePort } from 'node:worker_threads';
import type { NetworkDenial } from '../contracts/network-denial.ts';

/** Messages between the main thread (ComponentInstance) and a component worker. */

export interface Grants {
  /** Host directory preopened as `/` for the guest, or none. */
  preopen?: string | undefined;
  /** Exactly the environment the guest sees. */
  env: Record<string, string>;
  /** Outgoing HTTP destinations allowed (manifest allowlist syntax); empty = deny all. */
  networkAllow: string[];
  /** File receiving the guest's stdout and stderr; none = discarded. */
  logFile?: string | undefined;
  /** Stop writing the log past this size (bytes). */
  logLimitBytes?: number;
  /** Secrets the guest is given (the driver's provider key): redacted from its log file (runtime/secrets.ts). */
  secrets?: string[];
}

export type { NetworkDenial };

/** Interfaces the host implements for the guest: interface → function names (camelCase). */
export type ImportSpec = Record<string, string[]>;

/**
 * Host imports (`interface#function`) that are notifications: no result, nothing the guest can
 * observe of their effect. The guest's thread posts them on the call channel and goes on without
 * waiting for the main thread, which runs them in order before the call's answer. A driver calls
 * emit-chunk once per streamed token: as a round trip, each token stopped the driver for two
 * thread hand-offs (issue 42).
 */
export const ONE_WAY_IMPORTS: ReadonlySet<string> = new Set(['murmur:text/chunks#emitChunk', 'murmur:text/chunks#emitThinkingChunk']);

export interface WorkerInit {
  /** The instance's slot in its thread (host/thread.ts); every message about it names it. */
  slot: number;
  jsPath: string;
  component: string;
  modules: Record<string, WebAssembly.Module>;
  /** None for a pre-instantiated spare: its instance sends them in a `bind` message. */
  grants?: Grants | undefined;
  importSpec: ImportSpec;
  /** Int32Array over a SharedArrayBuffer: [0] = host-call reply flag. */
  flag: SharedArrayBuffer;
  hostPort: MessagePort;
  /**
   * The thread's outgoing HTTP to the main thread, and the counter bumped after each reply
   * (wasi-io/net-protocol.ts): with a thread's first slot only, shared by the slots after it.
   */
  netPort?: MessagePort;
  netFlag?: SharedArrayBuffer;
}

export type ToWorker =
  /** spinUs: after answering, how long the worker polls its doorbell for the next message (host/doorbell.ts). */
  | { type: 'call'; slot: number; id: number; path: string[]; args: unknown[]; spinUs: number }
  | { type: 'bind'; slot: number; grants: Grants }
  /** The slot's instance is gone (trapped, retired, closed): the thread lets go of it. */
  | { type: 'drop'; slot: number }
  /**
   * The thread went idle and keeps its instances, or went quiet (`keepCode`: a settle, bytecode
   * kept): it collects its garbage (host/thread.ts), and answers `collected`.
   */
  | { type: 'collect'; keepCode?: boolean };

/**
 * Every message but `booted` names the slot it is about. `booted`, `ready` and `init-error` come on
 * the worker's own channel; everything about a call (its answer, the network requests refused
 * during it) on the worker's call channel (host/worker-link.ts), in the order sent.
 */
export type FromWorker =
  | { type: 'booted' }
  /** readBeforeBind: grant-reading WASI calls a spare made while instantiating (it is then discarded). */
  | { type: 'ready'; slot: number; readBeforeBind: string[] }
  | { type: 'init-error'; slot: number; message: string }
  /** After a `collect`: the worker's heap in use once its garbage was collected (bytes), and how long that took (ms). */
  | { type: 'collected'; heapUsed: number; ms: number }
  | ({ type: 'network-denied'; slot: number } & NetworkDenial)
  /** A one-way host import the guest called (ONE_WAY_IMPORTS), on the call channel before the call's answer. */
  | { type: 'host-event'; slot: number; iface: string; fn: string; args: unknown[] }
  /**
   * guestUs: how long the call ran in the worker (µs): whether the next one is worth polling for;
   * polled: the call reached a worker still polling after its previous answer (host/doorbell.ts).
   */
  | ({ type: 'result'; slot: number; id: number; value: unknown; memoryBytes: number } & CallTiming)
  | ({ type: 'guest-error'; slot: number; id: number; payload: unknown; memoryBytes: number } & CallTiming)
  /** growFailedPages: pages a `memory.grow` asked for and did not get during this call (0 = none; runtime/host/grow-probe.ts). */
  | ({ type: 'trap'; slot: number; id: number; message: string; memoryBytes: number; growFailedPages: number } & CallTiming);

export interface CallTiming {
  guestUs: number;
  polled: boolean;
}

export type HostCallRequest = { iface: string; fn: string; args: unknown[] };
export type HostCallReply = { ok: unknown } | { err: unknown } | { fault: string };
