import { tmpdir } from 'node:os';
import { basename } from 'node:path';
import { describe, expect, it } from 'vitest';

describe('test temp dirs', () => {
  it('live under this run’s own folder, which global teardown removes', () => {
    expect(basename(tmpdir())).toMatch(/^capsule-tests-/);
  });
});
