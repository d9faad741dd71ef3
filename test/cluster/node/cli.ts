// npm run node:up / node:down — a real node with the operator installed, for trying capsules by
// hand (like `kind create cluster`). Needs Linux and root; see test/cluster/node/README.md.
//
//   node --import tsx test/cluster/node/cli.ts up [--name N] [--no-operator]
//   node --import tsx test/cluster/node/cli.ts down [--name N]
//   node --import tsx test/cluster/node/cli.ts watch --name N --pid P   (internal: teardown when P dies)
import { parseArgs } from 'node:util';
import { alive, cleanupStale, preflight, startNode, stopNode } from './node.ts';
import { installOperator, operatorImages } from './operator.ts';

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: { name: { type: 'string', default: 'realnode' }, 'no-operator': { type: 'boolean', default: false }, pid: { type: 'string' } },
});
const log = (m: string) => process.stderr.write(`[node] ${m}\n`);

async function main(): Promise<number> {
  const cmd = positionals[0];
  if (cmd === 'down') {
    await stopNode(values.name!, log);
    await cleanupStale(log);
    return 0;
  }
  if (cmd === 'watch') {
    // started detached by startNode(): tear the node down once its owner is gone
    const pid = Number(values.pid);
    while (alive(pid)) await new Promise((r) => setTimeout(r, 500));
    log(`owner ${pid} of node ${values.name} is gone: tearing it down`);
    await stopNode(values.name!, log);
    return 0;
  }
  if (cmd !== 'up') {
    process.stderr.write('usage: cli.ts up|down [--name N] [--no-operator]\n');
    return 64;
  }
  const why = preflight();
  if (why) {
    log(`cannot start: ${why}`);
    return 3;
  }
  const images = values['no-operator'] ? [] : operatorImages();
  const node = await startNode({ name: values.name, ownerPid: 0, images, log });
  if (!values['no-operator']) await installOperator(node.kubeconfig, log);
  process.stdout.write(`export KUBECONFIG=${node.kubeconfig}\n`);
  log(`node up in ${node.startupMs} ms; run the e2e suite on it with: REALNODE_KUBECONFIG=${node.kubeconfig} npx vitest run --project realnode`);
  log(`up. Try: KUBECONFIG=${node.kubeconfig} kubectl get pods -A; tear down with: npm run node:down`);
  return 0;
}

main().then(
  (c) => process.exit(c),
  (e) => {
    log(`FAILED: ${(e as Error).message}`);
    process.exit(1);
  },
);
