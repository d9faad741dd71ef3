// Node 20 has no fs.globSync (Node 22 does); the conformance suite imports it at load for its
// `tier-check` command only. Its client scenarios never call it: here it refuses, saying why.
export * from 'node:fs';
import fs from 'node:fs';
export default fs;
export function globSync() {
  throw new Error('fs.globSync is not available on this Node version (the conformance suite uses it for tier-check only)');
}
