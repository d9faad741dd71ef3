import { expect } from 'vitest';
import { parseManifest } from '../../runtime/manifest/capsule.ts';
import { parseArtifactManifest } from '../../runtime/manifest/artifact.ts';
import { MurErrorList } from '../../runtime/manifest/errors.ts';
import type { MurError } from '../../runtime/errors.ts';

/** Parses and returns the aggregated error (fails the test when parsing succeeds). */
export function errorsOf(text: string, kind: 'capsule' | 'artifact' = 'capsule', file = 'murmur.yaml'): MurErrorList {
  try {
    if (kind === 'capsule') parseManifest(text, file);
    else parseArtifactManifest(text, file);
  } catch (e) {
    expect(e).toBeInstanceOf(MurErrorList);
    return e as MurErrorList;
  }
  throw new Error('expected the manifest to be refused');
}

/** The single error for `field`; fails unless exactly one names it. */
export function errorAt(list: MurErrorList, field: string): MurError {
  const hits = list.errors.filter((e) => e.location?.field === field);
  expect(hits, `errors for ${field}: ${list.format()}`).toHaveLength(1);
  return hits[0]!;
}

export const MINIMAL = 'name: demo\nversion: 1.0.0\n';
