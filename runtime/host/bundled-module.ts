/**
 * The modules of this folder that run with preview2-shim inside them, its I/O worker replaced by
 * the in-thread backend (wasi-io/bundle.ts): the component worker (`worker`) and the WASI of a
 * component run on the calling thread (`inline-wasi`, inline.ts). From compiled JavaScript (dist/,
 * the image) each is `<name>.js` beside this file's code (`npm run build` and the image bundle
 * them). From the TypeScript sources each is bundled once to plain JavaScript (cached by source
 * hash): running it through the tsx loader instead would route every import through the loader,
 * which costs ≈ 180 ms per component glue module (measured) against ≈ 10 ms for a plain import.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createRequire } from 'node:module';
import { cacheRoot } from '../wit/packages.ts';

const here = fileURLToPath(new URL('.', import.meta.url));

/** The URL to import the module `name` (`worker` or `inline-wasi`) from. */
export async function bundledModule(name: 'worker' | 'inline-wasi'): Promise<string> {
  if (!import.meta.url.endsWith('.ts')) return new URL(`./${name}.js`, import.meta.url).href;
  // Every source the bundle can contain: this folder, its wasi-io/, the modules they import, and
  // the WASI shim's version (the bundle includes it).
  const hash = createHash('sha256');
  hash.update(readFileSync(join(dirname(createRequire(import.meta.url).resolve('@bytecodealliance/preview2-shim')), '../../package.json')));
  for (const dir of [here, join(here, 'wasi-io'), join(here, '../net'), join(here, '../contracts')]) {
    for (const f of readdirSync(dir)
      .filter((n) => n.endsWith('.ts'))
      .sort())
      hash.update(f).update(readFileSync(join(dir, f)));
  }
  // The modules above this folder the bundles import (layer 0).
  hash.update(readFileSync(join(here, '../last-resort-gc.ts')));
  hash.update(readFileSync(join(here, '../secrets.ts')));
  // Beside the component cache, which is writable wherever the runtime runs.
  const out = join(cacheRoot(), 'host', `${name}-${hash.digest('hex').slice(0, 16)}.mjs`);
  if (!existsSync(out)) {
    const tmp = `${out}.${process.pid}.tmp.mjs`;
    mkdirSync(dirname(out), { recursive: true });
    // Self-contained (every package inside it), so it runs wherever the cache lives, with no
    // node_modules above it.
    const { bundleWorker } = await import('./wasi-io/bundle.ts');
    writeFileSync(tmp, await bundleWorker(join(here, `${name}.ts`)));
    renameSync(tmp, out);
  }
  return pathToFileURL(out).href;
}
