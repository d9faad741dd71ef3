/** Session ids: `ses_` + 32 lowercase hex characters (128 random bits). */
import { randomBytes } from 'node:crypto';

export const SESSION_ID_RE = /^ses_[0-9a-f]{32}$/;

export function newSessionId(): string {
  return `ses_${randomBytes(16).toString('hex')}`;
}

export function isSessionId(s: string): boolean {
  return SESSION_ID_RE.test(s);
}
