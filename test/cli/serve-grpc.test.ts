/**
 * `mur serve --grpc-port`: `same` serves the gRPC binding on the A2A port itself (what the operator
 * gives every Capsule), driven here by the official SDK's gRPC client through the agent loop of a
 * real `mur serve` process; a value that is no port is refused by name.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { TaskState, type Task } from '@a2a-js/sdk';
import { ClientFactory, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { GrpcTransportFactory } from '@a2a-js/sdk/client/grpc';
import { SERVE_HELP, grpcPortFlag } from '../../runtime/cli/serve.ts';
import { API_KEY, ECHO_TOOL, capsuleYaml, driverDef, makeRegistry, tmp } from '../loop/kit.ts';
import { startScriptedProvider } from '../provider/scripted-provider.ts';
import { userMessage } from '../a2a/helpers.ts';
import { serve } from './serve-kit.ts';

const cleanup: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of cleanup.reverse()) await c().catch(() => {});
});

const KEY = `ci-${'k'.repeat(20)}`;
const as = { serviceParameters: { authorization: `Bearer ${KEY}` } };
const send = (text: string) => ({ tenant: '', message: userMessage(text), configuration: undefined, metadata: undefined });

describe('mur serve --grpc-port same', () => {
  it('serves gRPC on the A2A port: the card names it, the SDK gRPC client runs a task with a key, JSON-RPC answers beside it', async () => {
    const provider = await startScriptedProvider([{ text: 'over grpc' }, { text: 'over json-rpc' }]);
    cleanup.push(() => provider.stop());
    const registry = await makeRegistry([driverDef('anthropic'), ECHO_TOOL]);
    const capsule = tmp('grpc-same-');
    writeFileSync(join(capsule, 'murmur.yaml'), capsuleYaml({ name: 'samer', tools: [ECHO_TOOL.name], extra: 'lifecycle:\n  task_acceptance: queue\n' }));
    const keys = join(tmp('grpc-keys-'), 'keys.txt');
    writeFileSync(keys, `ci:${KEY}\n`);
    const s = await serve(capsule, {
      registry,
      workRoot: tmp('grpc-same-work-'),
      env: { MURMUR_INFERENCE_ENDPOINT: provider.url, MURMUR_INFERENCE_API_KEY: API_KEY },
      args: ['--grpc-port', 'same', '--api-keys', keys, '--store', 'memory'],
    });
    cleanup.push(() => s.stop());
    const u = new URL(s.url);
    expect(s.output()).toContain(`gRPC ${u.hostname}:${u.port};`);

    const grpc = await new ClientFactory({ transports: [new GrpcTransportFactory()], preferredTransports: ['GRPC'] }).createFromUrl(s.url);
    await expect(grpc.sendMessage(send('no key'))).rejects.toThrow(/authentication required/);
    const task = (await grpc.sendMessage(send('hello'), as)) as Task;
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect((await grpc.getTask({ tenant: '', id: task.id, historyLength: undefined }, as)).status?.state).toBe(TaskState.TASK_STATE_COMPLETED);

    const jsonrpc = await new ClientFactory({ transports: [new JsonRpcTransportFactory()] }).createFromUrl(s.url);
    expect(((await jsonrpc.sendMessage(send('hello again'), as)) as Task).status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
  });
});

describe('the --grpc-port flag', () => {
  it('takes a port, 0 (no gRPC) or same; anything else is refused naming the flag (E-RUN-070)', () => {
    expect(grpcPortFlag('same')).toBe('same');
    expect(grpcPortFlag('9000')).toBe(9000);
    expect(grpcPortFlag('0')).toBeUndefined();
    for (const bad of ['yes', '-1', '70000', '80.5', '']) {
      expect(() => grpcPortFlag(bad), bad).toThrow(expect.objectContaining({ code: 'E-RUN-070', message: expect.stringMatching(/^--grpc-port must be/) }));
    }
  });

  it('--help says what same does', () => {
    expect(SERVE_HELP).toMatch(/--grpc-port <value> +also serve the A2A gRPC binding: on this port, or 'same' = on the A2A port itself/);
  });
});
