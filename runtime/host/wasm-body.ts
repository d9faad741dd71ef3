/**
 * The instruction decoder grow-probe.ts walks function bodies with: enough of the binary format to
 * step over every instruction's immediates and find each `memory.grow`. An opcode it does not know
 * throws Unknown, and the module is then left uninstrumented.
 */
/** A cursor over a module's bytes: LEB128 reads, a byte at a time. */
export class Reader {
  constructor(
    readonly b: Uint8Array,
    public p: number,
  ) {}
  byte(): number {
    if (this.p >= this.b.length) throw new Unknown('truncated');
    return this.b[this.p++]!;
  }
  u32(): number {
    let r = 0;
    let s = 0;
    for (;;) {
      const x = this.byte();
      r |= (x & 0x7f) << s;
      if (!(x & 0x80)) break;
      s += 7;
    }
    return r >>> 0;
  }
  /** Skips a signed or unsigned LEB of any width. */
  leb(): void {
    while (this.byte() & 0x80);
  }
  skip(n: number): void {
    this.p += n;
  }
}

/** An instruction or construct the decoder does not know: the module is left uninstrumented. */
export class Unknown extends Error {}

function heapType(r: Reader): void {
  r.leb(); // s33: abstract heap type byte or a type index
}

export function valType(r: Reader): void {
  const t = r.byte();
  if (t === 0x63 || t === 0x64) heapType(r); // (ref null? ht)
}

function blockType(r: Reader): void {
  const t = r.b[r.p]!;
  if (t === 0x40 || (t >= 0x69 && t <= 0x7f && t !== 0x63 && t !== 0x64)) r.skip(1);
  else if (t === 0x63 || t === 0x64) valType(r);
  else r.leb(); // s33 type index
}

function memarg(r: Reader): void {
  const align = r.u32();
  if (align & 0x40) r.u32(); // memory index (multi-memory)
  r.leb(); // offset
}

/** Skips the immediates of the 0xfb (GC) sub-opcode. */
function gcImmediates(r: Reader, op: number): void {
  switch (op) {
    case 0:
    case 1:
    case 6:
    case 7:
    case 12:
    case 13:
    case 14:
    case 16: // typeidx
      r.u32();
      return;
    case 2:
    case 3:
    case 4:
    case 5: // struct.get*/set: typeidx fieldidx
      r.u32();
      r.u32();
      return;
    case 8:
    case 9:
    case 10:
    case 17:
    case 18:
    case 19: // array.new_fixed / new_data / new_elem / copy / init_*
      r.u32();
      r.u32();
      return;
    case 11:
    case 15: // array.get (typeidx); array.len (none)
      if (op === 11) r.u32();
      return;
    case 20:
    case 21:
    case 22:
    case 23: // ref.test / ref.cast (null): heaptype
      heapType(r);
      return;
    case 24:
    case 25: // br_on_cast(_fail): flags label ht ht
      r.byte();
      r.u32();
      heapType(r);
      heapType(r);
      return;
    case 26:
    case 27:
    case 28:
    case 29:
    case 30: // any/extern convert, ref.i31, i31.get_s/u
      return;
    default:
      throw new Unknown(`0xfb ${op}`);
  }
}

/** Control, parametric and numeric opcodes that take no immediates. */
function noImmediates(op: number): boolean {
  return (
    op <= 0x01 ||
    op === 0x05 ||
    op === 0x0b ||
    op === 0x0f ||
    op === 0x0a ||
    op === 0x19 ||
    op === 0x1a ||
    op === 0x1b ||
    op === 0xd1 ||
    op === 0xd3 ||
    op === 0xd4 ||
    (op >= 0x45 && op <= 0xc4)
  );
}

