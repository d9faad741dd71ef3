/** From what staging produced (runtime/session/stage.ts) to what the HookBus loads. */
import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { guestEnv, httpAllow } from '../host/grants.ts';
import type { StagedHook as SessionStagedHook } from '../session/stage.ts';
import type { StagedHook } from './types.ts';

export interface HookGrantOptions {
  hostEnv?: NodeJS.ProcessEnv;
  /** `murmur:task-io/read` answers instead of `not-granted`. */
  taskIoRead?: boolean;
  /** `murmur:conversation/read` answers instead of `not-granted`. */
  conversationRead?: boolean;
}

/** One staged hook as the bus takes it: its grant turned into env / preopen / network, limits in ms. */
export function busHookFrom(h: SessionStagedHook, workdir: string, o: HookGrantOptions = {}): StagedHook {
  const env = guestEnv(h.grant.env.allow, o.hostEnv ?? process.env);
  if (h.config !== undefined) env.MURMUR_ARTIFACT_CONFIG = JSON.stringify(h.config);
  let preopen: string | undefined;
  if (h.grant.filesystem.scope !== null) {
    preopen = resolve(workdir, h.grant.filesystem.scope || '.');
    mkdirSync(preopen, { recursive: true });
  }
  return {
    name: h.name,
    wasmPath: h.wasmPath,
    ...(h.binding ? { binding: h.binding } : {}),
    executionMode: h.executionMode,
    commitPolicy: h.commitPolicy,
    onOverflow: h.onOverflow,
    deadlineMs: h.deadlineSeconds * 1000,
    memoryBytes: h.memoryBytes,
    ...(preopen ? { preopen } : {}),
    networkAllow: httpAllow(h.grant.network.allow),
    env,
    grants: { taskIoRead: o.taskIoRead === true, conversationRead: o.conversationRead === true },
  };
}
