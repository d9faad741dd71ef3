/**
 * One loaded hook: what the bus keeps per hook (contract, component, the handlers it exports and
 * receives, its log, host imports, limits) and how it starts an instance with its grant.
 */
import { appendFileSync } from 'node:fs';
import { ComponentInstance, DEFAULT_LIMITS, type HostImports, type LoadedComponent, type NetworkDenial } from '../host/index.ts';
import { handlersFor, isPolicyHook, type Handler } from '../contracts/commit-table.ts';
import { hookImports, type ImportState } from './imports.ts';
import type { AsyncLane } from './lane.ts';
import type { HookServices, StagedHook } from './types.ts';

/** Deadline for starting a hook instance at load (a cold SpiderMonkey component takes ~0.5 s). */
const INSTANTIATE_DEADLINE_MS = 60_000;

/** One loaded hook: its contract, component, exports, log, host imports and limits. */
export class Hook {
  readonly spec: StagedHook;
  readonly name: string;
  readonly component: LoadedComponent;
  readonly exports: ReadonlySet<Handler>;
  readonly receives: ReadonlySet<Handler>;
  readonly logPath: string;
  readonly state: ImportState = { spendRefused: false };
  readonly imports: HostImports;
  readonly deadlineMs: number;
  readonly memoryBytes: number;
  instance: ComponentInstance | undefined;
  lane: AsyncLane | undefined;

  constructor(spec: StagedHook, component: LoadedComponent, exports: ReadonlySet<Handler>, logPath: string, services: HookServices) {
    this.spec = spec;
    this.name = spec.name;
    this.component = component;
    this.exports = exports;
    this.receives = new Set(handlersFor(spec.binding));
    this.logPath = logPath;
    this.imports = hookImports(spec, services, this.state);
    this.deadlineMs = spec.deadlineMs ?? DEFAULT_LIMITS.hookDeadlineMs;
    this.memoryBytes = spec.memoryBytes ?? DEFAULT_LIMITS.memoryBytes;
  }

  get async(): boolean {
    return this.spec.executionMode === 'async';
  }

  /** A policy hook for `handler`: bound to it, declaring the policy it honors at its decision point (the commit table). */
  isPolicyFor(handler: Handler): boolean {
    return this.spec.binding === handler && isPolicyHook(this.spec.binding, this.spec.commitPolicy);
  }

  newInstance(onNetworkDenied?: (d: NetworkDenial) => void): ComponentInstance {
    return new ComponentInstance(this.component, {
      ...(onNetworkDenied ? { onNetworkDenied } : {}),
      grants: {
        env: { ...(this.spec.env ?? {}) },
        networkAllow: [...(this.spec.networkAllow ?? [])],
        preopen: this.spec.preopen,
        logFile: this.logPath,
      },
      imports: this.imports,
      deadlineField: 'capabilities.limits.hook_deadline_seconds',
      // Instantiation (at load) gets a generous deadline of its own; each handler call passes the
      // hook's deadline explicitly.
      deadlineMs: Math.max(this.deadlineMs, INSTANTIATE_DEADLINE_MS),
      memoryBytes: this.memoryBytes,
    });
  }

  log(line: string): void {
    try {
      appendFileSync(this.logPath, `${new Date().toISOString()} hook ${this.name}: ${line}\n`);
    } catch {
      // The log is best effort; a full disk must not take the session down.
    }
  }
}
