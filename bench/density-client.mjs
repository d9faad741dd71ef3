// The client of bench/density.ts, run INSIDE the cluster by the runtime image's Node (24: fetch,
// performance) as `node -e <this file's text>` in a pod labelled role=density-client, which every
// density Capsule's ingress admits. Plain JavaScript without imports, so `node -e` runs it as is.
//
// Env: SEQUENTIAL and CONCURRENT, JSON arrays of capsule Service URLs (all asleep when it starts).
// First it GETs the agent card of the first one until it answers: the activator serves it without
// a wake once it knows this pod (its NetworkPolicy fence needs the pod's labels) and the Service
// routes; no wake is measured before that. Then one JSON-RPC `message/send` (blocking) to each
// SEQUENTIAL capsule, one after another, then to every CONCURRENT capsule at once; each is timed
// from just before the request's first byte to the parsed answer. One JSON line per wake on
// stdout, then {"done":true}; then it stays up (so the bench's `kubectl logs -f` and the pod's
// Ready condition never race its exit) until the bench deletes the pod.
const sequential = JSON.parse(process.env.SEQUENTIAL ?? '[]');
const concurrent = JSON.parse(process.env.CONCURRENT ?? '[]');
const line = (o) => process.stdout.write(`${JSON.stringify(o)}\n`);

async function cardAnswers(url) {
  const t0 = performance.now();
  for (let attempt = 1; ; attempt++) {
    try {
      const r = await fetch(`${url}/.well-known/agent-card.json`, { signal: AbortSignal.timeout(10_000) });
      await r.text();
      if (r.ok) return { attempts: attempt, ms: performance.now() - t0 };
    } catch {
      // not routed or not admitted yet: the pod is new to kube-proxy and the activator
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function wake(kind, url, i) {
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'message/send',
    params: {
      message: { kind: 'message', messageId: `density-${kind}-${i}`, role: 'user', parts: [{ kind: 'text', text: 'Are you awake?' }] },
      configuration: { blocking: true },
    },
  });
  const t0 = performance.now();
  try {
    const r = await fetch(`${url}/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
      signal: AbortSignal.timeout(180_000),
    });
    const text = await r.text();
    const ms = performance.now() - t0;
    let state;
    let error;
    try {
      const j = JSON.parse(text);
      state = j.result?.status?.state;
      error = j.error ? JSON.stringify(j.error) : undefined;
    } catch {
      error = text.slice(0, 300);
    }
    line({ kind, url, ms, status: r.status, state, error });
  } catch (e) {
    line({ kind, url, ms: performance.now() - t0, error: String(e?.cause ?? e) });
  }
}

async function main() {
  if (sequential.length + concurrent.length === 0) throw new Error('SEQUENTIAL and CONCURRENT are both empty');
  line({ ready: await cardAnswers(sequential[0] ?? concurrent[0]) });
  for (let i = 0; i < sequential.length; i++) await wake('sequential', sequential[i], i);
  await Promise.all(concurrent.map((url, i) => wake('concurrent', url, i)));
  line({ done: true });
  setInterval(() => {}, 1 << 30);
}

main().catch((e) => {
  line({ fatal: String(e?.stack ?? e) });
  setInterval(() => {}, 1 << 30);
});
