// An OTLP/HTTP trace receiver that runs as a pod on the real node (the runtime image's Node 24
// strips the types): POST /v1/traces, http/protobuf (the runtime's default) or http/json, and
// prints one JSON line per span on stdout — {traceId, spanId, parentSpanId, name, service} —
// which the test follows with `kubectl logs -f`.
//
// The protobuf side reads only the five fields the tests need by walking the wire format
// (ExportTraceServiceRequest → ResourceSpans(1) → {Resource(1), ScopeSpans(2) → Span(2)}); no
// protobuf library is in the runtime image and pulling the OTLP .proto schemas into a ConfigMap
// for five fields would be the heavier way.
import http from 'node:http';

type Fields = Map<number, (Buffer | bigint)[]>;

function decode(buf: Buffer): Fields {
  const out: Fields = new Map();
  let i = 0;
  const varint = (): bigint => {
    let r = 0n;
    let shift = 0n;
    for (;;) {
      const b = buf[i++]!;
      r |= BigInt(b & 0x7f) << shift;
      if (!(b & 0x80)) return r;
      shift += 7n;
    }
  };
  while (i < buf.length) {
    const key = Number(varint());
    const field = key >> 3;
    const wire = key & 7;
    let v: Buffer | bigint;
    if (wire === 0) v = varint();
    else if (wire === 1) { v = buf.subarray(i, i + 8); i += 8; }
    else if (wire === 2) { const n = Number(varint()); v = buf.subarray(i, i + n); i += n; }
    else if (wire === 5) { v = buf.subarray(i, i + 4); i += 4; }
    else throw new Error(`unsupported wire type ${wire}`);
    if (!out.has(field)) out.set(field, []);
    out.get(field)!.push(v);
  }
  return out;
}
const bytes = (f: Fields, n: number): Buffer[] => (f.get(n) ?? []).filter((x): x is Buffer => Buffer.isBuffer(x));
const hex = (f: Fields, n: number): string => bytes(f, n)[0]?.toString('hex') ?? '';
const str = (f: Fields, n: number): string => bytes(f, n)[0]?.toString('utf8') ?? '';

function serviceOf(resource: Fields | undefined): string {
  for (const kv of resource ? bytes(resource, 1).map(decode) : []) {
    if (str(kv, 1) === 'service.name') return str(decode(bytes(kv, 2)[0] ?? Buffer.alloc(0)), 1);
  }
  return '';
}

function fromProtobuf(body: Buffer): object[] {
  const spans: object[] = [];
  for (const rs of bytes(decode(body), 1).map(decode)) {
    const res = bytes(rs, 1)[0];
    const service = serviceOf(res ? decode(res) : undefined);
    for (const ss of bytes(rs, 2).map(decode)) {
      for (const s of bytes(ss, 2).map(decode)) {
        spans.push({ traceId: hex(s, 1), spanId: hex(s, 2), parentSpanId: hex(s, 4), name: str(s, 5), service });
      }
    }
  }
  return spans;
}

function fromJson(body: Buffer): object[] {
  const spans: object[] = [];
  const req = JSON.parse(body.toString('utf8'));
  for (const rs of req.resourceSpans ?? []) {
    const service = (rs.resource?.attributes ?? []).find((a: any) => a.key === 'service.name')?.value?.stringValue ?? '';
    for (const ss of rs.scopeSpans ?? []) {
      for (const s of ss.spans ?? []) spans.push({ traceId: s.traceId, spanId: s.spanId, parentSpanId: s.parentSpanId ?? '', name: s.name, service });
    }
  }
  return spans;
}

http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    try {
      const body = Buffer.concat(chunks);
      const spans = String(req.headers['content-type']).includes('json') ? fromJson(body) : fromProtobuf(body);
      for (const s of spans) process.stdout.write(`${JSON.stringify(s)}\n`);
      res.writeHead(200, { 'content-type': String(req.headers['content-type'] ?? 'application/x-protobuf') });
      res.end(String(req.headers['content-type']).includes('json') ? '{}' : '');
    } catch (e) {
      process.stderr.write(`bad OTLP request: ${(e as Error).message}\n`);
      res.writeHead(400);
      res.end();
    }
  });
}).listen(4318, '0.0.0.0', () => process.stdout.write('otlp receiver listening on 4318\n'));
