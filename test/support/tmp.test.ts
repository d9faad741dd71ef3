import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname } from 'node:path';
import { describe, expect, it } from 'vitest';

// Captured at load: the per-file folder tmp-per-file.ts made before this file's tests.
const fileDir = tmpdir();

describe('test temp dirs', () => {
  it('live in a folder of this test file’s own, inside this run’s folder, which global teardown removes', () => {
    expect(basename(fileDir)).toMatch(/^capsule-tests-file-/);
    expect(basename(dirname(fileDir))).toMatch(/^capsule-tests-/);
    expect(existsSync(fileDir)).toBe(true);
  });
});
