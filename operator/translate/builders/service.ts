import type { Capsule, KubeObject } from '../../api/types.ts';
import { A2A_PORT, METRICS_PORT, meta, names, selectorLabels } from './common.ts';

export function buildService(c: Capsule): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: meta(c, names(c).service),
    spec: {
      type: 'ClusterIP',
      selector: selectorLabels(c),
      ports: [
        { name: 'a2a', port: c.spec.servicePort ?? A2A_PORT, targetPort: 'a2a', protocol: 'TCP', appProtocol: 'http' },
        { name: 'metrics', port: METRICS_PORT, targetPort: 'metrics', protocol: 'TCP', appProtocol: 'http' },
      ],
    },
  };
}
