/**
 * A rewrite of jco's transpiled glue, applied once when a component is transpiled (transpile-jco.ts),
 * that calls a synchronous host import without jco's async-task bookkeeping.
 *
 * Why: jco 1.35 (js-component-bindgen 2.x) wraps every synchronously lowered host import in its
 * Component Model async machinery, whatever the instantiation mode: `_lowerImportBackwardsCompat`
 * creates a subtask (with a waitable, a promise, a handle-table slot and two template strings) in
 * the export's task, and the import's own trampoline creates a host task (an `AsyncTask`: a
 * completion promise and its `catch`, closures, a resource scope), links it to that subtask, runs
 * the host function inside `_withGlobalCurrentTaskMeta` and `_trackHostOperation` (two closures
 * and an object per call), then resolves the task so that the result reaches the wrapper through
 * the subtask. No option of the transpiler turns it off (`asyncMode` sync is the default). Measured
 * in `mur serve`, it was ≈ 85 % of what the component thread allocated per task: a driver streams
 * its answer through dozens of WASI calls (reads, polls, writes), each one an import call.
 *
 * What none of it does for these components: they are WASI 0.2 components, every import lowered
 * synchronously and every export lifted synchronously, so no task ever waits, no subtask is ever
 * seen by the guest (its waitable is removed again before the import returns) and the host task is
 * never read by anything but the trampoline that made it. So a rewritten trampoline keeps
 * everything the guest or the host can observe, and only that:
 * - the may-leave check of the instance (`_checkMayLeave`: an import called while the instance may
 *   not leave it, in a post-return or a realloc, still traps);
 * - lifting the arguments, borrowed-resource bookkeeping, lowering the result: the generated code,
 *   untouched;
 * - a host function's exception: still `markTrapped` on the instance and rethrown, or turned into
 *   the WIT `err` where the function returns a result (the generated code, untouched); the export's
 *   task is rejected by the export's own wrapper, which the exception passes through;
 * - a promise returned by a host function still goes through `_trackHostOperation`.
 * The host task becomes one object per glue instance whose methods do nothing
 * (`_murHostTask`), and the result goes back as the trampoline's return value, not through the
 * subtask.
 *
 * All or nothing per import: a trampoline is rewritten only when its text is exactly jco 1.35's
 * synchronous shape (a host task created with `isAsync: false`, one `_withGlobalCurrentTaskMeta`
 * around the call, the result resolved before any return), and its wrapper is switched to the
 * direct call only when that trampoline was; any other import keeps jco's code on both sides.
 *
 * A glue made with JSPI imports (transpile-jco.ts's suspending glue): its synchronous imports are
 * rewritten as in any glue. Its imports marked `manuallyAsync` (those that may suspend the guest)
 * are `async` trampolines in jco's code, so every call of one suspends the guest's stack and
 * resumes it from a microtask, whether the host answered at once or not: a blocking read of body
 * bytes already there suspended as one still waiting did. Rewritten (all or nothing per import,
 * shape checked as above), such a trampoline is a plain function that calls the host, lowers an
 * immediate answer at once and returns nothing to wait for, and returns a promise (the guest
 * suspends) only when the host answered with one, lowering its value when it settles.
 *
 * GLUE_REVISION is part of the transpile cache key (transpile-cache.ts), so an entry written
 * before this rewrite (or by another revision of it) is never served.
 */
export const GLUE_REVISION = 'g3';

/** What the rewrite did to one glue: the imports now called directly, those left as jco wrote them. */
export interface GlueRewrite {
  js: string;
  direct: number;
  kept: number;
}

// The helpers the rewritten imports use, inserted once before jco's `_lowerImportBackwardsCompat`
// (in the same scope, defined before any trampoline is built or called).
const HELPERS = `
  // Inserted by the runtime (runtime/host/glue-rewrite.ts, ${GLUE_REVISION}): synchronous host imports
  // called without jco's async-task bookkeeping.
  const _murHostTask = {
    componentIdx() { return -1; },
    id() { return 0n; },
    getParentSubtask() { return undefined; },
    setErrored() {},
    reject() {},
    resolve() {},
    exit() {},
  };
  function _murHostResult(result) {
    if (result !== null && (typeof result === 'object' || typeof result === 'function') && typeof result.then === 'function') {
      return _trackHostOperation(() => result);
    }
    return result;
  }
  function _murSuspendingResult(result, lower, fail) {
    if (result !== null && typeof result === 'object' && typeof result.then === 'function') return result.then(lower, fail);
    return lower(result);
  }
  function _murBoundArgs(_this, args) {
    return args;
  }
  function _murDirectImport(_unused, args) {
    const componentIdx = args.componentIdx;
    const importFn = args.importFn;
    return function () {
      _checkMayLeave(componentIdx);
      return importFn.apply(null, arguments);
    };
  }
`;

