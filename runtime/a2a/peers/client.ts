/**
 * Outgoing A2A: the host side of `murmur:message/send`, plus task polling for `delegate-task`.
 *
 * Uses the official @a2a-js/sdk client (card resolution, transport choice — A2A 1.0 JSON-RPC, or
 * 0.3 for peers whose card only offers 0.3 — wire shapes, error decoding). This file adds what
 * the SDK has no notion of: the `capabilities.network.allow` policy, checked before any
 * connection and again on every URL the SDK fetches (a card may point its endpoint elsewhere),
 * and murmur's origin/trust/traceparent headers on every request.
 *
 * All functions return a result object instead of throwing: `{ok: true, ...}` or
 * `{ok: false, error}`, mirroring the WIT `result<task-result, string>`.
 */
import { isUrlAllowed, networkPolicyError } from '../../net/allowlist.ts';
import { randomUUID } from 'node:crypto';
import { Role } from '@a2a-js/sdk';
import type { AgentCard, Message, Task } from '@a2a-js/sdk';
import { type Client, ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { isTerminal, type TaskState, type TaskTrust } from '../core/executor.ts';
import { ORIGIN_HEADER, TRACEPARENT_HEADER, TRUST_HEADER, fromCoreState, messageText, textPart } from '../core/wire.ts';

export type PeerResult<T> = ({ ok: true } & T) | { ok: false; error: string };

export interface PeerCallOptions {
  /** Base URL of the peer capsule (its card is at `<peerUrl>/.well-known/agent-card.json`). */
  peerUrl: string;
  /** The sender's `capabilities.network.allow`. */
  allow: readonly string[];
  /** Trust class of the *sending* task, stamped as `x-murmur-task-trust`. Default `untrusted`. */
  trust?: TaskTrust;
  /** W3C traceparent to propagate (when tracing is on). */
  traceparent?: string;
  /**
   * Credential for the peer (`Authorization: Bearer …`): an API key, or this capsule's
   * ServiceAccount token projected for the peer's URL. Sent only to allowed URLs.
   */
  bearer?: string;
  /** Per-call timeout. Default 30 s. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

export interface SendMessageOptions extends PeerCallOptions {
  text: string;
  contextId?: string;
  /** Sender-generated message id; a uuid when omitted. */
  messageId?: string;
  /** Reply to a peer task that is `input-required`. */
  taskId?: string;
  /**
   * Wait until the peer task is terminal or input-required (A2A blocking send). Default false:
   * return the state the peer reports right after accepting the task (poll with getTask/followTask).
   */
  wait?: boolean;
}

export interface PeerTask {
  taskId: string;
  contextId: string;
  state: TaskState;
  /** Result text: the `response` artifact (else all text artifacts), else the status message. */
  text?: string;
  /** The status message text (the prompt when input-required, the reason when failed/rejected). */
  statusText?: string;
}

/** The exact refusal string of `murmur:message/send` for a URL outside the allowlist (net/allowlist.ts). */
export const policyError = networkPolicyError;

// ---------------------------------------------------------------------------------------------
// SDK client plumbing

class PolicyRefusal extends Error {}

function describe(e: unknown, peerUrl: string, timeoutMs: number): string {
  if (e instanceof PolicyRefusal) return e.message;
  const err = e as { name?: string; message?: string; cause?: { code?: string; message?: string } };
  if (err?.cause instanceof PolicyRefusal) return err.cause.message;
  if (err?.name === 'TimeoutError') return `peer '${peerUrl}' did not answer within ${timeoutMs}ms`;
  if (err?.name === 'AbortError') return `call to peer '${peerUrl}' was aborted`;
  const cause = err?.cause?.code ?? err?.cause?.message;
  if (err?.message === 'fetch failed' || cause) {
    return `peer '${peerUrl}' unreachable: ${cause ?? err?.message ?? String(e)}`;
  }
  const code = (e as { envelopeCode?: number }).envelopeCode;
  return `peer '${peerUrl}' error${code !== undefined ? ` ${code}` : ''}: ${err?.message ?? String(e)}`;
}

interface CallSetup {
  client: Client;
  signal: AbortSignal;
  timeoutMs: number;
}

async function connect(o: PeerCallOptions): Promise<CallSetup> {
  const timeoutMs = o.timeoutMs ?? 30_000;
  const signals = [AbortSignal.timeout(timeoutMs)];
  if (o.signal) signals.push(o.signal);
  const signal = AbortSignal.any(signals);
  const headers: Record<string, string> = {
    [ORIGIN_HEADER]: 'peer',
    [TRUST_HEADER]: o.trust === 'trusted' ? 'trusted' : 'untrusted',
  };
  if (o.traceparent) headers[TRACEPARENT_HEADER] = o.traceparent;
  if (o.bearer) headers.authorization = `Bearer ${o.bearer}`;
  const fetchImpl: typeof fetch = async (input, init) => {
    const target = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    if (!isUrlAllowed(target, o.allow)) throw new PolicyRefusal(policyError(target));
    const h = new Headers(init?.headers);
    for (const [k, v] of Object.entries(headers)) h.set(k, v);
    return fetch(input, { ...init, headers: h, signal: init?.signal ? AbortSignal.any([init.signal, signal]) : signal });
  };
  const card: AgentCard = await new DefaultAgentCardResolver({ fetchImpl, legacyCompat: { enabled: true } }).resolve(o.peerUrl);
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl, legacyCompat: { enabled: true } })],
    }),
  );
  const client = await factory.createFromAgentCard(card);
  return { client, signal, timeoutMs };
}

