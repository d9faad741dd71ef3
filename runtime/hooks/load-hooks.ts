/**
 * Loading the staged hooks, before the bus exists: each hook's name and contract (commit table)
 * checked, its component loaded (pin, transpile cache), its exports checked (the six session
 * handlers required; a missing `on-stage` is logged). Instances are started by the bus.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { MurError } from '../errors.ts';
import { loadComponent } from '../host/index.ts';
import { COMMIT_TABLE, HANDLERS, checkHookContract, type Handler } from '../contracts/commit-table.ts';
import { lifecycleExports } from './exports.ts';
import { Hook } from './hook.ts';
import type { HookServices, StagedHook } from './types.ts';

/** The six session handlers every hook component must export. */
export const REQUIRED_HANDLERS: readonly Handler[] = HANDLERS.filter((h) => COMMIT_TABLE[h].required);
/** The lifecycle interface version this runtime speaks (minor 0.9). */
export const LIFECYCLE_VERSION = '0.9.0';

const NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/** Checks and loads every staged hook, in manifest order; its log goes to `<workdir>/logs/hook-<name>.log`. */
export async function loadHooks(o: { hooks: StagedHook[]; workdir: string; services: HookServices; cacheDir?: string }): Promise<Hook[]> {
  const logs = join(o.workdir, 'logs');
  mkdirSync(logs, { recursive: true });
  const seen = new Set<string>();
  for (const s of o.hooks) {
    if (!NAME_RE.test(s.name)) {
      throw new MurError('E-HOOK-004', `hook name '${s.name}' is not usable as a log file name`, {
        hint: 'hook names are letters, digits, `.`, `_` and `-`, starting with a letter or digit',
      });
    }
    if (seen.has(s.name)) throw new MurError('E-HOOK-004', `two hooks are named '${s.name}'`, { hint: 'give each hook artifact its own name' });
    seen.add(s.name);
    const v = checkHookContract({ binding: s.binding, execution_mode: s.executionMode, commit_policy: s.commitPolicy });
    if (v)
      throw new MurError('E-HOOK-001', `hook '${s.name}': hook contract violation: ${v.message}`, {
        hint: "fix binding / execution_mode / commit_policy in the hook artifact's murmur.yaml",
        location: { field: v.field },
      });
  }
  const components = await Promise.all(
    o.hooks.map((s) => loadComponent(s.wasmPath, { name: s.name, ...(s.sha256 ? { sha256: s.sha256 } : {}), ...(o.cacheDir ? { cacheDir: o.cacheDir } : {}) })),
  );
  const hooks: Hook[] = [];
  for (const [i, s] of o.hooks.entries()) {
    const c = components[i]!;
    const ex = lifecycleExports(c);
    if (!ex?.version.startsWith('0.9.')) {
      throw new MurError(
        'E-HOOK-003',
        `hook '${s.name}': component does not export murmur:hook/lifecycle@${LIFECYCLE_VERSION}${ex ? ` (it exports @${ex.version})` : ''}`,
        {
          hint: 'build the hook against the murmur:runtime/hook world (wit/runtime/worlds.wit)',
        },
      );
    }
    const missing = REQUIRED_HANDLERS.filter((h) => !ex.handlers.has(h));
    if (missing.length) {
      throw new MurError(
        'E-HOOK-002',
        `hook '${s.name}': component is missing the required export${missing.length > 1 ? 's' : ''} ${missing.map((m) => `'${m}'`).join(', ')}`,
        {
          hint: `a hook component exports all six session handlers (${REQUIRED_HANDLERS.join(', ')}); on-stage, on-task-start and on-task-end are optional`,
        },
      );
    }
    const hook = new Hook(s, c, ex.handlers, join(logs, `hook-${s.name}.log`), o.services);
    if (!ex.handlers.has('on-stage'))
      hook.log(
        `component exports no 'on-stage' handler; it is never staged${s.binding === 'on-stage' ? ' (its binding is on-stage, so it does nothing)' : ''}`,
      );
    hooks.push(hook);
  }
  return hooks;
}
