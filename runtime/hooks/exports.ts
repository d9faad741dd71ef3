/**
 * Which lifecycle handlers a hook component exports. jco's glue (transpiled once, cached on disk)
 * ends with the export object: `return { lifecycle: X, 'murmur:hook/lifecycle@0.9.0': X }`, and
 * `const X = { onStage: …, … }` lists the functions the component really exports.
 */
import { readFileSync } from 'node:fs';
import type { LoadedComponent } from '../host/index.ts';
import { HANDLERS, exportName, type Handler } from '../contracts/commit-table.ts';

export interface LifecycleExports {
  /** `murmur:hook/lifecycle@<version>` as exported. */
  version: string;
  handlers: Set<Handler>;
}

const cache = new Map<string, LifecycleExports | undefined>();

export function lifecycleExports(c: LoadedComponent): LifecycleExports | undefined {
  if (cache.has(c.sha256)) return cache.get(c.sha256);
  const glue = readFileSync(c.jsPath, 'utf8');
  let found: LifecycleExports | undefined;
  const ret = /'murmur:hook\/lifecycle@([0-9][^']*)':\s*([A-Za-z_$][\w$]*)/g;
  let m: RegExpExecArray | null;
  let last: RegExpExecArray | undefined;
  while ((m = ret.exec(glue))) last = m;
  if (last) {
    const [, version, v] = last;
    const decl = new RegExp(`const ${v!.replace(/\$/g, '\\$')} = \\{([^}]*)\\}`).exec(glue);
    const keys = new Set([...(decl?.[1] ?? '').matchAll(/([A-Za-z_$][\w$]*)\s*:/g)].map((k) => k[1]!));
    found = { version: version!, handlers: new Set(HANDLERS.filter((h) => keys.has(exportName(h)))) };
  }
  cache.set(c.sha256, found);
  return found;
}
