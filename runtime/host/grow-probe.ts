/**
 * Makes a failed `memory.grow` visible to the host. A guest that outgrows its memory cap sees
 * `memory.grow` return -1 inside WebAssembly, where JavaScript cannot observe it; its allocator
 * then aborts with a trap that looks like any other crash. So a trap alone (or the memory size at
 * the trap) is no evidence of a memory-limit kill: a guest at 1 MiB of a 16 MiB cap crashing on a
 * filesystem error is not out of memory, and a balloon at 9 MiB asking for 8 MiB more is.
 *
 * The rewrite replaces every `memory.grow <m>` instruction with a call to an appended helper that
 * performs the same grow and, when it fails, records the requested page count in an appended,
 * exported mutable global (`__mur_grow_failed_pages`, 0 = no failure). Appending functions, types
 * and globals at the end keeps every existing index valid, so nothing else in the module changes.
 * The host resets the global before each call and reads it after a trap: a memory-limit kill is
 * reported only when a grow really failed during that call.
 *
 * The instruction decoder covers the MVP plus sign-extension, saturating truncation, bulk memory,
 * reference types, multi-value, SIMD, threads, tail calls, exceptions (legacy and exnref) and the
 * GC/function-reference opcodes' immediates. A module using an opcode it does not know is left
 * uninstrumented (`instrumentGrow` returns undefined) and its traps are then classified without
 * grow evidence.
 */
import { writeU32 } from './memory-cap.ts';
import { Reader, Unknown, valType, walkBody } from './wasm-body.ts';

/** Bumped whenever the rewrite changes: part of the name of the prepared modules cached on disk. */
export const GROW_PROBE_VERSION = 1;
export const GROW_FAILED_EXPORT = '__mur_grow_failed_pages';

interface Section {
  id: number;
  start: number; // body start
  end: number;
  raw: Uint8Array; // whole section incl. header
}

function sections(m: Uint8Array): Section[] {
  const out: Section[] = [];
  const r = new Reader(m, 8);
  while (r.p < m.length) {
    const s = r.p;
    const id = r.byte();
    const size = r.u32();
    out.push({ id, start: r.p, end: r.p + size, raw: m.subarray(s, r.p + size) });
    r.p += size;
  }
  return out;
}

function vecCount(m: Uint8Array, s: Section | undefined): number {
  return s ? new Reader(m, s.start).u32() : 0;
}

function section(id: number, body: number[] | Uint8Array): Uint8Array {
  const b = body instanceof Uint8Array ? body : Uint8Array.from(body);
  const head = [id, ...writeU32(b.length)];
  const out = new Uint8Array(head.length + b.length);
  out.set(head);
  out.set(b, head.length);
  return out;
}

/** Appends `extra` items to a vec section (or creates it). */
function appendVec(m: Uint8Array, s: Section | undefined, id: number, extra: number[][]): Uint8Array {
  const r = new Reader(m, s ? s.start : 0);
  const n = s ? r.u32() : 0;
  const rest = s ? m.subarray(r.p, s.end) : new Uint8Array(0);
  return section(id, concat([Uint8Array.from(writeU32(n + extra.length)), rest, Uint8Array.from(extra.flat())]));
}

/** Number of types; refuses GC rec/sub groups (there the vec counts groups, not types). */
function countFuncTypes(m: Uint8Array, s: Section | undefined): number {
  if (!s) return 0;
  const r = new Reader(m, s.start);
  const n = r.u32();
  for (let i = 0; i < n; i++) {
    if (r.byte() !== 0x60) throw new Unknown('non-function type');
    for (let k = 0; k < 2; k++) {
      const c = r.u32();
      for (let j = 0; j < c; j++) valType(r);
    }
  }
  return n;
}

function countImports(m: Uint8Array, s: Section | undefined): { funcs: number; globals: number } {
  let funcs = 0;
  let globals = 0;
  if (!s) return { funcs, globals };
  const r = new Reader(m, s.start);
  const n = r.u32();
  const name = () => r.skip(r.u32());
  for (let i = 0; i < n; i++) {
    name();
    name();
    const kind = r.byte();
    if (kind === 0) {
      funcs++;
      r.u32();
    } else if (kind === 1) {
      valType(r);
      const f = r.byte();
      r.u32();
      if (f & 1) r.u32();
    } else if (kind === 2) {
      const f = r.byte();
      r.leb();
      if (f & 1) r.leb();
    } else if (kind === 3) {
      globals++;
      valType(r);
      r.byte();
    } else if (kind === 4) {
      r.byte();
      r.u32();
    } else throw new Unknown(`import kind ${kind}`);
  }
  return { funcs, globals };
}

// Section order of the binary format (the tag section, 13, sits between memory and global).
const ORDER = [1, 2, 3, 4, 5, 13, 6, 7, 8, 9, 12, 10, 11];

/**
 * Returns the module with every memory.grow routed through a recording helper, or the module
 * unchanged when it has no memory.grow, or undefined when it uses an instruction the decoder does
 * not know (the caller then runs it uninstrumented).
 */
export function instrumentGrow(m: Uint8Array): Uint8Array | undefined {
  try {
    return rewrite(m);
  } catch (e) {
    if (e instanceof Unknown) return undefined;
    throw e;
  }
}

