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
 * direct call only when that trampoline was; any other import keeps jco's code on both sides. A
 * glue that sets `manuallyAsync` anywhere (JSPI imports) is left as jco wrote it.
 *
 * GLUE_REVISION is part of the transpile cache key (transpile-cache.ts), so an entry written
 * before this rewrite (or by another revision of it) is never served.
 */
export const GLUE_REVISION = 'g1';

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

// From `const hostProvided = true;` to `const started = task.enterSync();`: the host task created
// (synchronous: `isAsync: false`) and linked to the wrapper's subtask.
const HOST_TASK =
  /const hostProvided = true;\s*let parentTask;\s*let task;\s*let subtask;\s*const createTask = \(\) => \{\s*const results = createNewCurrentTask\(\{\s*componentIdx: -1,\s*isAsync: false,[^}]*\}\);\s*task = results\[0\];\s*\};\s*taskCreation: \{[\s\S]*?task\.setParentSubtask\(subtask\);\s*\}\s*\}\s*const started = task\.enterSync\(\);/;

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
  const total = [...js.matchAll(TRAMPOLINE)].length;
  const unchanged = { js, direct: 0, kept: total };
  if (total === 0 || /manuallyAsync\s*=[^=]/.test(js) || js.split(LOWER_IMPORT).length !== 2) return unchanged;
  const rewritten = new Set<string>();
  const bodies = js.replace(TRAMPOLINE, (whole, name: string, n: string, params: string, body: string, indent: string, semi: string) => {
    const next = rewriteBody(body);
    if (next === undefined) return whole;
    rewritten.add(n);
    return `const ${name} = function(${params}) {${next}\n${indent}}${semi}\n${indent}${name}.fnName = `;
  });
  if (rewritten.size === 0) return unchanged;
  const wrapped = directWrappers(bodies, rewritten);
  if (wrapped === undefined) return unchanged;
  const at = wrapped.indexOf(LOWER_IMPORT);
  return { js: wrapped.slice(0, at) + HELPERS.trimStart() + wrapped.slice(at), direct: rewritten.size, kept: total - rewritten.size };
}
