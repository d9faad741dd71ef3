/**
 * Runs inside a component's own worker thread: instantiates the transpiled component with a
 * per-instance WASI (one preopen or none, an explicit environment, stdout/stderr to a log file,
 * HTTP only to allowlisted destinations, no raw sockets) and bridges its synchronous host imports to
 * async functions on the main thread with Atomics.wait.
 */
import { appendFileSync, statSync } from 'node:fs';
import { parentPort, receiveMessageOnPort, workerData } from 'node:worker_threads';
import { pathToFileURL } from 'node:url';
import { WASIShim } from '@bytecodealliance/preview2-shim/instantiation';
import * as cli from '@bytecodealliance/preview2-shim/cli';
import * as http from '@bytecodealliance/preview2-shim/http';
import * as io from '@bytecodealliance/preview2-shim/io';
import * as filesystem from '@bytecodealliance/preview2-shim/filesystem';
import * as sockets from '@bytecodealliance/preview2-shim/sockets';
import * as clocks from '@bytecodealliance/preview2-shim/clocks';
import { isAllowed } from '../net/allowlist.ts';
import type { FromWorker, HostCallReply, ToWorker, WorkerInit } from './protocol.ts';

// The worker boots (this module and the WASI shim load) before it knows which component it will
// run, so a pool can keep booted workers ready; `init` arrives as the first message.
let init!: WorkerInit;
let flag!: Int32Array;
const port = parentPort!;
void workerData;
const memories: WebAssembly.Memory[] = [];

function memoryBytes(): number {
  let max = 0;
  for (const m of memories) max = Math.max(max, m.buffer.byteLength);
  return max;
}

/** An OutputStream for the guest's stdout/stderr that appends to the instance's log file. */
function logStream(file: string | undefined, limit: number): unknown {
  const real = (cli.stdout as { getStdout(): { subscribe(): unknown } }).getStdout();
  let written = (() => {
    try {
      return file ? statSync(file).size : 0;
    } catch {
      return 0;
    }
  })();
  const write = (buf: Uint8Array): void => {
    if (!file || written >= limit) return;
    const room = limit - written;
    const chunk = buf.length > room ? buf.subarray(0, room) : buf;
    appendFileSync(file, chunk);
    written += chunk.length;
  };
  const s = Object.create((io.streams as { OutputStream: { prototype: object } }).OutputStream.prototype) as Record<string, unknown>;
  Object.assign(s, {
    checkWrite: () => 1n << 20n,
    write,
    blockingWriteAndFlush: write,
    flush: () => {},
    blockingFlush: () => {},
    writeZeroes: (n: bigint) => write(new Uint8Array(Number(n))),
    blockingWriteZeroesAndFlush: (n: bigint) => write(new Uint8Array(Number(n))),
    subscribe: () => real.subscribe(),
  });
  return s;
}

/**
 * wasi:clocks/wall-clock without preview2-shim 0.26.1's fast-path lowering, which writes the
 * seconds at the wrong offset (it indexes a BigInt64Array with `retptr >> 2`) and makes a guest's
 * `Date.now()` trap. Plain functions get jco's ordinary, correct lowering.
 */
function plainWallClock(): { now(): { seconds: bigint; nanoseconds: number }; resolution(): { seconds: bigint; nanoseconds: number } } {
  return {
    now() {
      const ms = Date.now();
      return { seconds: BigInt(Math.floor(ms / 1000)), nanoseconds: (ms % 1000) * 1_000_000 };
    },
    resolution() {
      return { seconds: 0n, nanoseconds: 1_000_000 };
    },
  };
}

