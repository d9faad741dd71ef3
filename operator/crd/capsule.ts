/** The Capsule CRD (`capsules.murmur.io`). */
import { API_VERSION, GROUP, VERSION } from '../api/types.ts';
import { CAPSULE_CODE, codeAllRules, nameRule, versionRule } from './admission.ts';
import { a2aSchema } from './a2a.ts';
import { mcpSchema } from './mcp.ts';
import { ARTIFACT_NAME, artifactSource, capabilities } from './common.ts';
import { arr, bool, enm, freeform, int, labelSelector, map, num, obj, quantity, str, DNS_LABEL, type Schema } from './schema.ts';
import { conditionsSchema } from './status.ts';
import { embeddedStoreSchema, phaseSchema, sleepSchema, sleepSpecRules, sleepStatusSchema } from './sleep.ts';

function artifactSchema(): Schema {
  return obj(
    'One artifact the capsule stages: a registry reference (name + version) or a source URL with its sha256.',
    {
      name: str('Artifact name, unique in the capsule.', { pattern: ARTIFACT_NAME, maxLength: 100 }),
      version: str('Artifact version in the registry.', { maxLength: 64, 'x-kubernetes-validations': [versionRule()] }),
      runtime: enm('What the artifact is.', ['tool', 'driver', 'hook', 'skill'], { default: 'tool' }),
      source: artifactSource(),
      capabilities: capabilities('Per-artifact grant (not allowed on skills).', 16, 128),
      on_overflow: enm('Async queue overflow rule (hooks only).', ['drop', 'block']),
      config: freeform('Opaque configuration handed to the artifact.'),
    },
    {
      required: ['name'],
      'x-kubernetes-validations': [
        { rule: 'has(self.version) || has(self.source)', message: 'an artifact needs a version (registry reference) or a source {url, sha256}' },
        { rule: "!has(self.capabilities) || self.runtime != 'skill'", message: 'a skill artifact cannot carry capabilities', fieldPath: '.capabilities' },
        { rule: "!has(self.on_overflow) || self.runtime == 'hook'", message: 'on_overflow applies to hook artifacts only', fieldPath: '.on_overflow' },
      ],
    },
  );
}

function inferenceSchema(): Schema {
  return obj(
    'Inference settings. The API key comes from a Secret (apiKeySecretRef) and reaches the runtime as the env var MURMUR_INFERENCE_API_KEY; it is never written into the manifest.',
    {
      driver: obj(
        'The inference driver.',
        {
          artifact: str('Name of an artifact with runtime driver.', { maxLength: 128 }),
          config: freeform('Driver configuration, passed to the driver as compact JSON.'),
        },
        { required: ['artifact'] },
      ),
      model: str('Model name passed to the driver.', { minLength: 1, maxLength: 256 }),
      endpoint: str(
        'Provider base URL the driver calls, e.g. https://api.anthropic.com (Anthropic Messages) or https://api.openai.com/v1 (OpenAI Chat Completions). Required: the runtime has no default, and the driver may reach this destination and nothing else.',
        { pattern: '^https?://[^\\s]+$', maxLength: 2048 },
      ),
      max_turns: int('Inference turns per task (default 10).', { minimum: 1 }),
      max_tokens: int('Output tokens per turn (default 8192).', { minimum: 1 }),
      max_session_tokens: int('Spend ceiling for the session, in tokens.', { minimum: 1 }),
      system_prompt: str('System prompt appended after the [Capsule] block.', { maxLength: 262144 }),
      compaction: obj('Compaction of the conversation history.', {
        threshold: num('Fraction of context.max_tokens at which compaction starts (0, 1], default 0.98.', { minimum: 0, exclusiveMinimum: true, maximum: 1 }),
        model: str('Model used for compaction.', { maxLength: 256 }),
        system_prompt: str('System prompt for compaction.', { maxLength: 65536 }),
      }),
      apiKeySecretRef: obj(
        'Secret key holding the provider API key, in the Capsule namespace.',
        {
          name: str('Secret name.', { pattern: DNS_LABEL.replace('[-a-z0-9]', '[-.a-z0-9]'), maxLength: 253 }),
          key: str('Key in the Secret.', { pattern: '^[-._a-zA-Z0-9]+$', maxLength: 253 }),
        },
        { required: ['name', 'key'] },
      ),
      api_key: str('Not accepted: put the key in a Secret and use apiKeySecretRef.'),
    },
    {
      required: ['driver', 'model', 'endpoint'],
      'x-kubernetes-validations': [
        {
          rule: '!has(self.api_key)',
          message: 'inline API keys are not accepted; store the key in a Secret and reference it with inference.apiKeySecretRef',
          fieldPath: '.api_key',
          reason: 'FieldValueForbidden',
        },
      ],
    },
  );
}

