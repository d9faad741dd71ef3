/**
 * What a committed `write-manifests` (on-stage) does: each entry written to
 * `<workdir>/tools/<binary-name>/murmur.yaml` (through a temporary file and a rename, so a shell
 * tool never reads half a manifest); an entry naming anything but one directory is skipped.
 */
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Hook } from './hook.ts';
import type { ToolManifest } from './types.ts';

/** A `binary-name` that names exactly one directory under `tools/`. */
export function safeBinaryName(n: string): boolean {
  return n.length > 0 && n.length <= 255 && !/[/\\\0]/.test(n) && !n.includes('..') && n !== '.';
}

/** Writes each manifest, overwriting; a failure is a line in the hook's log, never a throw. */
export function writeToolManifests(h: Hook, workdir: string, list: ToolManifest[]): void {
  for (const t of list) {
    if (!safeBinaryName(t.binaryName)) {
      h.log(
        `on-stage write-manifests: binary-name ${JSON.stringify(t.binaryName)} is not a single directory name under tools/ (empty, '/', '\\' or '..'); entry skipped`,
      );
      continue;
    }
    const dir = join(workdir, 'tools', t.binaryName);
    try {
      mkdirSync(dir, { recursive: true });
      const file = join(dir, 'murmur.yaml');
      const tmp = `${file}.tmp-${process.pid}`;
      writeFileSync(tmp, t.content);
      renameSync(tmp, file);
    } catch (e) {
      h.log(`on-stage write-manifests: cannot write tools/${t.binaryName}/murmur.yaml: ${(e as Error).message}`);
    }
  }
}
