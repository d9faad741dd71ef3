/** The Hook CRD (`hooks.murmur.io`). */
import { COMMIT_POLICIES, EXECUTION_MODES, HANDLERS } from '../../runtime/contracts/commit-table.ts';
import { API_VERSION, GROUP, VERSION } from '../api/types.ts';
import { codeAllRules, HOOK_CODE, versionRule } from './admission.ts';
import { ARTIFACT_NAME, artifactSource } from './common.ts';
import { hookContractRules } from './rules.ts';
import { HOOK_USED_BY_MAX } from '../reconcile/hook-status.ts';
import { arr, enm, int, obj, str, type Schema } from './schema.ts';
import { conditionsSchema } from './status.ts';

export function hookSpecSchema(): Schema {
  return obj(
    "A hook artifact and its contract. Capsules in the same namespace reference it by name in spec.hooks. The contract is checked at admission against the hook commit table, with the message capsule staging gives, and rendered into the hook's murmur.yaml entry: a component without a manifest of its own (a bare .wasm at source.url, a source.oci artifact) runs under it; an artifact with its own murmur.yaml must declare the same contract, or the runtime refuses to stage (E-REG-017).",
    {
      artifact: obj(
        'The hook artifact: a registry reference (name + version), a source URL with its sha256, or a digest-pinned source.oci (mounted into the pod as an image volume, like a Capsule artifact).',
        {
          name: str('Artifact name.', { pattern: ARTIFACT_NAME, maxLength: 100 }),
          version: str('Artifact version in the registry.', { maxLength: 64, 'x-kubernetes-validations': [versionRule(HOOK_CODE)] }),
          source: artifactSource(),
        },
        {
          required: ['name'],
          'x-kubernetes-validations': [
            { rule: 'has(self.version) || has(self.source)', message: 'an artifact needs a version (registry reference) or a source {url, sha256}' },
          ],
        },
      ),
      binding: enm('The handler the hook receives. Omitted: every session event (on-session-start through on-session-end), never on-stage.', HANDLERS),
      execution_mode: enm(
        'blocking: the agent loop waits for the hook. async: the event is queued and the loop goes on (only with commit_policy none).',
        EXECUTION_MODES,
        {
          default: 'blocking',
        },
      ),
      commit_policy: enm("What the runtime does with the hook's output. Each binding honors exactly one policy besides none.", COMMIT_POLICIES, {
        default: 'none',
      }),
      on_overflow: enm('Async queue overflow rule.', ['drop', 'block']),
    },
    { required: ['artifact'], 'x-kubernetes-validations': hookContractRules() },
  );
}

export function hookCrd(): Record<string, unknown> {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `hooks.${GROUP}`, labels: { 'app.kubernetes.io/part-of': 'capsule-operator' } },
    spec: {
      group: GROUP,
      scope: 'Namespaced',
      names: { kind: 'Hook', listKind: 'HookList', plural: 'hooks', singular: 'hook', shortNames: ['hk'], categories: ['murmur'] },
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: [
            { name: 'Binding', type: 'string', jsonPath: '.spec.binding', description: 'Handler the hook is bound to (empty: all session events).' },
            { name: 'Mode', type: 'string', jsonPath: '.spec.execution_mode' },
            { name: 'Policy', type: 'string', jsonPath: '.spec.commit_policy' },
            { name: 'Used By', type: 'integer', jsonPath: '.status.usedByCount', description: 'Capsules in the namespace that list this Hook in spec.hooks.' },
            { name: 'Accepted', type: 'string', jsonPath: '.status.conditions[?(@.type=="Accepted")].status', priority: 1 },
            { name: 'Artifact', type: 'string', jsonPath: '.spec.artifact.name', priority: 1 },
            { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
          ],
          schema: {
            openAPIV3Schema: codeAllRules(
              obj(
                `Hook (${API_VERSION}) declares a hook artifact with its binding, execution mode and commit policy.`,
                {
                  apiVersion: str('APIVersion of this object.'),
                  kind: str('Kind of this object.'),
                  metadata: { type: 'object' },
                  spec: hookSpecSchema(),
                  status: obj(
                    'Observed state, written by the operator: conditions Accepted (the contract against the hook commit table) and InUse, and the Capsules that use the Hook.',
                    {
                      observedGeneration: { type: 'integer', format: 'int64', description: 'Generation last observed.' },
                      conditions: conditionsSchema('Conditions: Accepted, InUse.'),
                      usedBy: arr(
                        `Capsules in the namespace whose spec.hooks name this Hook, sorted (the first ${HOOK_USED_BY_MAX}).`,
                        str('Capsule name.', { maxLength: 253 }),
                        { maxItems: HOOK_USED_BY_MAX },
                      ),
                      usedByCount: int('How many Capsules in the namespace use this Hook.', { minimum: 0 }),
                    },
                  ),
                },
                { required: ['spec'] },
              ),
              HOOK_CODE,
            ),
          },
        },
      ],
    },
  };
}
