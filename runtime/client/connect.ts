/**
 * The official A2A SDK client for `mur`: the agent card resolved (0.3 and 1.0 cards alike), the
 * transport chosen from what the card offers (JSON-RPC, HTTP+JSON, gRPC; `--transport` puts one
 * first), the caller's bearer sent on every call, and each way a call can fail turned into one
 * error with a stable code. Unlike runtime/a2a/peers/client.ts (a capsule's peer client) there is no
 * allowlist: the user chose the target.
 */
import type { AgentCard } from '@a2a-js/sdk';
import {
  type Client,
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  type RequestOptions,
  RestTransportFactory,
  type TransportFactory,
} from '@a2a-js/sdk/client';
import { MurError } from '../errors.ts';

export const TRANSPORTS = { jsonrpc: 'JSONRPC', rest: 'HTTP+JSON', grpc: 'GRPC' } as const;
export type TransportName = keyof typeof TRANSPORTS;

export interface AgentConnection {
  url: string;
  /** How errors name the agent: the URL, or the Capsule and the forward it is reached through. */
  name: string;
  /** More to say when the agent is unreachable (a port-forward's failure). */
  detail?: () => string | undefined;
  card: AgentCard;
  client: Client;
  /** The binding the SDK chose (`JSONRPC`, `HTTP+JSON`, `GRPC`). */
  transport: string;
  /** Options for each call: the bearer (HTTP header or gRPC metadata) and the abort signal. */
  options(signal?: AbortSignal): RequestOptions;
}

export interface ConnectOptions {
  url: string;
  /** How errors name the agent (default: the URL). */
  name?: string;
  /** More to say when the agent is unreachable (a port-forward's failure). */
  detail?: () => string | undefined;
  bearer?: string;
  /** Put this binding first; the card's own order decides otherwise. */
  transport?: TransportName;
  signal?: AbortSignal;
  /**
   * The agent is reached through a local forward: the card names its in-cluster URL
   * (`reachVia.advertised`), so each interface there is rewritten to `reachVia.local`, and an
   * interface elsewhere (gRPC's own port) is dropped: only the A2A HTTP port is forwarded.
   */
  reachVia?: { advertised: string; local: string };
}

export function throughForward(card: AgentCard, via: { advertised: string; local: string }): AgentCard {
  const from = new URL(via.advertised);
  const to = new URL(via.local);
  const supportedInterfaces = (card.supportedInterfaces ?? []).flatMap((i) => {
    let u: URL;
    try {
      u = new URL(i.url);
    } catch {
      return []; // gRPC's host:port
    }
    if (u.host !== from.host) return [];
    u.protocol = to.protocol;
    u.host = to.host;
    return [{ ...i, url: u.href }];
  });
  return { ...card, supportedInterfaces };
}

/** A 401/403 seen by the fetch under the SDK: thrown from there so no transport reshapes it. */
function refused(url: string, status: number, hadBearer: boolean): MurError {
  const what = hadBearer ? 'refused the credential' : 'requires a credential';
  return new MurError('E-CLI-033', `${url} ${what} (HTTP ${status})`, {
    hint: hadBearer
      ? 'check the API key (--api-key-file, $MURMUR_A2A_API_KEY) or, for a Capsule, that the token is for its URL'
      : 'pass an API key with --api-key-file FILE or $MURMUR_A2A_API_KEY',
  });
}

