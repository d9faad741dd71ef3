// Layout and configuration files of the real test node (addresses, paths, and the configuration
// each component reads). Pure: every function returns text; node.ts and supervisor.ts write it.
//
// The facts behind the settings (each found by a failure on this machine kind) are in
// docs/real-node.md ("Machine facts the configuration depends on").
import { join, resolve } from 'node:path';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
/** Node binaries and image archives built by test/cluster/node/build.sh. */
export const nodeBinDir = process.env.NODE_BIN_DIR ?? join(repoRoot, '.cache', 'node', 'bin');
export const nodeImagesDir = process.env.NODE_IMAGES_DIR ?? join(repoRoot, '.cache', 'node', 'images');
export const nodeBuildScript = join(repoRoot, 'test', 'cluster', 'node', 'build.sh');
/** Each node's state (containerd root, kubelet root, control plane, logs) lives under here; removed at teardown. */
export const stateRoot = process.env.CAPSULE_NODE_STATE ?? '/var/lib/capsule-node';

/** Addresses inside the node's network namespace (each node has its own, so two nodes may share them). */
export const net = {
  nodeIp: '10.201.0.2',
  nodePrefix: 24,
  podCidr: '10.244.0.0/16',
  serviceCidr: '10.96.0.0/16',
  apiServiceIp: '10.96.0.1',
  dnsServiceIp: '10.96.0.10',
  apiPort: 6443,
  clusterDomain: 'cluster.local',
} as const;

/** Sysctls the kubelet insists on (it writes them when they differ, and they are machine-wide):
 *  served from files bind-mounted over /proc/sys in the node's mount namespace. */
export const kubeletSysctls: Record<string, string> = {
  'vm/overcommit_memory': '1',
  'vm/panic_on_oom': '0',
  'kernel/panic': '10',
  'kernel/panic_on_oops': '1',
  'kernel/keys/root_maxkeys': '1000000',
  'kernel/keys/root_maxbytes': '25000000',
};

export interface NodePaths {
  name: string;
  /** network namespace (ip netns) */
  netns: string;
  /** kubelet cgroupRoot (the node's pods live under /sys/fs/cgroup/<hierarchy>/<cgroupRoot>) */
  cgroupRoot: string;
  state: string;
  logs: string;
  /** JSON written by node.ts: pids, ports (read by the cleanup of a later run) */
  record: string;
  /** JSON written by the supervisor once everything is up */
  ready: string;
  controlPlane: string;
  containerd: string;
  containerdSock: string;
  kubelet: string;
  cni: string;
  etc: string;
}

export function nodePaths(name: string): NodePaths {
  if (!/^[a-z0-9]([a-z0-9-]{0,18}[a-z0-9])?$/.test(name)) {
    throw new Error(`node name "${name}" must be 1-20 lowercase letters, digits or '-' (it names a network namespace and a cgroup)`);
  }
  const state = join(stateRoot, name);
  return {
    name,
    netns: `capsule-${name}`,
    cgroupRoot: `/capsule-${name}`,
    state,
    logs: join(state, 'logs'),
    record: join(state, 'node.json'),
    ready: join(state, 'ready.json'),
    controlPlane: join(state, 'control-plane'),
    containerd: join(state, 'containerd'),
    containerdSock: join(state, 'containerd', 'containerd.sock'),
    kubelet: join(state, 'kubelet'),
    cni: join(state, 'cni'),
    etc: join(state, 'etc'),
  };
}

export const images = {
  pause: 'registry.k8s.io/pause:capsule-local',
  busybox: 'docker.io/library/busybox:capsule-local',
  coredns: 'registry.k8s.io/coredns/coredns:capsule-local',
} as const;

export function containerdConfig(p: NodePaths): string {
  const c = p.containerd;
  return `# containerd 2.x of the real test node (written by test/cluster/node/config.ts)
version = 3
root = "${c}/root"
state = "${c}/state"

[grpc]
  address = "${p.containerdSock}"

[ttrpc]
  address = "${p.containerdSock}.ttrpc"

# what containerd would put under /opt goes under the node's state (/run is a tmpfs of the node's
# mount namespace: the shim sockets in /run/containerd/s stay there; their paths are too long for a state dir)
[plugins."io.containerd.internal.v1.opt"]
  path = "${c}/opt"

[plugins."io.containerd.nri.v1.nri"]
  disable = true
  socket_path = "${c}/nri.sock"

[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = "${images.pause}"

[plugins."io.containerd.cri.v1.runtime"]
  # root has no CAP_SYS_RESOURCE here: oom_score_adj below 0 (the sandbox asks -998) fails runc
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = ["/usr/lib/cni"]
    conf_dir = "${p.cni}/net.d"
  [plugins."io.containerd.cri.v1.runtime".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
        BinaryName = "/usr/sbin/runc"
        Root = "${c}/runc"
        SystemdCgroup = false

[plugins."io.containerd.grpc.v1.cri"]
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
`;
}

export function cniConfig(p: NodePaths, podSubnet: string): string {
  return JSON.stringify(
    {
      cniVersion: '1.0.0',
      name: 'capsule-node',
      plugins: [
        {
          type: 'bridge',
          bridge: 'cni0',
          isGateway: true,
          ipMasq: false,
          hairpinMode: true,
          ipam: { type: 'host-local', ranges: [[{ subnet: podSubnet }]], routes: [{ dst: '0.0.0.0/0' }], dataDir: join(p.cni, 'ipam') },
        },
        { type: 'portmap', capabilities: { portMappings: true } },
      ],
    },
    null,
    2,
  );
}

