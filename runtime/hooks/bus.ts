/**
 * The HookBus: the one object the agent loop calls at each lifecycle point. It loads every staged
 * hook component once (checking the hook contract and the required exports), dispatches each event
 * to the hooks bound to it — blocking hooks inline in manifest order, async hooks through one
 * bounded, serialized queue per hook — and commits exactly the arms the commit table allows.
 *
 * Failure rules (docs/hooks.md):
 * - A non-`none` arm that is not committed → a line in `logs/hook-<name>.log` naming the hook, the
 *   handler and the discarded arm, and a `hook_dispatch_error` trace event (log only at on-stage).
 * - A handler error (WIT `err`) or fault (trap, deadline, memory kill, unreadable return) → logged
 *   and traced; the session goes on — except at `on-compaction` (fatal) and at the decision point
 *   of a policy hook (the call is refused: fail-closed).
 */
import { MurError } from '../errors.ts';
import { HostFault, type ComponentInstance } from '../host/index.ts';
import type { TraceWriter } from '../trace/writer.ts';
import { traceNetworkDenied } from '../trace/network-denied.ts';
import { COMMIT_TABLE, DECISION_HANDLERS, HANDLERS, exportName, type Handler } from '../contracts/commit-table.ts';
import { uncommittedReason } from './commit-check.ts';
import type { Hook } from './hook.ts';
import { AsyncLane, type Job } from './lane.ts';
import { adoptHookMessages, validateToolPairs } from './messages.ts';
import { failureOf, isRecord, readCallResult, type CallFailure, type CallResult } from './output.ts';
import { fitSummary, planSeed } from './seed.ts';
import { loadHooks } from './load-hooks.ts';
import { writeToolManifests } from './tool-manifests.ts';
import type {
  CompactionEvent,
  CompactionOutcome,
  Decision,
  HookMessage,
  HookOutput,
  HookServices,
  InferenceEvent,
  SessionContext,
  SessionEndEvent,
  ShellEvent,
  StageEvent,
  StagedHook,
  TaskEndEvent,
  TaskStartEvent,
  ToolEvent,
} from './types.ts';

export { LIFECYCLE_VERSION, REQUIRED_HANDLERS } from './load-hooks.ts';
export { safeBinaryName } from './tool-manifests.ts';

export const DEFAULT_QUEUE_DEPTH = 1024;
export const DEFAULT_DRAIN_BUDGET_MS = 15_000;
export const DEFAULT_SEED_OVERFLOW_MARGIN = 0.1;

export interface HookBusOptions {
  hooks: StagedHook[];
  /** The session workdir: `logs/hook-<name>.log` and `tools/<binary>/murmur.yaml` live under it. */
  workdir: string;
  sessionId: string;
  /** The session trace; absent during staging (attach it later with attachTrace). */
  trace?: TraceWriter;
  services: HookServices;
  /** Async hooks: events a hook's queue holds before its overflow rule applies. Default 1024. */
  queueDepth?: number;
  /** `context.seed_overflow_margin`: an over-budget seed within this share has its oldest messages dropped. Default 0.10. */
  seedOverflowMargin?: number;
  /** `inference.compaction.{model, system_prompt}`: handed to the compaction hook when it summarizes a seed. */
  compaction?: { model?: string; systemPrompt?: string };
  /** Component transpile cache (tests). */
  cacheDir?: string;
}

export class HookBus {
  readonly workdir: string;
  readonly sessionId: string;
  /** @internal read by the hooks' network-denial reporter */
  trace: TraceWriter | undefined;
  private readonly services: HookServices;
  private readonly hooks: Hook[];
  private readonly receivers = new Map<Handler, Hook[]>();
  private readonly policy = new Map<Handler, Hook[]>();
  private readonly seedMargin: number;
  private readonly compactionCfg: { model?: string; systemPrompt?: string };
  private closed = false;

  private constructor(o: HookBusOptions, hooks: Hook[]) {
    this.workdir = o.workdir;
    this.sessionId = o.sessionId;
    this.trace = o.trace;
    this.services = o.services;
    this.hooks = hooks;
    this.seedMargin = o.seedOverflowMargin ?? DEFAULT_SEED_OVERFLOW_MARGIN;
    this.compactionCfg = o.compaction ?? {};
    for (const h of HANDLERS)
      this.receivers.set(
        h,
        hooks.filter((k) => k.receives.has(h) && k.exports.has(h)),
      );
    for (const h of DECISION_HANDLERS)
      this.policy.set(
        h,
        hooks.filter((k) => k.isPolicyFor(h) && k.exports.has(h)),
      );
  }

