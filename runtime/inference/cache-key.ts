/**
 * The `prompt_cache_key` routing hint (wit-interfaces.md "Prompt cache routing hint", with the
 * placeholders restored in spec/README.md):
 *
 * | Task                                  | Value                                                     |
 * |---------------------------------------|-----------------------------------------------------------|
 * | has a context id, fits in 64 chars    | `<capsule-name>:<capsule-version>:<context-id>`           |
 * | has no context id, fits in 64 chars   | `<capsule-name>:<capsule-version>`                        |
 * | would run past 64 chars               | first 47 chars, `:`, 16 lowercase hex of SHA-256(value)   |
 *
 * The value is fixed for every turn of a task: it depends on nothing but these three inputs, so
 * compaction or a dropped continuation cannot change it. Characters are Unicode code points, so a
 * shortened value never ends in half a surrogate pair.
 */
import { createHash } from 'node:crypto';

export const PROMPT_CACHE_KEY_MAX = 64;
/** Leading characters kept when the value is shortened: 47 + ':' + 16 hex = 64. */
export const PROMPT_CACHE_KEY_PREFIX = 47;
export const PROMPT_CACHE_KEY_HASH_HEX = 16;

export function promptCacheKey(capsuleName: string, capsuleVersion: string, contextId?: string): string {
  const value = contextId !== undefined && contextId !== '' ? `${capsuleName}:${capsuleVersion}:${contextId}` : `${capsuleName}:${capsuleVersion}`;
  const chars = Array.from(value);
  if (chars.length <= PROMPT_CACHE_KEY_MAX) return value;
  const hex = createHash('sha256').update(value, 'utf8').digest('hex').slice(0, PROMPT_CACHE_KEY_HASH_HEX);
  return `${chars.slice(0, PROMPT_CACHE_KEY_PREFIX).join('')}:${hex}`;
}
