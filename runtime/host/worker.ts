/**
 * Runs inside a component worker thread: instantiates transpiled components, each in a slot of
 * its own with a per-instance WASI (one preopen or none, an explicit environment, stdout/stderr to
 * a log file, HTTP only to allowlisted destinations, no raw sockets), and bridges their synchronous
 * host imports to async functions on the main thread with Atomics.wait (notifications, the
 * ONE_WAY_IMPORTS, go on the call channel without waiting).
 *
 * A thread holds one instance, or several of one session (host/thread.ts): the driver and the
 * tools, whose calls the agent loop makes one at a time anyway. Slots share nothing but the thread:
 * each has its own glue instance, linear memories, grants and host-call channel.
 */
import { parentPort, receiveMessageOnPort, workerData, type MessagePort } from 'node:worker_threads';
import { pathToFileURL } from 'node:url';
import { lastResortGc } from '../last-resort-gc.ts';
import { lateBoundWasi, type LateBoundWasi } from './wasi.ts';
import { connectNet } from './wasi-io/channel.ts';
import { GROW_FAILED_EXPORT } from './grow-probe.ts';
import { TO_MAIN, TO_WORKER, pollDoorbell, ring, rings } from './doorbell.ts';
import { ONE_WAY_IMPORTS, type FromWorker, type HostCallReply, type ToWorker, type WorkerInit } from './protocol.ts';

// The worker boots (this module and the WASI shim load) before it knows which components it will
// run, so a pool can keep booted workers ready; each `init` message then fills a slot.
const port = parentPort!;
// The call channel (host/worker-link.ts): answers go back on a port of their own, and each side
// rings the other's doorbell after posting (host/doorbell.ts).
const link = workerData as { bells: SharedArrayBuffer; answers: MessagePort };
const bells = new Int32Array(link.bells);
const answers = link.answers;

interface Slot {
  init: WorkerInit;
  flag: Int32Array;
  wasi: LateBoundWasi;
  memories: WebAssembly.Memory[];
  /** One per instrumented core module: pages of the last failed memory.grow (grow-probe.ts). */
  growFailed: WebAssembly.Global[];
  instance?: Record<string, unknown>;
}

const slots = new Map<number, Slot>();

function growFailedPages(s: Slot): number {
  let max = 0;
  for (const g of s.growFailed) max = Math.max(max, (g.value as number) >>> 0);
  return max;
}

function memoryBytes(s: Slot): number {
  let max = 0;
  for (const m of s.memories) max = Math.max(max, m.buffer.byteLength);
  return max;
}

function hostCall(s: Slot, iface: string, fn: string, args: unknown[]): unknown {
  const { wasi, flag, init } = s;
  // A spare being pre-instantiated has no instance on the main thread to answer yet (and is
  // discarded even if the guest swallows this error).
  if (!wasi.bound) wasi.noteEarly(`${iface}#${fn}`);
  if (!wasi.bound) throw new Error(`host import ${iface}#${fn} failed: called before the instance's grants were bound`);
  Atomics.store(flag, 0, 0);
  init.hostPort.postMessage({ iface, fn, args });
  // A main thread polling for this call's answer stops and serves the host call instead.
  ring(bells, TO_MAIN);
  // The main thread enforces the call's deadline (it terminates this worker), so wait unbounded.
  Atomics.wait(flag, 0, 0);
  const msg = receiveMessageOnPort(init.hostPort);
  if (!msg) throw new Error(`host import ${iface}#${fn}: no reply`);
  const reply = msg.message as HostCallReply;
  if ('ok' in reply) return reply.ok;
  if ('err' in reply) throw reply.err; // jco turns a thrown value into the WIT `err` case
  throw new Error(`host import ${iface}#${fn} failed: ${reply.fault}`);
}

/** A one-way host import (ONE_WAY_IMPORTS): posted on the call channel, not waited for. */
function hostEvent(s: Slot, iface: string, fn: string, args: unknown[]): undefined {
  if (!s.wasi.bound) s.wasi.noteEarly(`${iface}#${fn}`);
  if (!s.wasi.bound) throw new Error(`host import ${iface}#${fn} failed: called before the instance's grants were bound`);
  answer({ type: 'host-event', slot: s.init.slot, iface, fn, args });
  return undefined;
}