  /**
   * Loads every hook: contract (commit table), component (pin, transpile cache), exports (the six
   * session handlers required; a missing `on-stage` is logged), then starts one instance per hook
   * that receives session events.
   */
  static async load(o: HookBusOptions): Promise<HookBus> {
    const hooks = await loadHooks(o);
    const bus = new HookBus(o, hooks);
    const depth = o.queueDepth ?? DEFAULT_QUEUE_DEPTH;
    try {
      await Promise.all(
        hooks.map(async (h) => {
          if ([...h.receives].every((x) => x === 'on-stage')) return;
          h.instance = h.newInstance(traceNetworkDenied(() => bus.trace, 'hook', h.name));
          if (h.async) {
            h.lane = new AsyncLane({
              depth,
              onOverflow: h.spec.onOverflow ?? 'drop',
              run: (job) => bus.runAsync(h, job),
              overflowed: (job) => bus.fault(h, job.handler, 'queue-overflow', `${job.handler}: queue full (${depth} events); event dropped`),
            });
          }
          await h.instance.start();
        }),
      );
    } catch (e) {
      await Promise.all(hooks.map((h) => h.instance?.close()));
      const name = e instanceof HostFault ? e.component : 'a hook';
      throw new MurError('E-HOOK-005', `hook '${name}' failed to start: ${(e as Error).message}`, {
        hint: 'the hook component could not be instantiated with the hook world imports; check it was built for murmur:runtime/hook',
        cause: e,
      });
    }
    return bus;
  }

  /** Names of the loaded hooks, in manifest order. */
  get hookNames(): string[] {
    return this.hooks.map((h) => h.name);
  }

  /** Gives the bus the session trace once it exists (staging runs before it does). */
  attachTrace(trace: TraceWriter): void {
    this.trace = trace;
  }

  // ---- faults ------------------------------------------------------------------------------------

  /** A dispatch fault: a line in the hook's log and a `hook_dispatch_error` event (never at on-stage). */
  fault(h: Hook, event: Handler | 'drain', arm: string, line: string): void {
    h.log(line);
    if (event === 'on-stage') return;
    this.trace?.write('hook_dispatch_error', { hook_name: h.name, event, arm, detail: line });
  }

  // ---- calling -------------------------------------------------------------------------------------

  private async invoke(h: Hook, handler: Handler, event: unknown, inst: ComponentInstance | undefined = h.instance): Promise<CallResult> {
    if (!inst) return { ok: false, arm: 'fault', defect: 'has no running instance' };
    h.state.spendRefused = false;
    const t0 = performance.now();
    let r: CallResult;
    try {
      r = readCallResult(await inst.call(['lifecycle', exportName(handler)], [event], { deadlineMs: h.deadlineMs }));
    } catch (e) {
      r = failureOf(e);
    }
    // Every hook call's own time goes on the trace (and from there on its `hook <name>` span), so
    // a turn's time can be split into the runtime's, the components' and each hook's.
    this.trace?.write('hook_call', {
      hook_name: h.name,
      event: handler,
      mode: h.async ? 'async' : 'blocking',
      duration_ms: Math.round((performance.now() - t0) * 1000) / 1000,
      outcome: r.ok ? r.out.tag : r.arm,
    });
    return r;
  }

  /** Runs one queued event of an async hook: its output is always discarded; faults go to trace and log. */
  async runAsync(h: Hook, job: Job): Promise<void> {
    const r = await this.invoke(h, job.handler, job.event);
    if (h.lane?.aborted) return;
    if (!r.ok) {
      this.fault(h, job.handler, r.arm, `${job.handler} ${r.defect}`);
      return;
    }
    if (r.out.tag !== 'none')
      this.fault(h, job.handler, r.out.tag, `${job.handler} returned arm '${r.out.tag}' from an async hook, whose output is always discarded; discarded`);
  }

  /**
   * Dispatches an event to every hook receiving it, in manifest order: blocking hooks are awaited
   * and each committed output handed to `commit`; async hooks get the event queued. A non-committed
   * arm or a handler failure is a fault unless `onFailure` takes it (returns true to stop).
   */
  private async dispatch(
    handler: Handler,
    event: unknown,
    commit: (h: Hook, out: HookOutput) => void,
    onFailure?: (h: Hook, f: CallFailure) => boolean,
  ): Promise<void> {
    const list = this.receivers.get(handler)!;
    for (const h of list) {
      if (h.lane) {
        const p = h.lane.enqueue({ handler, event });
        if (p) await p;
        continue;
      }
      const r = await this.invoke(h, handler, event);
      if (!r.ok) {
        if (onFailure?.(h, r)) return;
        this.fault(h, handler, r.arm, `${handler} ${r.defect}`);
        continue;
      }
      const arm = r.out.tag;
      if (arm === 'none') continue;
      const why = uncommittedReason(h, handler, arm, false);
      if (why) this.fault(h, handler, arm, why);
      else commit(h, r.out);
    }
  }

