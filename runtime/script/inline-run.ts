/**
 * `mur run` of a script capsule on the main thread (host/inline.ts): the capsule component and the
 * tools it invokes run inside the one thread the process has anyway, not a worker thread each.
 * `mur run` serves nothing while the capsule runs, so the thread is free; `mur serve` keeps the
 * component workers (its thread answers A2A requests meanwhile).
 *
 * Only a capsule whose host imports can all be answered without waiting runs this way:
 *  - the capsule imports no host interface but `murmur:tool-registry/invoke` (and the tool types'
 *    `murmur:tool/run`): shell, artifact pulls and `message/send` wait for a child process, the
 *    registry or the network;
 *  - it names no MCP servers (their tools are called over HTTP);
 *  - its network grant is empty (a component thread's outgoing HTTP is performed by the event loop
 *    of the main thread, which would be the very thread waiting), so is every tool's (clamped to it);
 *  - every tool it may invoke loads, and imports nothing but `murmur:text/chunks` and
 *    `murmur:task/task` (answered at once in `mur run`). They are loaded before the run (a host
 *    import cannot wait for a load); each is instantiated at its first invoke, as in a worker.
 * Any other capsule runs in component workers as before (prepareInline returns undefined).
 */
import { httpAllow } from '../host/grants.ts';
import type { HostImports } from '../host/import-spec.ts';
import { InlineInstance, loadInline, type InlineComponent } from '../host/inline.ts';
import { loadComponent } from '../host/transpile-cache.ts';
import type { StagedArtifact } from '../session/stage.ts';
import type { CapsuleComponent } from './capsule.ts';
import type { ScriptHost, WitToolInput } from './host.ts';

const CAPSULE_IMPORTS = new Set(['murmur:tool-registry/invoke', 'murmur:tool/run']);
const TOOL_IMPORTS = new Set(['murmur:text/chunks', 'murmur:task/task']);

function hostImports(imports: readonly string[]): string[] {
  return imports.filter((i) => !i.startsWith('wasi:'));
}

/** The capsule and its tools, loaded for running on this thread. */
export class InlineRun {
  private readonly instances = new Map<string, InlineInstance>();

  constructor(
    readonly capsule: InlineComponent,
    private readonly host: ScriptHost,
    /** Each callable tool's loaded component. */
    private readonly tools: Map<string, InlineComponent>,
  ) {}

  /** Runs `tool` on this thread with `input` (its instance started on first use, and again after a fault). */
  callTool(tool: StagedArtifact, input: WitToolInput): unknown {
    let inst = this.instances.get(tool.name);
    if (!inst) {
      const loaded = this.tools.get(tool.name);
      if (!loaded) throw new Error(`tool '${tool.name}' was not loaded for this run`);
      const { grant, grants } = this.host.toolGrants(tool);
      inst = new InlineInstance(loaded, {
        grants,
        imports: this.host.toolImports(),
        onNetworkDenied: this.host.toolDenied(tool),
        deadlineMs: grant.limits.deadlineSeconds * 1000,
        memoryBytes: grant.limits.memoryBytes,
      });
      this.instances.set(tool.name, inst);
    }
    return inst.call(['run', 'run'], [input]);
  }

  /** The capsule component's host imports, each answered before it returns. */
  capsuleImports(): HostImports {
    return {
      // As in ScriptHost.imports(): importable for its types, never callable.
      'murmur:tool/run': {
        run: () => {
          throw new Error('murmur:tool/run is not callable from a capsule; call tools through murmur:tool-registry/invoke');
        },
      },
      'murmur:tool-registry/invoke': {
        invoke: (name: string, input: WitToolInput) => this.host.invokeSync(name, input ?? {}, (tool, i) => this.callTool(tool, i)),
      },
    };
  }

  close(): void {
    for (const i of this.instances.values()) i.close();
    this.instances.clear();
  }
}

/**
 * Loads the capsule and its tools for running on this thread, or returns undefined when the
 * capsule cannot run here (see the module comment: it then runs in component workers).
 */
export async function prepareInline(capsule: CapsuleComponent, host: ScriptHost): Promise<InlineRun | undefined> {
  if (hostImports(capsule.component.imports).some((i) => !CAPSULE_IMPORTS.has(i))) return undefined;
  if (host.mcp) return undefined;
  if (httpAllow(capsule.grant.network.allow).length > 0) return undefined;
  const tools = new Map<string, InlineComponent>();
  for (const a of host.callable()) {
    let c: Awaited<ReturnType<typeof loadComponent>>;
    try {
      const pin = host.pinOf(a.name);
      c = await loadComponent(a.wasmPath!, { name: a.name, ...(pin ? { sha256: pin } : {}) });
    } catch {
      // Where it would fail to load, the worker path says so at invoke, as it always has.
      return undefined;
    }
    if (hostImports(c.imports).some((i) => !TOOL_IMPORTS.has(i))) return undefined;
    tools.set(a.name, await loadInline(c));
  }
  return new InlineRun(await loadInline(capsule.component), host, tools);
}
