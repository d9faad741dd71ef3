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

    // the pod's runtime container exits: wait for the kubelet to record it
    await waitFor(ns, 'pods -l app.kubernetes.io/instance=refused', 'jsonpath={.status.containerStatuses[0].lastState.terminated.reason}=Error', '180s');
    // then the operator's status says why, naming the artifact field
    await waitFor(ns, 'capsule/refused', 'jsonpath={.status.conditions[?(@.type=="Ready")].reason}=RuntimeExited', '120s');
    const c = await getJson(ns, 'capsule/refused');
    const ready = c.status.conditions.find((x: any) => x.type === 'Ready');
    expect(ready.status).toBe('False');
    expect(ready.message).toMatch(/artifacts\[0\]|driver-anthropic@9\.9\.9/);
  });
});