  // ---- the lifecycle -----------------------------------------------------------------------------

  /**
   * `on-stage`, once at staging (before the trace exists: faults reach the hook log only). Each
   * hook bound to it runs in a throwaway instance; a committed `write-manifests` writes
   * `<workdir>/tools/<binary-name>/murmur.yaml`, overwriting.
   */
  async stage(ev: StageEvent): Promise<void> {
    for (const h of this.hooks) {
      if (h.spec.binding !== 'on-stage' || !h.exports.has('on-stage')) continue;
      const inst = h.newInstance(); // staging: no trace yet (a refusal still reaches the guest)
      let r: CallResult;
      try {
        r = await this.invoke(h, 'on-stage', ev, inst);
      } finally {
        await inst.close();
      }
      if (!r.ok) {
        h.log(`on-stage ${r.defect}`);
        continue;
      }
      if (r.out.tag === 'none') continue;
      const why = uncommittedReason(h, 'on-stage', r.out.tag, false);
      if (why) {
        h.log(why);
        continue;
      }
      if (r.out.tag === 'write-manifests') writeToolManifests(h, this.workdir, r.out.val);
    }
  }

  async sessionStart(ctx: SessionContext | Record<string, unknown>): Promise<void> {
    await this.dispatch('on-session-start', ctx, () => {});
  }

  /**
   * `on-task-start`. The first blocking hook whose committed `seed-context` arrives wins; the seed is
   * measured against `budgetTokens` and committed whole, with its oldest messages dropped, with its
   * overflowing front summarized through the compaction hook, or refused — each outcome a
   * `context_seed` event. A refusal never fails the task (no messages are returned).
   */
  async taskStart(ev: TaskStartEvent | Record<string, unknown>): Promise<{ messages: HookMessage[] }> {
    let winner: { hook: Hook; messages: HookMessage[] } | undefined;
    await this.dispatch('on-task-start', ev, (h, out) => {
      if (out.tag !== 'seed-context') return;
      if (winner) {
        h.log(`on-task-start seed-context superseded by hook '${winner.hook.name}' (the first seed wins); discarded`);
        return;
      }
      winner = { hook: h, messages: out.val };
    });
    if (!winner) return { messages: [] };
    return { messages: await this.seed(winner.hook, winner.messages, ev as TaskStartEvent) };
  }

  /** Counts every message of `list` not counted yet into `into` (the counter is a worker: async). */
  private async countInto(into: Map<HookMessage, number>, list: readonly HookMessage[]): Promise<void> {
    for (const m of list) if (!into.has(m)) into.set(m, await this.services.countTokens(m.content));
  }

