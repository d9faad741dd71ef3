import { describe, expect, it } from 'vitest';
import { clusterSource, noClusterMessage, SERVICE_ACCOUNT_TOKEN } from '../../operator/kube/cluster-source.ts';

const has =
  (...files: string[]) =>
  (p: string) =>
    files.includes(p);

describe('the operator finds its cluster as client-node does, and names what is missing', () => {
  it.each([
    ['a KUBECONFIG file', { KUBECONFIG: '/k/a', HOME: '/h' }, has('/k/a'), { kind: 'kubeconfig', files: ['/k/a'] }],
    ['the present files of a KUBECONFIG list', { KUBECONFIG: '/k/a:/k/b' }, has('/k/b'), { kind: 'kubeconfig', files: ['/k/b'] }],
    [
      '~/.kube/config when KUBECONFIG names nothing that exists',
      { KUBECONFIG: '/k/a', HOME: '/h' },
      has('/h/.kube/config'),
      { kind: 'kubeconfig', files: ['/h/.kube/config'] },
    ],
    [
      'the ServiceAccount in a pod',
      { HOME: '/h', KUBERNETES_SERVICE_HOST: '10.96.0.1' },
      has(SERVICE_ACCOUNT_TOKEN),
      { kind: 'in-cluster', host: '10.96.0.1' },
    ],
  ])('uses %s', (_name, env, exists, want) => {
    expect(clusterSource(env, exists)).toEqual(want);
  });

  it('reports every place it looked when there is no cluster', () => {
    const s = clusterSource({ KUBECONFIG: '/k/a', HOME: '/h' }, has());
    expect(s.kind).toBe('none');
    if (s.kind !== 'none') return;
    const msg = noClusterMessage(s);
    expect(msg).toMatch(/^E-OP-020 /);
    expect(msg).toContain('KUBECONFIG=/k/a (no such file)');
    expect(msg).toContain('/h/.kube/config (no such file)');
    expect(msg).toContain('KUBERNETES_SERVICE_HOST (not set');
  });

  it('says the token is missing in a pod without a ServiceAccount token', () => {
    const s = clusterSource({ KUBERNETES_SERVICE_HOST: '10.96.0.1' }, has());
    expect(s.kind === 'none' && s.looked.join()).toContain(`${SERVICE_ACCOUNT_TOKEN} (no such file`);
  });
});
