/**
 * The transpiler process's job framing (transpile-child.ts reads it, transpile-child-run.ts writes
 * it): a JSON header line `{"dir", "name", "bytes"}`, then that many bytes of component. One
 * module for both ends, so the format has one definition.
 */
import { HostFault } from './errors.ts';

export interface TranspileJob {
  dir: string;
  name: string;
  bytes: Uint8Array;
}

/** One job as bytes for the child's stdin. */
export function frameJob(job: TranspileJob): Buffer[] {
  const header = `${JSON.stringify({ dir: job.dir, name: job.name, bytes: job.bytes.byteLength })}\n`;
  return [Buffer.from(header), Buffer.from(job.bytes.buffer, job.bytes.byteOffset, job.bytes.byteLength)];
}

/** Reassembles jobs from stdin's chunks, whatever their boundaries. */
export class JobReader {
  private buf: Buffer = Buffer.alloc(0);
  private header: { dir: string; name: string; bytes: number; lineBytes: number } | undefined;

  push(chunk: Buffer): void {
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
  }

  /** The next complete job, or undefined until more bytes arrive. Throws on a malformed header. */
  next(): TranspileJob | undefined {
    if (!this.header) {
      const nl = this.buf.indexOf(10);
      if (nl < 0) return undefined;
      const line = this.buf.subarray(0, nl).toString('utf8');
      const h = JSON.parse(line) as { dir?: unknown; name?: unknown; bytes?: unknown };
      if (typeof h.dir !== 'string' || typeof h.name !== 'string' || !Number.isSafeInteger(h.bytes) || (h.bytes as number) < 0) {
        throw new Error(`transpile job header must be {"dir": string, "name": string, "bytes": integer}, got ${line.slice(0, 200)}`);
      }
      this.header = { dir: h.dir, name: h.name, bytes: h.bytes as number, lineBytes: nl + 1 };
      this.buf = this.buf.subarray(nl + 1);
    }
    if (this.buf.length < this.header.bytes) return undefined;
    const bytes = new Uint8Array(this.buf.subarray(0, this.header.bytes));
    this.buf = this.buf.subarray(this.header.bytes);
    const job = { dir: this.header.dir, name: this.header.name, bytes };
    this.header = undefined;
    return job;
  }

  /** Bytes received and not yet part of a complete job (a header already read included). */
  pending(): number {
    return this.buf.length + (this.header?.lineBytes ?? 0);
  }
}

/**
 * A refused job's answer, for whichever end reports it (the transpiler process, the transpile
 * worker): the parent rebuilds the error around the component's name, so the part after it.
 */
export function refusalOf(e: unknown): { error: string; hint?: string } {
  const error = e instanceof HostFault ? e.message.slice(e.component.length + 2) : String((e as Error)?.message ?? e);
  const hint = (e as { hint?: string }).hint;
  return hint === undefined ? { error } : { error, hint };
}
