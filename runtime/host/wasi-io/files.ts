/**
 * File descriptors behind wasi:filesystem, served in the component's own thread with synchronous
 * fs calls. preview2-shim sends these calls to an I/O worker thread of its own that answers them
 * with asynchronous fs calls; one round trip to that thread cost 0.3–1.1 ms under load (measured in
 * `mur serve`), more than the file operation itself, and the thread costs ≈ 8 MiB per component.
 *
 * The results have the shapes the shim's filesystem module expects (types are its `descriptor-type`
 * names; stat times in ns); a failing fs call throws Node's error, whose `code` the shim maps to
 * wasi:filesystem's error codes.
 */
import fs from 'node:fs';

type Stats = fs.BigIntStats;

function typeOf(s: Stats): string {
  if (s.isFile()) return 'regular-file';
  if (s.isDirectory()) return 'directory';
  if (s.isSymbolicLink()) return 'symbolic-link';
  if (s.isSocket()) return 'socket';
  if (s.isFIFO()) return 'fifo';
  if (s.isCharacterDevice()) return 'character-device';
  if (s.isBlockDevice()) return 'block-device';
  return 'unknown';
}

export class Files {
  readonly #open = new Map<number, { fd: number; refs: number }>();
  #next = 0;

  #get(id: number): { fd: number; refs: number } {
    const r = this.#open.get(id);
    if (r) return r;
    throw Object.assign(new Error(`no open file descriptor resource ${id}`), { code: 'EBADF' });
  }

  fd(id: number): number {
    return this.#get(id).fd;
  }

  open(path: string, flags: number): { id: number; type: string } {
    const fd = fs.openSync(path, flags);
    let type: string;
    try {
      type = typeOf(fs.fstatSync(fd, { bigint: true }));
    } catch (e) {
      fs.closeSync(fd);
      throw e;
    }
    const id = ++this.#next;
    this.#open.set(id, { fd, refs: 1 });
    return { id, type };
  }

  /** Another holder of the descriptor (a stream over it): closed when the last one lets go. */
  retain(id: number): number {
    this.#get(id).refs++;
    return id;
  }

  release(id: number): void {
    const r = this.#get(id);
    if (--r.refs > 0) return;
    this.#open.delete(id);
    fs.closeSync(r.fd);
  }

  type(id: number): string {
    return typeOf(fs.fstatSync(this.fd(id), { bigint: true }));
  }

  stat(id: number): { type: string; nlink: bigint; size: bigint; atimeNs: bigint; mtimeNs: bigint; ctimeNs: bigint } {
    const s = fs.fstatSync(this.fd(id), { bigint: true });
    return { type: typeOf(s), nlink: s.nlink, size: s.size, atimeNs: s.atimeNs, mtimeNs: s.mtimeNs, ctimeNs: s.ctimeNs };
  }

  metadataHash(id: number): { upper: bigint; lower: bigint } {
    const s = fs.fstatSync(this.fd(id), { bigint: true });
    return { upper: s.mtimeNs, lower: s.ino };
  }

  read(id: number, length: bigint | number, offset: bigint | number): { bytes: Uint8Array; eof: boolean } {
    const buf = new Uint8Array(Number(length));
    const n = fs.readSync(this.fd(id), buf, 0, buf.length, Number(offset));
    return { bytes: buf.subarray(0, n), eof: n === 0 };
  }

  write(id: number, buffer: Uint8Array, offset: bigint | number): number {
    return fs.writeSync(this.fd(id), buffer, 0, buffer.byteLength, Number(offset));
  }

  setSize(id: number, size: number): void {
    fs.ftruncateSync(this.fd(id), size);
  }

  setTimes(id: number, atime: unknown, mtime: unknown): void {
    fs.futimesSync(this.fd(id), atime as fs.TimeLike, mtime as fs.TimeLike);
  }

  sync(id: number): void {
    fs.fsyncSync(this.fd(id));
  }

  syncData(id: number): void {
    fs.fdatasyncSync(this.fd(id));
  }
}
