/** A real HTTP server that records what the replay driver posts to <endpoint>/record. */
import { createServer } from 'node:http';

export interface Recorder {
  url: string;
  bodies: Record<string, unknown>[];
  close(): Promise<void>;
}

export async function startRecorder(): Promise<Recorder> {
  const bodies: Record<string, unknown>[] = [];
  const srv = createServer((req, res) => {
    let data = '';
    req.on('data', (c: Buffer) => (data += c.toString()));
    req.on('end', () => {
      try {
        bodies.push(JSON.parse(data) as Record<string, unknown>);
      } catch {
        bodies.push({ unparsed: data });
      }
      res.end('{}');
    });
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as { port: number }).port;
  return { url: `http://127.0.0.1:${port}`, bodies, close: () => new Promise<void>((r) => srv.close(() => r())) };
}
