/**
 * The provider key, taken out of the environment at start (bin/scrub-key.mjs already moved it out of
 * process.env before tsx could start its esbuild child). `takeInferenceKey()` reads it from
 * `MURMUR_INFERENCE_API_KEY_FILE` (a mounted Secret file) or `MURMUR_INFERENCE_API_KEY`, then deletes
 * both from `process.env`, so no process the runtime starts (shell tools, hooks) can inherit it,
 * whatever strip list applies. What the kernel still shows of the runtime's own start-up
 * environment (/proc/<pid>/environ) is closed by making the runtime non-dumpable: the image installs
 * node execute-only, and the kernel marks a non-root process started from a binary it cannot read
 * as non-dumpable, which makes its /proc files (environ, mem, fd/…) root's (docs/security.md).
 */
import { readFileSync } from 'node:fs';
import { MurError } from '../errors.ts';

let held: string | undefined;

/** Where bin/scrub-key.mjs parks the values it took out of process.env before tsx started. */
const PARKED = Symbol.for('murmur.inference-key');

export function takeInferenceKey(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const parked = (globalThis as Record<symbol, { file?: string; value?: string } | undefined>)[PARKED];
  const file = env.MURMUR_INFERENCE_API_KEY_FILE ?? parked?.file;
  const fromEnv = env.MURMUR_INFERENCE_API_KEY ?? parked?.value;
  delete env.MURMUR_INFERENCE_API_KEY_FILE;
  delete env.MURMUR_INFERENCE_API_KEY;
  if (file !== undefined && file !== '') {
    try {
      held = readFileSync(file, 'utf8').trim();
    } catch (e) {
      throw new MurError('E-RUN-030', `cannot read the inference API key file ${file}: ${(e as NodeJS.ErrnoException).code ?? String(e)}`, {
        hint: 'MURMUR_INFERENCE_API_KEY_FILE must name a readable file holding only the key (a mounted Secret)',
        location: { file },
      });
    }
  } else if (fromEnv !== undefined && fromEnv !== '') held = fromEnv;
  return held;
}

/** The key taken at start (undefined when none was given). */
export function heldInferenceKey(): string | undefined {
  return held;
}
