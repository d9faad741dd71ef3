// Services on the node's host side, for the real-node tests: processes that pods reach at the
// node's address (10.201.0.2), as they reach the API server, and that the cluster names with a
// selector-less Service whose EndpointSlice points there (the way a cluster names a database that
// runs outside it).
//
// - startNodePostgres: a real PostgreSQL server (test/support/postgres.ts) run INSIDE the node's
//   network namespace, listening on the node's address; pods authenticate with a password
//   (scram-sha-256, the pod CIDR only), the test process over its Unix socket.
// - forwardIntoNode: a port on the node's address forwarded to a server of the test process on
//   this machine's loopback (the in-process scripted provider, whose `hold` lets a test decide when
//   an answer comes), through one socat in the namespace and a Unix socket the test process serves.
//
// Cleanup, also after a kill: everything lives under the node's state directory and every process
// in its network namespace, both of which the node's teardown removes (docs/real-node.md).
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { inject } from 'vitest';
import { net, nodePaths } from '../cluster/node/config.ts';
import { startPostgres, type Postgres } from '../support/postgres.ts';

/** The node's address: where host-side services listen and where their EndpointSlices point. */
export const nodeAddress = net.nodeIp;

/** The node of the realnode suite (vitest's inject), unless a caller outside vitest names one (bench/density.ts). */
const paths = (node?: string) => nodePaths(node ?? inject('realnode').name);

/** A folder under the node's state directory (removed with the node), readable by the postgres user. */
function hostDir(node?: string): string {
  const dir = join(paths(node).state, 'host-services');
  mkdirSync(dir, { recursive: true, mode: 0o755 });
  return dir;
}

export interface NodePostgres {
  server: Postgres;
  port: number;
  /** The URL a pod uses: `postgresql://murmur:<password>@<host>:<port>/<db>` (db created here). */
  podUrl(db: string, host: string): Promise<string>;
  stop(): Promise<void>;
}

/** PostgreSQL in the node's network namespace on <node address>:`port`. */
export async function startNodePostgres(port = 5432): Promise<NodePostgres> {
  const server = await startPostgres({
    netns: paths().netns,
    listen: nodeAddress,
    port,
    parent: hostDir(),
    hba: [`host all all ${net.podCidr} scram-sha-256`],
  });
  const password = randomBytes(12).toString('hex');
  const c = await server.admin();
  await c.query(`ALTER ROLE murmur PASSWORD ${c.escapeLiteral(password)}`);
  await c.end();
  return {
    server,
    port,
    async podUrl(db, host) {
      await (await server.admin(db)).end();
      return `postgresql://murmur:${password}@${host}:${port}/${db}`;
    },
    stop: () => server.stop(),
  };
}

export interface Forward {
  /** http://<node address>:<port> */
  url: string;
  stop(): Promise<void>;
}

/** <node address>:`port` in the namespace → 127.0.0.1:`target` here (see the file comment); `node`: the node's name outside vitest. */
export async function forwardIntoNode(port: number, target: number, name = `fwd-${port}`, node?: string): Promise<Forward> {
  const sock = join(hostDir(node), `${name}.sock`);
  rmSync(sock, { force: true });
  const open = new Set<Socket>();
  const pipe: Server = createServer((inner) => {
    const outer = connect(target, '127.0.0.1');
    open.add(inner);
    inner.once('close', () => {
      open.delete(inner);
      outer.destroy();
    });
    inner.pipe(outer).pipe(inner);
    inner.on('error', () => outer.destroy());
    outer.on('error', () => inner.destroy());
  });
  await new Promise<void>((r) => pipe.listen(sock, r));
  // -d -d: socat says "listening on …" once its socket is bound; that line is the readiness signal.
  const socat: ChildProcess = spawn(
    'nsenter',
    [`--net=/run/netns/${paths(node).netns}`, '--', 'socat', '-d', '-d', `TCP-LISTEN:${port},bind=${nodeAddress},fork,reuseaddr`, `UNIX-CONNECT:${sock}`],
    { stdio: ['ignore', 'ignore', 'pipe'], detached: true },
  );
  const exited = new Promise<void>((r) => socat.once('exit', () => r()));
  let log = '';
  await new Promise<void>((resolve, reject) => {
    socat.stderr!.on('data', (d: Buffer) => {
      log += d.toString();
      if (/listening on/.test(log)) resolve();
    });
    void exited.then(() => reject(new Error(`socat forwarding ${nodeAddress}:${port} exited:\n${log}`)));
  });
  return {
    url: `http://${nodeAddress}:${port}`,
    async stop() {
      // its own process group: the listener and the children it forked per connection
      try {
        process.kill(-socat.pid!, 'SIGTERM');
      } catch {
        /* gone */
      }
      await exited;
      // close() waits for open connections (a client's keep-alive ones): end them
      const closed = new Promise<void>((r) => pipe.close(() => r()));
      for (const s of open) s.destroy();
      await closed;
      rmSync(sock, { force: true });
    },
  };
}

/** A Service without a selector and its EndpointSlice: `<name>.<ns>.svc` → <node address>:`port`. */
export function hostServiceYaml(ns: string, name: string, port: number): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'List',
    items: [
      { apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: ns }, spec: { ports: [{ name: 'tcp', port, targetPort: port, protocol: 'TCP' }] } },
      {
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSlice',
        metadata: {
          name: `${name}-host`,
          namespace: ns,
          labels: { 'kubernetes.io/service-name': name, 'endpointslice.kubernetes.io/managed-by': 'capsule-realnode-tests' },
        },
        addressType: 'IPv4',
        ports: [{ name: 'tcp', port, protocol: 'TCP' }],
        endpoints: [{ addresses: [nodeAddress], conditions: { ready: true } }],
      },
    ],
  });
}
