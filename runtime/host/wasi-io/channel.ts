/**
 * The component thread's route for outgoing HTTP, set once the worker gets its init message (a
 * pooled worker loads the WASI shim, and so the I/O backend, before it knows its component).
 */
import type { MessagePort } from 'node:worker_threads';
import { NetClient } from './net-client.ts';

let net: NetClient | undefined;

/** `sent`: told after each request is posted (the worker rings the main thread's doorbell, host/doorbell.ts). */
export function connectNet(port: MessagePort, flag: SharedArrayBuffer, sent?: () => void): void {
  net = new NetClient(port, new Int32Array(flag), sent);
}

export function currentNet(): NetClient | undefined {
  return net;
}
