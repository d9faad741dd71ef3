/**
 * Builds the project's own components (components/: the inference drivers) from source and
 * publishes them into a registry folder — what the runtime image ships as its built-in registry
 * (MURMUR_REGISTRY: test/images/build.sh publishes into .image-inputs/registry, which the Dockerfile
 * copies), and what a laptop user points `mur run --registry` at. The drivers are C components
 * (test/fixtures/build-c.ts), their toolchain installed on first use.
 *
 * Usage: node --import tsx scripts/build-registry.ts <registry-dir> [component ...]
 */
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { PROJECT_ROOT } from '../runtime/wit/packages.ts';
import { buildFixture, sourceDir } from '../test/fixtures/build.ts';
import { publish } from '../runtime/registry/registry.ts';

const [target, ...names] = process.argv.slice(2);
if (!target || target === '--help') {
  console.log(
    'usage: node --import tsx scripts/build-registry.ts <registry-dir> [component ...]\n\nBuilds components/* (default: all) and publishes them into <registry-dir>.',
  );
  process.exit(target ? 0 : 2);
}
const registry = resolve(target);
mkdirSync(registry, { recursive: true });
const all = readdirSync(join(PROJECT_ROOT, 'components')).filter((n) => existsSync(join(PROJECT_ROOT, 'components', n, 'murmur.yaml')));
for (const name of names.length ? names : all) {
  const wasm = await buildFixture(name, (s) => console.log(s));
  // The package folder is only publish()'s input: removed once published (every image build ran
  // this, and each left a folder per driver in the temp directory).
  const dir = mkdtempSync(join(tmpdir(), `publish-${name}-`));
  try {
    copyFileSync(join(sourceDir(name), 'murmur.yaml'), join(dir, 'murmur.yaml'));
    copyFileSync(wasm, join(dir, 'component.wasm'));
    const r = publish(registry, dir);
    console.log(`published ${r.name} ${r.version} sha256:${r.sha256}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
