/**
 * User-facing failures carry a stable code (listed in docs/errors.md), a message that names what was
 * wrong and where, and a hint that says how to fix it. Codes never change meaning once published.
 */
export interface ErrorLocation {
  file?: string;
  line?: number;
  column?: number;
  /** Dotted path of the offending field, e.g. `capabilities.shell.allow[2]`. */
  field?: string;
}

export class MurError extends Error {
  readonly code: string;
  readonly hint: string | undefined;
  readonly location: ErrorLocation | undefined;

  constructor(code: string, message: string, opts: { hint?: string; location?: ErrorLocation; cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'MurError';
    this.code = code;
    this.hint = opts.hint;
    this.location = opts.location;
  }

  /** One line for a terminal: `file:line: field: message (code)` then the hint. */
  format(): string {
    const loc = this.location;
    const where = loc ? [loc.file, loc.line !== undefined ? String(loc.line) : undefined].filter(Boolean).join(':') : '';
    const head = [where, loc?.field].filter(Boolean).join(': ');
    const first = `${head ? `${head}: ` : ''}${this.message} [${this.code}]`;
    return this.hint ? `${first}\n  hint: ${this.hint}` : first;
  }
}

/** An error's message for a person (its name when the message is empty); anything else thrown, as a string. */
export function errMessage(e: unknown): string {
  return e instanceof Error ? e.message || e.name : String(e);
}

export function isMurError(e: unknown): e is MurError {
  return e instanceof MurError;
}

/** The stable code and fix hint of a failure, carried from where it happened to what prints it. */
export interface FailureInfo {
  code: string;
  hint?: string;
}

export function failureInfo(e: unknown): FailureInfo | undefined {
  if (!(e instanceof MurError)) return undefined;
  return e.hint ? { code: e.code, hint: e.hint } : { code: e.code };
}

/** `task failed: <reason> [CODE]` and the hint on its own line: what `mur run` prints to stderr. */
export function formatTaskFailure(exit: string, reason: string | undefined, error: FailureInfo | undefined): string {
  const r = reason ?? '';
  const code = error && !r.includes(`[${error.code}]`) ? ` [${error.code}]` : '';
  return `task ${exit}: ${r}${code}${error?.hint ? `\n  hint: ${error.hint}` : ''}`;
}
