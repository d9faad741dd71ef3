/**
 * Raw sockets: the WASI a component gets has networking disabled, whatever its HTTP grant. (A
 * SpiderMonkey guest cannot call wasi:sockets itself, so this drives the very import object a
 * component worker builds, as a guest's calls would.)
 */
import { connect, createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { wasiImports } from '../../runtime/host/wasi.ts';

type Sockets = {
  'wasi:sockets/instance-network': { instanceNetwork(): unknown };
  'wasi:sockets/tcp-create-socket': {
    createTcpSocket(family: string): { startConnect(net: unknown, addr: unknown): void; startBind(net: unknown, addr: unknown): void };
  };
  'wasi:sockets/ip-name-lookup': { resolveAddresses(net: unknown, name: string): unknown };
};

describe('WASI sockets grant', () => {
  for (const networkAllow of [[], ['127.0.0.1']]) {
    it(`opening a TCP connection is refused (HTTP grant: ${JSON.stringify(networkAllow)}) and nothing connects`, async () => {
      let connections = 0;
      const srv = createServer((s) => {
        connections++;
        s.destroy();
      });
      await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
      const port = (srv.address() as { port: number }).port;
      try {
        const w = wasiImports({ env: {}, networkAllow }, 'socket-test') as unknown as Sockets;
        const net = w['wasi:sockets/instance-network'].instanceNetwork();
        const sock = w['wasi:sockets/tcp-create-socket'].createTcpSocket('ipv4');
        const addr = { tag: 'ipv4', val: { port, address: [127, 0, 0, 1] } };
        expect(() => sock.startConnect(net, addr)).toThrow(/access-denied/);
        expect(() => sock.startBind(net, { tag: 'ipv4', val: { port: 0, address: [127, 0, 0, 1] } })).toThrow(/access-denied/);
        expect(() => w['wasi:sockets/ip-name-lookup'].resolveAddresses(net, 'localhost')).toThrow(/access-denied|permanent-resolver-failure/);
        // A connection of our own, made after the refused attempts: loopback accepts in order, so by
        // the time the server has accepted it, any connection those attempts had started came first.
        const ours = new Promise<void>((r) => srv.once('connection', () => r()));
        connect(port, '127.0.0.1').on('error', () => {});
        await ours;
        expect(connections).toBe(1);
      } finally {
        srv.close();
      }
    });
  }
});
