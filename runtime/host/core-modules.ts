/**
 * A component's core modules as they run: memory-capped, their `memory.grow` instrumented, compiled.
 * Shared by the worker-thread instances (instance.ts) and the ones run on the calling thread
 * (inline.ts), so both load the same prepared bytes from the cache folder.
 */
import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { capMemory } from './memory-cap.ts';
import { GROW_PROBE_VERSION, instrumentGrow } from './grow-probe.ts';
import { ComponentLoadError } from './errors.ts';
import type { LoadedComponent } from './transpile-cache.ts';

/**
 * A core module capped at `cap` bytes with its memory.grow instrumented (a failed grow becomes
 * visible to the host: the evidence of a memory-limit kill). Instrumenting a 12 MB JS-engine module
 * takes ~0.7 s on the main thread, so the result is kept beside the transpiled glue (same folder,
 * same trust: the folder is the runtime's own cache keyed by the component's verified hash) and
 * every later process reads it back. A read-only cache folder (an image) just skips the write.
 */
export function preparedModule(c: LoadedComponent, f: string, cap: number): Uint8Array {
  const cached = join(c.dir, `${f}.cap${cap}.grow${GROW_PROBE_VERSION}.wasm`);
  try {
    return readFileSync(cached);
  } catch {
    /* not prepared yet */
  }
  const capped = capMemory(readFileSync(join(c.dir, f)), cap);
  const prepared = instrumentGrow(capped) ?? capped;
  const tmp = `${cached}.${process.pid}.tmp`;
  try {
    writeFileSync(tmp, prepared);
    renameSync(tmp, cached);
  } catch {
    rmSync(tmp, { force: true }); // read-only cache: prepare again next time
  }
  return prepared;
}

function compileError(c: LoadedComponent, f: string, cap: number, e: unknown): ComponentLoadError {
  return new ComponentLoadError(c.name, `core module ${f} does not compile under a ${cap} byte memory cap: ${(e as Error).message}`);
}

/** Compiled, memory-capped core modules per (component, cap): compile once, instantiate many. */
const moduleCache = new Map<string, Promise<Record<string, WebAssembly.Module>>>();

export function compiledModules(c: LoadedComponent, cap: number): Promise<Record<string, WebAssembly.Module>> {
  const key = `${c.sha256}:${cap}`;
  let p = moduleCache.get(key);
  if (!p) {
    p = (async () => {
      const out: Record<string, WebAssembly.Module> = {};
      for (const f of c.coreFiles) {
        try {
          out[f] = await WebAssembly.compile(preparedModule(c, f, cap) as Uint8Array<ArrayBuffer>);
        } catch (e) {
          throw compileError(c, f, cap, e);
        }
      }
      return out;
    })();
    moduleCache.set(key, p);
    p.catch(() => moduleCache.delete(key));
  }
  return p;
}

/**
 * The same, compiled on the calling thread before this returns: for an instance started inside a
 * synchronous host import (a tool a capsule run on the main thread invokes: inline.ts).
 */
export function compiledModulesSync(c: LoadedComponent, cap: number): Record<string, WebAssembly.Module> {
  const out: Record<string, WebAssembly.Module> = {};
  for (const f of c.coreFiles) {
    try {
      out[f] = new WebAssembly.Module(preparedModule(c, f, cap) as Uint8Array<ArrayBuffer>);
    } catch (e) {
      throw compileError(c, f, cap, e);
    }
  }
  return out;
}
