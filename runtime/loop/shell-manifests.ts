/**
 * Shell tool enrichment (hooks.md, `write-manifests`): an `on-stage` hook may write
 * `tools/<binary>/murmur.yaml` for an allowlisted shell binary, and its `description` then tells the
 * model what the binary is for, instead of the generic line. Read once per session; a file that is
 * missing, unreadable or malformed leaves the generic description (the hook's fault, not the
 * session's). The parameters stay `{command}`: that is how the shell tool is called.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';

/** Longest description taken from a written manifest (the model reads it every turn). */
export const MAX_SHELL_DESCRIPTION = 1024;

export function shellManifestDescription(workdir: string, binary: string): string | undefined {
  let doc: unknown;
  try {
    doc = parse(readFileSync(join(workdir, 'tools', binary, 'murmur.yaml'), 'utf8'));
  } catch {
    return undefined;
  }
  const d = doc && typeof doc === 'object' ? (doc as { description?: unknown }).description : undefined;
  if (typeof d !== 'string') return undefined;
  // One paragraph of plain text: control characters dropped, whitespace folded, bounded.
  const clean = d
    // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are exactly what is stripped here
    .replace(/[\u0000-\u001f\u007f]+/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
  if (clean === '') return undefined;
  return clean.length > MAX_SHELL_DESCRIPTION ? `${clean.slice(0, MAX_SHELL_DESCRIPTION - 1)}…` : clean;
}
