/**
 * Lays out what an image runs, and nothing else: the compiled entry points under dist/ and the
 * files of node_modules they load, found by tracing their imports with @vercel/nft (the field's
 * file tracer) rather than by installing whole packages: `npm ci --omit=dev` of the runtime's
 * dependencies still drags in jco's componentize/optimize toolchain (componentize-js, binaryen,
 * typescript, rolldown: ≈ 280 MB) that the runtime's `transpile` never loads.
 *
 * Usage (in an image's build stage, after `npm run build`):
 *   node --import tsx scripts/image-files.ts runtime|operator <out-dir>
 * Writes <out-dir>/app/{package.json, bin/, dist/…, node_modules/…} and prints its size.
 */
import { cpSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
import type { Plugin } from 'esbuild';
import { nodeFileTrace } from '@vercel/nft';
import { lazyBuiltinsPlugin } from '../runtime/host/wasi-io/bundle.ts';
import { lazyMimeDb } from './lazy-mime-db.ts';
import { sdkMigratorImports } from './sdk-migrator-imports.ts';

const ROOT = resolve(import.meta.dirname, '..');

interface Target {
  entries: string[];
  /** Entry points traced where they are in the tree (not bundle outputs): packages loaded by a computed name. */
  traced?: string[];
  /** Copied as they are (not reached through imports). */
  extra: string[];
  /**
   * Files the tracer reaches that the image never loads, each for a stated reason. The image's
   * contract tests (test/images/) run the entry points, so a wrong entry here fails them.
   */
  ignore: string[];
  /** Packages copied file by file as traced (static imports only, where the whole package is big). */
  tracedFilesOnly?: string[];
  /** Packages copied whole although no traced file imports them by a name the tracer can read. */
  packages?: string[];
  /**
   * Bundle the entries with esbuild into one module each (output name → dist entry), the
   * `external` packages left in node_modules. Start-up: loading dist/ file by file (≈ 700 modules)
   * cost more than the rest of `mur serve`'s start (bench/images.ts prints the result). All outputs
   * sit in one folder, dist/runtime/cli/, so the paths the runtime derives from import.meta.url
   * (worker.js beside workers.ts' code, worker-boot.mjs and PROJECT_ROOT one and two levels up) still hold.
   */
  bundle?: {
    entries: Record<string, string>;
    copy: Record<string, string>;
    external: string[];
    split?: string[];
    /**
     * More entry points of a split bundle (output name → entry, written beside it), so the code
     * they share with it is one chunk loaded once; each with a module at the path the runtime
     * imports it from that re-exports it (`shims`: path → the output it re-exports).
     */
    splitWith?: Record<string, Record<string, string>>;
    shims?: Record<string, string>;
  };
}

const TARGETS: Record<string, Target> = {
  runtime: {
    // The token-counting worker (runtime/inference/tokens.ts) is found from the bundled main.js's
    // own URL: ./token-worker.js beside it; both workers are booted by ../worker-boot.mjs.
    entries: [
      'dist/runtime/cli/main.js',
      'dist/runtime/cli/worker.js',
      'dist/runtime/cli/inline-wasi.js',
      'dist/runtime/cli/token-worker.js',
      'dist/runtime/cli/transpile-child.js',
      'dist/runtime/cli/transpile-worker.js',
      'dist/runtime/worker-boot.mjs',
      'node_modules/@a2a-js/sdk/dist/cli/run.js',
      'dist/runtime/cli/a2a-db-run.js',
    ],
    // The migration runner loads the PostgreSQL driver by a computed specifier (`import(name)`,
    // name 'pg' for a postgresql:// URL), which neither esbuild nor the tracer follows: without
    // this the image had no `pg` package, and `spec.store.postgres` failed at start (E-STORE-002,
    // found by test/realnode/replicas.test.ts). Traced from its own entry point, pg brings its
    // dependencies (pg-pool, pg-protocol, pg-types, …).
    // The transpiler process (runtime/host/transpile-jco.ts) resolves jco's entry point by name,
    // for jco's version (the cache key) and to load the jco-transpile jco uses, and imports
    // neither: traced from jco's entry, the image keeps the files it had when it imported jco.
    traced: ['node_modules/pg/lib/index.js', 'node_modules/@bytecodealliance/jco/dist/api.js'],
    bundle: {
      entries: {
        'dist/runtime/cli/main.js': 'dist/runtime/cli/main.js',
        'dist/runtime/cli/worker.js': 'dist/runtime/host/worker.js',
        // The WASI of a component run on the main thread (`mur run` of a script capsule:
        // runtime/host/inline.ts), found beside the bundle that imports it.
        'dist/runtime/cli/inline-wasi.js': 'dist/runtime/host/inline-wasi.js',
        'dist/runtime/cli/token-worker.js': 'dist/runtime/inference/token-worker.js',
        // The component transpiler's own process (runtime/host/transpile-child-run.ts), found
        // beside the bundle that starts it.
        'dist/runtime/cli/transpile-child.js': 'dist/runtime/host/transpile-child.js',
        // A first run's transpile in a worker thread of the runtime (runtime/host/transpile-ahead.ts),
        // found beside the bundle that starts it, booted by ../worker-boot.mjs.
        'dist/runtime/cli/transpile-worker.js': 'dist/runtime/host/transpile-worker.js',
      },
      // The SDK's schema migrations (its `a2a-db` runner), which the store runs at open
      // (runtime/a2a/store/store.ts finds it beside the SDK's database entry point), bundled with
      // main.js: loaded from the package it imports all of kysely file by file (≈ 200–300 ms of every
      // start); bundled on its own it carried a second copy of kysely, and with kysely/migration
      // loaded from node_modules it held ≈ 1.4 MiB of an idle serving process's main heap for the
      // rest of its life (the ESM loader keeps every module it loaded). With main.js it shares
      // main.js's kysely chunk; the package path re-exports it.
      splitWith: { 'dist/runtime/cli/main.js': { 'a2a-db-run': 'node_modules/@a2a-js/sdk/dist/cli/run.js' } },
      shims: { 'node_modules/@a2a-js/sdk/dist/cli/run.js': 'dist/runtime/cli/a2a-db-run.js' },
      copy: { 'dist/runtime/worker-boot.mjs': 'dist/runtime/worker-boot.mjs' },
      // main.js split at its dynamic imports: what `mur serve` does not load before it is ready
      // (the other commands, the Kubernetes client behind --token-review, gRPC behind --grpc-port,
      // the OTLP exporters behind an endpoint) is never read, compiled or evaluated at start.
      split: ['dist/runtime/cli/main.js'],
      // Their files are found relative to their own modules (jco-transpile's core wasm,
      // preview2-shim's I/O worker, better-sqlite3's native addon through `bindings`), so they
      // stay packages.
      external: ['@bytecodealliance/*', 'better-sqlite3'],
    },
    // jco's package.json: its version is part of the transpile cache key (transpile-cache.ts).
    // The SDK's package.json and database entry: only resolved (never loaded: main.js bundles the
    // SDK), to find the bundled migration runner beside them. better-sqlite3's addon, built by
    // the image's own build stage (Dockerfile): its package.json is how `bindings` finds it.
    extra: [
      'package.json',
      'bin/mur',
      'bin/scrub-key.mjs',
      'node_modules/@bytecodealliance/jco/package.json',
      'node_modules/@a2a-js/sdk/package.json',
      'node_modules/@a2a-js/sdk/dist/server/database/index.cjs',
      'node_modules/better-sqlite3/package.json',
      'node_modules/better-sqlite3/build/Release/better_sqlite3.node',
      // The runtime's own addon (runtime/memory.ts finds it one folder up from the bundles).
      'dist/runtime/native/memory.node',
      // iconv-lite's code-page tables, left out of the bundles (lazyCodePageTables below) and
      // required by their package path: the require is esbuild's, which the tracer does not read.
      'node_modules/iconv-lite/package.json',
      ...readdirSync(join(ROOT, 'node_modules/iconv-lite/encodings/tables')).map((f) => `node_modules/iconv-lite/encodings/tables/${f}`),
    ],
    ignore: [
      // tsx (and the esbuild it runs) serve only the TypeScript sources (bin/mur, worker-boot.mjs
      // and workers.ts take that path only when runtime/*.ts exists); the image runs dist/.
      'node_modules/tsx/**',
      'node_modules/esbuild/**',
      'node_modules/@esbuild/**',
      // jco's CLI and its componentize/new/optimize commands: the runtime calls only `transpile`
      // (runtime/host/transpile-cache.ts), without the optimize or asm.js options that spawn
      // binaryen's wasm-opt / wasm2js.
      'node_modules/@bytecodealliance/jco/dist/jco.js',
      'node_modules/@bytecodealliance/jco/dist/cmd/componentize.js',
      'node_modules/@bytecodealliance/jco/dist/cmd/new.js',
      'node_modules/@bytecodealliance/jco/dist/cmd/new/**',
      'node_modules/@bytecodealliance/jco/dist/cmd/run.js',
      'node_modules/@bytecodealliance/componentize-js/**',
      'node_modules/binaryen/**',
      'node_modules/typescript/**',
      'node_modules/typescript-compiler-api/**',
      'node_modules/rolldown/**',
      'node_modules/@rolldown/**',
      // The Kubernetes client is the operator's.
      'node_modules/@kubernetes/**',
    ],
    // 22 MB of encodings; the runtime imports js-tiktoken/lite and the cl100k_base ranks only.
    // better-sqlite3: its lib/ (the addon is in extra), not the SQLite sources it builds from.
    tracedFilesOnly: ['node_modules/js-tiktoken', 'node_modules/better-sqlite3'],
  },
  operator: {
    // client-node is loaded through createRequire only out of a pod (operator/kube/client.ts), a
    // call the tracer does not follow: traced as an entry of its own. The activator of sleeping
    // Capsules is the same image with another entrypoint (charts/.../activator-deployment.yaml).
    entries: ['dist/operator/main.js', 'dist/operator/activator/main.js', 'node_modules/@kubernetes/client-node/dist/index.js'],
    extra: ['package.json'],
    ignore: [
      // No WASM toolchain in the operator image: it never transpiles or runs components.
      'node_modules/@bytecodealliance/**',
      'node_modules/binaryen/**',
      'node_modules/tsx/**',
      'node_modules/esbuild/**',
      'node_modules/@esbuild/**',
    ],
  },
};

/**
 * One copy of each package version in a bundle. npm nests a package under every dependant it
 * cannot hoist for (express 5, accepts, type-is and send each hold their own mime-types 3.0.2 and
 * mime-db 1.54.0, the top-level copies being older versions), and esbuild bundles each nested
 * copy as a module of its own: four mime-db tables evaluated and indexed at every start. Every
 * import that resolves into a package already seen at the same name and version (the same
 * registry tarball) is pointed at the first copy's file instead.
 */
function dedupePackages(): Plugin {
  // name@version → its copies' roots, sorted: the first is the one bundled (the same choice in
  // every build, whatever order esbuild resolves in).
  const copies = new Map<string, string[]>();
  const scan = (nm: string): void => {
    let entries: string[];
    try {
      entries = readdirSync(nm);
    } catch {
      return;
    }
    for (const e of entries) {
      const roots = e.startsWith('@') ? readdirSync(join(nm, e)).map((n) => join(nm, e, n)) : [join(nm, e)];
      for (const root of roots) {
        try {
          const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { name?: string; version?: string };
          if (pkg.name && pkg.version) copies.set(`${pkg.name}@${pkg.version}`, [...(copies.get(`${pkg.name}@${pkg.version}`) ?? []), root]);
        } catch {
          /* not a package */
        }
        scan(join(root, 'node_modules'));
      }
    }
  };
  scan(join(ROOT, 'node_modules'));
  const canonical = new Map<string, string>(); // package root → the root bundled for it
  for (const roots of copies.values()) {
    roots.sort();
    for (const r of roots) canonical.set(r, roots[0]!);
  }
  return {
    name: 'dedupe-packages',
    setup(build) {
      build.onResolve({ filter: /^[^./]/ }, async (args) => {
        if (args.pluginData?.dedupe || args.path.startsWith('node:')) return undefined;
        const r = await build.resolve(args.path, { kind: args.kind, resolveDir: args.resolveDir, importer: args.importer, pluginData: { dedupe: true } });
        if (r.errors.length > 0 || r.external) return undefined;
        const m = /^(.*\/node_modules\/(?:@[^/]+\/)?[^/]+)\/(.*)$/.exec(r.path);
        const root = m ? canonical.get(m[1]!) : undefined;
        if (!m || root === undefined || root === m[1]) return undefined;
        return { path: join(root, m[2]!), sideEffects: r.sideEffects };
      });
    },
  };
}

/**
 * iconv-lite's code-page tables (CJK: cp936, cp949, cp950, eucjp, shiftjis, big5, gb18030; ≈ 400 KB
 * of JSON) left as files of the package, required when a codec first needs one — not inlined into
 * the serve chunk, whose source V8 keeps whole in memory for the life of every serving process
 * (≈ 0.4 MiB of it for tables that express's body parser would read only for a body in one of
 * those charsets, and the JSON parser the A2A server uses refuses non-UTF charsets before that).
 * The require names the package (one copy of iconv-lite in the lockfile), so it resolves from the
 * bundle's folder in the image as from the build tree; the table files are listed in `extra`.
 */
function lazyCodePageTables(): Plugin {
  return {
    name: 'lazy-code-page-tables',
    setup(build) {
      build.onResolve({ filter: /^\.\/tables\/[\w-]+\.json$/ }, (args) => {
        if (!/[\\/]node_modules[\\/]iconv-lite[\\/]encodings$/.test(args.resolveDir)) return undefined;
        return { path: `iconv-lite/encodings/tables/${args.path.slice('./tables/'.length)}`, external: true };
      });
    },
  };
}

/**
 * Every bundled module is ASCII, so V8 holds its source one byte per character (above). esbuild
 * escapes non-ASCII in strings and identifiers itself (charset ascii); a legal comment it keeps
 * could still bring one, and is named here rather than doubling a module's heap.
 */
function assertOneByteSources(dir: string): void {
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!e.isFile() || !/\.m?js$/.test(e.name)) continue;
    const file = join(e.parentPath, e.name);
    const bytes = readFileSync(file);
    const at = bytes.findIndex((b) => b > 0x7f);
    if (at >= 0)
      throw new Error(
        `[image-files] ${file}: byte ${at} is not ASCII (${JSON.stringify(bytes.subarray(Math.max(0, at - 40), at + 8).toString('latin1'))}); V8 would hold this module's source at two bytes per character`,
      );
  }
}