/** HTTP outgoing handler that only lets allowlisted destinations through. */
function guardedHttp(allow: string[]): typeof http {
  const base = http.outgoingHandler as { handle(req: unknown, opts: unknown): unknown };
  return {
    ...http,
    outgoingHandler: {
      ...base,
      handle(req: { scheme(): { tag: string; val?: string } | undefined; authority(): string | undefined }, opts: unknown) {
        const s = req.scheme();
        const scheme = !s ? 'http' : s.tag === 'HTTPS' ? 'https' : s.tag === 'HTTP' ? 'http' : String(s.val ?? 'other').toLowerCase();
        const authority = req.authority() ?? '';
        const m = /^(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(authority);
        const host = (m?.[1] ?? authority).toLowerCase();
        const portNum = m?.[2] ? Number(m[2]) : scheme === 'https' ? 443 : 80;
        if (!allow.length || !isAllowed(allow, { scheme, host, port: portNum })) {
          // A typed wasi:http error keeps the instance usable (a bare string poisons it).
          throw { tag: 'HTTP-request-denied' };
        }
        return base.handle(req, opts);
      },
    },
  } as typeof http;
}

/**
 * Rust's wasip2 std opens writable files with the `mutate-directory` descriptor flag, which the
 * shim rejects as unsupported; clear it (the preopen still confines every path).
 */
function allowRustWrites(): void {
  const Descriptor = (filesystem.types as unknown as { Descriptor: { prototype: Record<string, unknown> } }).Descriptor;
  const openAt = Descriptor.prototype.openAt as (this: unknown, ...a: unknown[]) => unknown;
  if ((openAt as { __murmur?: boolean }).__murmur) return;
  const patched = function (this: unknown, pathFlags: unknown, path: unknown, openFlags: unknown, descFlags: Record<string, unknown> | undefined) {
    const flags = descFlags && descFlags.mutateDirectory ? { ...descFlags, mutateDirectory: false } : descFlags;
    return openAt.call(this, pathFlags, path, openFlags, flags);
  };
  (patched as { __murmur?: boolean }).__murmur = true;
  Descriptor.prototype.openAt = patched;
}

function hostCall(iface: string, fn: string, args: unknown[]): unknown {
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
  const g = init.grants;
  allowRustWrites();
  const out = logStream(g.logFile, g.logLimitBytes ?? 10 * 1048576);
  const shim = new WASIShim({
    sandbox: {
      preopens: g.preopen ? { '/': g.preopen } : {},
      env: g.env,
      args: [init.component],
    },
    // Raw sockets: never. (Not `sandbox.enableNetwork: false`: that also swaps in an HTTP handler
    // that throws a bare string, which poisons the instance; HTTP goes through the allowlist.)
    sockets: (sockets as unknown as { createSockets(c: { enableNetwork: boolean }): unknown }).createSockets({ enableNetwork: false }),
    cli: { ...cli, stdout: { getStdout: () => out }, stderr: { getStderr: () => out } },
    http: guardedHttp(g.networkAllow),
    clocks: { ...clocks, wallClock: plainWallClock() },
  } as ConstructorParameters<typeof WASIShim>[0]);
  const imports: Record<string, unknown> = { ...shim.getImportObject() };
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
      return inst;
    },
  );

  port.on('message', async (msg: ToWorker) => {
    if (msg.type !== 'call') return;
    let target: unknown = instance;
    let fn: unknown;
    let self: unknown;
    for (const p of msg.path) {
      self = target;
      target = (target as Record<string, unknown> | undefined)?.[p];
    }
    fn = target;
    if (typeof fn !== 'function') {
      post({ type: 'trap', id: msg.id, message: `the component has no export ${msg.path.join('.')}`, memoryBytes: memoryBytes() });
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
        post({ type: 'trap', id: msg.id, message: String(err?.message ?? e), memoryBytes: memoryBytes() });
      }
    }
  });
  post({ type: 'ready' });
}

function post(m: FromWorker): void {
  port.postMessage(m);
}

port.once('message', (msg: { type: 'init'; init: WorkerInit }) => {
  init = msg.init;
  main().catch((e: Error) => post({ type: 'init-error', message: e?.message ?? String(e) }));
});
post({ type: 'booted' });