async function start(init: WorkerInit): Promise<void> {
  // The thread's route for outgoing HTTP comes with its first slot.
  if (init.netPort && init.netFlag) connectNet(init.netPort, init.netFlag, () => ring(bells, TO_MAIN));
  const slot = init.slot;
  // A spare is instantiated before it has grants; its instance binds them with the first message.
  const wasi = lateBoundWasi(init.component, (d) => answer({ type: 'network-denied', slot, ...d }), init.grants);
  const s: Slot = { init, flag: new Int32Array(init.flag), wasi, memories: [], growFailed: [] };
  slots.set(slot, s);
  const imports: Record<string, unknown> = { ...wasi.imports };
  for (const [iface, fns] of Object.entries(init.importSpec)) {
    const obj: Record<string, (...a: unknown[]) => unknown> = {};
    for (const fn of fns) {
      obj[fn] = ONE_WAY_IMPORTS.has(`${iface}#${fn}`)
        ? (...args: unknown[]) => hostEvent(s, iface, fn, args)
        : (...args: unknown[]) => hostCall(s, iface, fn, args);
    }
    imports[iface] = obj;
  }
  const { instantiate } = (await import(pathToFileURL(init.jsPath).href)) as {
    instantiate(
      get: (n: string) => WebAssembly.Module,
      imports: unknown,
      inst: (m: WebAssembly.Module, i: WebAssembly.Imports) => Promise<WebAssembly.Instance>,
    ): Promise<Record<string, unknown>>;
  };
  s.instance = await instantiate(
    (name) => {
      const m = init.modules[name];
      if (!m) throw new Error(`missing core module ${name}`);
      return m;
    },
    imports,
    async (module, imp) => {
      const inst = await WebAssembly.instantiate(module, imp);
      for (const v of Object.values(inst.exports)) if (v instanceof WebAssembly.Memory) s.memories.push(v);
      const g = inst.exports[GROW_FAILED_EXPORT];
      if (g instanceof WebAssembly.Global) s.growFailed.push(g);
      return inst;
    },
  );
  post({ type: 'ready', slot, readBeforeBind: wasi.bound ? [] : wasi.readBeforeBind });
}

/** Whether the message being handled rang the bell while this thread polled for it. */
let pollRang = false;

async function call(s: Slot, msg: Extract<ToWorker, { type: 'call' }>, polled: boolean): Promise<void> {
  const slot = msg.slot;
  const started = performance.now();
  const guestUs = (): number => Math.round((performance.now() - started) * 1000);
  let target: unknown = s.instance;
  let fn: unknown;
  let self: unknown;
  for (const p of msg.path) {
    self = target;
    target = (target as Record<string, unknown> | undefined)?.[p];
  }
  fn = target;
  // Grow failures count per call: one an earlier call recovered from is no evidence now.
  for (const g of s.growFailed) g.value = 0;
  let out: FromWorker;
  if (typeof fn !== 'function') {
    out = {
      type: 'trap',
      slot,
      id: msg.id,
      message: `the component has no export ${msg.path.join('.')}`,
      memoryBytes: memoryBytes(s),
      growFailedPages: 0,
      guestUs: 0,
      polled,
    };
  } else {
    try {
      const value = await (fn as (...a: unknown[]) => unknown).apply(self, msg.args);
      out = { type: 'result', slot, id: msg.id, value, memoryBytes: memoryBytes(s), guestUs: guestUs(), polled };
    } catch (e) {
      const err = e as { payload?: unknown; message?: string; name?: string };
      if (err && typeof err === 'object' && 'payload' in err) {
        out = { type: 'guest-error', slot, id: msg.id, payload: err.payload, memoryBytes: memoryBytes(s), guestUs: guestUs(), polled };
      } else {
        out = {
          type: 'trap',
          slot,
          id: msg.id,
          message: String(err?.message ?? e),
          memoryBytes: memoryBytes(s),
          growFailedPages: growFailedPages(s),
          guestUs: guestUs(),
          polled,
        };
      }
    }
  }
  // Counted before the answer goes, so a next call posted in reply to it shows as a ring.
  const seen = rings(bells, TO_WORKER);
  answer(out);
  // Rung or not, the next message is read by the event loop once this returns: the poll only keeps
  // the thread awake for it (host/doorbell.ts).
  pollRang = pollDoorbell(bells, TO_WORKER, seen, msg.spinUs) && msg.spinUs > 0;
}

/** On the worker's own channel: booted, ready, init-error. */
function post(m: FromWorker): void {
  port.postMessage(m);
}

/** On the call channel, with the main thread's bell rung: a call's answer, a refused request. */
function answer(m: FromWorker): void {
  answers.postMessage(m);
  ring(bells, TO_MAIN);
}

port.on('message', (msg: { type: 'init'; init: WorkerInit } | ToWorker) => {
  // Only the first message after a poll that rang is the one the poll caught.
  const polled = pollRang;
  pollRang = false;
  if (msg.type === 'init') {
    const slot = msg.init.slot;
    start(msg.init).catch((e: Error) => {
      slots.delete(slot);
      post({ type: 'init-error', slot, message: e?.message ?? String(e) });
    });
    return;
  }
  // A dropped slot (its instance trapped, retired or closed) lets go of everything it held: the
  // next garbage collection frees its linear memories.
  if (msg.type === 'drop') {
    slots.delete(msg.slot);
    return;
  }
  // The thread went idle keeping its instances, or quiet (a settle: bytecode kept; host/thread.ts):
  // what the calls left behind, and the slots dropped since, are freed now rather than whenever
  // the next allocation comes.
  if (msg.type === 'collect') {
    const t0 = performance.now();
    lastResortGc({ keepCode: msg.keepCode === true });
    post({ type: 'collected', heapUsed: process.memoryUsage().heapUsed, ms: performance.now() - t0 });
    return;
  }
  const s = slots.get(msg.slot);
  if (!s) return;
  if (msg.type === 'bind') s.wasi.bind(msg.grants);
  else if (msg.type === 'call') void call(s, msg, polled);
});
post({ type: 'booted' });
