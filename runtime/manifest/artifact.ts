/**
 * An artifact's own `murmur.yaml` (what the registry stores next to the component). For hooks it
 * carries the hook contract (binding / execution_mode / commit_policy), checked against the commit
 * table (checkHookContract) here — at parse time, so staging refuses a bad contract before any
 * component is compiled.
 */
import path from 'node:path';
import { MurError, isMurError } from '../errors.ts';
import { COMMIT_TABLE, checkHookContract, handlersFor, type CommitPolicy, type ExecutionMode, type Handler } from '../contracts/commit-table.ts';
import { manifestBound, readBoundedFile } from './bounded-file.ts';
import { ErrorCollector } from './errors.ts';
import { ARTIFACT_SCHEMA, type ArtifactRuntime } from './schema.ts';
import { walkYaml } from './validate.ts';

export interface HookContractResolved {
  /** Undefined = every session event except `on-stage`. */
  binding?: Handler;
  /** The handlers the hook receives (from the binding). */
  handlers: readonly Handler[];
  executionMode: ExecutionMode;
  commitPolicy: CommitPolicy;
}

export interface ArtifactManifest {
  name: string;
  version: string;
  runtime: ArtifactRuntime;
  description: string;
  tags: string[];
  inputSchema?: Record<string, unknown>;
  outputSchema?: Record<string, unknown>;
  /** Present exactly when runtime is `hook` (defaults applied). */
  hook?: HookContractResolved;
  /**
   * The manifest said `runtime: wasm` (the reference runtime's spelling): a component whose role
   * (tool or driver) the capsule entry gives. `runtime` reads `tool` until staging applies it.
   */
  roleFromEntry?: boolean;
  /** `requires_files`: exactly what `mur pack` packages besides murmur.yaml. */
  requiresFiles?: string[];
  file: string;
}

const NATIVE_HINT =
  'build the tool as a WebAssembly component (wasm32-wasip2, or componentize-js) and write `runtime: tool` (or `runtime: wasm`); native binaries do not run here';

const CONTRACT_KEYS = ['binding', 'execution_mode', 'commit_policy'] as const;

/** Parses and validates an artifact manifest. Throws MurErrorList E-MAN-000 with every problem. */
export function parseArtifactManifest(text: string, file: string): ArtifactManifest {
  const errors = new ErrorCollector();
  const w = walkYaml(text, file, ARTIFACT_SCHEMA, errors);
  let hook: HookContractResolved | undefined;
  if (w) {
    const v = w.value as Record<string, unknown>;
    for (const k of ['runtime', 'implementation', 'execution'] as const) {
      if (v[k] !== 'native') continue;
      const p = w.keyLocs.get(k) ?? { line: 1, column: 1 };
      errors.add('E-MAN-004', `'${k}: native' is not supported: only WebAssembly components run in this runtime`, NATIVE_HINT, {
        file,
        line: p.line,
        column: p.column,
        field: k,
      });
    }
    if (v.runtime === 'wasm') {
      v.runtime = 'tool';
      v.roleFromEntry = true;
    }
    const runtime = v.runtime as ArtifactRuntime | undefined;
    if (runtime !== undefined && runtime !== 'hook') {
      for (const k of CONTRACT_KEYS) {
        const p = w.keyLocs.get(k);
        if (p) {
          errors.add('E-MAN-015', `'${k}' applies to hooks only; this artifact has runtime '${runtime}'`, `remove \`${k}:\`, or set \`runtime: hook\``, {
            file,
            line: p.line,
            column: p.column,
            field: k,
          });
        }
      }
    } else if (runtime === 'hook') {
      const binding = v.binding as Handler | undefined;
      const executionMode = v.executionMode as ExecutionMode | undefined;
      const commitPolicy = v.commitPolicy as CommitPolicy | undefined;
      // Only check the contract when every declared field parsed (else the enum error already stands).
      const allParsed = CONTRACT_KEYS.every(
        (k) => !w.keyLocs.has(k) || v[k === 'binding' ? 'binding' : k === 'execution_mode' ? 'executionMode' : 'commitPolicy'] !== undefined,
      );
      if (allParsed) {
        const violation = checkHookContract({ binding, execution_mode: executionMode, commit_policy: commitPolicy });
        if (violation) {
          const p = w.locs.get(violation.field) ?? w.keyLocs.get('binding') ?? w.keyLocs.get('runtime') ?? { line: 1, column: 1 };
          errors.add('E-MAN-020', `hook contract violation: ${violation.message}`, contractHint(violation.field, binding, commitPolicy), {
            file,
            line: p.line,
            column: p.column,
            field: violation.field,
          });
        }
      }
      hook = {
        ...(binding ? { binding } : {}),
        handlers: handlersFor(binding),
        executionMode: executionMode ?? 'blocking',
        commitPolicy: commitPolicy ?? 'none',
      };
    }
  }
  errors.throwIfAny('E-MAN-000', `invalid artifact manifest ${file}`);
  const v = w!.value as Record<string, unknown>;
  for (const k of ['binding', 'executionMode', 'commitPolicy', 'implementation', 'execution']) delete v[k];
  return { ...(v as unknown as Omit<ArtifactManifest, 'file' | 'hook'>), ...(hook ? { hook } : {}), file };
}

export function contractHint(field: string, binding: Handler | undefined, policy: CommitPolicy | undefined): string {
  if (field === 'commit_policy' && binding === undefined) {
    return 'add `binding: on-shell` or `binding: on-tool-call` to make a policy hook, or set `commit_policy: none`';
  }
  if (field === 'commit_policy' && binding !== undefined) {
    const honored = COMMIT_TABLE[binding].policy;
    const others = (Object.keys(COMMIT_TABLE) as Handler[]).filter((h) => COMMIT_TABLE[h].policy === policy);
    return `set \`commit_policy: ${honored}\`${honored === 'none' ? '' : ' or `none`'}${others.length ? `, or bind the hook to ${others.map((h) => `'${h}'`).join(' / ')} which honors '${policy}'` : ''}`;
  }
  if (binding !== undefined && !COMMIT_TABLE[binding].asyncAllowed) return `remove \`execution_mode: async\`; '${binding}' hooks always run blocking`;
  return 'set `execution_mode: blocking`, or set `commit_policy: none` if the hook commits nothing';
}

/** Reads `<dir>/murmur.yaml` as an artifact manifest. */
export function loadArtifactManifest(dir: string): ArtifactManifest {
  const file = path.join(path.resolve(dir), 'murmur.yaml');
  let text: string;
  try {
    text = readBoundedFile(file, manifestBound('artifact', file));
  } catch (e) {
    if (isMurError(e)) throw e;
    throw new MurError('E-MAN-021', `cannot read artifact manifest ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`, {
      hint: 'an artifact directory holds its own murmur.yaml (name, version, runtime, ...) next to its .wasm',
      location: { file },
      cause: e,
    });
  }
  return parseArtifactManifest(text, file);
}
