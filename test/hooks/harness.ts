/** Shared setup for the HookBus tests: a temp workdir, a real trace, scripted hooks, fake services. */
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HookBus, type HookBusOptions } from '../../runtime/hooks/bus.ts';
import type { HookMessage, HookServices, StagedHook } from '../../runtime/hooks/types.ts';
import { newSessionId } from '../../runtime/session/id.ts';
import { readTrace, type TraceLine } from '../../runtime/trace/read.ts';
import { TraceWriter } from '../../runtime/trace/writer.ts';
import { fixture } from '../fixtures/build.ts';
import { variantFixture } from './fixtures.ts';

export type Script = Record<string, unknown>;

export interface InferenceCall {
  hook: string;
  req: { messages: HookMessage[]; systemPrompt?: string; model?: string };
}

export interface Harness {
  bus: HookBus;
  dir: string;
  trace: TraceWriter;
  /** `{rec, n, ev}` records hooks reported through tokens.count, in arrival order. */
  recs: Array<{ rec: string; n?: number; ev?: unknown }>;
  /** Resolves once `n` records have arrived (the hook's own report that it is running a call). */
  recorded(n: number): Promise<void>;
  inferences: InferenceCall[];
  events(type?: string): TraceLine[];
  log(name: string): string;
  services: FakeServices;
}

export interface FakeServices extends HookServices {
  infer: (req: InferenceCall['req'], hook: string) => Promise<{ text: string; modelUsed: string; inputTokens: bigint; outputTokens: bigint }>;
  io: ReturnType<HookServices['taskIo']>;
  history: HookMessage[];
}

/** Words, the test's token count: easy to reason about in budget tests. */
export function words(text: string): number {
  return text.split(/\s+/).filter(Boolean).length;
}

export async function scriptHook(name: string, script: Script, extra: Partial<StagedHook> = {}): Promise<StagedHook> {
  return {
    name,
    wasmPath: await fixture('hook-script'),
    executionMode: 'blocking',
    commitPolicy: 'none',
    ...extra,
    env: { HOOK_SCRIPT: JSON.stringify(script), ...(extra.env ?? {}) },
  };
}

export async function variantHook(fixtureName: string, name: string, extra: Partial<StagedHook> = {}): Promise<StagedHook> {
  return { name, wasmPath: await variantFixture(fixtureName), executionMode: 'blocking', commitPolicy: 'none', ...extra };
}

export async function harness(hooks: StagedHook[], opts: Partial<HookBusOptions> = {}, withTrace = true): Promise<Harness> {
  const dir = mkdtempSync(join(tmpdir(), 'hookbus-'));
  const sessionId = newSessionId();
  const trace = new TraceWriter(join(dir, 'trace.jsonl'), sessionId);
  const recs: Harness['recs'] = [];
  const recWaiters: { n: number; resolve: () => void }[] = [];
  const inferences: InferenceCall[] = [];
  const services: FakeServices = {
    infer: async (req) => ({
      text: `completion of ${req.messages.length} message(s)`,
      modelUsed: req.model ?? 'primary-model',
      inputTokens: 11n,
      outputTokens: 7n,
    }),
    io: undefined,
    history: [],
    runInference(req, hook) {
      inferences.push({ hook, req });
      return services.infer(req, hook);
    },
    countTokens(text) {
      if (text.startsWith('{"rec"')) {
        recs.push(JSON.parse(text) as Harness['recs'][number]);
        for (const w of recWaiters.filter((x) => recs.length >= x.n)) {
          recWaiters.splice(recWaiters.indexOf(w), 1);
          w.resolve();
        }
      }
      return words(text);
    },
    taskIo: () => services.io,
    conversation: () => services.history,
  };
  const bus = await HookBus.load({ hooks, workdir: dir, sessionId, services, ...(withTrace ? { trace } : {}), ...opts });
  return {
    bus,
    dir,
    trace,
    recs,
    recorded: (n) => (recs.length >= n ? Promise.resolve() : new Promise<void>((resolve) => recWaiters.push({ n, resolve }))),
    inferences,
    services,
    // Without a type: what the bus reported (faults, denials, seeds…), not the hook_call timing line
    // every call writes; events('hook_call') reads those.
    events: (type) =>
      existsSync(trace.path) ? readTrace(trace.path).events.filter((e) => (type === undefined ? e.event_type !== 'hook_call' : e.event_type === type)) : [],
    log: (name) => (existsSync(join(dir, 'logs', `hook-${name}.log`)) ? readFileSync(join(dir, 'logs', `hook-${name}.log`), 'utf8') : ''),
  };
}

export const TOOL_EV = { turn: 1, toolName: 'echo', inputBytes: 13n, input: '{"data":"hi"}' };
export const TOOL_OUTCOME = { outputBytes: 2n, durationMs: 3n, status: 'ok' };
export const SHELL_EV = { turn: 2, binary: '/usr/bin/git', command: 'status --short', argv: ['status', '--short'], script: undefined, recipe: undefined };
export const SHELL_OUTCOME = { exitCode: 0, stdout: '', stderr: '', stdoutBytes: 0n, stderrBytes: 0n, durationMs: 4n };
export const SESSION_CTX = {
  capsuleName: 'cap',
  capsuleVersion: '1.0.0',
  sessionId: 'ses_0123456789abcdef0123456789abcdef',
  model: 'primary-model',
  capabilities: [],
};
export const INFERENCE_EV = {
  turn: 1,
  inputTokens: 100n,
  outputTokens: 20n,
  decision: 'end_turn',
  toolName: undefined,
  prompt: undefined,
  output: undefined,
  tools: undefined,
};
export const TASK_START = { taskId: 't1', contextId: 'c1', source: 'a2a', inputBytes: 5n, budgetTokens: 100n, contextWindow: 1000n, priorTokens: 0n };
export const TASK_END = { taskId: 't1', exitStatus: 'ok' };
export const SESSION_END = {
  totalTurns: 1,
  totalInputTokens: 1n,
  totalOutputTokens: 1n,
  totalToolCalls: 0,
  totalShellCalls: 0,
  durationMs: 5n,
  exitStatus: 'ok',
};
export function compactionEv(messages: HookMessage[]) {
  return { messages, sessionTokens: 900n, threshold: 0.8, model: 'small-model', systemPrompt: 'Summarize.' };
}
