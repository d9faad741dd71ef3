/**
 * The hook commit table of the spec (wit-interfaces.md "What each handler can commit", hooks.md
 * "Commit policy"): each handler honors exactly one `hook-output` arm. This ONE table drives staging
 * validation, dispatch, the CRD's CEL rules (operator/crd-rules.ts renders them) and docs/hooks.md.
 */

/** Handler names as they appear in `binding:` and in the WIT export names. */
export const HANDLERS = [
  'on-stage',
  'on-session-start',
  'on-task-start',
  'on-inference',
  'on-tool-call',
  'on-shell',
  'on-compaction',
  'on-task-end',
  'on-session-end',
] as const;
export type Handler = (typeof HANDLERS)[number];

/** The seven `hook-output` arms, in WIT case order. */
export const ARMS = ['none', 'replace-context', 'write-manifests', 'artifact', 'reopen-task', 'seed-context', 'deny'] as const;
export type Arm = (typeof ARMS)[number];

/** `commit_policy:` spellings a hook manifest may declare. `artifact` has no policy spelling. */
export const COMMIT_POLICIES = ['none', 'replace-context', 'write-manifests', 'reopen-task', 'seed-context', 'deny'] as const;
export type CommitPolicy = (typeof COMMIT_POLICIES)[number];

export const EXECUTION_MODES = ['blocking', 'async'] as const;
export type ExecutionMode = (typeof EXECUTION_MODES)[number];

export interface HandlerRule {
  /** The one non-`none` arm the runtime commits for this handler, or `none`. */
  committedArm: Arm;
  /** The `commit_policy` spelling a hook bound to this handler may declare besides `none`. */
  policy: CommitPolicy;
  /** Whether the arm is honored only at the pre-call decision point (`outcome: none`). */
  decisionPointOnly: boolean;
  /** Required WIT export (a component missing it fails to load). `on-stage` is special: logged. */
  required: boolean;
  /** Whether an `async` execution mode is ever allowed on this binding. */
  asyncAllowed: boolean;
  /** When the handler fires, for docs. */
  fires: string;
}

export const COMMIT_TABLE: Readonly<Record<Handler, HandlerRule>> = {
  'on-stage': {
    committedArm: 'write-manifests',
    policy: 'write-manifests',
    decisionPointOnly: false,
    required: false,
    asyncAllowed: false,
    fires: 'Once at capsule staging, before any session starts',
  },
  'on-session-start': {
    committedArm: 'none',
    policy: 'none',
    decisionPointOnly: false,
    required: true,
    asyncAllowed: true,
    fires: "Once per capsule launch, before the first task's work begins",
  },
  'on-task-start': {
    committedArm: 'seed-context',
    policy: 'seed-context',
    decisionPointOnly: false,
    required: false,
    asyncAllowed: true,
    fires: "Once per task, before that task's first inference turn",
  },
  'on-inference': {
    committedArm: 'artifact',
    policy: 'none',
    decisionPointOnly: false,
    required: true,
    asyncAllowed: true,
    fires: 'After each inference driver response is parsed',
  },
  'on-tool-call': {
    committedArm: 'deny',
    policy: 'deny',
    decisionPointOnly: true,
    required: true,
    asyncAllowed: true,
    fires: 'Twice per model-requested tool invocation: before dispatch and after it returns or errors',
  },
  'on-shell': {
    committedArm: 'deny',
    policy: 'deny',
    decisionPointOnly: true,
    required: true,
    asyncAllowed: true,
    fires: 'Twice per allowed shell command: before dispatch and after it returns',
  },
  'on-compaction': {
    committedArm: 'replace-context',
    policy: 'replace-context',
    decisionPointOnly: false,
    required: true,
    asyncAllowed: true,
    fires: 'When the session token threshold is reached, before any history is replaced',
  },
  'on-task-end': {
    committedArm: 'reopen-task',
    policy: 'reopen-task',
    decisionPointOnly: false,
    required: false,
    asyncAllowed: true,
    fires: "Once per task, immediately after that task's agent loop returns",
  },
  'on-session-end': {
    committedArm: 'none',
    policy: 'none',
    decisionPointOnly: false,
    required: true,
    asyncAllowed: true,
    fires: 'Once per capsule launch, after the task loop exits',
  },
};

/** Handlers a hook with no `binding:` receives: every session event, never `on-stage`. */
export const UNBOUND_HANDLERS: readonly Handler[] = HANDLERS.filter((h) => h !== 'on-stage');

/**
 * Handlers with a decision point (`decisionPointOnly`): dispatched twice, before the call (where
 * their arm is honored) and after it (where it is not). `on-tool-call` and `on-shell`.
 */
