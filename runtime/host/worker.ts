/**
 * Runs inside a component's own worker thread: instantiates the transpiled component with a
 * per-instance WASI (one preopen or none, an explicit environment, stdout/stderr to a log file,
 * HTTP only to allowlisted destinations, no raw sockets) and bridges its synchronous host imports to
 * async functions on the main thread with Atomics.wait.
 */
import { parentPort, receiveMessageOnPort, workerData } from 'node:worker_threads';
import { pathToFileURL } from 'node:url';
import { lateBoundWasi, type LateBoundWasi } from './wasi.ts';
import { connectNet } from './wasi-io/channel.ts';
import { GROW_FAILED_EXPORT } from './grow-probe.ts';
import type { FromWorker, HostCallReply, ToWorker, WorkerInit } from './protocol.ts';

// The worker boots (this module and the WASI shim load) before it knows which component it will
// run, so a pool can keep booted workers ready; `init` arrives as the first message.
let init!: WorkerInit;
let flag!: Int32Array;
let wasi!: LateBoundWasi;
const port = parentPort!;
void workerData;
const memories: WebAssembly.Memory[] = [];
/** One per instrumented core module: pages of the last failed memory.grow (grow-probe.ts). */
const growFailed: WebAssembly.Global[] = [];

function growFailedPages(): number {
  let max = 0;
  for (const g of growFailed) max = Math.max(max, (g.value as number) >>> 0);
  return max;
}

function memoryBytes(): number {
  let max = 0;
  for (const m of memories) max = Math.max(max, m.buffer.byteLength);
  return max;
}

function hostCall(iface: string, fn: string, args: unknown[]): unknown {
  // A spare being pre-instantiated has no instance on the main thread to answer yet (and is
  // discarded even if the guest swallows this error).
  if (!wasi.bound) wasi.noteEarly(`${iface}#${fn}`);
  if (!wasi.bound) throw new Error(`host import ${iface}#${fn} failed: called before the instance's grants were bound`);
  Atomics.store(flag, 0, 0);
  init.hostPort.postMessage({ iface, fn, args });
  // The main thread enforces the call's deadline (it terminates this worker), so wait unbounded.
  Atomics.wait(flag, 0, 0);
  const msg = receiveMessageOnPort(init.hostPort);
  if (!msg) throw new Error(`host import ${iface}#${fn}: no reply`);
  const reply = msg.message as HostCallReply;
  if ('ok' in reply) return reply.ok;
  if ('err' in reply) throw reply.err; // jco turns a thrown value into the WIT `err` case
  throw new Error(`host import ${iface}#${fn} failed: ${reply.fault}`);
}

async function main(): Promise<void> {
  flag = new Int32Array(init.flag);
  connectNet(init.netPort, init.netFlag);
  // A spare is instantiated before it has grants; its instance binds them with the first message.
  wasi = lateBoundWasi(init.component, (d) => post({ type: 'network-denied', ...d }), init.grants);
  const imports: Record<string, unknown> = { ...wasi.imports };
  for (const [iface, fns] of Object.entries(init.importSpec)) {
    const obj: Record<string, (...a: unknown[]) => unknown> = {};
    for (const fn of fns) obj[fn] = (...args: unknown[]) => hostCall(iface, fn, args);
    imports[iface] = obj;
  }
  const { instantiate } = (await import(pathToFileURL(init.jsPath).href)) as {
    instantiate(get: (n: string) => WebAssembly.Module, imports: unknown, inst: (m: WebAssembly.Module, i: WebAssembly.Imports) => Promise<WebAssembly.Instance>): Promise<Record<string, unknown>>;
  };
  const instance = await instantiate(
    (name) => {
      const m = init.modules[name];
      if (!m) throw new Error(`missing core module ${name}`);
      return m;
    },
    imports,
    async (module, imp) => {
      const inst = await WebAssembly.instantiate(module, imp);
      for (const v of Object.values(inst.exports)) if (v instanceof WebAssembly.Memory) memories.push(v);
      const g = inst.exports[GROW_FAILED_EXPORT];
      if (g instanceof WebAssembly.Global) growFailed.push(g);
      return inst;
    },
  );

  port.on('message', async (msg: ToWorker) => {
    if (msg.type === 'bind') {
      wasi.bind(msg.grants);
      return;
    }
    if (msg.type !== 'call') return;
    let target: unknown = instance;
    let fn: unknown;
    let self: unknown;
    for (const p of msg.path) {
      self = target;
      target = (target as Record<string, unknown> | undefined)?.[p];
    }
    fn = target;
    // Grow failures count per call: one an earlier call recovered from is no evidence now.
    for (const g of growFailed) g.value = 0;
    if (typeof fn !== 'function') {
      post({ type: 'trap', id: msg.id, message: `the component has no export ${msg.path.join('.')}`, memoryBytes: memoryBytes(), growFailedPages: 0 });
      return;
    }
    try {
      const value = await (fn as (...a: unknown[]) => unknown).apply(self, msg.args);
      post({ type: 'result', id: msg.id, value, memoryBytes: memoryBytes() });
    } catch (e) {
      const err = e as { payload?: unknown; message?: string; name?: string };
      if (err && typeof err === 'object' && 'payload' in err) {
        post({ type: 'guest-error', id: msg.id, payload: err.payload, memoryBytes: memoryBytes() });
      } else {
        post({ type: 'trap', id: msg.id, message: String(err?.message ?? e), memoryBytes: memoryBytes(), growFailedPages: growFailedPages() });
      }
    }
  });
  post({ type: 'ready', readBeforeBind: wasi.bound ? [] : wasi.readBeforeBind });
}

function post(m: FromWorker): void {
  port.postMessage(m);
}

port.once('message', (msg: { type: 'init'; init: WorkerInit }) => {
  init = msg.init;
  main().catch((e: Error) => post({ type: 'init-error', message: e?.message ?? String(e) }));
});
post({ type: 'booted' });
