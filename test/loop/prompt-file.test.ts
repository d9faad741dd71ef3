/**
 * The system prompt files a session reads when it opens go through the manifest's bounded reader:
 * validation checked them at staging, but a file that grew or was swapped for a FIFO since is
 * refused when read (E-MAN-032 / E-MAN-030), naming the manifest field, instead of being read whole
 * or blocking the runtime.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { compactionPrompt } from '../../runtime/loop/capsule-session.ts';
import { loadManifest } from '../../runtime/manifest/capsule.ts';
import { MAX_SYSTEM_PROMPT_BYTES } from '../../runtime/manifest/schema.ts';
import type { StagedCapsule } from '../../runtime/session/stage.ts';
import type { MurError } from '../../runtime/errors.ts';

/** A capsule whose compaction prompt is `summary.md`, validated while that file is small. */
function capsule(): { dir: string; staged: StagedCapsule } {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'mur-prompt-file-'));
  writeFileSync(
    path.join(dir, 'murmur.yaml'),
    'name: demo\nversion: 1.0.0\nartifacts:\n  - name: drv\n    version: 1.0.0\n    runtime: driver\ninference:\n  driver:\n    artifact: drv\n  model: m\n  compaction:\n    system_prompt_file: summary.md\n',
  );
  writeFileSync(path.join(dir, 'summary.md'), 'Summarise.');
  // compactionPrompt reads only the manifest and the capsule folder of what staging hands over.
  const staged = { manifest: loadManifest(dir), capsuleDir: dir } as StagedCapsule;
  return { dir, staged };
}

function refusal(staged: StagedCapsule): MurError {
  try {
    compactionPrompt(staged);
  } catch (e) {
    return e as MurError;
  }
  throw new Error('expected the prompt file to be refused');
}

describe('session prompt files', () => {
  it('reads a prompt file within the bound', () => {
    expect(compactionPrompt(capsule().staged)).toBe('Summarise.');
  });

  it('a prompt file grown past the bound after validation is refused when the session reads it (E-MAN-032)', () => {
    const { dir, staged } = capsule();
    writeFileSync(path.join(dir, 'summary.md'), 's'.repeat(MAX_SYSTEM_PROMPT_BYTES + 1));
    const e = refusal(staged);
    expect(e.code).toBe('E-MAN-032');
    expect(e.location).toMatchObject({ file: path.join(dir, 'murmur.yaml'), field: 'inference.compaction.system_prompt_file' });
  });

  it('a prompt file swapped for a FIFO after validation is refused without waiting for a writer (E-MAN-030)', () => {
    const { dir, staged } = capsule();
    const file = path.join(dir, 'summary.md');
    rmSync(file);
    execFileSync('mkfifo', [file]);
    const e = refusal(staged);
    expect(e.code).toBe('E-MAN-030');
    expect(e.message).toBe(`system_prompt_file 'summary.md' (${file}) is a FIFO (named pipe), not a regular file`);
  });
});
