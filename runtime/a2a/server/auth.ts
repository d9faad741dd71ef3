/**
 * Who is calling: bearer API keys (callers outside the cluster) and Kubernetes ServiceAccount
 * tokens (capsules calling each other), checked before any transport runs; the caller becomes the
 * SDK `User` whose name scopes the task store (each caller sees only its own tasks). The trust
 * class of a task comes from here too: only a verified caller that the capsule declares as a
 * trusted peer can pass on `trusted`; everyone else's trust header is ignored.
 *
 * Keys are compared in constant time (over SHA-256 digests, so length does not leak either) and
 * never logged or echoed; an error never says which part of a credential was wrong.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { User } from '@a2a-js/sdk/server';
import type { TaskOrigin, TaskTrust } from '../core/executor.ts';
import { parseOriginTrust } from '../core/wire.ts';
import type { CardSecurity } from './card.ts';

export interface ApiKey {
  /** Who holds the key (the caller's name: `apikey:<name>`). Never the key itself. */
  name: string;
  key: string;
}

/** Verifies a Kubernetes ServiceAccount token (TokenReview); the username when valid for our audience. */
export interface TokenVerifier {
  verify(token: string): Promise<{ username: string } | undefined>;
}

export interface AuthConfig {
  apiKeys?: readonly ApiKey[];
  serviceAccounts?: TokenVerifier;
  /** Callers without credentials are served (as one shared anonymous caller). */
  anonymous: boolean;
  /**
   * Callers whose trust header is honoured (`apikey:<name>` or a ServiceAccount username such as
   * `system:serviceaccount:<ns>/<name>`): the capsule's declared peers.
   */
  trustedCallers?: readonly string[];
}

export class Caller implements User {
  constructor(
    readonly userName: string,
    readonly isAuthenticated: boolean,
    readonly scheme: 'anonymous' | 'bearer' | 'serviceAccount',
  ) {}
}

export const ANONYMOUS = new Caller('', false, 'anonymous');

/** Why a request was refused (401): `missing` or `invalid` credentials. Says nothing more. */
export class AuthError extends Error {
  constructor(readonly reason: 'missing' | 'invalid') {
    super(reason === 'missing' ? 'authentication required: send Authorization: Bearer <token> (see the agent card securitySchemes)' : 'invalid credentials');
    this.name = 'AuthError';
  }
}

const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();

export interface Authenticator {
  /** The caller of a request with these headers; throws AuthError. */
  authenticate(headers: Record<string, string | string[] | undefined>): Promise<Caller>;
  /** Origin and trust of a task from this caller and its headers. */
  originTrust(caller: Caller | undefined, headers: Record<string, string | string[] | undefined>): { origin: TaskOrigin; trust: TaskTrust };
  /** What the card says (undefined: no schemes, anonymous only). */
  card(): CardSecurity | undefined;
  /** Whether unauthenticated callers are served. */
  readonly anonymous: boolean;
}

function bearerOf(headers: Record<string, string | string[] | undefined>): string | undefined {
  const raw = headers.authorization;
  const v = Array.isArray(raw) ? raw[0] : raw;
  if (v === undefined) return undefined;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(v);
  return m ? m[1]! : '';
}

export function createAuthenticator(cfg: AuthConfig): Authenticator {
  const keys = (cfg.apiKeys ?? []).map((k) => ({ name: k.name, digest: digest(k.key) }));
  const trusted = new Set(cfg.trustedCallers ?? []);
  return {
    anonymous: cfg.anonymous,
    async authenticate(headers) {
      const token = bearerOf(headers);
      if (token === undefined) {
        if (cfg.anonymous) return ANONYMOUS;
        throw new AuthError('missing');
      }
      if (token === '') throw new AuthError('invalid');
      const d = digest(token);
      // Compare against every key (no early exit): the time taken does not depend on which matched.
      let found: string | undefined;
      for (const k of keys) if (timingSafeEqual(d, k.digest) && found === undefined) found = k.name;
      if (found !== undefined) return new Caller(`apikey:${found}`, true, 'bearer');
      if (cfg.serviceAccounts && token.split('.').length === 3) {
        const r = await cfg.serviceAccounts.verify(token).catch(() => undefined);
        if (r) return new Caller(r.username, true, 'serviceAccount');
      }
      throw new AuthError('invalid');
    },
    originTrust(caller, headers) {
      const { origin, trust } = parseOriginTrust(headers);
      // Trust is a claim only a verified, declared peer can make; from anyone else it is ignored.
      const mayClaim = caller?.isAuthenticated === true && trusted.has(caller.userName);
      return { origin, trust: mayClaim ? trust : 'untrusted' };
    },
    card() {
      const anyOf: string[] = [];
      const schemes: Record<string, unknown> = {};
      const schemes03: Record<string, unknown> = {};
      if (keys.length > 0) {
        anyOf.push('apiKey');
        schemes.apiKey = { httpAuthSecurityScheme: { scheme: 'Bearer', description: 'API key issued by the capsule operator' } };
        schemes03.apiKey = { type: 'http', scheme: 'bearer', description: 'API key issued by the capsule operator' };
      }
      if (cfg.serviceAccounts) {
        anyOf.push('serviceAccount');
        const description = "Kubernetes ServiceAccount token with this agent's URL as audience (capsule to capsule)";
        schemes.serviceAccount = { httpAuthSecurityScheme: { scheme: 'Bearer', bearerFormat: 'JWT', description } };
        schemes03.serviceAccount = { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description };
      }
      if (anyOf.length === 0) return undefined;
      // With anonymous access the schemes are offered but not required.
      return { schemes, schemes03, anyOf: cfg.anonymous ? [] : anyOf };
    },
  };
}

/** No credentials checked: every caller is the anonymous caller (local use; `mur serve` says so). */
export const OPEN: Authenticator = createAuthenticator({ anonymous: true });
