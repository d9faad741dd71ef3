/**
 * Push notifications: webhook configs kept in the SDK's `PushNotificationStore` (in memory by
 * default; `DatabasePushNotificationStore` plugs in unchanged), scoped to the caller who set them.
 * A webhook URL must pass the capsule's own network allowlist (`capabilities.network.allow`): a
 * caller cannot make the capsule POST into the cluster anywhere the capsule itself may not
 * connect. Checked when the config is set and again at every delivery.
 *
 * Delivery is ours rather than the SDK's DefaultPushNotificationSender, which tries once and does
 * not check the URL: each event is POSTed (body from the SDK's V1 serializer, so the wire shape
 * is the SDK's) with retries and exponential backoff, in order per task, each attempt in an
 * OpenTelemetry span `a2a.push.deliver`. Pushed: status updates and whole artifacts (streamed
 * response chunks are not; the final response artifact is).
 */
import { SpanStatusCode, trace, type Tracer } from '@opentelemetry/api';
import type { StreamResponse, TaskPushNotificationConfig } from '@a2a-js/sdk';
import { InMemoryPushNotificationStore, V1PushNotificationSerializer, type PushNotificationStore, type ServerCallContext } from '@a2a-js/sdk/server';
import { RequestMalformedError } from '@a2a-js/sdk/errors';
import { isUrlAllowed, networkPolicyError } from '../../net/allowlist.ts';
import { holdSecret } from '../../secrets.ts';
import { isTerminal } from '../core/executor.ts';
import { fromCoreState } from '../core/wire.ts';

export interface PushOptions {
  /** The capsule's `capabilities.network.allow`: webhooks may only go where the capsule may connect. */
  allow: readonly string[];
  store?: PushNotificationStore;
  /** Delivery attempts per event. Default 4. */
  attempts?: number;
  /** Wait before the second attempt; doubles each time. Default 500 ms. */
  backoffMs?: number;
  /** Per-attempt timeout. Default 5 s. */
  timeoutMs?: number;
  tracer?: Tracer;
  /**
   * Whether every config write to `store` goes through this process (the in-memory store, the
   * embedded SQLite file): then a task created here holds no config until one is saved here, and
   * its events need no look-up until then (`created`). With a store other processes write
   * (replicas on PostgreSQL: a config may be set through another replica) every event is looked
   * up. Default: true without `store`, false with one.
   */
  local?: boolean;
}

export interface Push {
  readonly store: PushNotificationStore;
  /** Refuses (RequestMalformedError, -32602) a config whose URL the capsule may not reach. */
  check(config: TaskPushNotificationConfig): void;
  /** Queue delivery of one task event to the task's webhooks (returns at once). */
  deliver(taskId: string, owner: ServerCallContext, resp: StreamResponse): void;
  /** Resolves when every queued delivery has finished (delivered or given up). */
  idle(): Promise<void>;
  /**
   * A task was created here without a config: with a local store its events are not looked up
   * until a config is saved for it (through `store`). A task this process did not create (one
   * adopted from a previous process) is always looked up.
   */
  created(taskId: string): void;
}

/**
 * Whether an event is pushed: status updates and whole artifacts, not streamed chunks, nor the
 * streamed-only thinking and `step` artifacts (a webhook gets what a task keeps, not its trace).
 */
export function pushed(resp: StreamResponse): boolean {
  const p = resp.payload;
  if (p?.$case === 'statusUpdate') return p.value.metadata?.murmur === undefined; // not lagged notices
  if (p?.$case !== 'artifactUpdate') return false;
  const kind = (p.value.artifact?.metadata?.murmur as { kind?: unknown } | undefined)?.kind;
  return p.value.lastChunk && !p.value.append && p.value.artifact?.name !== 'thinking' && kind !== 'step';
}