function storeSchema(): Schema {
  return obj(
    'Where the runtime keeps tasks, push-notification configs and the conversation record. Default embedded: a SQLite file on the session volume (an emptyDir), which survives container restarts but not pod deletion (or, with embedded.volumeClaim, on a PersistentVolumeClaim that survives it too), and serves one replica only. postgres: a PostgreSQL server shared by every replica (required for replicas > 1).',
    {
      embedded: embeddedStoreSchema(),
      postgres: obj(
        'A PostgreSQL server shared by the replicas; they also signal each other through it (LISTEN/NOTIFY).',
        {
          urlSecretRef: obj(
            'Secret key holding the postgresql:// URL (credentials included), in the Capsule namespace; reaches the runtime as the env var MURMUR_STORE, never in the manifest, the arguments or a log.',
            {
              name: str('Secret name.', { pattern: DNS_LABEL.replace('[-a-z0-9]', '[-.a-z0-9]'), maxLength: 253 }),
              key: str('Key in the Secret.', { pattern: '^[-._a-zA-Z0-9]+$', maxLength: 253 }),
            },
            { required: ['name', 'key'] },
          ),
          address: str(
            'Where the server is, for the egress NetworkPolicy: host:port, IP:port or CIDR:port (e.g. postgres.db.svc.cluster.local:5432 or 10.0.0.0/24:5432).',
            { minLength: 1, maxLength: 512 },
          ),
        },
        { required: ['urlSecretRef', 'address'] },
      ),
    },
    { 'x-kubernetes-validations': [{ rule: '!(has(self.embedded) && has(self.postgres))', message: 'give store.embedded or store.postgres, not both' }] },
  );
}

function ingressSchema(): Schema {
  return obj('Who may call this capsule over A2A, besides capsules whose network.allow names it.', {
    from: arr(
      'Admitted callers; each entry becomes a NetworkPolicy ingress peer on the A2A port.',
      obj(
        'Pods in a namespace (by name or selector), optionally narrowed by a pod selector.',
        {
          namespace: str('Namespace name.', { pattern: DNS_LABEL, maxLength: 63 }),
          namespaceSelector: labelSelector('Namespaces by label.'),
          podSelector: labelSelector('Pods by label (in the Capsule namespace unless a namespace is given).'),
        },
        {
          'x-kubernetes-validations': [
            {
              rule: 'has(self.namespace) || has(self.namespaceSelector) || has(self.podSelector)',
              message: 'an ingress peer needs namespace, namespaceSelector or podSelector',
            },
            { rule: '!(has(self.namespace) && has(self.namespaceSelector))', message: 'give namespace or namespaceSelector, not both' },
          ],
        },
      ),
      { maxItems: 32 },
    ),
  });
}

