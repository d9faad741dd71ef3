/**
 * A child process that transpiles one component (transpile-jco.ts): the component's bytes on
 * stdin, the cache entry folder and the component's name as arguments, one JSON line on stdout —
 * `{ "meta": … }`, or `{ "error": …, "hint": … }` with exit code 1. Started by
 * transpile-child-run.ts with V8 flags of its own.
 */
import { transpileInto } from './transpile-jco.ts';
import { HostFault } from './errors.ts';

const [dir, name] = process.argv.slice(2);
const chunks: Buffer[] = [];
for await (const c of process.stdin) chunks.push(c as Buffer);
try {
  if (!dir || !name) throw new Error('usage: transpile-child <entry dir> <name> < component.wasm');
  const meta = await transpileInto(name, new Uint8Array(Buffer.concat(chunks)), dir);
  process.stdout.write(`${JSON.stringify({ meta })}\n`);
} catch (e) {
  // The parent rebuilds the error around the component's name: send the part after it.
  const raw = e instanceof HostFault ? e.message.slice(e.component.length + 2) : String((e as Error)?.message ?? e);
  process.stdout.write(`${JSON.stringify({ error: raw, hint: (e as { hint?: string }).hint })}\n`);
  process.exitCode = 1;
}
