/**
 * The fetch every MCP request goes through (given to the SDK's Streamable HTTP transport): the
 * capsule's `capabilities.network.allow` is checked on every request, fail-closed, as for every
 * other outgoing request of the runtime (runtime/net); redirects are refused rather than followed
 * (a redirect would be a request to a destination nobody checked); and every response body is read
 * through a byte bound, so a server answering a huge result or an endless stream fails the call
 * instead of filling the runtime's memory.
 */
import { MurError } from '../errors.ts';
import { destinationOf, isUrlAllowed, networkPolicyError, type Destination } from '../net/allowlist.ts';

export type FetchLike = (url: string | URL, init?: RequestInit) => Promise<Response>;

/** Statuses whose Response may carry no body (the Response constructor refuses one). */
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

export interface GuardedFetchOptions {
  server: string;
  allow: readonly string[];
  /** The most bytes one response body may carry. */
  maxBytes: number;
  /** A refused request (for the trace's `network_denied`). */
  onDenied?: (d: Destination) => void;
  /** A response body went over the bound: the stream is errored, and the call waiting on it is told. */
  onOverflow?: (e: MurError) => void;
  /** The fetch underneath (default: Node's). */
  fetch?: FetchLike;
}

export function guardedFetch(o: GuardedFetchOptions): FetchLike {
  const base = o.fetch ?? fetch;
  return async (url, init) => {
    const href = url instanceof URL ? url.href : String(url);
    if (!isUrlAllowed(href, o.allow)) {
      const d = destinationOf(href);
      if (d) o.onDenied?.(d);
      throw new MurError('E-MCP-008', `MCP server '${o.server}': ${networkPolicyError(href)}`, {
        hint: 'the connection was not made; add the destination to capabilities.network.allow if the capsule is meant to reach it',
      });
    }
    const res = await base(url, { ...init, redirect: 'manual' });
    if (res.status >= 300 && res.status < 400 && res.headers.has('location')) {
      await res.body?.cancel().catch(() => {});
      throw new MurError('E-MCP-012', `MCP server '${o.server}' answered a redirect (${res.status}) to '${res.headers.get('location')}'`, {
        hint: 'redirects are not followed (the new destination would go unchecked); give the final URL in mcp.servers[].url',
      });
    }
    if (!res.body || NULL_BODY.has(res.status)) return res;
    return new Response(res.body.pipeThrough(byteBound(o.server, o.maxBytes, o.onOverflow)), {
      status: res.status,
      statusText: res.statusText,
      headers: res.headers,
    });
  };
}

/** Passes bytes through until `max`; one byte more errors the stream (and so the call reading it). */
function byteBound(server: string, max: number, onOverflow?: (e: MurError) => void): TransformStream<Uint8Array, Uint8Array> {
  let seen = 0;
  return new TransformStream({
    transform(chunk, ctl) {
      seen += chunk.byteLength;
      if (seen > max) {
        const e = new MurError('E-MCP-011', `MCP server '${server}' sent a response over ${max} bytes`, {
          hint: 'the call fails instead of reading further; ask the tool for less output',
        });
        ctl.error(e);
        // The SDK reads an SSE stream in the background (and may retry it): the call is failed
        // directly rather than left to its deadline.
        onOverflow?.(e);
        return;
      }
      ctl.enqueue(chunk);
    },
  });
}
