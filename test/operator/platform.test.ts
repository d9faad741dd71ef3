/**
 * The operator as a platform engineer meets it (issue 15), on the real API server: bad Capsules
 * refused at `kubectl apply` with field, index and fix; what slips through reported Ready=False
 * with the runtime's message; refused writes as conditions and events; /scale for kubectl scale
 * and an HPA; no write loop with fields others own; unwatched namespaces said at start-up.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Capsule } from '../../operator/api/types.ts';
import type { Operator } from '../../operator/operator.ts';
import { parseAllow } from '../../operator/translate/network.ts';
import { client, cluster, deleteNamespace, ensureCrds, eventually, kubectl, kubectlOk, newNamespace, operator, resynced } from './helpers.ts';

let ns = '';
let op: Operator;
const logs: string[] = [];

const capsulePath = (name: string) => `/apis/murmur.io/v1alpha1/namespaces/${ns}/capsules/${name}`;
const condition = (c: Capsule | undefined, type: string) => c?.status?.conditions?.find((x) => x.type === type);
const ctrl = () => op.controller()!;

const capsuleYaml = (name: string, extra = '') => `apiVersion: murmur.io/v1alpha1
kind: Capsule
metadata: { name: ${name} }
spec:
  artifacts:
    - { name: drv, runtime: driver, version: 1.0.0 }
    - { name: tool, version: 1.0.0, capabilities: { network: { allow: [api.example.com] } } }
  inference: { driver: { artifact: drv }, model: m, endpoint: 'https://api.anthropic.com' }
  capabilities: { network: { allow: [api.example.com] } }
${extra}`;

async function apply(yaml: string): Promise<{ code: number; stderr: string }> {
  return kubectl(['apply', '-n', ns, '-f', '-'], yaml);
}

async function events(name: string): Promise<any[]> {
  return (await client.list<any>(`/api/v1/namespaces/${ns}/events`, { fieldSelector: `involvedObject.name=${name}` })).items;
}

beforeAll(async () => {
  await ensureCrds();
  ns = await newNamespace('op-platform');
  op = await operator([ns], { log: (m) => logs.push(m) });
  await eventually('operator ready', () => op.ready());
});

afterAll(async () => {
  await op?.stop();
  await deleteNamespace(ns);
});

const dryRun = async (spec: Record<string, unknown>): Promise<string | undefined> =>
  client.create({ apiVersion: 'murmur.io/v1alpha1', kind: 'Capsule', metadata: { name: 'probe', namespace: ns }, spec }, { dryRun: 'All' }).then(
    () => undefined,
    (e: { body?: { message?: string } }) => e.body?.message ?? String(e),
  );

describe('admission refuses what the runtime would refuse', () => {
  // Accepted and refused entries; the API server's verdict must be the operator's parser's (which
  // defers to the runtime's parser for everything but CIDRs).
  const entries = [
    'api.example.com',
    'api.example.com:8443',
    'https://api.example.com',
    'http://x.example.com:80/',
    'HTTPS://Api.Example.com',
    '10.0.0.0/8',
    '10.0.0.0/8:5432',
    '1.2.3.4',
    '1.2.3.4:443',
    '[fd00::1]:8080',
    'fd00::/64',
    'capsule://team-a/reviewer',
    'ftp://files.example.com',
    'https://api.example.com/v1',
    'https://api.example.com?x=1',
    '10.0.0.0/33',
    'api.example.com:99999',
    'api.example.com:0',
    'user:pw@api.example.com',
    'https://user:pw@api.example.com',
    '*',
    '*.example.com',
    'capsule://Bad/x',
    '999.1.1.1',
    'a b',
    'host:port',
    'api.example.com/',
    // Wildcards, IPv6 and ports as the one grammar (runtime/contracts/network-grant.ts) reads them.
    '*.googleapis.com',
    'https://*.googleapis.com:8443',
    '*.eu.example.com:443',
    '*.com',
    'a.*.example.com',
    '*.0.0.1',
    'https://*',
    'fd00::1',
    '[::ffff:1.2.3.4]',
    'https://fd00::1',
    '1.2.3.4:0',
    '10.0.0.0/8:0',
    '[fd00::1]:0',
    'api.example.com:0443',
    'https://x.example.com/a b',
  ];

  it('every network.allow entry: the API server agrees with the runtime parser, naming the list index', async () => {
    const verdicts = await Promise.all(entries.map((e) => dryRun({ capabilities: { network: { allow: ['ok.example.com', e] } } })));
    entries.forEach((e, i) => {
      const valid = parseAllow(e, 'cluster.local', () => false).kind !== 'invalid';
      if (valid) expect(verdicts[i], e).toBeUndefined();
      else {
        expect(verdicts[i], e).toContain(`spec.capabilities.network.allow[1]: Invalid value: ${JSON.stringify(e)}: invalid network.allow entry '${e}'`);
        expect(verdicts[i], e).toContain('[E-OP-011]');
      }
    });
    expect(entries.filter((e) => parseAllow(e, 'cluster.local', () => false).kind === 'invalid').length).toBeGreaterThan(12);
  });

  it.each([
    [
      'a per-artifact grant',
      { artifacts: [{ name: 't', version: '1', capabilities: { network: { allow: ['a.example.com', 'ftp://x.example.com'] } } }] },
      'spec.artifacts[0].capabilities.network.allow[1]',
    ],
    ['a hook grant', { hooks: [{ name: 'h', capabilities: { network: { allow: ['10.0.0.0/33'] } } }] }, 'spec.hooks[0].capabilities.network.allow[0]'],
  ])('malformed entries in %s are refused at their index', async (_what, spec, field) => {
    const msg = await dryRun(spec);
    expect(msg).toContain(`${field}: Invalid value`);
    expect(msg).toContain('[E-OP-011]');
  });

  it.each([
    ['a version with spaces', { version: '1 0' }, 'spec.version: Invalid value: "1 0": invalid version \'1 0\''],
    [
      'an artifact version with a slash',
      { artifacts: [{ name: 't', version: '1/0' }] },
      'spec.artifacts[0].version: Invalid value: "1/0": invalid version \'1/0\'',
    ],
    ['a bad spec.name', { name: 'Bad_Name' }, 'spec.name: Invalid value: "Bad_Name": invalid spec.name \'Bad_Name\''],
    [
      'a bad strip_env glob',
      { capabilities: { shell: { allow: ['ls'], strip_env: ['OK_*', 'AWS-*'] } } },
      'spec.capabilities.shell.strip_env[1]: Invalid value: "AWS-*": invalid shell.strip_env pattern \'AWS-*\'',
    ],
  ])('%s is refused with the field and the fix', async (_what, spec, message) => {
    const msg = await dryRun(spec);
    expect(msg).toContain(message);
    expect(msg).toContain('[E-OP-011]');
  });

  it('kubectl apply of a Capsule with a wildcard over a top-level domain fails and stores nothing', async () => {
    const r = await apply(
      capsuleYaml('wild').replace('capabilities: { network: { allow: [api.example.com] } }\n', "capabilities: { network: { allow: ['*.com'] } }\n"),
    );
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain("invalid network.allow entry '*.com': a wildcard is '*.' before a domain of at least two labels");
    expect(await client.get(capsulePath('wild'))).toBeUndefined();
  });
});

describe('what admission cannot see, the operator reports with the runtime message', () => {
  it('an artifact grant wider than the capsule grant: Ready=False InvalidManifest, nothing applied, a Warning event', async () => {
    const r = await apply(
      capsuleYaml('wider').replace(
        '{ name: tool, version: 1.0.0, capabilities: { network: { allow: [api.example.com] } } }',
        '{ name: tool, version: 1.0.0, capabilities: { network: { allow: [other.example.com] } } }',
      ),
    );
    expect(r.code, r.stderr).toBe(0);
    const c = await eventually('wider blocked', async () => {
      const x = await client.get<Capsule>(capsulePath('wider'));
      return condition(x, 'Ready')?.reason === 'InvalidManifest' ? x : undefined;
    });
    expect(condition(c, 'Ready')).toMatchObject({ status: 'False' });
    expect(condition(c, 'Ready')!.message).toContain('spec.artifacts[1].capabilities.network.allow[0]: the runtime refuses the rendered murmur.yaml');
    expect(condition(c, 'Ready')!.message).toContain('E-MAN-016');
    expect(await client.get(`/apis/apps/v1/namespaces/${ns}/deployments/wider`)).toBeUndefined();
    const ev = await eventually('warning event', async () => (await events('wider')).find((e) => e.reason === 'InvalidManifest'));
    expect(ev).toMatchObject({ type: 'Warning' });
    expect(ev.message).toContain('[E-OP-009]');
  });
});

describe('the runtime validator runs again whenever the rendered manifest changes', () => {
  it('a Capsule made valid and then invalid again is Ready=False InvalidManifest again, its last good objects kept', async () => {
    const narrow = '{ name: tool, version: 1.0.0, capabilities: { network: { allow: [api.example.com] } } }';
    const wide = '{ name: tool, version: 1.0.0, capabilities: { network: { allow: [other.example.com] } } }';
    const blocked = (gen: number) => async () => {
      const x = await client.get<Capsule>(capsulePath('again'));
      return x?.status?.observedGeneration === gen && condition(x, 'Ready')?.reason === 'InvalidManifest' ? x : undefined;
    };
    expect((await apply(capsuleYaml('again').replace(narrow, wide))).code).toBe(0);
    await eventually('first refusal', blocked(1));
    expect((await apply(capsuleYaml('again'))).code).toBe(0);
    const ok = await eventually('valid: applied', async () => {
      const x = await client.get<Capsule>(capsulePath('again'));
      return x?.status?.observedGeneration === 2 && x.status.configHash && condition(x, 'Ready')?.reason !== 'InvalidManifest' ? x : undefined;
    });
    expect(await client.get(`/apis/apps/v1/namespaces/${ns}/deployments/again`)).toBeDefined();
    expect((await apply(capsuleYaml('again').replace(narrow, wide))).code).toBe(0);
    const c = await eventually('refused again', blocked(3));
    expect(condition(c, 'Ready')).toMatchObject({ status: 'False' });
    expect(condition(c, 'Ready')!.message).toContain('spec.artifacts[1].capabilities.network.allow[0]: the runtime refuses the rendered murmur.yaml');
    // Nothing applied from the refused generation: the pods keep the last good configuration.
    const dep = await client.get<any>(`/apis/apps/v1/namespaces/${ns}/deployments/again`);
    expect(dep.spec.template.metadata.annotations['murmur.io/config-hash']).toBe(ok.status?.configHash);
    const cm = await client.get<any>(`/api/v1/namespaces/${ns}/configmaps/again-manifest`);
    expect(cm.data['murmur.yaml']).not.toContain('other.example.com');
  });
});

describe('failures are conditions and events', () => {
  it('a ResourceQuota of services: 0 → Ready=False WriteRefused + Warning event; lifting it → applied, Normal event', async () => {
    expect((await apply('apiVersion: v1\nkind: ResourceQuota\nmetadata: { name: no-services }\nspec: { hard: { services: "0" } }\n')).code).toBe(0);
    // The quota is enforced once the quota controller has computed its usage.
    await eventually(
      'quota observed',
      async () => (await client.get<any>(`/api/v1/namespaces/${ns}/resourcequotas/no-services`))?.status?.hard?.services === '0',
    );
    expect((await apply(capsuleYaml('quota'))).code).toBe(0);
    const c = await eventually('quota refusal reported', async () => {
      const x = await client.get<Capsule>(capsulePath('quota'));
      return condition(x, 'Ready')?.reason === 'WriteRefused' ? x : undefined;
    });
    expect(condition(c, 'Ready')!.message).toMatch(/refused to write Service .*\/quota \(403 Forbidden\).*exceeded quota/);
    const warn = await eventually('warning event', async () => (await events('quota')).find((e) => e.reason === 'WriteRefused'));
    expect(warn.type).toBe('Warning');
    expect(warn.message).toContain('[E-OP-012]');

    expect((await kubectl(['delete', 'resourcequota', 'no-services', '-n', ns])).code).toBe(0);
    await eventually('applied after the quota is gone', async () => {
      const x = await client.get<Capsule>(capsulePath('quota'));
      return condition(x, 'Ready')?.reason !== 'WriteRefused' && (await client.get(`/apis/apps/v1/namespaces/${ns}/deployments/quota`)) !== undefined;
    });
    const normal = await eventually('Normal Applied event', async () => (await events('quota')).find((e) => e.type === 'Normal' && e.reason === 'Applied'));
    expect(normal.message).toContain('applied');
  });

  it('an artifact config too big for a ConfigMap on a Ready Capsule → Ready=False WriteRefused, not a stale Ready=True', async () => {
    expect((await apply(capsuleYaml('big'))).code).toBe(0);
    await eventually('big applied', async () => (await client.get<Capsule>(capsulePath('big')))?.status?.configHash);
    const big = 'x'.repeat(1_100_000);
    await client.request('PATCH', capsulePath('big'), {
      body: [{ op: 'add', path: '/spec/artifacts/1/config', value: { blob: big } }],
      contentType: 'application/json-patch+json',
    });
    const c = await eventually('too big reported', async () => {
      const x = await client.get<Capsule>(capsulePath('big'));
      return condition(x, 'Ready')?.reason === 'WriteRefused' ? x : undefined;
    });
    expect(condition(c, 'Ready')).toMatchObject({ status: 'False' });
    expect(condition(c, 'Ready')!.message).toMatch(/ConfigMap .*big-manifest/);
    expect((await events('big')).some((e) => e.reason === 'WriteRefused' && e.type === 'Warning')).toBe(true);
    await kubectlOk(['delete', 'capsule', 'big', '-n', ns, '--wait=false']);
  });

  it('the watched namespaces are said loudly at start-up', () => {
    expect(logs.some((l) => l.startsWith('WARNING: watching Capsules only in namespaces') && l.includes(ns))).toBe(true);
  });
});

describe('scale', () => {
  it('kubectl scale capsule goes through /scale to the Deployment, and the operator keeps it', async () => {
    // More than one replica needs the shared store (admission refuses it on the embedded one).
    expect(
      (await apply(`apiVersion: v1\nkind: Secret\nmetadata: { name: scaled-store }\nstringData: { url: 'postgresql://murmur@10.20.0.5:5432/capsules' }\n`))
        .code,
    ).toBe(0);
    const applied = await apply(
      capsuleYaml('scaled', "  store: { postgres: { urlSecretRef: { name: scaled-store, key: url }, address: '10.20.0.5:5432' } }\n"),
    );
    expect(applied.code, applied.stderr).toBe(0);
    await eventually('scaled applied', async () => (await client.get<any>(`/apis/apps/v1/namespaces/${ns}/deployments/scaled`))?.spec.replicas === 1);
    const r = await kubectl(['scale', 'capsule', 'scaled', '-n', ns, '--replicas=3']);
    expect(r.code, r.stderr).toBe(0);
    await eventually('Deployment scaled', async () => (await client.get<any>(`/apis/apps/v1/namespaces/${ns}/deployments/scaled`))?.spec.replicas === 3);
    const scale = await eventually('scale has a selector', async () => {
      const s = await client.get<any>(`/apis/murmur.io/v1alpha1/namespaces/${ns}/capsules/scaled/scale`);
      return s?.status?.selector ? s : undefined;
    });
    expect(scale.spec.replicas).toBe(3);
    expect(scale.status.selector).toBe('app.kubernetes.io/name=capsule,murmur.io/capsule=scaled');
    await resynced(ctrl());
    expect((await client.get<any>(`/apis/apps/v1/namespaces/${ns}/deployments/scaled`)).spec.replicas).toBe(3);
  });

  it('an HorizontalPodAutoscaler drives a Capsule through /scale and the operator follows it', async () => {
    if (!cluster.controllerManager) throw new Error('no kube-controller-manager: the HPA controller cannot run');
    const hpaYaml = JSON.stringify({
      apiVersion: 'autoscaling/v2',
      kind: 'HorizontalPodAutoscaler',
      metadata: { name: 'scaled' },
      spec: {
        scaleTargetRef: { apiVersion: 'murmur.io/v1alpha1', kind: 'Capsule', name: 'scaled' },
        minReplicas: 4,
        maxReplicas: 5,
        metrics: [{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 80 } } }],
      },
    });
    expect((await apply(hpaYaml)).code).toBe(0);
    const hpa = await eventually(
      'HPA reads the scale subresource',
      async () => {
        const h = await client.get<any>(`/apis/autoscaling/v2/namespaces/${ns}/horizontalpodautoscalers/scaled`);
        return h?.status?.conditions?.find((c: any) => c.type === 'AbleToScale') ? h : undefined;
      },
      90_000,
    );
    const able = hpa.status.conditions.find((c: any) => c.type === 'AbleToScale');
    expect(able, JSON.stringify(able)).toMatchObject({ status: 'True' });
    // Below minReplicas the HPA scales without metrics: 3 → 4 on the Capsule, carried to the Deployment.
    await eventually('HPA scaled the Capsule', async () => (await client.get<Capsule>(capsulePath('scaled')))?.spec.replicas === 4, 90_000);
    await eventually('Deployment follows', async () => (await client.get<any>(`/apis/apps/v1/namespaces/${ns}/deployments/scaled`))?.spec.replicas === 4);
    await resynced(ctrl());
    expect((await client.get<Capsule>(capsulePath('scaled')))!.spec.replicas).toBe(4);
    expect((await client.get<any>(`/apis/apps/v1/namespaces/${ns}/deployments/scaled`)).spec.replicas).toBe(4);
  }, 120_000);
});

describe('no write loops', () => {
  it('an env var and a sidecar added by hand to the Deployment stay, and resyncs write nothing', async () => {
    expect((await apply(capsuleYaml('handmade'))).code).toBe(0);
    await eventually('handmade applied', async () => (await client.get<Capsule>(capsulePath('handmade')))?.status?.configHash);
    const patch = {
      spec: {
        template: {
          spec: {
            containers: [
              { name: 'runtime', env: [{ name: 'DEBUG', value: '1' }] },
              { name: 'sidecar', image: 'busybox:1' },
            ],
          },
        },
      },
    };
    const r = await kubectl([
      'patch',
      'deployment',
      'handmade',
      '-n',
      ns,
      '--type',
      'strategic',
      '-p',
      JSON.stringify(patch),
      '-o',
      'jsonpath={.metadata.resourceVersion}',
    ]);
    expect(r.code, r.stderr).toBe(0);
    // Let the watch deliver the hand-made change (the cache holds that version or a newer one),
    // then count writes over full resync passes.
    const rv = Number(r.stdout);
    await eventually('cache has the hand-made version', () => Number(ctrl().owned.get('Deployment')!.get(`${ns}/handmade`)?.metadata.resourceVersion) >= rv);
    await resynced(ctrl());
    const applies = () => op.metrics.total('capsule_operator_writes_total', { verb: 'apply' });
    const before = await applies();
    await resynced(ctrl(), 3);
    expect(await applies()).toBe(before);
    const dep = await client.get<any>(`/apis/apps/v1/namespaces/${ns}/deployments/handmade`);
    expect(dep.spec.template.spec.containers.map((c: any) => c.name).sort()).toEqual(['runtime', 'sidecar']);
    expect(dep.spec.template.spec.containers.find((c: any) => c.name === 'runtime').env.some((e: any) => e.name === 'DEBUG')).toBe(true);
    // A field of ours changed by hand is still repaired.
    await kubectlOk(['patch', 'deployment', 'handmade', '-n', ns, '--type', 'merge', '-p', '{"spec":{"revisionHistoryLimit":9}}']);
    await eventually(
      'drift repaired',
      async () => (await client.get<any>(`/apis/apps/v1/namespaces/${ns}/deployments/handmade`))?.spec.revisionHistoryLimit === 3,
    );
  });
});
