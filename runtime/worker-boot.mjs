// Entry of every component worker thread. Worker threads do not inherit tsx's loader, so when the
// runtime runs from TypeScript sources this registers it before importing the real worker module;
// from compiled JavaScript (dist/) it imports directly.
import { workerData } from 'node:worker_threads';

if (workerData.entry.endsWith('.ts')) {
  const { register } = await import('tsx/esm/api');
  register();
}
await import(workerData.entry);