export async function connectAgent(o: ConnectOptions): Promise<AgentConnection> {
  const name = o.name ?? o.url;
  const fetchImpl: typeof fetch = async (input, init) => {
    const h = new Headers(init?.headers);
    if (o.bearer) h.set('authorization', `Bearer ${o.bearer}`);
    const res = await fetch(input, { ...init, headers: h, ...(o.signal && !init?.signal ? { signal: o.signal } : {}) });
    if (res.status === 401 || res.status === 403) throw refused(name, res.status, o.bearer !== undefined);
    return res;
  };
  let card: AgentCard;
  try {
    card = await new DefaultAgentCardResolver({ fetchImpl, legacyCompat: { enabled: true } }).resolve(o.url);
  } catch (e) {
    throw clientFailure(e, name, 'reading its agent card', o.detail?.());
  }
  if (o.reachVia) card = throughForward(card, o.reachVia);
  const transports: TransportFactory[] = [
    new JsonRpcTransportFactory({ fetchImpl, legacyCompat: { enabled: true } }),
    new RestTransportFactory({ fetchImpl, legacyCompat: { enabled: true } }),
  ];
  // grpc-js is loaded only when the card offers gRPC: most targets never need it.
  const offers = [...new Set((card.supportedInterfaces ?? []).map((i) => i.protocolBinding.toUpperCase()))];
  if (offers.includes('GRPC')) {
    const { GrpcTransportFactory } = await import('@a2a-js/sdk/client/grpc');
    transports.push(new GrpcTransportFactory({ legacyCompat: { enabled: true } }));
  }
  const preferred = o.transport ? TRANSPORTS[o.transport] : undefined;
  if (preferred && !offers.includes(preferred)) {
    throw new MurError('E-CLI-034', `${name}: the agent card offers ${offers.join(', ') || 'no interface'}, not ${preferred} (--transport ${o.transport})`, {
      hint: 'leave --transport out to use what the card prefers',
    });
  }
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { transports, ...(preferred ? { preferredTransports: [preferred] } : {}) }),
  );
  const client = await factory.createFromAgentCard(card);
  const auth = o.bearer ? { authorization: `Bearer ${o.bearer}` } : undefined;
  return {
    url: o.url,
    name,
    ...(o.detail ? { detail: o.detail } : {}),
    card,
    client,
    transport: client.transport.protocolName,
    options: (signal) => ({ ...(auth ? { serviceParameters: auth } : {}), ...(signal ? { signal } : {}) }),
  };
}

/** Walks an error's causes for one of ours (a refusal thrown from the fetch under the SDK). */
function ownCause(e: unknown): MurError | undefined {
  for (let c: unknown = e, i = 0; c && i < 5; c = (c as { cause?: unknown }).cause, i++) if (c instanceof MurError) return c;
  return undefined;
}

/**
 * One error with a stable code for anything a call to the agent can throw: unreachable
 * (E-CLI-032), a refused credential (E-CLI-033), an A2A error the agent answered (E-CLI-034).
 */
export function clientFailure(e: unknown, url: string, doing: string, detail?: string): MurError {
  // `url` is the agent's name in messages: its URL, or a Capsule and its forward (connect `name`).
  const own = ownCause(e);
  if (own) return own;
  const err = e as { name?: string; message?: string; code?: unknown; details?: string; cause?: { code?: unknown; message?: string } };
  // gRPC: a grpc-js status, on the error or (from the SDK's transport) on its cause: 16
  // UNAUTHENTICATED, 14 UNAVAILABLE. Node's network errors carry a string code (ECONNREFUSED).
  const status = typeof err?.code === 'number' ? err.code : typeof err?.cause?.code === 'number' ? err.cause.code : undefined;
  if (status === 16) return refused(url, 401, true);
  const netCode = typeof err?.cause?.code === 'string' ? err.cause.code : status === 14 ? 'UNAVAILABLE' : undefined;
  if (err?.message === 'fetch failed' || netCode || /Failed to fetch Agent Card/.test(err?.message ?? '')) {
    const why = `${netCode ?? err?.cause?.message ?? err?.message ?? String(e)}${detail ? ` (port-forward: ${detail})` : ''}`;
    return new MurError('E-CLI-032', `${/^https?:\/\//.test(url) ? `capsule at ${url}` : url} unreachable while ${doing}: ${why}`, {
      hint: 'is it running and is the URL right? (mur serve prints "serving … at <url>"; for a Capsule, kubectl get capsule)',
      cause: e,
    });
  }
  if (err?.name === 'AbortError' || err?.name === 'TimeoutError') return new MurError('E-CLI-032', `call to ${url} was cut off while ${doing}`, { cause: e });
  const envelope = (e as { envelopeCode?: number }).envelopeCode;
  return new MurError(
    'E-CLI-034',
    `${url} answered an error while ${doing}${envelope !== undefined ? ` (${envelope})` : ''}: ${err?.details ?? err?.message ?? String(e)}`,
    { cause: e },
  );
}
