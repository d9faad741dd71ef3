/**
 * Two kinds of failure come out of a component call, and they must never be confused:
 * - GuestError: the component answered with a WIT `err` (data; the instance is fine).
 * - HostFault (and subclasses): the call did not complete — deadline, memory cap, trap, a host
 *   import failing, a component that cannot load. The instance is discarded; the next call gets a
 *   fresh one.
 */
import { MurError } from '../errors.ts';

export class GuestError extends Error {
  readonly payload: unknown;
  constructor(component: string, fn: string, payload: unknown) {
    super(`${component}: ${fn} returned err: ${typeof payload === 'string' ? payload : JSON.stringify(payload)}`);
    this.name = 'GuestError';
    this.payload = payload;
  }
}

export type FaultKind = 'deadline' | 'memory' | 'trap' | 'host-import' | 'load' | 'crashed';

export class HostFault extends MurError {
  readonly kind: FaultKind;
  readonly component: string;
  constructor(kind: FaultKind, code: string, component: string, message: string, hint?: string, cause?: unknown) {
    super(code, `${component}: ${message}`, { hint, cause });
    this.name = 'HostFault';
    this.kind = kind;
    this.component = component;
  }
}

export class DeadlineExceeded extends HostFault {
  readonly deadlineMs: number;
  /** The manifest field that set the deadline. */
  readonly field: string;
  constructor(component: string, fn: string, deadlineMs: number, field = 'capabilities.limits.deadline_seconds') {
    super(
      'deadline',
      'E-HOST-003',
      component,
      `${fn} did not finish within its ${deadlineMs} ms deadline (${field}); the instance was stopped`,
      `raise ${field} in murmur.yaml, or make the component return sooner`,
    );
    this.name = 'DeadlineExceeded';
    this.deadlineMs = deadlineMs;
    this.field = field;
  }
}

export class MemoryLimitExceeded extends HostFault {
  readonly limitBytes: number;
  constructor(component: string, fn: string, limitBytes: number, usedBytes: number, requestedBytes?: number) {
    const grow = requestedBytes ? ` and asked for ${mib(requestedBytes)} MiB more` : '';
    super(
      'memory',
      'E-HOST-004',
      component,
      `${fn} grew linear memory to ${mib(usedBytes)} MiB${grow}, past its ${mib(limitBytes)} MiB cap; the instance was stopped`,
      'raise capabilities.limits.memory_bytes, or bound what the component allocates',
    );
    this.name = 'MemoryLimitExceeded';
    this.limitBytes = limitBytes;
  }
}

export class GuestTrap extends HostFault {
  constructor(component: string, fn: string, detail: string) {
    super('trap', 'E-HOST-005', component, `${fn} trapped: ${detail}`, 'the component crashed; its log in logs/ may say why');
    this.name = 'GuestTrap';
  }
}

export class HostImportFailed extends HostFault {
  constructor(component: string, importName: string, detail: string) {
    super('host-import', 'E-HOST-006', component, `host import ${importName} failed: ${detail}`);
    this.name = 'HostImportFailed';
  }
}

export class ComponentLoadError extends HostFault {
  constructor(component: string, message: string, hint?: string, cause?: unknown) {
    super('load', 'E-HOST-001', component, message, hint, cause);
    this.name = 'ComponentLoadError';
  }
}

export class IntegrityError extends HostFault {
  constructor(component: string, expected: string, actual: string) {
    super(
      'load',
      'E-HOST-002',
      component,
      `SHA-256 mismatch: expected ${expected}, file has ${actual}`,
      'the file changed since it was pinned; re-publish it or update the pin',
    );
    this.name = 'IntegrityError';
  }
}

function mib(n: number): string {
  return n < 1048576 ? (n / 1048576).toFixed(2) : (n / 1048576).toFixed(0);
}
