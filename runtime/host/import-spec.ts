/** Which host imports a component gets beyond WASI: the check both kinds of instance make before starting one. */
import { ComponentLoadError } from './errors.ts';
import type { ImportSpec } from './protocol.ts';
import type { LoadedComponent } from './transpile-cache.ts';

// biome-ignore lint/suspicious/noExplicitAny: a host function of any signature must be assignable here; unknown[] parameters would refuse every typed one
export type HostFn = (...args: any[]) => unknown | Promise<unknown>;
/** Host imports by unversioned interface name, functions by jco's camelCase name. */
export type HostImports = Record<string, Record<string, HostFn>>;

/** Which host imports the component needs beyond WASI; fails naming any the host does not provide. */
export function importSpecFor(c: LoadedComponent, imports: HostImports): ImportSpec {
  const spec: ImportSpec = {};
  for (const iface of c.imports) {
    if (iface.startsWith('wasi:')) continue;
    const impl = imports[iface];
    if (!impl) {
      throw new ComponentLoadError(
        c.name,
        `imports ${iface}, which the runtime does not provide to this kind of component`,
        `provided here: ${Object.keys(imports).sort().join(', ') || 'no host interfaces'}`,
      );
    }
    spec[iface] = Object.keys(impl);
  }
  return spec;
}