export const DECISION_HANDLERS: readonly Handler[] = HANDLERS.filter((h) => COMMIT_TABLE[h].decisionPointOnly);

/**
 * Policies that only an explicitly bound hook may declare (an all-events hook may not): the ones
 * honored at a decision point (`deny`), since a hook receiving every event has no one call to decide.
 */
export const POLICIES_REQUIRING_BINDING: readonly CommitPolicy[] = [...new Set(DECISION_HANDLERS.map((h) => COMMIT_TABLE[h].policy))];

/** A policy hook: bound to a decision handler and declaring the policy that handler honors there (`deny`). */
export function isPolicyHook(binding: Handler | undefined, policy: CommitPolicy): boolean {
  return binding !== undefined && COMMIT_TABLE[binding].decisionPointOnly && policy === COMMIT_TABLE[binding].policy;
}

export interface HookContract {
  binding?: Handler | undefined;
  execution_mode?: ExecutionMode | undefined;
  commit_policy?: CommitPolicy | undefined;
}

export interface ContractViolation {
  field: 'binding' | 'execution_mode' | 'commit_policy';
  message: string;
}

/**
 * Checks a hook's declared contract against the table. Returns the first violation, phrased the way
 * staging and the CRD's admission rule both report it; `undefined` when the contract is valid.
 */
export function checkHookContract(c: HookContract): ContractViolation | undefined {
  const policy = c.commit_policy ?? 'none';
  const mode = c.execution_mode ?? 'blocking';
  if (c.binding === undefined) {
    if (POLICIES_REQUIRING_BINDING.includes(policy)) {
      return {
        field: 'commit_policy',
        message: `commit_policy '${policy}' requires an explicit binding of 'on-shell' or 'on-tool-call'; a hook with no binding receives every event and cannot deny`,
      };
    }
  } else {
    const rule = COMMIT_TABLE[c.binding];
    if (policy !== 'none' && policy !== rule.policy) {
      return {
        field: 'commit_policy',
        message: `commit_policy '${policy}' is not valid for binding '${c.binding}'; binding '${c.binding}' honors commit_policy '${rule.policy}'`,
      };
    }
    if (mode === 'async' && !rule.asyncAllowed) {
      return { field: 'execution_mode', message: `execution_mode 'async' is not valid for binding '${c.binding}'; binding '${c.binding}' is always blocking` };
    }
  }
  if (mode === 'async' && policy !== 'none') {
    return {
      field: 'execution_mode',
      message: `execution_mode 'async' requires commit_policy 'none' (declared '${policy}'); a hook that commits an arm must be blocking`,
    };
  }
  return undefined;
}

/** The three contract fields, in the order messages name them (YAML spelling). */
export const CONTRACT_FIELDS = ['binding', 'execution_mode', 'commit_policy'] as const;
export type ContractField = (typeof CONTRACT_FIELDS)[number];

export interface ContractDisagreement {
  field: ContractField;
  /** What the capsule entry declares. */
  declared: string;
  /** What the artifact's own manifest says, defaults applied (`absent` = no binding: every event). */
  own: string;
}

/**
 * Compares the contract a capsule entry declares for a hook with the one the hook artifact's own
 * manifest declares. The artifact's own manifest is the hook's contract (hooks.md: "A hook artifact
 * declares in its own murmur.yaml which handler it binds to"); the entry's fields say what the
 * capsule expects of it, so every field the entry gives must equal the artifact's, defaults applied.
 * An entry field left out expects nothing. Returns every disagreement (empty: they agree).
 */
export function contractDisagreements(declared: HookContract, own: HookContract): ContractDisagreement[] {
  const effective = (c: HookContract): Record<ContractField, string> => ({
    binding: c.binding ?? 'absent',
    execution_mode: c.execution_mode ?? 'blocking',
    commit_policy: c.commit_policy ?? 'none',
  });
  const d = effective(declared);
  const o = effective(own);
  return CONTRACT_FIELDS.filter((f) => declared[f] !== undefined && d[f] !== o[f]).map((f) => ({ field: f, declared: d[f], own: o[f] }));
}

/** Handlers a hook receives given its binding. */
export function handlersFor(binding: Handler | undefined): readonly Handler[] {
  return binding === undefined ? UNBOUND_HANDLERS : [binding];
}

/** Is `arm`, returned by `handler` at this dispatch, committed by the runtime? */
export function isCommitted(handler: Handler, arm: Arm, atDecisionPoint: boolean): boolean {
  if (arm === 'none') return true;
  const rule = COMMIT_TABLE[handler];
  if (rule.committedArm !== arm) return false;
  return rule.decisionPointOnly ? atDecisionPoint : true;
}

/** WIT export name (camelCase as jco generates it) of a handler. */
export function exportName(h: Handler): string {
  return h.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
}
