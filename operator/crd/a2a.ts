/**
 * `spec.a2a` of the Capsule CRD: who may call the capsule over A2A. The rendering is
 * operator/translate/builders/a2a-auth.ts; the schemes themselves are the runtime's
 * (runtime/a2a/server/auth.ts, docs/a2a.md "Callers who prove who they are").
 */
import { arr, bool, obj, str, type Schema } from './schema.ts';

/** A caller name as the runtime reports it: an API key holder or a ServiceAccount username. */
const CALLER = '^(apikey:[A-Za-z0-9][-._A-Za-z0-9]*|system:serviceaccount:[a-z0-9]([-a-z0-9]*[a-z0-9])?:[a-z0-9]([-.a-z0-9]*[a-z0-9])?)$';

export function a2aSchema(): Schema {
  return obj('A2A serving settings of the capsule pods.', {
    auth: obj(
      "Who may call the capsule. Default: capsules presenting a ServiceAccount token projected for this capsule's Service URL (verified with a TokenReview); no API keys; no anonymous callers.",
      {
        anonymous: bool(
          'Serve callers without credentials too, as one shared anonymous caller whose trust header is ignored and who sees only anonymous tasks. Default false.',
          { default: false },
        ),
        serviceAccounts: bool(
          "Accept Kubernetes ServiceAccount tokens whose audience is this capsule's Service URL (the operator projects such a token into every capsule that names this one in network.allow). Default true.",
          { default: true },
        ),
        apiKeys: obj(
          "Bearer API keys for callers outside the cluster: every key of the Secret is one holder (the key name; the caller is apikey:<name>) and its value that holder's key (at least 16 characters). The Secret is mounted into the pods; a change rolls them.",
          { secretName: str('Secret in the Capsule namespace.', { maxLength: 253 }) },
          {
            required: ['secretName'],
            'x-kubernetes-validations': [
              {
                rule: "self.secretName.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",
                messageExpression: `"a2a.auth.apiKeys.secretName '" + self.secretName + "' is not a Secret name: lowercase letters, digits, '-' and '.'"`,
                fieldPath: '.secretName',
                reason: 'FieldValueInvalid',
              },
            ],
          },
        ),
        trustedCallers: arr(
          'Callers whose x-murmur-task-trust header is honoured, besides the capsules whose network.allow names this one (always trusted): apikey:<holder> or system:serviceaccount:<namespace>:<name>. Everyone else is untrusted.',
          str('A caller name.', {
            maxLength: 320,
            'x-kubernetes-validations': [
              {
                rule: `self.matches('${CALLER.replace(/\\/g, '\\\\')}')`,
                messageExpression: `"trusted caller '" + self + "' is not a caller name: use apikey:<holder> or system:serviceaccount:<namespace>:<name>"`,
                reason: 'FieldValueInvalid',
              },
            ],
          }),
          { maxItems: 64 },
        ),
      },
      {
        'x-kubernetes-validations': [
          {
            rule: 'self.anonymous || self.serviceAccounts || has(self.apiKeys)',
            message: 'a2a.auth admits no caller: set serviceAccounts: true, give apiKeys.secretName, or set anonymous: true',
            reason: 'FieldValueInvalid',
          },
          {
            rule: "!has(self.trustedCallers) || has(self.apiKeys) || !self.trustedCallers.exists(c, c.startsWith('apikey:'))",
            message: 'a2a.auth.trustedCallers names an apikey: caller but a2a.auth.apiKeys is not set',
            fieldPath: '.trustedCallers',
            reason: 'FieldValueInvalid',
          },
          {
            rule: "!has(self.trustedCallers) || self.serviceAccounts || !self.trustedCallers.exists(c, c.startsWith('system:serviceaccount:'))",
            message: 'a2a.auth.trustedCallers names a ServiceAccount but a2a.auth.serviceAccounts is false',
            fieldPath: '.trustedCallers',
            reason: 'FieldValueInvalid',
          },
        ],
      },
    ),
  });
}
