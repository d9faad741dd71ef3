/**
 * capsule-activator entry point (the operator's image, another entrypoint:
 * `node /app/dist/operator/activator/main.js`). Configuration: config.ts. It holds requests for
 * sleeping Capsules, checks their fences, asks the operator to wake them and delivers the requests
 * (docs/operator.md, "The activator").
 */
import { existsSync } from 'node:fs';
import { hostname } from 'node:os';
import { clusterSource, noClusterMessage } from '../kube/cluster-source.ts';
import { KubeClient } from '../kube/client.ts';
import { startActivator } from './activator.ts';
import { activatorEnv } from './config.ts';

const log = (m: string) => process.stderr.write(`${new Date().toISOString()} ${m}\n`);

async function main(): Promise<void> {
  const cfg = activatorEnv(process.env);
  const source = clusterSource(process.env, existsSync);
  if (source.kind === 'none') throw new Error(noClusterMessage(source));
  const client = new KubeClient();
  const a = await startActivator({ ...cfg, client, identity: process.env.POD_NAME || `${hostname()}-${process.pid}`, log });
  let stopping = false;
  const shutdown = (sig: string) => {
    if (stopping) return;
    stopping = true;
    log(`${sig}: shutting down`);
    // The chart gives the pod 20 s (terminationGracePeriodSeconds): 5 s of preStop pause, then 10 s for what it holds, then out.
    setTimeout(() => process.exit(1), 13_000).unref();
    a.stop(10_000)
      .then(() => {
        client.close();
        process.exit(0);
      })
      .catch(() => process.exit(1));
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

main().catch((e: Error) => {
  log(`fatal: ${e.message}`);
  process.exit(1);
});
