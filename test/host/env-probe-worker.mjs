// A stand-in transpile worker for test/host/transpile-ahead.test.ts: answers its one job with the
// names of the environment variables it sees.
import { parentPort } from 'node:worker_threads';

parentPort.postMessage({ i: 0, meta: Object.keys(process.env) });
parentPort.postMessage({ done: true });
