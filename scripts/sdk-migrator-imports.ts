/**
 * An esbuild plugin of the runtime image's bundle (scripts/image-files.ts), in a module of its own
 * so a test can bundle with it (test/a2a/store-migrator-bundle.test.ts).
 */
import { readFileSync } from 'node:fs';
import type { Plugin } from 'esbuild';

/**
 * The SDK's migration runner imports kysely's Migrator by a computed specifier (`loadModule`:
 * 'kysely/migration', then 'kysely'), which esbuild leaves to Node: kysely/migration loaded file
 * by file from node_modules, beside the bundle's own copy. Written as the two literal imports it
 * tries, it is the bundle's kysely. Fails the build when the SDK's code no longer reads so.
 */
export function sdkMigratorImports(): Plugin {
  const CALL = 'return await import(specifier);';
  return {
    name: 'sdk-migrator-imports',
    setup(build) {
      build.onLoad({ filter: /[\\/]@a2a-js[\\/]sdk[\\/]dist[\\/]cli[\\/]run\.js$/ }, (args) => {
        const src = readFileSync(args.path, 'utf8');
        if (src.split(CALL).length !== 2) throw new Error(`${args.path}: expected one '${CALL}' (the SDK's loadModule) to bundle kysely/migration`);
        const literal =
          'return await (specifier === "kysely/migration" ? import("kysely/migration") : specifier === "kysely" ? import("kysely") : import(specifier));';
        return { contents: src.replace(CALL, literal), loader: 'js' };
      });
    },
  };
}
