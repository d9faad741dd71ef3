/**
 * The README's demo: runs examples/hello end to end, offline.
 *   1. builds the capsule's components from source (cached by source hash),
 *   2. publishes them into a local registry under .cache/demo/,
 *   3. starts the scripted provider (the project's only stand-in for an LLM API),
 *   4. runs `mur run` on a copy of the capsule (so murmur.lock lands in .cache, not in the repo).
 * An example with an `mcp:` block (`npm run demo mcp`) gets the MCP project's reference server,
 * @modelcontextprotocol/server-everything, started on the port of its first server's URL.
 */
import { cpSync, existsSync, mkdirSync, copyFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../runtime/wit/packages.ts';
import { buildFixture, sourceDir } from '../test/fixtures/build.ts';
import { publish } from '../runtime/registry/registry.ts';
import { startScriptedProvider, loadScript } from '../test/provider/scripted-provider.ts';
import { main } from '../runtime/cli/main.ts';
import { loadManifest } from '../runtime/manifest/capsule.ts';
import { startEverything } from '../test/mcp/servers.ts';

const EXAMPLE = process.argv[2] ?? 'hello';
const exampleDir = join(PROJECT_ROOT, 'examples', EXAMPLE);
const demoDir = join(PROJECT_ROOT, '.cache', 'demo', EXAMPLE);
const registry = join(demoDir, 'registry');
const capsule = join(demoDir, 'capsule');

const components = ['driver-anthropic', 'greet'];
console.log(`[demo] building ${components.length} components (cached after the first run)…`);
mkdirSync(registry, { recursive: true });
for (const name of components) {
  const wasm = await buildFixture(name, (s) => console.log(`[demo] ${s}`));
  const stagingDir = join(demoDir, 'artifacts', name);
  mkdirSync(stagingDir, { recursive: true });
  copyFileSync(join(sourceDir(name), 'murmur.yaml'), join(stagingDir, 'murmur.yaml'));
  copyFileSync(wasm, join(stagingDir, 'component.wasm'));
  try {
    const r = publish(registry, stagingDir);
    console.log(`[demo] registry: ${r.name} ${r.version} sha256:${r.sha256.slice(0, 12)}…`);
  } catch {
    // A rebuilt component under the same version: start the demo registry afresh.
    rmSync(registry, { recursive: true, force: true });
    mkdirSync(registry, { recursive: true });
    rmSync(capsule, { recursive: true, force: true });
    const r = publish(registry, stagingDir);
    console.log(`[demo] registry (rebuilt): ${r.name} ${r.version} sha256:${r.sha256.slice(0, 12)}…`);
  }
}
if (!existsSync(join(capsule, 'murmur.lock'))) rmSync(capsule, { recursive: true, force: true });
cpSync(exampleDir, capsule, { recursive: true, filter: (src) => !src.includes(`${EXAMPLE}/components`) });

const mcpUrl = loadManifest(exampleDir).mcp?.servers[0]?.url;
const mcp = mcpUrl ? await startEverything(Number(new URL(mcpUrl).port)) : undefined;
if (mcp) console.log(`[demo] MCP server (server-everything) at ${mcp.url}`);

const provider = await startScriptedProvider(loadScript(join(exampleDir, 'provider-script.json')));
console.log(`[demo] scripted provider at ${provider.url}`);
process.env.MURMUR_INFERENCE_ENDPOINT = provider.url;
process.env.MURMUR_INFERENCE_API_KEY = 'demo-key';
const code = await main(['run', capsule, '--registry', registry, '--work-root', join(demoDir, 'sessions')]);
await provider.stop();
await mcp?.stop();
console.log(code === 0 ? '[demo] done: the capsule completed its task.' : `[demo] the capsule did not complete (exit ${code}).`);
process.exit(code);