export function createPush(o: PushOptions): Push {
  const local = o.local ?? o.store === undefined;
  // Tasks created here that hold no config (local stores only): a save for one takes it out before
  // the save starts, so no event after it can miss the config; its final event takes it out too.
  const clean = new Set<string>();
  const store = local ? unmarkingSaves(o.store ?? new InMemoryPushNotificationStore(), clean) : o.store!;
  const attempts = o.attempts ?? 4;
  const backoffMs = o.backoffMs ?? 500;
  const timeoutMs = o.timeoutMs ?? 5000;
  const tracer = o.tracer ?? trace.getTracer('murmur.a2a');
  const serializer = new V1PushNotificationSerializer();
  const chains = new Map<string, Promise<void>>();

  function check(config: TaskPushNotificationConfig): void {
    const url = config.url;
    let u: URL;
    try {
      u = new URL(url);
    } catch {
      throw new RequestMalformedError(`push notification url '${url}' is not a URL`);
    }
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new RequestMalformedError(`push notification url must be http or https, got '${u.protocol}'`);
    if (!isUrlAllowed(url, o.allow)) throw new RequestMalformedError(`push notification url refused: ${networkPolicyError(url)}`);
  }

  async function post(config: TaskPushNotificationConfig, body: string, contentType: string): Promise<void> {
    const headers: Record<string, string> = { 'content-type': contentType };
    if (config.authentication?.scheme) headers.authorization = `${config.authentication.scheme} ${config.authentication.credentials ?? ''}`.trim();
    else if (config.token) headers['x-a2a-notification-token'] = config.token;
    // Held for redaction (secrets.ts) while it is sent, its attempts' spans ending meanwhile.
    const release = holdSecret(config.authentication?.credentials ?? config.token);
    try {
      await attemptAll(config, headers, body);
    } finally {
      release();
    }
  }

  async function attemptAll(config: TaskPushNotificationConfig, headers: Record<string, string>, body: string): Promise<void> {
    let wait = backoffMs;
    for (let attempt = 1; attempt <= attempts; attempt++) {
      const outcome = await tracer.startActiveSpan('a2a.push.deliver', async (span) => {
        span.setAttribute('url.full', config.url.split('?')[0]!);
        span.setAttribute('a2a.task.id', config.taskId);
        span.setAttribute('murmur.push.attempt', attempt);
        try {
          if (!isUrlAllowed(config.url, o.allow)) throw new Error(networkPolicyError(config.url));
          const r = await fetch(config.url, { method: 'POST', headers, body, redirect: 'manual', signal: AbortSignal.timeout(timeoutMs) });
          await r.arrayBuffer().catch(() => undefined);
          span.setAttribute('http.response.status_code', r.status);
          if (r.status >= 200 && r.status < 300) return 'ok' as const;
          span.setStatus({ code: SpanStatusCode.ERROR, message: `HTTP ${r.status}` });
          // A 4xx other than 408/429 will not get better by retrying.
          return r.status >= 400 && r.status < 500 && r.status !== 408 && r.status !== 429 ? ('final' as const) : ('retry' as const);
        } catch (e) {
          span.setStatus({ code: SpanStatusCode.ERROR, message: e instanceof Error ? e.message : String(e) });
          return String(e).includes('network policy') ? ('final' as const) : ('retry' as const);
        } finally {
          span.end();
        }
      });
      if (outcome !== 'retry') return;
      if (attempt < attempts) {
        await new Promise((r) => setTimeout(r, wait).unref());
        wait *= 2;
      }
    }
  }

  return {
    store,
    check,
    deliver(taskId, owner, resp) {
      // A task created here with no config saved since: nothing to look up. One select per event
      // (4 per one-turn task) was the store's most frequent query on `mur serve` (issue 42).
      if (clean.has(taskId)) {
        if (finalStatus(resp)) clean.delete(taskId);
        return;
      }
      if (!pushed(resp)) return;
      const prev = chains.get(taskId) ?? Promise.resolve();
      const next = prev.then(async () => {
        const configs = await store.load(taskId, owner).catch(() => []);
        if (configs.length === 0) return;
        const { body, contentType } = serializer.serialize(resp);
        await Promise.all(configs.map((c) => post(c, body, contentType)));
      });
      const tail = next.catch(() => undefined);
      chains.set(taskId, tail);
      void tail.then(() => {
        if (chains.get(taskId) === tail) chains.delete(taskId);
      });
    },
    async idle() {
      while (chains.size > 0) await Promise.all([...chains.values()]);
    },
    created(taskId) {
      if (local) clean.add(taskId);
    },
  };
}

/** `store` with every save first taking its task out of `clean`. */
function unmarkingSaves(store: PushNotificationStore, clean: Set<string>): PushNotificationStore {
  return {
    save: (taskId, context, config) => {
      clean.delete(taskId);
      return store.save(taskId, context, config);
    },
    load: (taskId, context) => store.load(taskId, context),
    ...(store.loadWithMetadata ? { loadWithMetadata: (taskId: string, context: ServerCallContext) => store.loadWithMetadata!(taskId, context) } : {}),
    delete: (taskId, context, configId) => store.delete(taskId, context, configId),
  };
}

/** Whether an event is a task's final status (nothing is pushed for it after this one). */
function finalStatus(resp: StreamResponse): boolean {
  const p = resp.payload;
  const state = p?.$case === 'statusUpdate' ? fromCoreState(p.value.status?.state) : undefined;
  return state !== undefined && isTerminal(state);
}
