/**
 * The files a capsule is read from (issue 38 §5): murmur.yaml and the system prompt files it names
 * are read only when they are regular files within their documented size, so a FIFO, a device or a
 * runaway file is refused when read, naming it, instead of blocking or filling memory.
 * (A murmur.yaml that is a FIFO or /dev/zero is run through `mur run` in test/cli/run-manifest-file.test.ts,
 * where a hang before the fix cannot take the test process with it.)
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadManifest } from '../../runtime/manifest/capsule.ts';
import { loadArtifactManifest } from '../../runtime/manifest/artifact.ts';
import { MAX_MANIFEST_BYTES, MAX_SYSTEM_PROMPT_BYTES } from '../../runtime/manifest/schema.ts';
import type { MurError } from '../../runtime/errors.ts';
import { MurErrorList } from '../../runtime/manifest/errors.ts';
import { MINIMAL, errorAt, errorsOf } from './helpers.ts';

const AGENT = `${MINIMAL}artifacts:
  - name: drv
    version: 1.0.0
    runtime: driver
inference:
  driver:
    artifact: drv
  model: m
`;

const dir = () => mkdtempSync(path.join(os.tmpdir(), 'mur-man-files-'));

function thrown(f: () => unknown): MurError {
  try {
    f();
  } catch (e) {
    return e as MurError;
  }
  throw new Error('expected an error');
}

describe('murmur.yaml is read as a bounded regular file', () => {
  it('a directory named murmur.yaml is refused as not a regular file (E-MAN-030)', () => {
    const d = dir();
    mkdirSync(path.join(d, 'murmur.yaml'));
    const e = thrown(() => loadManifest(d));
    expect(e.code).toBe('E-MAN-030');
    expect(e.message).toBe(`capsule manifest ${path.join(d, 'murmur.yaml')} is a directory, not a regular file`);
    expect(e.location?.file).toBe(path.join(d, 'murmur.yaml'));
  });

  it('a manifest over the 1 MiB limit is refused before it is parsed (E-MAN-031)', () => {
    const d = dir();
    writeFileSync(path.join(d, 'murmur.yaml'), `${MINIMAL}# ${'x'.repeat(MAX_MANIFEST_BYTES)}\n`);
    const e = thrown(() => loadManifest(d));
    expect(e.code).toBe('E-MAN-031');
    expect(e.message).toMatch(/^capsule manifest .*murmur\.yaml is \d+ bytes, over the limit of 1048576 bytes \(1 MiB\)$/);
    expect(e.hint).toContain('system_prompt_file');
  });

  it('an artifact manifest gets the same bound', () => {
    const d = dir();
    writeFileSync(path.join(d, 'murmur.yaml'), `name: t\nversion: '1'\n# ${'x'.repeat(MAX_MANIFEST_BYTES)}\n`);
    expect(thrown(() => loadArtifactManifest(d)).code).toBe('E-MAN-031');
  });
});

describe('system prompts are bounded', () => {
  it('an inline system_prompt over the limit is refused at its field and line (E-MAN-032)', () => {
    const e = errorAt(errorsOf(`${AGENT}  system_prompt: ${'p'.repeat(MAX_SYSTEM_PROMPT_BYTES + 1)}\n`), 'inference.system_prompt');
    expect(e.code).toBe('E-MAN-032');
    expect(e.location?.line).toBe(11);
    expect(e.message).toBe(`'system_prompt' is ${MAX_SYSTEM_PROMPT_BYTES + 1} bytes, over the limit of 1048576 bytes (1 MiB)`);
  });

  it('a system_prompt_file over the limit is refused at validation (E-MAN-032), naming the file and the field', () => {
    const d = dir();
    writeFileSync(path.join(d, 'murmur.yaml'), `${AGENT}  system_prompt_file: big.md\n`);
    writeFileSync(path.join(d, 'big.md'), 'p'.repeat(MAX_SYSTEM_PROMPT_BYTES + 1));
    const l = thrown(() => loadManifest(d)) as MurErrorList;
    expect(l).toBeInstanceOf(MurErrorList);
    const e = errorAt(l, 'inference.system_prompt_file');
    expect(e.code).toBe('E-MAN-032');
    expect(e.message).toBe(
      `system_prompt_file 'big.md' (${path.join(d, 'big.md')}) is ${MAX_SYSTEM_PROMPT_BYTES + 1} bytes, over the limit of 1048576 bytes (1 MiB)`,
    );
    expect(e.location).toMatchObject({ file: path.join(d, 'murmur.yaml'), line: 11 });
  });

  it('a system_prompt_file that is a FIFO is refused as not a regular file (E-MAN-030), not reported missing', () => {
    const d = dir();
    writeFileSync(path.join(d, 'murmur.yaml'), `${AGENT}  compaction:\n    system_prompt_file: pipe\n`);
    execFileSync('mkfifo', [path.join(d, 'pipe')]);
    const e = errorAt(thrown(() => loadManifest(d)) as MurErrorList, 'inference.compaction.system_prompt_file');
    expect(e.code).toBe('E-MAN-030');
    expect(e.message).toBe(`system_prompt_file 'pipe' (${path.join(d, 'pipe')}) is a FIFO (named pipe), not a regular file`);
  });
});
