/**
 * The connections the main thread keeps for components' outgoing HTTP (net-relay.ts): one
 * keep-alive agent per scheme, bounded, so a driver's provider requests reuse a connection instead
 * of opening one each (issue 42: connecting was a quarter of the main thread's time per task).
 *
 * Reuse never widens what a component may reach. The allowlist is checked in the component's
 * thread before each request is sent (runtime/host/wasi.ts), and a pooled connection is only ever
 * taken by a request for the same scheme (one agent each) and the same host and port (Node's agent
 * keys its sockets by host:port, plus the TLS server name for https): a connection admitted for
 * one destination is never handed to a request for another, and a request the allowlist refuses
 * never reaches the agent at all.
 */
import type { Agent as HttpAgent } from 'node:http';
import type { Agent as HttpsAgent } from 'node:https';
import { http, https } from '../../builtins.ts';

export interface PoolBounds {
  /** Connections open at once to one host:port (more requests wait in the agent's queue). */
  maxSockets: number;
  /** Connections open at once over all destinations, per scheme. */
  maxTotalSockets: number;
  /** Idle connections kept per host:port once their response ended. */
  maxFreeSockets: number;
  /**
   * An idle connection is closed after this long unused: shorter than the idle timeouts providers
   * and their proxies close connections at (Node servers 5 s, load balancers 60 s and more), so the
   * pool closes first and a request does not meet a connection the server is closing. A server
   * that announces a shorter one (`Keep-Alive: timeout=N`) is honoured by Node's agent (N − 1 s).
   */
  freeSocketTimeoutMs: number;
}

export const DEFAULT_POOL: PoolBounds = { maxSockets: 16, maxTotalSockets: 64, maxFreeSockets: 4, freeSocketTimeoutMs: 4000 };

export interface NetAgents {
  readonly bounds: PoolBounds;
  forScheme(secure: boolean): HttpAgent | HttpsAgent;
}

/** Keep-alive agents within `bounds`; the https one is made with the first https request (node:https loads only then). */
export function netAgents(bounds: PoolBounds = DEFAULT_POOL): NetAgents {
  const options = {
    keepAlive: true,
    maxSockets: bounds.maxSockets,
    maxTotalSockets: bounds.maxTotalSockets,
    maxFreeSockets: bounds.maxFreeSockets,
    // Node's agent applies `timeout` to a socket as it goes back to the pool and closes it when it
    // expires there; the relay clears it while a request uses the socket (net-relay.ts).
    timeout: bounds.freeSocketTimeoutMs,
  };
  const plain = new http.Agent(options);
  let secure: HttpsAgent | undefined;
  return {
    bounds,
    forScheme: (isSecure) => (isSecure ? (secure ??= new (https().Agent)(options)) : plain),
  };
}

/** The agents every component thread's requests share (one process-wide pool). */
export const SHARED_AGENTS: NetAgents = netAgents();
