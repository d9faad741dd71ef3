/**
 * vitest setupFile: each test file gets its own temp folder under the run's (tmp-setup.ts), removed
 * when the file's last afterAll has run (this hook is registered first, so under vitest's default
 * 'stack' hook order it runs last, after the file has stopped the processes it started). A whole
 * run makes ~1,600 temp dirs holding copies of components (≈ 10 GB on 2026-12-05); removed only at
 * the run's end they filled the disk the real node's kubelet needs, and a killed run left them all.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';

const parent = tmpdir();
const dir = mkdtempSync(join(parent, 'capsule-tests-file-'));
process.env.TMPDIR = dir;

afterAll(() => {
  process.env.TMPDIR = parent;
  rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
});