export function kubeletConfig(p: NodePaths, caFile: string): string {
  return `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# this machine kind has cgroup v1 only; kubelet 1.37 still supports it when told so
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: ${p.cgroupRoot}
cgroupsPerQOS: true
enforceNodeAllocatable: [pods]
containerRuntimeEndpoint: unix://${p.containerdSock}
authentication:
  anonymous: { enabled: false }
  webhook: { enabled: true }
  x509: { clientCAFile: ${caFile} }
authorization:
  mode: Webhook
clusterDomain: ${net.clusterDomain}
clusterDNS: [${net.dnsServiceIp}]
resolvConf: ${join(p.etc, 'resolv.conf')}
podLogsDir: ${join(p.state, 'pod-logs')}
healthzBindAddress: 127.0.0.1
healthzPort: 10248
readOnlyPort: 0
failSwapOn: false
protectKernelDefaults: false
serializeImagePulls: false
# a shared disk: no evictions because other work fills it
evictionHard: { memory.available: 50Mi, nodefs.available: 1%, imagefs.available: 1%, nodefs.inodesFree: 1% }
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
shutdownGracePeriod: 0s
syncFrequency: 10s
fileCheckFrequency: 10s
nodeStatusUpdateFrequency: 5s
`;
}

export function kubeProxyConfig(p: NodePaths, kubeconfig: string): string {
  return `apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clientConnection: { kubeconfig: ${kubeconfig} }
hostnameOverride: ${p.name}
clusterCIDR: ${net.podCidr}
bindAddress: 0.0.0.0
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
# nf_conntrack_max / hashsize and the tcp timeouts are machine-wide: leave them as the host has them
conntrack: { maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s }
`;
}

/** CoreDNS as a cluster runs it: a Deployment labelled k8s-app=kube-dns in kube-system behind the
 *  kube-dns Service, reading Services/EndpointSlices with its own ServiceAccount. No upstream: the
 *  node has no way out, so names outside the cluster fail at once instead of timing out. */
export function corednsManifest(): string {
  return `apiVersion: v1
kind: ServiceAccount
metadata: { name: coredns, namespace: kube-system }
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: { name: system:coredns }
rules:
- apiGroups: [""]
  resources: [endpoints, services, pods, namespaces]
  verbs: [list, watch]
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: { name: system:coredns }
roleRef: { apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: system:coredns }
subjects: [{ kind: ServiceAccount, name: coredns, namespace: kube-system }]
---
apiVersion: v1
kind: ConfigMap
metadata: { name: coredns, namespace: kube-system }
data:
  Corefile: |
    .:53 {
        errors
        health {
            lameduck 2s
        }
        ready
        kubernetes ${net.clusterDomain} in-addr.arpa ip6.arpa {
            pods insecure
            ttl 5
        }
        prometheus :9153
        cache 5
        loadbalance
    }
---
apiVersion: apps/v1
kind: Deployment
metadata: { name: coredns, namespace: kube-system, labels: { k8s-app: kube-dns } }
spec:
  replicas: 1
  selector: { matchLabels: { k8s-app: kube-dns } }
  template:
    metadata: { labels: { k8s-app: kube-dns } }
    spec:
      serviceAccountName: coredns
      dnsPolicy: Default
      priorityClassName: system-cluster-critical
      containers:
      - name: coredns
        image: ${images.coredns}
        imagePullPolicy: Never
        args: [-conf, /etc/coredns/Corefile]
        ports:
        - { name: dns, containerPort: 53, protocol: UDP }
        - { name: dns-tcp, containerPort: 53, protocol: TCP }
        - { name: metrics, containerPort: 9153, protocol: TCP }
        securityContext:
          capabilities: { add: [NET_BIND_SERVICE], drop: [ALL] }
          readOnlyRootFilesystem: true
        # As kubeadm's CoreDNS: a CPU request (no request is BestEffort, the least CPU weight: on
        # a node busy starting hundreds of capsule pods it went unanswered and was restarted 9
        # times in 17 minutes) and a liveness probe that waits for a busy node.
        resources:
          requests: { cpu: 100m, memory: 70Mi }
          limits: { memory: 170Mi }
        readinessProbe: { httpGet: { path: /ready, port: 8181 }, periodSeconds: 1 }
        livenessProbe: { httpGet: { path: /health, port: 8080 }, periodSeconds: 10, timeoutSeconds: 5, failureThreshold: 5, initialDelaySeconds: 60 }
        volumeMounts: [{ name: config, mountPath: /etc/coredns, readOnly: true }]
      volumes:
      - name: config
        configMap: { name: coredns }
---
apiVersion: v1
kind: Service
metadata: { name: kube-dns, namespace: kube-system, labels: { k8s-app: kube-dns } }
spec:
  clusterIP: ${net.dnsServiceIp}
  selector: { k8s-app: kube-dns }
  ports:
  - { name: dns, port: 53, protocol: UDP }
  - { name: dns-tcp, port: 53, protocol: TCP }
  - { name: metrics, port: 9153, protocol: TCP }
`;
}