const LOWER_IMPORT = 'function _lowerImportBackwardsCompat(';

// One trampoline of a host import, as jco 1.35 writes it: `const _trampolineN = function(args) {
// body }` followed by its `fnName`.
const TRAMPOLINE = /const (_trampoline(\d+)) = function\(([^)]*)\) \{([\s\S]*?)\n([ \t]*)\}(;?)\n[ \t]*\1\.fnName = /g;

// The same with `async function`: a trampoline of an import that may suspend the guest.
const SUSPENDING_TRAMPOLINE = /const (_trampoline(\d+)) = async function\(([^)]*)\) \{([\s\S]*?)\n([ \t]*)\}(;?)\n[ \t]*\1\.fnName = /g;

// From `const hostProvided = true;` to the host task's entry: the host task created (synchronous:
// `isAsync: false`) and linked to the wrapper's subtask.
const HOST_TASK_CREATED = String.raw`const hostProvided = true;\s*let parentTask;\s*let task;\s*let subtask;\s*const createTask = \(\) => \{\s*const results = createNewCurrentTask\(\{\s*componentIdx: -1,\s*isAsync: false,[^}]*\}\);\s*task = results\[0\];\s*\};\s*taskCreation: \{[\s\S]*?task\.setParentSubtask\(subtask\);\s*\}\s*\}\s*`;
// ... entered synchronously (`const started = task.enterSync();`),
const HOST_TASK = new RegExp(`${HOST_TASK_CREATED}const started = task\\.enterSync\\(\\);`);
// ... or awaited, in a trampoline that may suspend, with its check.
const HOST_TASK_AWAITED = new RegExp(
  `${HOST_TASK_CREATED}const started = await task\\.enter\\(\\{ isHost: hostProvided \\}\\);\\s*if \\(!started\\) \\{[\\s\\S]*?throw new Error\\("failed to enter task"\\);\\s*\\}`,
);

// In a trampoline that may suspend, the awaited call of the host function (CALL), in one of two
// shapes. A function with a WIT result: the answer made a result (RESULT, an expression of
// hostRetN), a throw its `err` unless it trapped the instance.
const AWAITED_CALL = String.raw`\btry \{\s*(?:const (hostRet\d+)|ret) = await\s+_withGlobalCurrentTaskMetaAsync\(\{\s*componentIdx: task\.componentIdx\(\),\s*taskID: task\.id\(\),\s*fn: \(\) => _trackHostOperation\(\(\) => ([\s\S]*?)\),\n\s*\}\)\s*;\s*`;
const AWAITED_RESULT = new RegExp(
  `${AWAITED_CALL}ret = ([^;]*);\\s*\\} catch \\(e\\) \\{\\s*(if \\(getOrCreateAsyncState\\(\\d+\\)\\.markTrapped\\(e\\)\\) \\{ throw e; \\}\\s*ret = \\{ tag: 'err', val: getErrorPayload\\(e\\) \\};)\\s*\\}\\n`,
);
// One without: a throw traps the instance and fails the call (jco rejects the host task and
// returns its completion promise, which the suspending import rethrows).
const AWAITED_PLAIN = new RegExp(
  `${AWAITED_CALL}\\} catch \\(err\\) \\{\\s*_debugLog\\([^;]*\\);\\s*(getOrCreateAsyncState\\(\\d+\\)\\.markTrapped\\(err\\);)\\s*task\\.setErrored\\(err\\);\\s*task\\.reject\\(err\\);\\s*task\\.exit\\(\\);\\s*return task\\.completionPromise\\(\\);\\s*\\}\\n`,
);

// The call of the host function: `_withGlobalCurrentTaskMeta({ componentIdx, taskID, fn: () =>
// _trackHostOperation(() => CALL), })` and the line with the statement's `;` (CALL may span lines:
// an object argument, whose last field can end in `),` too).
const CALL =
  /_withGlobalCurrentTaskMeta\(\{\s*componentIdx: task\.componentIdx\(\),\s*taskID: task\.id\(\),\s*fn: \(\) => _trackHostOperation\(\(\) => ([\s\S]*?)\),\n\s*\}\)(\n\s*;)/g;

// The end of the trampoline: the result resolved through the subtask, then returned or not.
const TAIL = /task\.resolve\(\[(.*)\]\);\s*task\.exit\(\);\s*(?:return (.*);)?\s*$/;

