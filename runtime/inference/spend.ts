/**
 * The session spend ceiling `inference.max_session_tokens` (research/murmur.md §13, `spend.rs`).
 *
 * - Every driver call is **admitted before dispatch**, reserving `input + max_output` tokens
 *   (the runtime's own pre-flight estimate of the request, and the request's `max_tokens`).
 * - A call whose reservation would take spent + reserved past the ceiling is **refused**: the caller
 *   must not dispatch it, so a refused call never reaches the provider.
 * - A refusal **latches**: every later admission is refused too, and the task ends
 *   `spend_ceiling_reached`.
 * - An admitted call is **settled** with the measured tokens (input + output), releasing its
 *   reservation; a call that never completed is **dropped**, which charges its input only.
 *
 * Decisions use the runtime's own counts, never provider-reported usage.
 */
import { MurError } from '../errors.ts';

export interface SpendTicket {
  readonly id: number;
  readonly inputTokens: number;
  readonly maxOutputTokens: number;
}

export type Admission = { admitted: true; ticket: SpendTicket } | { admitted: false; refusal: SpendRefusal };

export interface SpendRefusal {
  /** Tokens the refused call asked to reserve (input + max output). */
  requested: number;
  spent: number;
  reserved: number;
  limit: number;
  /** True when refused only because an earlier call was refused. */
  latched: boolean;
  message: string;
}

export class SpendMeter {
  readonly limit: number | undefined;
  #spent = 0;
  #reserved = 0;
  #latched = false;
  #next = 1;
  readonly #open = new Map<number, SpendTicket>();

  /** `limit` undefined = no ceiling. */
  constructor(limit?: number) {
    if (limit !== undefined && (!Number.isSafeInteger(limit) || limit < 0)) {
      throw new MurError('E-INF-010', `inference.max_session_tokens must be a non-negative integer, got ${String(limit)}`, {
        hint: 'set inference.max_session_tokens to a whole number of tokens, or remove it for no ceiling',
        location: { field: 'inference.max_session_tokens' },
      });
    }
    this.limit = limit;
  }

  get spent(): number {
    return this.#spent;
  }
  get reserved(): number {
    return this.#reserved;
  }
  /** True once a call has been refused; every later admission is refused. */
  get latched(): boolean {
    return this.#latched;
  }

  admit(inputTokens: number, maxOutputTokens: number): Admission {
    const input = nonNegative(inputTokens, 'inputTokens');
    const maxOut = nonNegative(maxOutputTokens, 'maxOutputTokens');
    const requested = input + maxOut;
    if (this.limit !== undefined && (this.#latched || this.#spent + this.#reserved + requested > this.limit)) {
      const latched = this.#latched;
      this.#latched = true;
      return {
        admitted: false,
        refusal: {
          requested,
          spent: this.#spent,
          reserved: this.#reserved,
          limit: this.limit,
          latched,
          message: latched
            ? `spend ceiling reached earlier in this session (inference.max_session_tokens = ${this.limit}); no further inference calls are admitted`
            : `inference call refused: it reserves ${requested} tokens (${input} input + ${maxOut} max output) and ${this.#spent} are spent and ${this.#reserved} reserved of inference.max_session_tokens = ${this.limit}`,
        },
      };
    }
    const ticket: SpendTicket = { id: this.#next++, inputTokens: input, maxOutputTokens: maxOut };
    this.#open.set(ticket.id, ticket);
    this.#reserved += requested;
    return { admitted: true, ticket };
  }

  /** The call completed: release its reservation and charge the measured tokens. */
  settle(ticket: SpendTicket, measured: { inputTokens: number; outputTokens: number }): void {
    this.#close(ticket);
    this.#spent += nonNegative(measured.inputTokens, 'inputTokens') + nonNegative(measured.outputTokens, 'outputTokens');
  }

  /** The call never completed (failed before a response): release it and charge its input only. */
  drop(ticket: SpendTicket): void {
    this.#close(ticket);
    this.#spent += ticket.inputTokens;
  }

  #close(ticket: SpendTicket): void {
    if (!this.#open.delete(ticket.id)) {
      throw new MurError('E-INF-013', `spend ticket ${ticket.id} was already settled or dropped`, {
        hint: 'settle or drop each admitted call exactly once',
      });
    }
    this.#reserved -= ticket.inputTokens + ticket.maxOutputTokens;
  }
}

function nonNegative(n: number, what: string): number {
  if (!Number.isSafeInteger(n) || n < 0) {
    throw new MurError('E-INF-012', `${what} must be a non-negative integer token count, got ${String(n)}`, {
      hint: 'pass whole token counts from the token counter',
    });
  }
  return n;
}

/** The refusal as a user-facing error, for a loop that ends the task `spend_ceiling_reached`. */
export function spendCeilingError(refusal: SpendRefusal): MurError {
  return new MurError('E-INF-011', refusal.message, {
    hint: 'raise inference.max_session_tokens in murmur.yaml, lower inference.max_tokens, or shorten the conversation',
    location: { field: 'inference.max_session_tokens' },
  });
}
