/**
 * The component worker's bundle (runtime/host/wasi-io/bundle.ts): preview2-shim inside it with its
 * I/O thread replaced, and every Node built-in taken through process.getBuiltinModule, since an ES
 * import of one builds its whole namespace (on Node 24 `node:http` then loads undici, http2, tls,
 * zlib: 6 MiB in every worker; the runtime image's own test checks what its Node loads).
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { bundleWorker } from '../../runtime/host/wasi-io/bundle.ts';

const ENTRY = fileURLToPath(new URL('../../runtime/host/worker.ts', import.meta.url));

describe('the component worker bundle', () => {
  it('imports no Node built-in as an ES module: each comes through process.getBuiltinModule', async () => {
    const code = await bundleWorker(ENTRY);
    expect(code.match(/(?:from|import)\s*\(?\s*["'](?:node:)?[a-z_/]+["']/g) ?? []).toEqual([]);
    const taken = [...code.matchAll(/process\.getBuiltinModule\("([^"]+)"\)/g)].map((m) => m[1]).sort();
    expect(taken).toEqual(expect.arrayContaining(['node:fs', 'node:http', 'node:worker_threads']));
  });
});
