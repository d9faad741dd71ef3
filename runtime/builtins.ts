/**
 * Node's HTTP modules as their CommonJS exports objects (`process.getBuiltinModule`), for every
 * runtime module that needs them, instead of `import http from 'node:http'`.
 *
 * Why: an ES import of a built-in builds a module namespace of all its exports, and on Node 24 (the
 * image's) that runs every lazy getter of `node:http`, which loads undici, http2, tls, zlib and
 * assert: 113 internal modules against 41, ≈ 6 MiB of RSS per thread that imports it (measured on
 * Node 24.22 in a worker: 18.3 against 12.3 MiB; Node 20 is unaffected). The exports object keeps
 * them lazy until something really uses one. The component worker's bundle does the same for all
 * built-ins (host/wasi-io/bundle.ts).
 */
export const http = process.getBuiltinModule('node:http');
/**
 * node:https on first use, not at import: it loads tls and OpenSSL's TLS state, ≈ 3 MiB of a
 * serving process's RSS on Node 24 (measured: a bare process loading http, crypto, zlib, … and
 * https idles at 56.3 MiB, without https at 53.1), which a runtime whose provider and registry are
 * plain http (a loopback proxy, the bench's scripted provider) never needs.
 */
export function https(): typeof import('node:https') {
  return process.getBuiltinModule('node:https');
}
