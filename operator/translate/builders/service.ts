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
        // `http`, not `kubernetes.io/h2c`, though gRPC (h2c) is served on this port too: appProtocol
        // names one protocol, and h2c would tell L7 proxies (Gateway API backends, meshes) to speak
        // HTTP/2 to the pod for every request, which the runtime answers with gRPC only; JSON-RPC and
        // HTTP+JSON are HTTP/1.1. kube-proxy (L4) ignores the field, so in-cluster gRPC callers and
        // the activator reach the pod either way (docs/operator.md, "Runtime container contract").
        { name: 'a2a', port: c.spec.servicePort ?? A2A_PORT, targetPort: 'a2a', protocol: 'TCP', appProtocol: 'http' },
        { name: 'metrics', port: METRICS_PORT, targetPort: 'metrics', protocol: 'TCP', appProtocol: 'http' },
      ],
    },
  };
}
