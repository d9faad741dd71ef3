/**
 * The worker thread of a transpile ahead (transpile-ahead.ts): transpiles the jobs it was started
 * with (transpile-jco.ts) one after another, posting `{ i, meta }` or `{ i, error, hint }` per job
 * (a component that fails does not stop the others), then `{ done: true, pages }`, and ends. Booted by
 * runtime/worker-boot.mjs, with no environment of the runtime's (transpile-ahead.ts).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { transpileInto } from './transpile-jco.ts';
import { refusalOf, type TranspileJob } from './transpile-jobs.ts';
import { transpilePageSteps } from './transpile-pages.ts';

const { jobs } = workerData as { jobs: TranspileJob[] };
for (const [i, job] of jobs.entries()) {
  try {
    parentPort!.postMessage({ i, meta: await transpileInto(job.name, job.bytes, job.dir) });
  } catch (e) {
    parentPort!.postMessage({ i, ...refusalOf(e) });
  }
}
// With the binary's page releases the transpiles made (transpile-pages.ts).
parentPort!.postMessage({ done: true, pages: transpilePageSteps() });
