/**
 * The host interfaces a hook component imports (the `murmur:runtime/hook` world):
 * `murmur:runtime/inference`, `murmur:runtime/tokens`, `murmur:task-io/read`,
 * `murmur:conversation/read`. WIT `err` payloads are thrown as plain (non-Error) values so the
 * component host hands them to the guest as the `err` case; an Error would be a host fault.
 */
import type { HostImports } from '../host/index.ts';
import { HANDLERS, exportName } from '../contracts/commit-table.ts';
import type { HookMessage, HookServices, StagedHook } from './types.ts';

export interface ImportState {
  /** Set when a `run-inference` of the current call was refused by the spend ceiling. */
  spendRefused: boolean;
}

/** Largest page `read-messages` serves. */
export const MAX_PAGE = 100;

/** Byte views of the task texts, cached by identity (a hook reads windows in a loop). */
class Utf8Cache {
  private text: string | undefined;
  private bytes: Buffer = Buffer.alloc(0);
  get(text: string): Buffer {
    if (text !== this.text) {
      this.text = text;
      this.bytes = Buffer.from(text, 'utf8');
    }
    return this.bytes;
  }
}

/**
 * The longest prefix of `bytes[offset..]` within `max` bytes that ends on a UTF-8 character
 * boundary. An offset past the end, or inside a character, is `out-of-range`.
 */
export function utf8Window(bytes: Uint8Array, offset: bigint, max: bigint): string {
  const len = BigInt(bytes.length);
  if (offset > len) throw 'out-of-range';
  const start = Number(offset);
  if (start < bytes.length && (bytes[start]! & 0xc0) === 0x80) throw 'out-of-range';
  let end = Number(offset + max > len ? len : offset + max);
  // Back off continuation bytes so the window ends before a character that does not fit whole.
  while (end > start && end < bytes.length && (bytes[end]! & 0xc0) === 0x80) end--;
  return Buffer.from(bytes.buffer, bytes.byteOffset + start, end - start).toString('utf8');
}

function reason(e: unknown): string {
  if (e instanceof Error) return e.message;
  return typeof e === 'string' ? e : JSON.stringify(e);
}

/** Cursor of `read-messages`: the index (from the oldest) where the next, older page ends. */
function parseCursor(c: string): number | undefined {
  const m = /^c([0-9]{1,9})$/.exec(c);
  return m ? Number(m[1]) : undefined;
}

function asRecord(m: HookMessage): HookMessage {
  const out: HookMessage = { role: String(m.role), content: String(m.content) };
  if (m.id !== undefined) out.id = m.id;
  if (m.sourceId !== undefined) out.sourceId = m.sourceId;
  if (m.insertedBy !== undefined) out.insertedBy = m.insertedBy;
  return out;
}

/** Hook world imports for one hook. `state` is reset by the bus before each handler call. */
export function hookImports(hook: StagedHook, services: HookServices, state: ImportState): HostImports {
  const taskIoGranted = hook.grants?.taskIoRead === true;
  const conversationGranted = hook.grants?.conversationRead === true;
  const inputCache = new Utf8Cache();
  const outputCache = new Utf8Cache();

  const input = (form: string): Buffer => {
    if (!taskIoGranted) throw 'not-granted';
    const io = services.taskIo();
    if (!io?.input) throw 'no-task';
    return inputCache.get(form === 'original' ? io.input.original : io.input.asGiven);
  };
  const output = (): Buffer => {
    if (!taskIoGranted) throw 'not-granted';
    const io = services.taskIo();
    if (!io) throw 'no-task';
    if (io.output === undefined) throw 'no-output';
    return outputCache.get(io.output);
  };

  return {
    'murmur:runtime/inference': {
      async runInference(req: { messages: HookMessage[]; systemPrompt?: string; model?: string }) {
        const r: { messages: HookMessage[]; systemPrompt?: string; model?: string } = { messages: req.messages ?? [] };
        if (req.systemPrompt !== undefined && req.systemPrompt !== null) r.systemPrompt = req.systemPrompt;
        if (req.model !== undefined && req.model !== null) r.model = req.model;
        try {
          const res = await services.runInference(r, hook.name);
          return { text: res.text, modelUsed: res.modelUsed, inputTokens: BigInt(res.inputTokens), outputTokens: BigInt(res.outputTokens) };
        } catch (e) {
          if ((e as { spendRefused?: unknown } | undefined)?.spendRefused === true) state.spendRefused = true;
          throw reason(e); // the WIT err: never a silent fallback to another model
        }
      },
    },
    'murmur:runtime/tokens': {
      count: async (text: string) => BigInt(await services.countTokens(text)),
    },
    'murmur:task-io/read': {
      inputLen: (form: string) => BigInt(input(form).length),
      readInput: (form: string, offset: bigint, max: bigint) => utf8Window(input(form), BigInt(offset), BigInt(max)),
      outputLen: () => BigInt(output().length),
      readOutput: (offset: bigint, max: bigint) => utf8Window(output(), BigInt(offset), BigInt(max)),
    },
    'murmur:conversation/read': {
      readMessages(cursor: string | undefined, limit: number) {
        if (!conversationGranted) throw 'not-granted';
        let all: HookMessage[];
        try {
          all = services.conversation();
        } catch (e) {
          throw `unavailable: ${reason(e)}`;
        }
        const n = Math.min(MAX_PAGE, Math.max(1, Number(limit)));
        let end = all.length;
        if (cursor !== undefined && cursor !== null) {
          const c = parseCursor(cursor);
          if (c === undefined || c > all.length) throw 'invalid-cursor';
          end = c;
        }
        const start = Math.max(0, end - n);
        const page = all.slice(start, end).reverse().map(asRecord);
        return { messages: page, nextCursor: start > 0 ? `c${start}` : undefined, total: all.length };
      },
    },
    // The hook world's `use` of `message` makes components import the lifecycle interface too;
    // nothing a hook may call lives there.
    'murmur:hook/lifecycle': Object.fromEntries(
      HANDLERS.map((h) => [
        exportName(h),
        () => {
          throw new Error(`a hook cannot call the lifecycle handler ${h}`);
        },
      ]),
    ),
  };
}