// What the stub host task answers; anything else the body asks of `task` keeps jco's code.
const STUB_METHODS = new Set(['componentIdx', 'id', 'getParentSubtask', 'setErrored', 'reject', 'resolve', 'exit']);

/** Whether an expression's brackets pair up: the call captured is one whole expression. */
function balanced(expr: string): boolean {
  let depth = 0;
  for (const ch of expr) {
    if (ch === '(' || ch === '{' || ch === '[') depth++;
    else if (ch === ')' || ch === '}' || ch === ']') depth--;
    if (depth < 0) return false;
  }
  return depth === 0;
}

/** Whether a rewritten function body is valid JavaScript (parsed, never run): a shape the patterns misread is kept as jco wrote it. */
function parses(body: string): boolean {
  try {
    new Function(body);
    return true;
  } catch {
    return false;
  }
}

/** The body of one trampoline rewritten, or undefined when it is not exactly the shape above. */
function rewriteBody(body: string): string | undefined {
  if (!HOST_TASK.test(body)) return undefined;
  let out = body.replace(HOST_TASK, 'const task = _murHostTask;');
  const calls = [...out.matchAll(CALL)];
  if (calls.length !== 1 || !balanced(calls[0]![1]!)) return undefined;
  out = out.replace(CALL, (_m, call: string, end: string) => `_murHostResult(${call})${end}`);
  const tail = TAIL.exec(out);
  if (!tail) return undefined;
  const [whole, resolved, returned] = tail;
  // The wrapper returned what was resolved: the same value must be what the trampoline returns, or
  // the import has no result in the core signature (a result pointer) and nothing is returned.
  if (returned !== undefined ? returned !== resolved : !/^[\w$]+$/.test(resolved!)) return undefined;
  out = out.slice(0, out.length - whole.length) + (returned !== undefined ? `return ${returned};` : '');
  if (/\b(parentTask|subtask|started|createTask)\b/.test(out)) return undefined;
  for (const m of out.matchAll(/\btask\.(\w+)\(/g)) if (!STUB_METHODS.has(m[1]!)) return undefined;
  return out;
}

/** The body of a trampoline that may suspend, rewritten (see the header), or undefined when it is not exactly that shape. */
function rewriteSuspendingBody(body: string): string | undefined {
  if (!HOST_TASK_AWAITED.test(body)) return undefined;
  const out = body.replace(HOST_TASK_AWAITED, 'const task = _murHostTask;');
  const withResult = AWAITED_RESULT.exec(out);
  const m = withResult ?? AWAITED_PLAIN.exec(out);
  if (!m || (withResult ? !m[1] : m[1]) || !balanced(m[2]!) || (withResult && !balanced(m[3]!))) return undefined;
  const [whole, hostRet, call] = m as unknown as [string, string | undefined, string];
  // What the answer becomes, and what a throw does: for a result, its `err` (or a trap, rethrown);
  // without one, a trap, rethrown.
  const lower = withResult ? `(${hostRet}) => { ret = ${m[3]}; return _murRest(); }` : '(value) => { ret = value; return _murRest(); }';
  const fail = withResult ? `(e) => { ${m[4]} return _murRest(); }` : `(err) => { ${m[3]} throw err; }`;
  const before = out.slice(0, m.index);
  let rest = out.slice(m.index + whole.length);
  const tail = TAIL.exec(rest);
  if (!tail) return undefined;
  const [tailText, resolved, returned] = tail;
  if (returned !== undefined ? returned !== resolved : !/^[\w$]+$/.test(resolved!)) return undefined;
  rest = rest.slice(0, rest.length - tailText.length) + (returned !== undefined ? `return ${returned};` : '');
  if (!/\blet ret;\s*$/.test(before)) return undefined;
  const next = `${before}
    const _murRest = () => {${rest}
    };
    const _murFail = ${fail};
    let _murAnswer;
    try {
      _murAnswer = _murHostResult(${call});
    } catch (e) {
      return _murFail(e);
    }
    return _murSuspendingResult(_murAnswer, ${lower}, _murFail);`;
  if (/\bawait\b|\b(parentTask|subtask|started|createTask)\b/.test(next)) return undefined;
  for (const c of next.matchAll(/\btask\.(\w+)\(/g)) if (!STUB_METHODS.has(c[1]!)) return undefined;
  return parses(next) ? next : undefined;
}

/**
 * Switches `let trampolineN = _trampolineN.manuallyAsync ? new WebAssembly.Suspending(…` to the
 * direct call for the rewritten suspending trampolines (the guest still suspends on a promise:
 * WebAssembly.Suspending is kept); undefined when a wrapper is not where it should be.
 */
function directSuspendingWrappers(js: string, rewritten: Set<string>): string | undefined {
  let out = js;
  for (const n of rewritten) {
    const head = `let trampoline${n} = _trampoline${n}.manuallyAsync ? new WebAssembly.Suspending(`;
    const start = out.indexOf(head);
    if (start < 0) return undefined;
    const call = /^_suspendingImport\(\d+, _lowerImportBackwardsCompat\.bind\(/.exec(out.slice(start + head.length));
    const end = out.indexOf('))) : ', start);
    const args = out.slice(start, end);
    if (
      !call ||
      end < 0 ||
      !/\bisAsync: false,/.test(args) ||
      !/\bfuncTypeIsAsync: false,/.test(args) ||
      !new RegExp(`importFn: _trampoline${n},`).test(args)
    ) {
      return undefined;
    }
    // `_murDirectImport(null, _murBoundArgs(null, {…}))`: the same arguments object jco binds.
    out = `${out.slice(0, start + head.length)}_murDirectImport(null, _murBoundArgs(${out.slice(start + head.length + call[0].length)}`;
  }
  return out;
}

/**
 * Switches `let trampolineN = … : _lowerImportBackwardsCompat.bind(` to the direct call for the
 * rewritten trampolines; undefined when a wrapper is not where it should be, or not synchronous.
 */
function directWrappers(js: string, rewritten: Set<string>): string | undefined {
  let out = js;
  for (const n of rewritten) {
    const start = out.indexOf(`let trampoline${n} = _trampoline${n}.manuallyAsync ? `);
    if (start < 0) return undefined;
    const marker = '))) : _lowerImportBackwardsCompat.bind(';
    const at = out.indexOf(marker, start);
    const next = out.indexOf('let trampoline', start + 1);
    if (at < 0 || (next >= 0 && at > next)) return undefined;
    const args = out.slice(at, next < 0 ? undefined : next);
    if (!/\bisAsync: false,/.test(args) || !/\bfuncTypeIsAsync: false,/.test(args) || !new RegExp(`importFn: _trampoline${n},`).test(args)) {
      return undefined;
    }
    out = `${out.slice(0, at)}))) : _murDirectImport(${out.slice(at + marker.length)}`;
  }
  return out;
}

/** The glue with every synchronous host import it can prove so called directly (see above). */
export function rewriteGlue(js: string): GlueRewrite {
  const syncTotal = [...js.matchAll(TRAMPOLINE)].length;
  const total = syncTotal + [...js.matchAll(SUSPENDING_TRAMPOLINE)].length;
  const unchanged = { js, direct: 0, kept: total };
  if (total === 0 || js.split(LOWER_IMPORT).length !== 2) return unchanged;
  // Imports that may suspend the guest (JSPI): rewritten as such, or left to jco's own code.
  const suspending = new Set([...js.matchAll(/\b_trampoline(\d+)\.manuallyAsync\s*=\s*true\b/g)].map((m) => m[1]!));
  const rewritten = new Set<string>();
  const rewrittenSuspending = new Set<string>();
  const bodies = js
    .replace(TRAMPOLINE, (whole, name: string, n: string, params: string, body: string, indent: string, semi: string) => {
      if (suspending.has(n)) return whole;
      const next = rewriteBody(body);
      if (next === undefined) return whole;
      rewritten.add(n);
      return `const ${name} = function(${params}) {${next}\n${indent}}${semi}\n${indent}${name}.fnName = `;
    })
    .replace(SUSPENDING_TRAMPOLINE, (whole, name: string, n: string, params: string, body: string, indent: string, semi: string) => {
      if (!suspending.has(n)) return whole;
      const next = rewriteSuspendingBody(body);
      if (next === undefined) return whole;
      rewrittenSuspending.add(n);
      return `const ${name} = function(${params}) {${next}\n${indent}}${semi}\n${indent}${name}.fnName = `;
    });
  if (rewritten.size + rewrittenSuspending.size === 0) return unchanged;
  const wrapped = directWrappers(bodies, rewritten);
  const both = wrapped === undefined ? undefined : directSuspendingWrappers(wrapped, rewrittenSuspending);
  if (both === undefined) return unchanged;
  const at = both.indexOf(LOWER_IMPORT);
  const direct = rewritten.size + rewrittenSuspending.size;
  return { js: both.slice(0, at) + HELPERS.trimStart() + both.slice(at), direct, kept: total - direct };
}
