/**
 * An esbuild plugin of the runtime image's bundle (scripts/image-files.ts), in a module of its own
 * so a test can bundle with it (test/a2a/mime-db-bundle.test.ts).
 */
import { basename, join, relative } from 'node:path';
import type { Plugin } from 'esbuild';

/**
 * mime-db's table (≈ 150 KB of JSON; express's mime-types builds its two maps from it when it
 * loads) left a file of its package and required by path, not inlined into the serve chunk: V8
 * keeps a bundle's source whole for the life of every serving process, and the table inlined is
 * an object literal whose bytecode and boilerplate stay beside it (≈ 0.4 MiB of the main heap by
 * a heap snapshot, on top of the parsed table both ways). The require is relative to `outDir`, where
 * the bundle's files sit in the image; each table required is added to `files`, for the image to
 * carry it.
 */
export function lazyMimeDb(root: string, outDir: string, files: Set<string>): Plugin {
  return {
    name: 'lazy-mime-db',
    setup(build) {
      build.onResolve({ filter: /^\.\/db\.json$/ }, (args) => {
        if (basename(args.resolveDir) !== 'mime-db' || !/[\\/]node_modules[\\/]/.test(args.resolveDir)) return undefined;
        // Named from its node_modules/ on: a node_modules/ that is a symlink (a worktree sharing
        // another checkout's) resolves outside `root`, where the image's copy is not.
        const file = join(args.resolveDir, 'db.json');
        const inRoot = file.slice(file.replace(/\\/g, '/').lastIndexOf('node_modules/'));
        files.add(inRoot);
        return { path: relative(outDir, join(root, inRoot)).replace(/\\/g, '/'), external: true };
      });
    },
  };
}
