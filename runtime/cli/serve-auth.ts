/**
 * Who may call `mur serve`: API keys (--api-keys / $MURMUR_A2A_API_KEYS), ServiceAccount tokens
 * (--token-review), anonymous callers only with --anonymous — except on a loopback address, which
 * stays open for local use and says so. Off loopback with no scheme and no --anonymous: refused.
 * Decided before staging, so a refusal comes at once; serve-staged.ts builds the authenticator
 * from it once the serving modules are loaded (serveAuth).
 */
import { isLoopback, readApiKeys } from '../a2a/server/auth-config.ts';
import type { ApiKey } from '../a2a/server/auth.ts';
import { MurError } from '../errors.ts';

export interface ServeAuthPlan {
  apiKeys: ApiKey[];
  tokenReview: boolean;
  anonymous: boolean;
  trustedCallers: string[];
  /** The start line's account of it (holders named, never keys). */
  notice: string;
}

export function planServeAuth(flags: Record<string, unknown>, host: string, publicUrl: string): ServeAuthPlan {
  const keysPath = (flags['api-keys'] as string | undefined) ?? process.env.MURMUR_A2A_API_KEYS;
  const apiKeys = keysPath ? readApiKeys(keysPath) : [];
  const tokenReview = flags['token-review'] === true;
  const trustedCallers = String(flags['trusted-callers'] ?? process.env.MURMUR_A2A_TRUSTED_CALLERS ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  const anySchemes = apiKeys.length > 0 || tokenReview;
  let anonymous = flags.anonymous === true;
  let notice: string;
  if (!anySchemes && !anonymous) {
    if (!isLoopback(host)) {
      throw new MurError('E-A2A-020', `refusing to serve A2A on ${host} without authentication`, {
        hint: 'give --api-keys <file|folder> and/or --token-review, or --anonymous if anyone who reaches the port may call',
      });
    }
    anonymous = true;
    notice = `no authentication: anyone who can reach ${host} can send, read and cancel tasks (local use; give --api-keys or --token-review to require credentials)`;
  } else {
    const schemes = [
      ...(apiKeys.length > 0 ? [`API keys of ${apiKeys.map((k) => k.name).join(', ')}`] : []),
      ...(tokenReview ? [`ServiceAccount tokens for ${publicUrl}`] : []),
    ];
    notice = `authentication: ${schemes.length > 0 ? schemes.join('; ') : 'none'}${anonymous ? '; anonymous callers allowed (--anonymous)' : ''}`;
  }
  return { apiKeys, tokenReview, anonymous, trustedCallers, notice };
}
