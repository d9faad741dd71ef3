/**
 * Runs in a worker thread (booted by runtime/worker-boot.mjs): drives the in-thread WASI I/O
 * backend with the shim's own call numbers, as the shim's stream and HTTP classes call it, and
 * posts what it saw. Outgoing HTTP goes through a real NetClient to the test's main thread, where
 * runtime/host/wasi-io/net-relay.ts performs it against a real server.
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parentPort, workerData } from 'node:worker_threads';
import { IoBackend } from '../../runtime/host/wasi-io/backend.ts';
import { NetClient } from '../../runtime/host/wasi-io/net-client.ts';

const shim = join(dirname(createRequire(import.meta.url).resolve('@bytecodealliance/preview2-shim')), '../..');
const c = (await import(pathToFileURL(join(shim, 'dist/io/calls.js')).href)) as Record<string, number>;
const net = new NetClient(workerData.netPort, new Int32Array(workerData.netFlag));
const io = new IoBackend(c, { net: () => net });
const call = (n: number, id: number | null = null, payload?: unknown): unknown => io.call(n, id, payload);
const enc = new TextEncoder();
/** Resources opened during the current scenario and still open (earlier scenarios' leftovers aside). */
let atStart = io.counts();
const opened = (): Record<string, number> => {
  const now = io.counts();
  return { streams: now.streams - atStart.streams, polls: now.polls - atStart.polls, futures: now.futures - atStart.futures };
};

function request(method: string, url: string, body?: Uint8Array[], contentLength?: bigint, headers: [string, string][] = []): number {
  const u = new URL(url);
  const out = call(c.OUTPUT_STREAM_CREATE! | c.HTTP!, null, contentLength) as number;
  const future = call(c.HTTP_CREATE_REQUEST!, null, {
    method,
    scheme: u.protocol,
    authority: u.host,
    pathWithQuery: u.pathname + u.search,
    headers,
    body: out,
  }) as number;
  for (const b of body ?? []) call(c.OUTPUT_STREAM_WRITE! | c.HTTP!, out, b);
  call(c.HTTP_OUTPUT_STREAM_FINISH!, out);
  call(c.HTTP_OUTGOING_BODY_DISPOSE!, out);
  return future;
}

function response(future: number): { tag: string; val: { tag: string; val: { status: number; headers: [string, string][]; bodyStreamId: number } | unknown } } {
  const poll = call(c.FUTURE_SUBSCRIBE! | c.HTTP!, future) as number;
  call(c.POLL_POLLABLE_BLOCK!, poll);
  call(c.POLL_POLLABLE_DISPOSE!, poll);
  return call(c.FUTURE_TAKE_VALUE! | c.HTTP!, future) as never;
}

function readAll(stream: number): { bytes: number; text: string; reads: number } {
  const parts: Uint8Array[] = [];
  let reads = 0;
  for (;;) {
    try {
      parts.push(call(c.INPUT_STREAM_BLOCKING_READ! | c.HTTP!, stream, 65536n) as Uint8Array);
      reads++;
    } catch (e) {
      if ((e as { tag?: string }).tag === 'closed') break;
      throw e;
    }
  }
  const all = Buffer.concat(parts);
  return { bytes: all.byteLength, text: all.toString('latin1'), reads };
}