  /** Runs the seed policy (seed.ts) on a proposed seed; the summarizing step calls the compaction hook. */
  private async seed(h: Hook, proposed: HookMessage[], ev: TaskStartEvent): Promise<HookMessage[]> {
    const budget = Number(ev.budgetTokens ?? 0);
    const window = Number(ev.contextWindow ?? 0);
    // Counted up front (the pure policy in seed.ts counts synchronously).
    const counts = new Map<HookMessage, number>();
    await this.countInto(counts, proposed);
    const count = (m: HookMessage): number => counts.get(m)!;
    const tokensOf = (list: readonly HookMessage[]) => list.reduce((n, m) => n + count(m), 0);
    const proposedTokens = tokensOf(proposed);
    const record = async (outcome: string, msgs: HookMessage[], reason?: string): Promise<HookMessage[]> => {
      await this.countInto(counts, msgs);
      this.trace?.write('context_seed', {
        hook: h.name,
        tokens: tokensOf(msgs),
        proposed_tokens: proposedTokens,
        budget_tokens: budget,
        outcome,
        reason,
        message_ids: msgs.map((m) => m.id),
        task_id: (ev as { taskId?: string }).taskId,
      });
      if (outcome === 'refused') h.log(`on-task-start seed-context refused: ${reason}`);
      return msgs;
    };
    const plan = planSeed(proposed, budget, window, this.seedMargin, count);
    if (plan.outcome === 'refused') return record('refused', [], plan.reason);
    if (plan.outcome !== 'summarize') return record(plan.outcome, adoptHookMessages(plan.messages, 'seed-context'));
    const summarizer = this.receivers.get('on-compaction')!.find((k) => !k.async && k.spec.commitPolicy === COMMIT_TABLE['on-compaction'].policy);
    if (!summarizer) return record('refused', [], 'overflow_no_summarizer');
    const cev: CompactionEvent = {
      messages: plan.front,
      sessionTokens: BigInt(tokensOf(plan.front)),
      threshold: budget / Math.max(1, window),
      model: this.compactionCfg.model,
      systemPrompt: this.compactionCfg.systemPrompt,
    };
    const r = await this.invoke(summarizer, 'on-compaction', cev);
    if (!r.ok) {
      summarizer.log(`on-compaction (summarizing a seed) ${r.defect}`);
      return record('refused', [], `summarize_failed: hook '${summarizer.name}' ${r.defect}`);
    }
    if (r.out.tag !== 'replace-context') return record('refused', [], `summarize_failed: hook '${summarizer.name}' returned '${r.out.tag}'`);
    await this.countInto(counts, r.out.val);
    const fitted = fitSummary(r.out.val, plan.tail, budget, count);
    if (fitted.outcome === 'refused') return record('refused', [], fitted.reason);
    return record('summarized', adoptHookMessages(fitted.messages, 'seed-context'));
  }

  /** `on-inference`: the committed `artifact` strings (each must be a JSON object). */
  async inference(ev: InferenceEvent | Record<string, unknown>): Promise<string[]> {
    const artifacts: string[] = [];
    await this.dispatch('on-inference', ev, (h, out) => {
      if (out.tag !== 'artifact') return;
      let v: unknown;
      try {
        v = JSON.parse(out.val);
      } catch {
        v = undefined;
      }
      if (!isRecord(v)) {
        this.fault(
          h,
          'on-inference',
          'artifact',
          `on-inference returned an artifact that is not a JSON object (${out.val.length > 80 ? `${out.val.slice(0, 80)}…` : out.val}); discarded`,
        );
        return;
      }
      artifacts.push(out.val);
    });
    return artifacts;
  }

  /** The decision point of a tool call (`outcome` undefined): policy hooks only, fail-closed. */
  toolDecision(ev: ToolEvent | Record<string, unknown>): Promise<Decision> {
    const e = ev as ToolEvent;
    return this.decide('on-tool-call', ev, { kind: 'tool', turn: e.turn, tool_name: e.toolName });
  }

  /** The decision point of a shell command (`outcome` undefined): policy hooks only, fail-closed. */
  shellDecision(ev: ShellEvent | Record<string, unknown>): Promise<Decision> {
    const e = ev as ShellEvent;
    return this.decide('on-shell', ev, { kind: 'shell', turn: e.turn, binary: e.binary, argv: e.argv });
  }

  private async decide(handler: 'on-tool-call' | 'on-shell', ev: unknown, what: Record<string, unknown>): Promise<Decision> {
    for (const h of this.policy.get(handler)!) {
      const r = await this.invoke(h, handler, ev);
      let reason: string;
      let defect: string | undefined;
      if (!r.ok) defect = r.defect;
      else if (r.out.tag === 'none') continue;
      else if (r.out.tag === 'deny') {
        if (r.out.val.trim() === '') defect = 'returned deny with an empty reason';
      } else defect = `returned arm '${r.out.tag}', which is not an answer at the decision point (only none or deny)`;
      if (defect !== undefined) {
        reason = `policy hook '${h.name}' ${defect}; a policy hook that fails refuses`;
        this.fault(h, handler, r.ok ? r.out.tag : r.arm, `${handler} decision point: ${defect}; the call is refused (fail-closed)`);
      } else {
        reason = (r as { ok: true; out: { tag: 'deny'; val: string } }).out.val;
      }
      const subject = handler === 'on-tool-call' ? 'tool call' : 'shell command';
      const agentMessage = `Refused by policy hook '${h.name}': ${reason}. This ${subject} was not run. Retrying the same call unchanged will be refused again.`;
      this.trace?.write('call_denied', { ...what, hook: h.name, reason, fail_closed: defect !== undefined });
      return { allowed: false, hook: h.name, reason, agentMessage };
    }
    return { allowed: true };
  }

