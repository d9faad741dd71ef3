/**
 * The per-instance WASI a component sees: exactly one preopen (as `/`) or none, exactly the
 * granted environment, stdout/stderr appended to the instance's log file, HTTP only to allowlisted
 * destinations, and no raw sockets. Built by each component worker (runtime/host/worker.ts).
 */
import { appendFileSync, statSync } from 'node:fs';
import { WASIShim } from '@bytecodealliance/preview2-shim/instantiation';
import * as cli from '@bytecodealliance/preview2-shim/cli';
import * as http from '@bytecodealliance/preview2-shim/http';
import * as io from '@bytecodealliance/preview2-shim/io';
import * as filesystem from '@bytecodealliance/preview2-shim/filesystem';
import * as sockets from '@bytecodealliance/preview2-shim/sockets';
import * as clocks from '@bytecodealliance/preview2-shim/clocks';
import { isAllowed } from '../net/allowlist.ts';
import { holdSecret, holdsSecrets, redact } from '../secrets.ts';
import type { Grants, NetworkDenial } from './protocol.ts';

/** Grants a pre-instantiated spare runs under until its instance binds the real ones: nothing. */
const UNBOUND: Grants = { env: {}, networkAllow: [] };

/**
 * The members of the WASI import object that depend on an instance's grants, with whether calling
 * one before the grants are bound makes the instance unusable (it would have read a grant it did
 * not have yet). Every other member is the same object for every instance in a worker (a test holds
 * the table to that), so a worker can instantiate a component first and bind its grants later.
 */
export const GRANT_BOUND: Record<string, Record<string, { readsGrant: boolean }>> = {
  'wasi:cli/environment': { getEnvironment: { readsGrant: true }, getArguments: { readsGrant: false }, initialCwd: { readsGrant: false } },
  'wasi:cli/stdout': { getStdout: { readsGrant: true } },
  'wasi:cli/stderr': { getStderr: { readsGrant: true } },
  'wasi:filesystem/preopens': { getDirectories: { readsGrant: true } },
  'wasi:http/outgoing-handler': { handle: { readsGrant: true } },
};

export interface LateBoundWasi {
  /** The import object to instantiate with; its grant-bound members call the bound grants' WASI. */
  imports: Record<string, unknown>;
  /** Binds the instance's grants (once). */
  bind(g: Grants): void;
  readonly bound: boolean;
  /** Grant-reading members called before bind(), as `interface#member`. */
  readonly readBeforeBind: string[];
  /** Records another grant-dependent call made before bind() (a host import). */
  noteEarly(what: string): void;
}

/**
 * WASI for one worker, with its grants, or with grants that arrive after instantiation (a
 * pre-instantiated spare: `grants` omitted, bind() later).
 * Until bind() the guest sees no environment, no preopen, a discarded stdout and no network; any
 * such read is recorded, and the runtime never hands that instance to anyone.
 */
export function lateBoundWasi(component: string, onDenied?: (d: NetworkDenial) => void, grants?: Grants): LateBoundWasi {
  // Grants known up front (every instance but a spare): build that WASI once, already bound.
  let current = grants ? wasiImports(grants, component, onDenied) : wasiImports(UNBOUND, component);
  let bound = grants !== undefined;
  const early = new Set<string>();
  const imports: Record<string, unknown> = { ...current };
  for (const [iface, members] of Object.entries(GRANT_BOUND)) {
    const obj: Record<string, unknown> = { ...(current[iface] as object) };
    for (const [name, { readsGrant }] of Object.entries(members)) {
      obj[name] = function (this: unknown, ...args: unknown[]): unknown {
        if (!bound && readsGrant) early.add(`${iface}#${name}`);
        const target = current[iface] as Record<string, (...a: unknown[]) => unknown>;
        return target[name]!.apply(target, args);
      };
    }
    imports[iface] = obj;
  }
  return {
    imports,
    bind(g: Grants): void {
      if (bound) throw new Error('grants are already bound');
      current = wasiImports(g, component, onDenied);
      bound = true;
    },
    get bound() {
      return bound;
    },
    get readBeforeBind() {
      return [...early];
    },
    noteEarly(what: string): void {
      if (!bound) early.add(what);
    },
  };
}

// Built once per worker: they hold no grant, and the same objects keep GRANT_BOUND exhaustive.
const NO_SOCKETS = (sockets as unknown as { createSockets(c: { enableNetwork: boolean }): unknown }).createSockets({ enableNetwork: false });
let wallClock: ReturnType<typeof plainWallClock> | undefined;

/** The WASI import object (unversioned interface names) for one instance with these grants. */
export function wasiImports(g: Grants, component: string, onDenied?: (d: NetworkDenial) => void): Record<string, unknown> {
  allowRustWrites();
  wallClock ??= plainWallClock();
  // This thread's redactor learns the secrets its guests were given (each thread has its own).
  for (const secret of g.secrets ?? []) holdSecret(secret);
  const out = logStream(g.logFile, g.logLimitBytes ?? 10 * 1048576);
  const shim = new WASIShim({
    sandbox: {
      preopens: g.preopen ? { '/': g.preopen } : {},
      env: g.env,
      args: [component],
    },
    // Raw sockets: never. (Not `sandbox.enableNetwork: false`: that also swaps in an HTTP handler
    // that throws a bare string, which poisons the instance; HTTP goes through the allowlist.)
    sockets: NO_SOCKETS,
    cli: { ...cli, stdout: { getStdout: () => out }, stderr: { getStderr: () => out } },
    http: guardedHttp(g.networkAllow, onDenied),
    clocks: { ...clocks, wallClock },
  } as ConstructorParameters<typeof WASIShim>[0]);
  return { ...shim.getImportObject() };
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
  const write = (given: Uint8Array): void => {
    if (!file || written >= limit) return;
    const buf = redactedBytes(given);
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
 * A guest's log write with the secrets this thread holds redacted. A write is one guest print (a
 * secret split across two writes is not seen); unchanged output stays the very bytes written.
 */
function redactedBytes(buf: Uint8Array): Uint8Array {
  if (!holdsSecrets()) return buf;
  const text = Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength).toString('utf8');
  const safe = redact(text);
  return safe === text ? buf : Buffer.from(safe);
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
function guardedHttp(allow: string[], onDenied?: (d: NetworkDenial) => void): typeof http {
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
          onDenied?.({ scheme, host, port: portNum });
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
    const flags = descFlags?.mutateDirectory ? { ...descFlags, mutateDirectory: false } : descFlags;
    return openAt.call(this, pathFlags, path, openFlags, flags);
  };
  (patched as { __murmur?: boolean }).__murmur = true;
  Descriptor.prototype.openAt = patched;
}