export function capsuleSpecSchema(): Schema {
  return obj(
    'The capsule manifest (murmur.yaml blocks, snake_case as in the file) plus pod-level settings (camelCase).',
    {
      name: str('Capsule name in the manifest (default: metadata.name).', { maxLength: 100, 'x-kubernetes-validations': [nameRule('spec.name')] }),
      version: str('Capsule version (default 0.0.0).', { maxLength: 64, default: '0.0.0', 'x-kubernetes-validations': [versionRule()] }),
      artifacts: arr('Artifacts the capsule stages.', artifactSchema(), {
        maxItems: 64,
        'x-kubernetes-validations': [{ rule: 'self.all(x, self.exists_one(y, y.name == x.name))', message: 'artifact names must be unique' }],
      }),
      capabilities: capabilities('What the capsule may do.'),
      inference: inferenceSchema(),
      context: obj('Context window settings.', {
        max_tokens: int('Context window in tokens; enables compaction.', { minimum: 1 }),
        seed_budget: num('Fraction of max_tokens a seed-context hook may fill (default 0.10).', { minimum: 0, maximum: 1 }),
        seed_overflow_margin: num('Over-budget margin within which the oldest seed messages are dropped (default 0.10).', { minimum: 0 }),
      }),
      lifecycle: obj(
        'Task lifecycle.',
        {
          task_acceptance: enm(
            'queue (default on Kubernetes): one long-running session serving A2A tasks in order; single: one A2A task, then the pod exits and restarts with a fresh session; none: one task from the launch (not servable as a Deployment).',
            ['none', 'single', 'queue'],
            { default: 'queue' },
          ),
          queue_depth: int('Queue depth (queue mode only, default 1).', { minimum: 1 }),
          input_timeout_secs: int('Timeout for request-input in seconds: a task given no reply within it fails (default 3600).', { minimum: 1 }),
          conversation: enm('stateless or threaded conversations.', ['stateless', 'threaded']),
          max_task_reopens: int('How often on-task-end may reopen a task (default 1, 0 disables).', { minimum: 0 }),
          delegation_deadline_secs: int('Deadline of a delegated task (default 600).', { minimum: 1 }),
        },
        {
          'x-kubernetes-validations': [
            {
              rule: "!has(self.queue_depth) || self.task_acceptance == 'queue'",
              message: "queue_depth applies to task_acceptance 'queue' only",
              fieldPath: '.queue_depth',
            },
          ],
        },
      ),
      observability: obj('Observability settings of the runtime.', {
        otel_endpoint: str('OTLP/HTTP endpoint for traces (overrides the operator-wide setting).', { pattern: '^https?://[^\\s]+$', maxLength: 2048 }),
      }),
      trace: obj('trace.jsonl options.', {
        include_tool_output: bool('Record tool output on tool_call events.'),
      }),
      hooks: arr(
        'Hook objects (same namespace) the capsule runs, in order.',
        obj(
          'A reference to a Hook.',
          {
            name: str('Hook object name.', { pattern: DNS_LABEL.replace('[-a-z0-9]', '[-.a-z0-9]'), maxLength: 253 }),
            capabilities: capabilities("The grant this capsule gives the hook (a hook's grant is never its own).", 16, 128),
          },
          { required: ['name'] },
        ),
        {
          maxItems: 32,
          'x-kubernetes-validations': [{ rule: 'self.all(x, self.exists_one(y, y.name == x.name))', message: 'hook references must be unique' }],
        },
      ),
      store: storeSchema(),
      replicas: int('Pods running this capsule (default 1). More than one needs the shared store (store.postgres).', { minimum: 0, maximum: 100, default: 1 }),
      resources: obj(
        'Container resources (default requests cpu 25m, memory 256Mi; limit memory 1Gi). ephemeral-storage, when not given, is requested 256Mi and limited to workdirSizeLimit + 512Mi: past it the kubelet evicts the pod.',
        {
          limits: map('Resource limits.', quantity('A quantity.')),
          requests: map('Resource requests.', quantity('A quantity.')),
        },
      ),
      workdirSizeLimit: str(
        'Size limit of the session workdir volume (an emptyDir holding the embedded SQLite store, the artifact cache and conversations), e.g. 1Gi (the default) or 500Mi. Past it the kubelet evicts the pod.',
        { pattern: '^[1-9][0-9]*(\\.[0-9]+)?(Ki|Mi|Gi|Ti|k|M|G|T)?$', maxLength: 32 },
      ),
      image: str('Runtime image override (default: the operator-wide runtime image).', { maxLength: 512 }),
      imagePullPolicy: enm('Image pull policy.', ['Always', 'IfNotPresent', 'Never']),
      servicePort: int('A2A Service port (default 8080).', { minimum: 1, maximum: 65535, default: 8080 }),
      ingress: ingressSchema(),
      a2a: a2aSchema(),
      mcp: mcpSchema(),
      sleep: sleepSchema(),
    },
    {
      'x-kubernetes-validations': [
        ...sleepSpecRules(),
        {
          rule: '!has(self.replicas) || self.replicas <= 1 || (has(self.store) && has(self.store.postgres))',
          message:
            'replicas > 1 needs the shared store: set spec.store.postgres (with the embedded store each pod would keep its own tasks, and tasks/get, cancel and input replies routed to another pod would fail)',
          fieldPath: '.replicas',
        },
        {
          rule: "!has(self.inference) || !has(self.inference.driver) || (has(self.artifacts) && self.artifacts.exists(a, a.name == self.inference.driver.artifact && has(a.runtime) && a.runtime == 'driver'))",
          message: 'inference.driver.artifact must name an artifact with runtime driver',
          fieldPath: '.inference.driver.artifact',
        },
      ],
    },
  );
}

