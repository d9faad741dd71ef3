/**
 * The entry of the `inline-wasi` bundle (bundled-module.ts): the per-instance WASI of wasi.ts with
 * preview2-shim and the in-thread I/O backend inside it, for a component run on the calling thread
 * (inline.ts). A bundle of its own, not an import of wasi.ts, because the shim's own I/O module
 * starts a worker thread for its I/O, which the bundle replaces (wasi-io/synckit.ts). Such a thread
 * has no route for outgoing HTTP (wasi-io/channel.ts): inline.ts runs only components that have no
 * network grant, whose requests the allowlist refuses before any I/O.
 */
export { wasiImports } from './wasi.ts';
