// Issue 12 §3 on the real node: a Capsule the runtime refuses at start (here: a driver version
// the image's registry does not have, which only staging in the pod can find out) shows a
// condition naming the field, not Ready=True over a crash-looping pod.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { apiKeySecret, apply, createNamespace, deleteNamespace, getJson, readExample, waitFor } from './support.ts';

const ns = 'rn-refusal';

describe('a Capsule the runtime refuses at start', () => {
  beforeAll(async () => {
    await createNamespace(ns);
    await apply(apiKeySecret(ns));
  });
  afterAll(async () => {
    await deleteNamespace(ns);
  });

  it('shows a condition that names the field, not Ready=True over a crash-looping pod', async () => {
    const capsule = parse(readExample('quickstart.yaml'));
    capsule.metadata.namespace = ns;
    capsule.metadata.name = 'refused';
    capsule.spec.artifacts[0].version = '9.9.9'; // the image's registry has 0.1.0 only
    capsule.spec.inference.endpoint = 'http://provider.invalid:8080';
    await apply(stringify(capsule));

    // the pod's runtime container exits; the operator's status says why, naming the artifact field
    await waitFor(ns, 'capsule/refused', 'jsonpath={.status.conditions[?(@.type=="Ready")].reason}=RuntimeExited', '240s');
    const pods = await getJson(ns, 'pods -l app.kubernetes.io/instance=refused');
    const runtime = pods.items[0].status.containerStatuses.find((x: any) => x.name === 'runtime');
    expect(runtime.ready).toBe(false);
    expect((runtime.lastState.terminated ?? runtime.state.terminated).exitCode).not.toBe(0);
    const c = await getJson(ns, 'capsule/refused');
    const ready = c.status.conditions.find((x: any) => x.type === 'Ready');
    expect(ready.status).toBe('False');
    expect(ready.message).toMatch(/artifacts\[0\]|artifact 'driver-anthropic' version '9\.9\.9'/);
  });
});