function artifactText(t: Task): string | undefined {
  const textOf = (parts: Task['artifacts'][number]['parts']) => parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');
  const resp = t.artifacts.find((a) => a.name === 'response' || a.artifactId === 'response');
  if (resp) return textOf(resp.parts);
  const all = t.artifacts.map((a) => textOf(a.parts)).filter((s) => s !== '');
  return all.length > 0 ? all.join('\n') : undefined;
}

/** @internal A peer's task (or message-only reply) as the capsule sees it. */
export function toPeerTask(t: Task | Message): PeerTask {
  if ('messageId' in t) {
    // A message-only reply: no task on the peer side.
    const text = messageText(t);
    return { taskId: t.taskId, contextId: t.contextId, state: 'completed', text, statusText: text };
  }
  const state = fromCoreState(t.status?.state) ?? 'failed';
  const statusText = t.status?.message ? messageText(t.status.message) : undefined;
  const text = artifactText(t) ?? statusText;
  return {
    taskId: t.id,
    contextId: t.contextId,
    state,
    ...(text !== undefined ? { text } : {}),
    ...(statusText !== undefined ? { statusText } : {}),
  };
}

async function call<T>(o: PeerCallOptions, fn: (s: CallSetup) => Promise<T>): Promise<PeerResult<T>> {
  if (!isUrlAllowed(o.peerUrl, o.allow)) return { ok: false, error: policyError(o.peerUrl) };
  const timeoutMs = o.timeoutMs ?? 30_000;
  try {
    const setup = await connect(o);
    const v = await fn(setup);
    return { ok: true, ...v };
  } catch (e) {
    return { ok: false, error: describe(e, o.peerUrl, timeoutMs) };
  }
}

// ---------------------------------------------------------------------------------------------
// Public API

/** `murmur:message/send`: send a task (or an input reply) to a peer. */
export function sendMessage(o: SendMessageOptions): Promise<PeerResult<PeerTask>> {
  return call(o, async ({ client, signal }) => {
    const message: Message = {
      messageId: o.messageId ?? randomUUID(),
      contextId: o.contextId ?? '',
      taskId: o.taskId ?? '',
      role: Role.ROLE_USER,
      parts: [textPart(o.text)],
      metadata: undefined,
      extensions: [],
      referenceTaskIds: [],
    };
    const r = await client.sendMessage(
      {
        tenant: '',
        message,
        configuration: {
          acceptedOutputModes: [],
          taskPushNotificationConfig: undefined,
          returnImmediately: !o.wait,
        },
        metadata: undefined,
      },
      { signal },
    );
    return toPeerTask(r);
  });
}

/** `tasks/get` on a peer. */
export function getTask(o: PeerCallOptions & { taskId: string }): Promise<PeerResult<PeerTask>> {
  return call(o, async ({ client, signal }) => toPeerTask(await client.getTask({ tenant: '', id: o.taskId }, { signal })));
}

/** `tasks/cancel` on a peer. */
export function cancelTask(o: PeerCallOptions & { taskId: string }): Promise<PeerResult<PeerTask>> {
  return call(o, async ({ client, signal }) => toPeerTask(await client.cancelTask({ tenant: '', id: o.taskId, metadata: undefined }, { signal })));
}

export interface FollowOptions extends PeerCallOptions {
  taskId: string;
  /** Give up after this long (the result then has `timedOut: true` and the last seen state). */
  deadlineMs: number;
  /** First poll interval; grows ×1.5 up to 1 s. Default 25 ms. */
  pollIntervalMs?: number;
}

/**
 * Poll the peer's `tasks/get` until the task is terminal or `input-required`, or the deadline
 * passes. Each poll is bounded by `timeoutMs` (and by what is left of the deadline).
 */
export async function followTask(o: FollowOptions): Promise<PeerResult<PeerTask & { timedOut: boolean }>> {
  if (!isUrlAllowed(o.peerUrl, o.allow)) return { ok: false, error: policyError(o.peerUrl) };
  const end = Date.now() + o.deadlineMs;
  let interval = o.pollIntervalMs ?? 25;
  let last: PeerTask | undefined;
  for (;;) {
    const left = end - Date.now();
    if (left <= 0) {
      if (!last) return { ok: false, error: `peer '${o.peerUrl}' did not answer within ${o.deadlineMs}ms` };
      return { ok: true, ...last, timedOut: true };
    }
    const r = await getTask({ ...o, timeoutMs: Math.min(o.timeoutMs ?? 30_000, left) });
    if (!r.ok) {
      if (Date.now() >= end && last) return { ok: true, ...last, timedOut: true };
      return r;
    }
    const { ok: _ok, ...t } = r;
    last = t;
    if (isTerminal(t.state) || t.state === 'input-required') return { ok: true, ...t, timedOut: false };
    if (o.signal?.aborted) return { ok: false, error: `call to peer '${o.peerUrl}' was aborted` };
    await new Promise((res) => setTimeout(res, Math.min(interval, Math.max(0, end - Date.now()))));
    interval = Math.min(interval * 1.5, 1000);
  }
}
