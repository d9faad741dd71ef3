/**
 * Is this file a WebAssembly component, and one of the world its role needs? Checked when an
 * artifact is packed, published or installed, so a wrong file is refused there (naming the file and
 * what it is) instead of at run time.
 *
 * - `componentHeader` (synchronous, the binary preamble): `\0asm` + layer 1 = a component; layer 0
 *   is a core module (not componentized), anything else is not WebAssembly at all.
 * - `requireComponent` (asynchronous): also reads the component's world with wasm-tools (through
 *   jco's `componentWit`) and checks the export its role calls: `murmur:tool/run@0.1.0` for tools
 *   and drivers, `murmur:hook/lifecycle@…` for hooks.
 */
import { MurError } from '../errors.ts';
import type { ArtifactRuntime } from '../manifest/schema.ts';

const HINT_BUILD = 'build a component: componentize-js (`jco componentize`), `cargo build --target wasm32-wasip2`, or `wasm-tools component new <core.wasm>`';

/** Refuses (E-PKG-001) anything that is not a component binary; names what it is instead. */
export function componentHeader(bytes: Uint8Array, file: string): void {
  const magic = bytes.length >= 8 && bytes[0] === 0 && bytes[1] === 0x61 && bytes[2] === 0x73 && bytes[3] === 0x6d;
  if (!magic) {
    const start = Buffer.from(bytes.subarray(0, 16))
      .toString('latin1')
      .replace(/[^\x20-\x7e]/g, '.');
    throw new MurError('E-PKG-001', `${file} is not WebAssembly (${bytes.length} bytes, starting "${start}")`, { hint: HINT_BUILD, location: { file } });
  }
  const layer = bytes[6]! | (bytes[7]! << 8);
  if (layer === 0) {
    throw new MurError('E-PKG-001', `${file} is a core WebAssembly module, not a component`, {
      hint: `componentize it: \`wasm-tools component new ${file} -o component.wasm\` (with the world's WIT embedded), or ${HINT_BUILD}`,
      location: { file },
    });
  }
  if (layer !== 1) throw new MurError('E-PKG-001', `${file} is WebAssembly of an unknown layer ${layer}`, { hint: HINT_BUILD, location: { file } });
}

const WORLD_EXPORT: Record<string, RegExp> = {
  tool: /^\s*export murmur:tool\/run@0\.1\.0;/m,
  driver: /^\s*export murmur:tool\/run@0\.1\.0;/m,
  hook: /^\s*export murmur:hook\/lifecycle@[0-9.]+;/m,
};
const WORLD_TEXT: Record<string, string> = { tool: 'murmur:tool/run@0.1.0', driver: 'murmur:tool/run@0.1.0', hook: 'murmur:hook/lifecycle' };

/** The component's world as WIT text (wasm-tools via jco). */
export async function componentWorld(bytes: Uint8Array, file: string): Promise<string> {
  const { componentWit } = (await import('@bytecodealliance/jco')) as unknown as { componentWit(b: Uint8Array): string | Promise<string> };
  try {
    return await componentWit(bytes);
  } catch (e) {
    throw new MurError('E-PKG-001', `${file} is not a valid component: ${(e as Error).message?.split('\n')[0] ?? String(e)}`, {
      hint: HINT_BUILD,
      location: { file },
      cause: e,
    });
  }
}

/** Header + world: refuses a component that does not export what `runtime` calls. */
export async function requireComponent(bytes: Uint8Array, runtime: ArtifactRuntime, file: string, roleFromEntry = false): Promise<string> {
  componentHeader(bytes, file);
  const wit = await componentWorld(bytes, file);
  const want = WORLD_EXPORT[runtime];
  if (want && !want.test(wit)) {
    const exports = [...wit.matchAll(/^\s*export ([^;]+);/gm)].map((m) => m[1]).join(', ') || 'nothing';
    throw new MurError(
      'E-PKG-001',
      `${file} does not export ${WORLD_TEXT[runtime]}, which a ${roleFromEntry ? 'wasm (tool or driver)' : runtime} artifact must; it exports ${exports}`,
      {
        hint:
          runtime === 'hook'
            ? 'build it against the murmur:runtime/hook world (wit/hook)'
            : 'build it against the murmur:runtime-guest tool or driver world (wit/guest), or fix `runtime:` in murmur.yaml',
        location: { file },
      },
    );
  }
  return wit;
}