const [name, outArg] = process.argv.slice(2);
const target = name ? TARGETS[name] : undefined;
if (!target || !outArg) {
  console.error(`usage: node --import tsx scripts/image-files.ts ${Object.keys(TARGETS).join('|')} <out-dir>`);
  process.exit(2);
}
const out = join(resolve(outArg), 'app');
// Bundles are written under ROOT/.cache (so their externals resolve from ROOT/node_modules while
// tracing) and copied to their dist/ path in the image.
let prefix = '';
// Files the bundles require by path instead of inlining them (lazyMimeDb), copied into the image.
const tableFiles = new Set<string>();
if (target.bundle) {
  prefix = `${join('.cache', 'image-bundle', name!)}/`;
  const dir = join(ROOT, prefix);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const { default: esbuild } = await import('esbuild');
  for (const [outFile, entry] of Object.entries(target.bundle.entries)) {
    const split = target.bundle.split?.includes(outFile) ?? false;
    const more = Object.entries(target.bundle.splitWith?.[outFile] ?? {}).map(([name, e]) => ({ in: join(ROOT, e), out: name }));
    await esbuild.build({
      entryPoints: split ? [{ in: join(ROOT, entry), out: basename(outFile, '.js') }, ...more] : [join(ROOT, entry)],
      // Split: each dynamic import() becomes a chunk of its own beside the entry, read only when
      // the code that needs it runs (the path-from-import.meta.url rule above holds for chunks).
      ...(split ? { outdir: dirname(join(dir, outFile)), splitting: true, chunkNames: 'chunk-[name]-[hash]' } : { outfile: join(dir, outFile) }),
      // Built-ins through process.getBuiltinModule, not ES imports (why: runtime/host/wasi-io/bundle.ts).
      plugins: [dedupePackages(), lazyCodePageTables(), lazyMimeDb(ROOT, join(ROOT, dirname(outFile)), tableFiles), lazyBuiltinsPlugin(), sdkMigratorImports()],
      bundle: true,
      format: 'esm',
      platform: 'node',
      target: 'node20',
      // Whitespace and comments out (names kept, so stacks still read): V8 keeps every module's
      // source in the heap for lazy compilation, and a source with one character beyond Latin-1 (a
      // dash or a section sign in a comment) is held at two bytes per character. mur serve's
      // chunks were 6.1 MiB of source strings on the main heap, 4 MiB of it the serve chunk alone.
      minifyWhitespace: true,
      external: target.bundle.external,
      logLevel: 'warning',
      // CommonJS dependencies inside an ESM bundle call require() for Node built-ins.
      banner: { js: "import { createRequire as __imageRequire } from 'node:module'; const require = __imageRequire(import.meta.url);" },
    });
  }
  assertOneByteSources(dir);
  for (const [at, of] of Object.entries(target.bundle.shims ?? {})) {
    mkdirSync(dirname(join(dir, at)), { recursive: true });
    writeFileSync(join(dir, at), `export * from '${relative(dirname(at), of).replace(/\\/g, '/')}';\n`);
  }
  for (const [to, from] of Object.entries(target.bundle.copy)) {
    mkdirSync(dirname(join(dir, to)), { recursive: true });
    cpSync(join(ROOT, from), join(dir, to));
  }
}
const { fileList, warnings } = await nodeFileTrace([...target.entries.map((e) => join(ROOT, prefix, e)), ...(target.traced ?? []).map((e) => join(ROOT, e))], {
  base: ROOT,
  // Sources and caches are never part of an image: the bundled workers.ts still names the .ts
  // files it bundles from sources (a path the tracer would glob, down into .cache).
  ignore: (p: string) =>
    /^(runtime|operator|test|bench|scripts)\//.test(p) ||
    (p.startsWith('.cache/') && !(prefix && p.startsWith(prefix))) ||
    target.ignore.some((g) => (g.endsWith('/**') ? p.startsWith(g.slice(0, -2)) : p === g)),
});
// Unresolvable requires are other platforms' native bindings and optional peers (bufferutil, …);
// anything else the tracer could not follow is printed so a missing file shows up at build time.
const unresolved = warnings.size;
for (const w of warnings) if (!String(w.message).startsWith('Failed to resolve dependency')) console.error(`[image-files] ${String(w.message).split('\n')[0]}`);
// Whole packages, not single files: the tracer picks the packages, but a file reached only through
// a conditional export or a computed path (async-function's `require.mjs`, a component's core
// wasm) would be missed file by file. Nested node_modules are packages of their own.
const packages = new Set<string>(target.packages);
const files: string[] = [...target.extra, ...tableFiles];
for (const f of fileList) {
  const m = /^(.*node_modules\/(?:@[^/]+\/)?[^/]+)\//.exec(f);
  if (m && !target.tracedFilesOnly?.includes(m[1]!)) packages.add(m[1]!);
  else files.push(f);
}
// TypeScript sources too: packages copied whole (pg-protocol) ship their src/*.ts beside the
// compiled lib/, which the image never loads (it runs JavaScript only; the image test checks).
const skip = (f: string) => /\.(map|ts|mts|cts|md|markdown)$/i.test(f);
let bytes = 0;
let count = 0;
const copy = (rel: string) => {
  const src = join(ROOT, rel);
  const st = statSync(src);
  const to = join(out, prefix && rel.startsWith(prefix) ? rel.slice(prefix.length) : rel);
  mkdirSync(dirname(to), { recursive: true });
  cpSync(src, to, { dereference: true });
  bytes += st.size;
  count++;
};
for (const f of new Set(files)) if (!skip(f) && statSync(join(ROOT, f)).isFile()) copy(f);
const ignored = target.ignore.map((g) => g.replace(/\/\*\*$/, ''));
for (const pkg of [...packages].sort()) {
  if (ignored.some((g) => pkg === g || pkg.startsWith(`${g}/`))) continue;
  const walk = (rel: string) => {
    for (const e of readdirSync(join(ROOT, rel), { withFileTypes: true })) {
      const r = `${rel}/${e.name}`;
      if (e.isDirectory()) {
        if (e.name !== 'node_modules') walk(r);
      } else if (!skip(r) && !ignored.some((g) => r === g)) copy(r);
    }
  };
  walk(pkg);
}
console.log(
  `[image-files] ${name}: ${packages.size} packages, ${count} files, ${(bytes / 1e6).toFixed(1)} MB in ${out} (${unresolved} optional dependencies not present, left out)`,
);
