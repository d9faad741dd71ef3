/**
 * The first connection to a PostgreSQL store, retried while the failure says "not yet" rather than
 * "never". In a cluster a fresh pod often starts before its DNS answers, before its egress policy is
 * programmed, or while the database server is itself starting: measured on the real node, two of
 * three replicas stopped once at start with `getaddrinfo EAI_AGAIN` and were restarted by their pod.
 * Retrying for a bounded time (inside the pod's liveness window: 65 s) turns that into a wait,
 * with each attempt said on the output; a wrong URL, password or database still fails at once.
 */

/** Errors (Node's `code`, PostgreSQL's SQLSTATE) that a later attempt may not meet. */
const TRANSIENT_CODES = new Set([
  'EAI_AGAIN', // DNS not answering yet
  'ENOTFOUND', // a Service just made, not yet in DNS (a mistyped host also lands here: bounded)
  'ECONNREFUSED', // server not listening yet
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH', // route or policy not programmed yet
  'ENETUNREACH',
  'EPIPE',
  '57P03', // cannot_connect_now: the database system is starting up
  '53300', // too_many_connections
]);

/** Whether a failed connection attempt is worth another try. Pure; see the table test. */
export function transientConnectError(e: unknown): boolean {
  const err = e as { code?: unknown; message?: unknown; errors?: unknown } | undefined;
  if (typeof err?.code === 'string' && TRANSIENT_CODES.has(err.code)) return true;
  // A host with several addresses fails with an AggregateError of one error per address.
  if (Array.isArray(err?.errors) && err.errors.length && err.errors.every((x) => transientConnectError(x))) return true;
  // pg's own connection timeout (connectionTimeoutMillis) carries no code, only these messages.
  const msg = typeof err?.message === 'string' ? err.message : '';
  return /timeout expired|Connection terminated (due to connection timeout|unexpectedly)/i.test(msg);
}

/** What a retry report says of its error: the code and message. */
export function describeConnectError(e: unknown): string {
  const err = e as { code?: unknown; message?: unknown } | undefined;
  const msg = typeof err?.message === 'string' && err.message ? err.message : String(e);
  return typeof err?.code === 'string' && !msg.includes(err.code) ? `${err.code}: ${msg}` : msg;
}

/** Delay before attempt `n + 1` (n ≥ 1): 250 ms doubling, at most 4 s. Pure. */
export function connectBackoffMs(n: number): number {
  return Math.min(250 * 2 ** (n - 1), 4000);
}

/** Seconds to keep trying: MURMUR_STORE_CONNECT_SECS, default 30 (0: one attempt only). */
export function connectBudgetSecs(env: NodeJS.ProcessEnv = process.env): number {
  const n = Number(env.MURMUR_STORE_CONNECT_SECS);
  return env.MURMUR_STORE_CONNECT_SECS !== undefined && env.MURMUR_STORE_CONNECT_SECS !== '' && Number.isFinite(n) && n >= 0 ? n : 30;
}

export interface RetryReport {
  attempt: number;
  error: unknown;
  delayMs: number;
}

/**
 * Runs `attempt` until it succeeds, fails with an error that is not transient, or the budget is
 * spent (then the last error is thrown, with `attempts` set on it). `onRetry` hears each retry
 * before its delay.
 */
export async function withConnectRetries<T>(attempt: () => Promise<T>, budgetSecs: number, onRetry: (r: RetryReport) => void = () => {}): Promise<T> {
  const deadline = performance.now() + budgetSecs * 1000;
  for (let n = 1; ; n++) {
    try {
      return await attempt();
    } catch (e) {
      const delayMs = connectBackoffMs(n);
      if (!transientConnectError(e) || performance.now() + delayMs > deadline) {
        if (e && typeof e === 'object') (e as { attempts?: number }).attempts = n;
        throw e;
      }
      onRetry({ attempt: n, error: e, delayMs });
      await new Promise((r) => setTimeout(r, delayMs));
    }
  }
}
