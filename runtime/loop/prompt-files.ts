/**
 * The prompt texts a session reads from its manifest: `inference.system_prompt(_file)` and
 * `inference.compaction.system_prompt(_file)`, files read again through the bounded reader.
 */
import { isAbsolute, join } from 'node:path';
import { MurError, isMurError } from '../errors.ts';
import { promptFileBound, readBoundedFile } from '../manifest/index.ts';
import type { StagedCapsule } from '../session/stage.ts';

/**
 * `inference.compaction.system_prompt`, or the contents of `system_prompt_file` (relative to the
 * capsule folder): what the compaction event hands a compaction hook. Undefined when unset.
 */
export function compactionPrompt(staged: StagedCapsule): string | undefined {
  const c = staged.manifest.inference?.compaction;
  if (!c) return undefined;
  if (c.systemPrompt !== undefined) return c.systemPrompt;
  if (c.systemPromptFile === undefined) return undefined;
  const p = isAbsolute(c.systemPromptFile) ? c.systemPromptFile : join(staged.capsuleDir, c.systemPromptFile);
  return readPromptFile(staged, 'inference.compaction.system_prompt_file', c.systemPromptFile, p);
}

/** `inference.system_prompt`, or the contents of `system_prompt_file`; undefined when unset. */
export function manifestPrompt(staged: StagedCapsule): string | undefined {
  const inf = staged.manifest.inference!;
  if (inf.systemPrompt !== undefined) return inf.systemPrompt;
  if (inf.systemPromptFile !== undefined) {
    const p = isAbsolute(inf.systemPromptFile) ? inf.systemPromptFile : join(staged.capsuleDir, inf.systemPromptFile);
    return readPromptFile(staged, 'inference.system_prompt_file', inf.systemPromptFile, p);
  }
  return undefined;
}

/**
 * A prompt file, read through the manifest's bounded reader: validation checked it, but it is read
 * again here and may have been swapped for a FIFO or grown since (E-MAN-030 / E-MAN-032).
 */
function readPromptFile(staged: StagedCapsule, field: string, rel: string, p: string): string {
  try {
    return readBoundedFile(p, promptFileBound(rel, p), { file: staged.manifest.file, field });
  } catch (e) {
    if (isMurError(e)) throw e;
    throw new MurError('E-RUN-009', `cannot read ${field} ${p}: ${(e as Error).message}`, { location: { file: staged.manifest.file, field } });
  }
}