  /** The observation of a tool call (`outcome` set): every hook bound to on-tool-call; a deny here is a fault. */
  async toolObserved(ev: ToolEvent | Record<string, unknown>): Promise<void> {
    await this.dispatch('on-tool-call', ev, () => {});
  }

  /** The observation of a shell command (`outcome` set); a deny here is a fault. */
  async shellObserved(ev: ShellEvent | Record<string, unknown>): Promise<void> {
    await this.dispatch('on-shell', ev, () => {});
  }

  /**
   * `on-compaction`. The first committed `replace-context` decides: its messages (ids minted,
   * `inserted-by: replace-context`) replace the history, unless their tool-call/result pairs don't
   * match (`invalid`: the session goes on). A blocking hook's error ends the session (`fatal`):
   * `spend_ceiling_reached` when it follows a `run-inference` the spend ceiling refused.
   */
  async compaction(ev: CompactionEvent | Record<string, unknown>): Promise<CompactionOutcome> {
    let outcome: CompactionOutcome = { kind: 'none' };
    let decided = false;
    await this.dispatch(
      'on-compaction',
      ev,
      (h, out) => {
        if (out.tag !== 'replace-context') return;
        if (decided) {
          h.log(`on-compaction replace-context superseded by an earlier hook (the first replacement wins); discarded`);
          return;
        }
        decided = true;
        const check = validateToolPairs(out.val);
        if (!check.ok) {
          const reason = `replacement refused: ${check.reason}`;
          this.fault(h, 'on-compaction', 'replace-context', `on-compaction ${reason}; history kept`);
          outcome = { kind: 'invalid', hook: h.name, reason };
          return;
        }
        outcome = { kind: 'replaced', hook: h.name, messages: adoptHookMessages(out.val, 'replace-context') };
      },
      (h, f) => {
        const spend = h.state.spendRefused;
        const message = `compaction hook '${h.name}' ${f.defect}${spend ? ' (after the spend ceiling refused its run-inference)' : ''}`;
        this.fault(h, 'on-compaction', f.arm, `on-compaction ${f.defect}; the session ends`);
        outcome = { kind: 'fatal', hook: h.name, exitStatus: spend ? 'spend_ceiling_reached' : 'failed', message };
        return true;
      },
    );
    return outcome;
  }

  /** `on-task-end`: the first committed `reopen-task` asks the loop to re-run the task with its feedback. */
  async taskEnd(ev: TaskEndEvent | Record<string, unknown>): Promise<{ reopen?: { hook: string; feedback: string } }> {
    let reopen: { hook: string; feedback: string } | undefined;
    await this.dispatch('on-task-end', ev, (h, out) => {
      if (out.tag !== 'reopen-task') return;
      if (reopen) {
        h.log(`on-task-end reopen-task superseded by hook '${reopen.hook}' (the first reopen wins); discarded`);
        return;
      }
      reopen = { hook: h.name, feedback: out.val };
    });
    return reopen ? { reopen } : {};
  }

  async sessionEnd(ev: SessionEndEvent | Record<string, unknown>): Promise<void> {
    await this.dispatch('on-session-end', ev, () => {});
  }

  /**
   * Waits for every async queue to empty, within one shared budget. A queue still busy at the end
   * is aborted: its instance stopped, its events abandoned, a `timeout` fault with event `drain`.
   */
  async drain(budgetMs: number = DEFAULT_DRAIN_BUDGET_MS): Promise<void> {
    const lanes = this.hooks.filter((h) => h.lane && !h.lane.aborted);
    let timer: NodeJS.Timeout | undefined;
    const done = new Set<Hook>();
    await Promise.race([
      Promise.all(lanes.map((h) => h.lane!.whenIdle().then(() => void done.add(h)))),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, Math.max(0, budgetMs));
      }),
    ]);
    clearTimeout(timer);
    for (const h of lanes) {
      const lane = h.lane!;
      if (!done.has(h) && lane.pending > 0) {
        const n = lane.abort();
        void h.instance?.close();
        this.fault(h, 'drain', 'timeout', `drain: the queue did not empty within the ${budgetMs} ms drain budget; instance stopped, ${n} event(s) abandoned`);
      }
      if (lane.dropped > 0) h.log(`queue overflow: ${lane.dropped} event(s) dropped this session (on_overflow: ${h.spec.onOverflow ?? 'drop'})`);
    }
  }

  /** Stops every instance. Call drain() first to let async hooks finish. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const h of this.hooks) h.lane?.abort();
    await Promise.all(this.hooks.map((h) => h.instance?.close()));
  }
}