/** Walks one function body's instructions, calling `onGrow(memIdx, start, end)` per memory.grow. */
export function walkBody(b: Uint8Array, start: number, end: number, onGrow: (mem: number, at: number, after: number) => void): void {
  const r = new Reader(b, start);
  const groups = r.u32();
  for (let i = 0; i < groups; i++) {
    r.u32();
    valType(r);
  }
  while (r.p < end) {
    const at = r.p;
    const op = r.byte();
    if (noImmediates(op)) continue;
    switch (op) {
      case 0x02:
      case 0x03:
      case 0x04:
      case 0x06:
        blockType(r);
        continue;
      case 0x07:
      case 0x08:
      case 0x09:
      case 0x18:
      case 0x0c:
      case 0x0d:
      case 0xd5:
      case 0xd6:
        r.u32();
        continue;
      case 0x0e: {
        const n = r.u32();
        for (let i = 0; i <= n; i++) r.u32();
        continue;
      }
      case 0x10:
      case 0x12:
      case 0x14:
      case 0x15:
      case 0xd2:
        r.u32();
        continue;
      case 0x11:
      case 0x13:
        r.u32();
        r.u32();
        continue;
      case 0x1c: {
        const n = r.u32();
        for (let i = 0; i < n; i++) valType(r);
        continue;
      }
      case 0x1f: {
        // try_table
        blockType(r);
        const n = r.u32();
        for (let i = 0; i < n; i++) {
          const kind = r.byte();
          if (kind === 0 || kind === 1) r.u32();
          r.u32();
        }
        continue;
      }
      case 0x20:
      case 0x21:
      case 0x22:
      case 0x23:
      case 0x24:
      case 0x25:
      case 0x26:
        r.u32();
        continue;
      case 0x3f:
        r.u32();
        continue;
      case 0x40: {
        const mem = r.u32();
        onGrow(mem, at, r.p);
        continue;
      }
      case 0x41:
      case 0x42:
        r.leb();
        continue;
      case 0x43:
        r.skip(4);
        continue;
      case 0x44:
        r.skip(8);
        continue;
      case 0xd0:
        heapType(r);
        continue;
      case 0xfb:
        gcImmediates(r, r.u32());
        continue;
      case 0xfc:
        fcImmediates(r, r.u32());
        continue;
      case 0xfd:
        fdImmediates(r, r.u32());
        continue;
      case 0xfe:
        feImmediates(r, r.u32());
        continue;
      default:
        if (op >= 0x28 && op <= 0x3e) {
          memarg(r);
          continue;
        }
        throw new Unknown(`opcode 0x${op.toString(16)}`);
    }
  }
}

/** Skips the immediates of a 0xfc (saturating truncation, bulk memory, table) sub-opcode. */
function fcImmediates(r: Reader, sub: number): void {
  if (sub <= 7) return;
  if (sub === 8 || sub === 10 || sub === 12 || sub === 14) {
    r.u32();
    r.u32();
    return;
  }
  if (sub === 9 || sub === 11 || sub === 13 || sub === 15 || sub === 16 || sub === 17) {
    r.u32();
    return;
  }
  throw new Unknown(`0xfc ${sub}`);
}

/** Skips the immediates of a 0xfd (SIMD) sub-opcode. */
function fdImmediates(r: Reader, sub: number): void {
  if (sub <= 11 || sub === 92 || sub === 93) {
    memarg(r);
    return;
  }
  if (sub === 12 || sub === 13) {
    r.skip(16);
    return;
  }
  if (sub >= 21 && sub <= 34) {
    r.skip(1);
    return;
  }
  if (sub >= 84 && sub <= 91) {
    memarg(r);
    r.skip(1);
    return;
  }
  if (sub <= 0x113) return; // the rest of SIMD (and relaxed SIMD) takes no immediates
  throw new Unknown(`0xfd ${sub}`);
}

/** Skips the immediates of a 0xfe (threads) sub-opcode. */
function feImmediates(r: Reader, sub: number): void {
  if (sub === 3) {
    r.skip(1);
    return;
  }
  if (sub <= 2 || (sub >= 0x10 && sub <= 0x4e)) {
    memarg(r);
    return;
  }
  throw new Unknown(`0xfe ${sub}`);
}
