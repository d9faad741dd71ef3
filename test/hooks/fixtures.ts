/**
 * Hook fixtures. Most come from test/fixtures/build.ts (`fixture(name)`); the "variant" ones are hook
 * components built against a deliberately different `murmur:hook/lifecycle` (a handler missing, an
 * extra `hook-output` arm), which the shared builder cannot express: their folder holds
 * `variant.json` ({ omit?: handler[], extraArms?: string[], disableFeatures?, source? }) instead of
 * `fixture.json`, and this file builds them into .cache/fixtures/ with the same caching rule.
 */
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { PROJECT_ROOT, witDirFor } from '../../runtime/wit/packages.ts';
import { FIXTURES_OUT, FIXTURES_SRC } from '../fixtures/build.ts';

function hashDir(dir: string, h: ReturnType<typeof createHash>): void {
  for (const f of readdirSync(dir).sort()) {
    const p = join(dir, f);
    if (statSync(p).isDirectory()) hashDir(p, h);
    else h.update(f).update(readFileSync(p));
  }
}

/** Same rule as the shared builder: toolchain version + the fixture folder + the project WIT. */
function variantKey(name: string): string {
  const h = createHash('sha256');
  h.update(
    (JSON.parse(readFileSync(join(PROJECT_ROOT, 'node_modules/@bytecodealliance/componentize-js/package.json'), 'utf8')) as { version: string }).version,
  );
  hashDir(join(FIXTURES_SRC, name), h);
  hashDir(join(PROJECT_ROOT, 'wit'), h);
  return h.digest('hex').slice(0, 20);
}

interface Variant {
  omit?: string[];
  extraArms?: string[];
  disableFeatures?: Array<'stdio' | 'random' | 'clocks' | 'http' | 'fetch-event'>;
  source?: string;
}

let preopened = false;

/** Lays out the runtime package's WIT with the lifecycle interface patched per `v`. */
function variantWit(name: string, v: Variant, key: string): string {
  const base = witDirFor('runtime');
  const dir = join(PROJECT_ROOT, '.cache', 'wit', `variant-${name}-${key}`);
  if (existsSync(join(dir, '.complete'))) return dir;
  rmSync(dir, { recursive: true, force: true });
  cpSync(base, dir, { recursive: true });
  const file = join(dir, 'deps', 'hook', 'lifecycle.wit');
  let wit = readFileSync(file, 'utf8');
  for (const h of v.omit ?? []) {
    const re = new RegExp(`^\\s*${h}: func\\([^)]*\\) -> [^;]+;\\n`, 'm');
    if (!re.test(wit)) throw new Error(`variant ${name}: no handler ${h} in lifecycle.wit`);
    wit = wit.replace(re, '');
  }
  if (v.extraArms?.length) {
    wit = wit.replace(/(\n\s*deny\(string\),\n)(\s*\})/, `$1${v.extraArms.map((a) => `    ${a},\n`).join('')}$2`);
  }
  writeFileSync(file, wit);
  writeFileSync(join(dir, '.complete'), '');
  return dir;
}

/** Path of a variant hook fixture, building it when its source, the WIT or the toolchain changed. */
export async function variantFixture(name: string): Promise<string> {
  const v = JSON.parse(readFileSync(join(FIXTURES_SRC, name, 'variant.json'), 'utf8')) as Variant;
  const key = variantKey(name);
  mkdirSync(FIXTURES_OUT, { recursive: true });
  const out = join(FIXTURES_OUT, `${name}.wasm`);
  const keyFile = join(FIXTURES_OUT, `${name}.key`);
  if (existsSync(out) && existsSync(keyFile) && readFileSync(keyFile, 'utf8') === key) return out;
  const witPath = variantWit(name, v, key);
  if (!preopened) {
    const { _setPreopens } = await import('@bytecodealliance/preview2-shim/filesystem');
    (_setPreopens as (p: Record<string, string>) => void)({ [PROJECT_ROOT]: PROJECT_ROOT, '/tmp': '/tmp' });
    preopened = true;
  }
  const { componentize } = await import('@bytecodealliance/componentize-js');
  const { component } = await componentize({
    sourcePath: resolve(FIXTURES_SRC, name, v.source ?? 'index.js'),
    witPath,
    worldName: 'hook',
    disableFeatures: v.disableFeatures ?? [],
  });
  const tmp = `${out}.${process.pid}.tmp`;
  writeFileSync(tmp, component);
  renameSync(tmp, out);
  writeFileSync(keyFile, key);
  return out;
}