const scenarios: Record<string, (a: Record<string, unknown>) => unknown> = {
  get(a) {
    const f = request('GET', a.url as string);
    const r = response(f);
    const head = r.val.val as { status: number; headers: [string, string][]; bodyStreamId: number };
    const body = readAll(head.bodyStreamId);
    call(c.INPUT_STREAM_DISPOSE! | c.HTTP!, head.bodyStreamId);
    call(c.FUTURE_DISPOSE! | c.HTTP!, f);
    return { tag: r.val.tag, status: head.status, headers: head.headers, ...body, left: opened() };
  },
  post(a) {
    const parts = (a.parts as string[]).map((p) => enc.encode(p));
    const f = request('POST', a.url as string, parts, a.contentLength as bigint | undefined, [['content-type', 'text/plain']]);
    const r = response(f);
    const head = r.val.val as { status: number; bodyStreamId: number };
    return { status: head.status, echoed: readAll(head.bodyStreamId).text };
  },
  tooLong(a) {
    const out = call(c.OUTPUT_STREAM_CREATE! | c.HTTP!, null, 3n) as number;
    call(c.HTTP_CREATE_REQUEST!, null, {
      method: 'POST',
      scheme: 'http:',
      authority: new URL(a.url as string).host,
      pathWithQuery: '/',
      headers: [],
      body: out,
    });
    try {
      call(c.OUTPUT_STREAM_WRITE! | c.HTTP!, out, enc.encode('four'));
      return { thrown: null };
    } catch (e) {
      return { thrown: e };
    }
  },
  shortOnFinish(a) {
    const out = call(c.OUTPUT_STREAM_CREATE! | c.HTTP!, null, 10n) as number;
    call(c.HTTP_CREATE_REQUEST!, null, {
      method: 'POST',
      scheme: 'http:',
      authority: new URL(a.url as string).host,
      pathWithQuery: '/',
      headers: [],
      body: out,
    });
    call(c.OUTPUT_STREAM_WRITE! | c.HTTP!, out, enc.encode('abc'));
    try {
      call(c.HTTP_OUTPUT_STREAM_FINISH!, out);
      return { thrown: null };
    } catch (e) {
      return { thrown: e };
    }
  },
  /** Reads the head, waits until the whole response has reached this thread, then reads the body. */
  getWhole(a) {
    const f = request('GET', a.url as string);
    const head = response(f).val.val as { status: number; bodyStreamId: number };
    // The exchange leaves the client once its end has arrived: every chunk is here by then.
    while (net.inFlight) net.waitOnce(() => !net.inFlight, Infinity);
    const body = readAll(head.bodyStreamId);
    call(c.INPUT_STREAM_DISPOSE! | c.HTTP!, head.bodyStreamId);
    call(c.FUTURE_DISPOSE! | c.HTTP!, f);
    return { status: head.status, ...body };
  },
  refused(a) {
    const r = response(request('GET', a.url as string));
    return { outer: r.tag, inner: r.val.tag, code: r.val.val };
  },
  /** Reads the head, then drops the response future and body before the body ends. */
  dropEarly(a) {
    const f = request('GET', a.url as string);
    const head = response(f).val.val as { status: number; bodyStreamId: number };
    call(c.INPUT_STREAM_DISPOSE! | c.HTTP!, head.bodyStreamId);
    call(c.FUTURE_DISPOSE! | c.HTTP!, f);
    return { status: head.status, left: opened() };
  },
  /** Reads the body until it holds `marker`, then drops it, as a driver does at a stream's last event. */
  dropAtMarker(a) {
    const f = request('GET', a.url as string);
    const head = response(f).val.val as { status: number; bodyStreamId: number };
    let text = '';
    while (!text.includes(a.marker as string))
      text += Buffer.from(call(c.INPUT_STREAM_BLOCKING_READ! | c.HTTP!, head.bodyStreamId, 65536n) as Uint8Array).toString();
    call(c.INPUT_STREAM_DISPOSE! | c.HTTP!, head.bodyStreamId);
    call(c.FUTURE_DISPOSE! | c.HTTP!, f);
    return { status: head.status, text, left: opened() };
  },
  /** Sends `n` requests at once, then reads each response to its end. */
  parallel(a) {
    const futures = Array.from({ length: a.n as number }, () => request('GET', a.url as string));
    return futures.map((f) => {
      const head = response(f).val.val as { status: number; bodyStreamId: number };
      const body = readAll(head.bodyStreamId).text;
      call(c.INPUT_STREAM_DISPOSE! | c.HTTP!, head.bodyStreamId);
      call(c.FUTURE_DISPOSE! | c.HTTP!, f);
      return `${head.status} ${body}`;
    });
  },
  /** Sends a request and blocks on it forever (the test terminates this worker). */
  hang(a) {
    response(request('GET', a.url as string));
    return {};
  },
  /** A request whose body is never finished, polled with ready() only (no blocking call). */
  pollReady(a) {
    const u = new URL(a.url as string);
    const out = call(c.OUTPUT_STREAM_CREATE! | c.HTTP!, null, undefined) as number;
    const f = call(c.HTTP_CREATE_REQUEST!, null, {
      method: 'GET',
      scheme: u.protocol,
      authority: u.host,
      pathWithQuery: u.pathname,
      headers: [],
      body: out,
    }) as number;
    const p = call(c.FUTURE_SUBSCRIBE! | c.HTTP!, f) as number;
    while (!(call(c.POLL_POLLABLE_READY!, p) as boolean)) {
      // Yield the thread briefly between polls, as a guest doing other work would.
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1);
    }
    const r = call(c.FUTURE_TAKE_VALUE! | c.HTTP!, f) as { val: { val: { status: number } } };
    return { status: r.val.val.status };
  },
  /** Drops the response future while its request still waits for its body, then finishes the body. */
  dropBeforeSend(a) {
    const u = new URL(a.url as string);
    const out = call(c.OUTPUT_STREAM_CREATE! | c.HTTP!, null, undefined) as number;
    const f = call(c.HTTP_CREATE_REQUEST!, null, {
      method: 'POST',
      scheme: u.protocol,
      authority: u.host,
      pathWithQuery: '/never',
      headers: [],
      body: out,
    }) as number;
    call(c.OUTPUT_STREAM_WRITE! | c.HTTP!, out, enc.encode('late'));
    call(c.FUTURE_DISPOSE! | c.HTTP!, f);
    call(c.HTTP_OUTPUT_STREAM_FINISH!, out);
    call(c.HTTP_OUTGOING_BODY_DISPOSE!, out);
    // Then a request that is sent: the server sees it, and it alone.
    const g = request('GET', `${u.origin}/after`);
    const head = response(g).val.val as { status: number };
    return { status: head.status };
  },
  clock() {
    const p = call(c.CLOCKS_DURATION_SUBSCRIBE!, null, 30_000_000n) as number;
    const before = call(c.POLL_POLLABLE_READY!, p);
    const t0 = process.hrtime.bigint();
    call(c.POLL_POLLABLE_BLOCK!, p);
    const waitedNs = process.hrtime.bigint() - t0;
    const after = call(c.POLL_POLLABLE_READY!, p);
    call(c.POLL_POLLABLE_DISPOSE!, p);
    return { before, after, reachedDeadline: waitedNs >= 30_000_000n - 1_000_000n };
  },
  /** A poll list of a far timer and a ready stream answers with the stream's index only. */
  pollList() {
    const far = call(c.CLOCKS_DURATION_SUBSCRIBE!, null, 3_600_000_000_000n) as number;
    const out = call(c.OUTPUT_STREAM_SUBSCRIBE! | c.STDOUT!, 1) as number;
    return [...(call(c.POLL_POLL_LIST!, null, [far, out]) as Uint32Array)];
  },
  files(a) {
    const { id } = call(c.FILESYSTEM_DESCRIPTOR_OPEN!, null, { path: a.path, flags: a.flags as number }) as { id: number };
    const w = call(c.OUTPUT_STREAM_CREATE! | c.FILE!, null, { descriptorId: id, offset: 0n }) as number;
    call(c.OUTPUT_STREAM_BLOCKING_WRITE_AND_FLUSH! | c.FILE!, w, enc.encode('hello '));
    call(c.OUTPUT_STREAM_WRITE! | c.FILE!, w, enc.encode('files'));
    call(c.OUTPUT_STREAM_DISPOSE! | c.FILE!, w);
    const stat = call(c.FILESYSTEM_DESCRIPTOR_STAT!, id) as { type: string; size: bigint };
    const r = call(c.INPUT_STREAM_CREATE! | c.FILE!, null, { descriptorId: id, offset: 6n }) as number;
    const first = Buffer.from(call(c.INPUT_STREAM_BLOCKING_READ! | c.FILE!, r, 100n) as Uint8Array).toString();
    let closed = false;
    try {
      call(c.INPUT_STREAM_READ! | c.FILE!, r, 100n);
    } catch (e) {
      closed = (e as { tag?: string }).tag === 'closed';
    }
    call(c.INPUT_STREAM_DISPOSE! | c.FILE!, r);
    const pread = Buffer.from((call(c.FILESYSTEM_DESCRIPTOR_READ!, id, { length: 5n, offset: 0n }) as { bytes: Uint8Array }).bytes).toString();
    call(c.FILESYSTEM_DESCRIPTOR_CLOSE!, id);
    let afterClose = '';
    try {
      call(c.FILESYSTEM_DESCRIPTOR_STAT!, id);
    } catch (e) {
      afterClose = (e as { code?: string }).code ?? String(e);
    }
    return { type: stat.type, size: Number(stat.size), first, closed, pread, afterClose, left: opened() };
  },
  stdin() {
    const s = call(c.INPUT_STREAM_CREATE! | c.STDIN!) as number;
    try {
      call(c.INPUT_STREAM_BLOCKING_READ! | c.STDIN!, s, 10n);
      return { closed: false };
    } catch (e) {
      return { closed: (e as { tag?: string }).tag === 'closed' };
    }
  },
  socket() {
    try {
      call(c.SOCKET_TCP_CREATE_HANDLE!, null, {});
      return { error: null };
    } catch (e) {
      return { error: (e as Error).message };
    }
  },
};

parentPort!.on('message', (m: { scenario: string; args: Record<string, unknown> }) => {
  atStart = io.counts();
  try {
    parentPort!.postMessage({ result: scenarios[m.scenario]!(m.args) });
  } catch (e) {
    parentPort!.postMessage({ error: String((e as Error)?.message ?? JSON.stringify(e)) });
  }
});
parentPort!.postMessage({ ready: true });
