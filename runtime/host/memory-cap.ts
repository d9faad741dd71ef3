/**
 * Caps a core module's linear memory by rewriting the maximum in its memory section before it is
 * compiled. Worker `resourceLimits` do not bound wasm memory (measured: a guest grew to 4 GiB), and
 * `--wasm-max-mem-pages` is process-wide, so the cap lives in the module bytes: a guest that grows
 * past it sees `memory.grow` fail and traps, and nothing else in the process is affected.
 */
const PAGE = 65536;

function readU32(buf: Uint8Array, pos: number): [number, number] {
  let result = 0;
  let shift = 0;
  for (;;) {
    const b = buf[pos++]!;
    result |= (b & 0x7f) << shift;
    if ((b & 0x80) === 0) break;
    shift += 7;
  }
  return [result >>> 0, pos];
}

/** Unsigned LEB128 encoding of `n` (the wasm binary format's u32). */
export function writeU32(n: number): number[] {
  const out: number[] = [];
  do {
    let b = n & 0x7f;
    n >>>= 7;
    if (n !== 0) b |= 0x80;
    out.push(b);
  } while (n !== 0);
  return out;
}

/** Returns new module bytes whose every defined 32-bit memory has `max ≤ capBytes`. */
export function capMemory(module: Uint8Array, capBytes: number): Uint8Array<ArrayBuffer> {
  const capPages = Math.max(1, Math.floor(capBytes / PAGE));
  if (module[0] !== 0 || module[1] !== 0x61 || module[2] !== 0x73 || module[3] !== 0x6d) throw new Error('not a wasm core module');
  const parts: Uint8Array[] = [module.subarray(0, 8)];
  let pos = 8;
  while (pos < module.length) {
    const id = module[pos]!;
    const [size, bodyStart] = readU32(module, pos + 1);
    const bodyEnd = bodyStart + size;
    if (id !== 5) {
      parts.push(module.subarray(pos, bodyEnd));
      pos = bodyEnd;
      continue;
    }
    // Memory section: vec(limits).
    let p = bodyStart;
    const [count, afterCount] = readU32(module, p);
    p = afterCount;
    const body: number[] = writeU32(count);
    for (let i = 0; i < count; i++) {
      const flags = module[p++]!;
      if (flags & 0x04) throw new Error('64-bit memories are not supported by the memory cap');
      const [min, afterMin] = readU32(module, p);
      p = afterMin;
      let max: number | undefined;
      if (flags & 0x01) {
        const [m, afterMax] = readU32(module, p);
        max = m;
        p = afterMax;
      }
      if (min > capPages) throw new Error(`the module needs ${min} pages (${(min * PAGE) / 1048576} MiB) at start, more than the ${capBytes} byte memory cap`);
      const newMax = max === undefined ? capPages : Math.min(max, capPages);
      body.push(flags | 0x01, ...writeU32(min), ...writeU32(newMax));
    }
    parts.push(Uint8Array.from([5, ...writeU32(body.length), ...body]));
    pos = bodyEnd;
  }
  const total = parts.reduce((n, p) => n + p.length, 0);
  const out = new Uint8Array(total);
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}
