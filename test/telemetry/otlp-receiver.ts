/**
 * An in-process OTLP/HTTP trace receiver for tests: a real HTTP server on 127.0.0.1 accepting
 * `POST /v1/traces`. JSON bodies (http/json) are decoded into flat span records; protobuf bodies
 * (http/protobuf) are recorded raw. It can also play a slow collector (`delayMs`) or a broken one
 * (`status`).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startNs: bigint;
  endNs: bigint;
  attributes: Record<string, unknown>;
  events: { name: string; attributes: Record<string, unknown> }[];
  status: { code?: number; message?: string };
  resource: Record<string, unknown>;
  scope: string;
}

export interface ReceivedRequest {
  path: string;
  contentType: string;
  headers: http.IncomingHttpHeaders;
  bytes: number;
}

export interface OtlpReceiver {
  url: string;
  /** `<url>/v1/traces` */
  tracesUrl: string;
  spans: ReceivedSpan[];
  requests: ReceivedRequest[];
  /** Answer every request with this status (default 200). */
  status: number;
  /** Wait this long before answering. */
  delayMs: number;
  /** Requests answered so far (a delayed answer counts once it is sent). */
  answered: number;
  /** Resolves when at least `n` spans (matching `filter`) arrived, or rejects after `ms`. */
  waitFor(n: number, filter?: (s: ReceivedSpan) => boolean, ms?: number): Promise<ReceivedSpan[]>;
  close(): Promise<void>;
}

type AnyValue = { stringValue?: string; intValue?: number | string; doubleValue?: number; boolValue?: boolean; arrayValue?: { values?: AnyValue[] } };

function value(v: AnyValue | undefined): unknown {
  if (!v) return undefined;
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.arrayValue) return (v.arrayValue.values ?? []).map(value);
  return undefined;
}

function attrs(list: { key: string; value: AnyValue }[] | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const a of list ?? []) out[a.key] = value(a.value);
  return out;
}

function decodeJson(body: string): ReceivedSpan[] {
  const req = JSON.parse(body) as { resourceSpans?: any[] };
  const out: ReceivedSpan[] = [];
  for (const rs of req.resourceSpans ?? []) {
    const resource = attrs(rs.resource?.attributes);
    for (const ss of rs.scopeSpans ?? []) {
      for (const s of ss.spans ?? []) {
        out.push({
          traceId: s.traceId,
          spanId: s.spanId,
          ...(s.parentSpanId ? { parentSpanId: s.parentSpanId } : {}),
          name: s.name,
          kind: s.kind,
          startNs: BigInt(s.startTimeUnixNano),
          endNs: BigInt(s.endTimeUnixNano),
          attributes: attrs(s.attributes),
          events: (s.events ?? []).map((e: any) => ({ name: e.name, attributes: attrs(e.attributes) })),
          status: s.status ?? {},
          resource,
          scope: ss.scope?.name ?? '',
        });
      }
    }
  }
  return out;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const requests: ReceivedRequest[] = [];
  const waiters = new Set<() => void>();
  const r: Partial<OtlpReceiver> & { status: number; delayMs: number; answered: number } = { status: 200, delayMs: 0, answered: 0 };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const contentType = String(req.headers['content-type'] ?? '');
      requests.push({ path: req.url ?? '', contentType, headers: req.headers, bytes: body.length });
      const answer = (): void => {
        r.answered++;
        if (r.status !== 200) {
          res.statusCode = r.status;
          res.end('{}');
          return;
        }
        if (req.url === '/v1/traces' && contentType.includes('json')) {
          try {
            spans.push(...decodeJson(body.toString('utf8')));
          } catch {
            res.statusCode = 400;
            res.end('{}');
            return;
          }
        }
        res.setHeader('content-type', contentType.includes('json') ? 'application/json' : 'application/x-protobuf');
        res.end(contentType.includes('json') ? '{}' : '');
        for (const w of [...waiters]) w();
      };
      if (r.delayMs > 0) setTimeout(answer, r.delayMs);
      else answer();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return Object.assign(r, {
    url,
    tracesUrl: `${url}/v1/traces`,
    spans,
    requests,
    waitFor(n: number, filter: (s: ReceivedSpan) => boolean = () => true, ms = 10_000): Promise<ReceivedSpan[]> {
      return new Promise<ReceivedSpan[]>((resolve, reject) => {
        const check = (): void => {
          const got = spans.filter(filter);
          if (got.length >= n) {
            waiters.delete(check);
            clearTimeout(t);
            resolve(got);
          }
        };
        const t = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`OTLP receiver: ${spans.filter(filter).length}/${n} spans after ${ms}ms (${spans.map((s) => s.name).join(', ')})`));
        }, ms);
        waiters.add(check);
        check();
      });
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  }) as OtlpReceiver;
}

/** Children of `parent` (by span id), in start order. */
export function childrenOf(spans: ReceivedSpan[], parent: ReceivedSpan): ReceivedSpan[] {
  return spans
    .filter((s) => s.parentSpanId === parent.spanId && s.traceId === parent.traceId)
    .sort((a, b) => (a.startNs < b.startNs ? -1 : a.startNs > b.startNs ? 1 : 0));
}

/** An indented outline of the span tree rooted at `root` (for readable assertions). */
export function outline(spans: ReceivedSpan[], root: ReceivedSpan, depth = 0): string[] {
  return [`${'  '.repeat(depth)}${root.name}`, ...childrenOf(spans, root).flatMap((c) => outline(spans, c, depth + 1))];
}
