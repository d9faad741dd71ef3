// Fills the runtime image's read-only caches at build time (Dockerfile, stage `caches`), by running
// the image's own `mur serve` once per built-in inference driver, as the pod runs it, until the
// driver is transpiled and memory-capped:
//   $MURMUR_COMPONENT_CACHE  the driver's jco output and its capped, grow-instrumented core module
//                            (the image serves them through MURMUR_COMPONENT_CACHE_SEED)
//   $NODE_COMPILE_CACHE      V8's code cache of what the start compiled (main.js, the store's
//                            migration runner, …), written by Node when each `mur serve` exits
//   <cache's parent>/tokens  the token counter's rank tables (runtime/inference/bpe-table-file.ts),
//                            built by the first start's counting worker (the image serves them
//                            from /opt/murmur/tokens, a seed root beside /opt/murmur/components)
// Plain JavaScript: it runs on the image's Node, which has no TypeScript loader.
//
//   node seed-image-caches.mjs      (env: MURMUR_REGISTRY, MURMUR_COMPONENT_CACHE, NODE_COMPILE_CACHE)
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

const registry = process.env.MURMUR_REGISTRY;
const cache = process.env.MURMUR_COMPONENT_CACHE;
const compileCache = process.env.NODE_COMPILE_CACHE;
if (!registry || !cache || !compileCache) {
  console.error('seed-image-caches: MURMUR_REGISTRY, MURMUR_COMPONENT_CACHE and NODE_COMPILE_CACHE must be set');
  process.exit(2);
}

/** The registry's drivers (<registry>/<name>/<version>/murmur.yaml with `runtime: driver`). */
function drivers() {
  const out = [];
  for (const name of readdirSync(registry)) {
    for (const version of readdirSync(join(registry, name))) {
      const mf = join(registry, name, version, 'murmur.yaml');
      if (existsSync(mf) && /^runtime:\s*driver\s*$/m.test(readFileSync(mf, 'utf8'))) out.push({ name, version });
    }
  }
  return out;
}

/** Capped core modules in the component cache (instance.ts writes one when a component first starts). */
function prepared() {
  if (!existsSync(cache)) return 0;
  let n = 0;
  for (const entry of readdirSync(cache)) {
    const dir = join(cache, entry);
    if (!entry.includes('.tmp-') && existsSync(join(dir, 'meta.json'))) n += readdirSync(dir).filter((f) => /\.cap\d+\.grow\d+\.wasm$/.test(f)).length;
  }
  return n;
}

/** Whether the counting worker has written the rank tables (written whole: a rename, no .tmp left). */
const tokensDir = join(dirname(cache), 'tokens');
function tablesWritten() {
  return existsSync(tokensDir) && readdirSync(tokensDir).some((f) => f.endsWith('.tables'));
}

const work = mkdtempSync('/tmp/seed-work-');
const list = drivers();
if (list.length === 0) {
  console.error(`seed-image-caches: no driver in ${registry}`);
  process.exit(1);
}
for (const d of list) {
  const capsule = join(work, d.name);
  mkdirSync(capsule, { recursive: true });
  writeFileSync(
    join(capsule, 'murmur.yaml'),
    [`name: seed-${d.name}`, 'version: 0.0.0', 'artifacts:', `  - {name: ${d.name}, version: ${d.version}, runtime: driver}`, 'inference:', `  driver: {artifact: ${d.name}}`, '  model: seed', ''].join('\n'),
  );
  const before = prepared();
  const t0 = performance.now();
  // The default store (SQLite beside the workdirs): its open is part of every start.
  // With this script's node flags (the ENTRYPOINT's, Dockerfile): Node keys its compile cache by them.
  const child = spawn(process.execPath, [...process.execArgv, '/app/bin/mur', 'serve', capsule, '--a2a-port', '0', '--metrics-port', '0', '--host', '127.0.0.1', '--workdir', join(work, 'sessions'), '--quiet'], {
    env: { ...process.env, MURMUR_INFERENCE_ENDPOINT: 'http://127.0.0.1:9', MURMUR_INFERENCE_API_KEY: 'unused' },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  let done = false;
  void exited.then(() => (done = true));
  // The driver is prewarmed once the front door listens; its capped module is the last file it
  // writes. A build script may poll: there is no event to wait for across processes.
  while (!done && (prepared() === before || !tablesWritten())) {
    if (performance.now() - t0 > 300_000) {
      child.kill('SIGKILL');
      console.error(`seed-image-caches: ${d.name} not prepared${tablesWritten() ? '' : ' (or the token tables not written)'} within 300 s`);
      process.exit(1);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  if (done) {
    console.error(`seed-image-caches: mur serve exited before ${d.name} was prepared: ${JSON.stringify(await exited)}`);
    process.exit(1);
  }
  child.kill('SIGTERM');
  const r = await exited;
  if (r.code !== 0) {
    console.error(`seed-image-caches: mur serve for ${d.name} exited ${JSON.stringify(r)} after SIGTERM`);
    process.exit(1);
  }
  console.log(`seed-image-caches: ${d.name} ${d.version} transpiled and capped in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
}
const tags = existsSync(compileCache) ? readdirSync(compileCache) : [];
if (tags.length === 0) {
  console.error(`seed-image-caches: Node wrote no compile cache into ${compileCache}`);
  process.exit(1);
}
console.log(`seed-image-caches: compile cache ${tags.join(', ')} (${readdirSync(join(compileCache, tags[0])).length} entries)`);
console.log(`seed-image-caches: token tables ${readdirSync(tokensDir).filter((f) => f.endsWith('.tables')).join(', ')}`);