function usageSchema(): Schema {
  const tokens = (what: string) => int(what, { format: 'int64', minimum: 0 });
  return obj(
    "Tokens the capsule's pods used, summed from their capsule_tokens_total counters on the metrics port; written by the operator when the totals change (at most once per scrape interval). Never decreases: a pod whose counters restart is counted from 0 again.",
    {
      inputTokens: tokens('Input tokens (cached input included; token_type input).'),
      outputTokens: tokens('Output tokens (token_type output).'),
      totalTokens: tokens('inputTokens + outputTokens.'),
      observedAt: str('When the pods were scraped for these totals.', { format: 'date-time' }),
      pods: int('Pods scraped successfully for these totals.', { minimum: 0 }),
    },
    { required: ['inputTokens', 'outputTokens', 'totalTokens', 'observedAt'] },
  );
}

export function capsuleCrd(): Record<string, unknown> {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `capsules.${GROUP}`, labels: { 'app.kubernetes.io/part-of': 'capsule-operator' } },
    spec: {
      group: GROUP,
      scope: 'Namespaced',
      names: { kind: 'Capsule', listKind: 'CapsuleList', plural: 'capsules', singular: 'capsule', shortNames: ['cap'], categories: ['murmur'] },
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          // /scale: `kubectl scale capsule`, an HPA or KEDA set spec.replicas; the operator carries it to
          // the Deployment (it never scales the Deployment on its own).
          subresources: {
            status: {},
            scale: { specReplicasPath: '.spec.replicas', statusReplicasPath: '.status.replicas', labelSelectorPath: '.status.selector' },
          },
          additionalPrinterColumns: [
            { name: 'State', type: 'string', jsonPath: '.status.phase' },
            { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
            { name: 'Reason', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].reason', priority: 1 },
            { name: 'Model', type: 'string', jsonPath: '.spec.inference.model' },
            { name: 'Replicas', type: 'integer', jsonPath: '.spec.replicas' },
            { name: 'Available', type: 'integer', jsonPath: '.status.readyReplicas' },
            { name: 'Tokens', type: 'integer', jsonPath: '.status.usage.totalTokens' },
            { name: 'URL', type: 'string', jsonPath: '.status.a2aUrl', priority: 1 },
            { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
          ],
          schema: {
            openAPIV3Schema: codeAllRules(
              obj(
                `Capsule (${API_VERSION}) runs one AI agent capsule: its manifest, the pods running the runtime image, an A2A Service and NetworkPolicies from its allowlist.`,
                {
                  apiVersion: str('APIVersion of this object.'),
                  kind: str('Kind of this object.'),
                  metadata: { type: 'object' },
                  spec: capsuleSpecSchema(),
                  status: obj('Observed state, written by the operator.', {
                    observedGeneration: int('Generation last reconciled.', { format: 'int64' }),
                    conditions: conditionsSchema(),
                    replicas: int('Pods that exist now (the Deployment status); the /scale subresource reports it.'),
                    selector: str('Label selector of the capsule pods, for the /scale subresource (HPA).'),
                    readyReplicas: int('Pods ready.'),
                    a2aUrl: str('In-cluster A2A URL of the capsule Service.'),
                    configHash: str('Hash of manifest, hooks and Secret versions the pods run.'),
                    usage: usageSchema(),
                    phase: phaseSchema(),
                    sleep: sleepStatusSchema(),
                  }),
                },
                {
                  required: ['spec'],
                  'x-kubernetes-validations': [
                    {
                      rule: "size(self.metadata.name) <= 50 && self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",
                      message: 'a Capsule name must be a DNS label of at most 50 characters starting with a letter (it names its Service and NetworkPolicies)',
                    },
                  ],
                },
              ),
              CAPSULE_CODE,
            ),
          },
        },
      ],
    },
  };
}
