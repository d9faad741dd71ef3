/**
 * Everything `mur` prints — its own lines, the warnings of the libraries it loads, a stack Node
 * prints through process.stderr — passes through the redaction of runtime/secrets.ts: the one sink
 * for the process's logs. Patched on the two streams once, at start (runtime/cli/main.ts), so no
 * module has to remember to redact what it prints.
 */
import { holdsSecrets, redact } from '../secrets.ts';

type Write = typeof process.stdout.write;

export function redactProcessOutput(streams: NodeJS.WriteStream[] = [process.stdout, process.stderr]): void {
  for (const stream of streams) {
    const write = stream.write.bind(stream) as (chunk: unknown, ...rest: unknown[]) => boolean;
    stream.write = ((chunk: unknown, ...rest: unknown[]) => {
      if (!holdsSecrets()) return write(chunk, ...rest);
      if (typeof chunk === 'string') return write(redact(chunk), ...rest);
      if (chunk instanceof Uint8Array) {
        // Bytes are decoded only to look: unchanged output goes out as the very bytes given.
        const text = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength).toString('utf8');
        const safe = redact(text);
        return write(safe === text ? chunk : Buffer.from(safe), ...rest);
      }
      return write(chunk, ...rest);
    }) as Write;
  }
}