function rewrite(m: Uint8Array): Uint8Array {
  const secs = sections(m);
  const byId = (id: number) => secs.find((s) => s.id === id);
  const code = byId(10);
  if (!code) return m;
  // Find every memory.grow, per body.
  const r = new Reader(m, code.start);
  const nBodies = r.u32();
  const bodies: Array<{ start: number; end: number; grows: Array<{ mem: number; at: number; after: number }> }> = [];
  for (let i = 0; i < nBodies; i++) {
    const size = r.u32();
    const start = r.p;
    const grows: Array<{ mem: number; at: number; after: number }> = [];
    walkBody(m, start, start + size, (mem, at, after) => grows.push({ mem, at, after }));
    bodies.push({ start, end: start + size, grows });
    r.p = start + size;
  }
  const mems = [...new Set(bodies.flatMap((b) => b.grows.map((g) => g.mem)))].sort((a, b) => a - b);
  if (mems.length === 0) return m;

  const imports = countImports(m, byId(2));
  const typeIdx = countFuncTypes(m, byId(1));
  const firstHelper = imports.funcs + vecCount(m, byId(3));
  const globalIdx = imports.globals + vecCount(m, byId(6));
  const helperOf = new Map(mems.map((mem, i) => [mem, firstHelper + i]));

  // Helper for memory `mem`: (param $pages i32) (result i32) (local $r i32)
  //   local.get 0; memory.grow mem; local.tee 1; i32.const -1; i32.eq
  //   if; local.get 0; global.set G; end; local.get 1
  const helperBody = (mem: number): number[] => {
    // biome-ignore format: bytecode, one instruction a line
    const body = [
      0x01, 0x01, 0x7f, // one local of type i32
      0x20, 0x00, // local.get 0
      0x40, ...writeU32(mem), // memory.grow mem
      0x22, 0x01, // local.tee 1
      0x41, 0x7f, // i32.const -1
      0x46, // i32.eq
      0x04, 0x40, // if (no result)
      0x20, 0x00, // local.get 0
      0x24, ...writeU32(globalIdx), // global.set G
      0x0b, // end
      0x20, 0x01, // local.get 1
      0x0b, // end
    ];
    return [...writeU32(body.length), ...body];
  };

  // Re-encode the bodies with `call helper` in place of each `memory.grow` (as byte pieces: a
  // JS engine's core module is ~12 MB, too big to copy through number arrays).
  const pieces: Uint8Array[] = [];
  let count = 0;
  for (const b of bodies) {
    count++;
    if (b.grows.length === 0) {
      pieces.push(Uint8Array.from(writeU32(b.end - b.start)), m.subarray(b.start, b.end));
      continue;
    }
    const parts: Uint8Array[] = [];
    let p = b.start;
    for (const g of b.grows) {
      parts.push(m.subarray(p, g.at), Uint8Array.from([0x10, ...writeU32(helperOf.get(g.mem)!)]));
      p = g.after;
    }
    parts.push(m.subarray(p, b.end));
    const len = parts.reduce((n, x) => n + x.length, 0);
    pieces.push(Uint8Array.from(writeU32(len)), ...parts);
  }
  for (const mem of mems) {
    count++;
    pieces.push(Uint8Array.from(helperBody(mem)));
  }
  const codeBody = concat([Uint8Array.from(writeU32(count)), ...pieces]);

  const replaced = new Map<number, Uint8Array>();
  replaced.set(1, appendVec(m, byId(1), 1, [[0x60, 0x01, 0x7f, 0x01, 0x7f]]));
  replaced.set(
    3,
    appendVec(
      m,
      byId(3),
      3,
      mems.map(() => writeU32(typeIdx)),
    ),
  );
  replaced.set(6, appendVec(m, byId(6), 6, [[0x7f, 0x01, 0x41, 0x00, 0x0b]]));
  const nameBytes = Array.from(new TextEncoder().encode(GROW_FAILED_EXPORT));
  replaced.set(7, appendVec(m, byId(7), 7, [[...writeU32(nameBytes.length), ...nameBytes, 0x03, ...writeU32(globalIdx)]]));
  replaced.set(10, section(10, codeBody));

  // Reassemble: known sections in binary order (custom sections keep their place relative to the
  // section before them).
  const parts: Uint8Array[] = [m.subarray(0, 8)];
  const emitted = new Set<number>();
  const emitUpTo = (id: number) => {
    for (const o of ORDER) {
      if (o === id) break;
      if (!emitted.has(o) && replaced.has(o) && !byId(o)) {
        parts.push(replaced.get(o)!);
        emitted.add(o);
      }
    }
  };
  for (const s of secs) {
    if (s.id !== 0) emitUpTo(s.id);
    if (s.id !== 0 && replaced.has(s.id)) {
      parts.push(replaced.get(s.id)!);
      emitted.add(s.id);
    } else parts.push(s.raw);
  }
  for (const o of ORDER) if (replaced.has(o) && !emitted.has(o)) throw new Unknown(`section ${o} could not be placed`);
  return concat(parts);
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, x) => n + x.length, 0));
  let o = 0;
  for (const x of parts) {
    out.set(x, o);
    o += x.length;
  }
  return out;
}
