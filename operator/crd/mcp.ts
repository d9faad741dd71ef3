/**
 * `spec.mcp` of the Capsule CRD: the MCP servers whose tools the model may call (docs/mcp.md, "On
 * Kubernetes"). Names and tool names are checked with the runtime's own regexes
 * (runtime/manifest/mcp.ts), so admission refuses what the runtime would refuse at start.
 */
import { MCP_ELICITATION, MCP_SAMPLING, MCP_SERVER_NAME_RE, MCP_TOOL_NAME_RE } from '../../runtime/manifest/mcp.ts';
import { arr, enm, int, obj, str, DNS_LABEL, type Schema } from './schema.ts';

/** Headers the transport sets itself, and Authorization (the token's): not settable (runtime/manifest/mcp.ts). */
const OWNED_HEADERS = [
  'authorization',
  'host',
  'content-type',
  'content-length',
  'accept',
  'mcp-session-id',
  'mcp-protocol-version',
  'last-event-id',
  'connection',
  'transfer-encoding',
];

const cel = (re: string) => `'${re.replace(/\\/g, '\\\\')}'`;

const secretKeyRef = (what: string): Schema =>
  obj(
    `${what} A Secret key in the Capsule namespace; it reaches the runtime as an env var the rendered murmur.yaml names, never in the file.`,
    {
      name: str('Secret name.', { pattern: DNS_LABEL.replace('[-a-z0-9]', '[-.a-z0-9]'), maxLength: 253 }),
      key: str('Key in the Secret.', { pattern: '^[-._a-zA-Z0-9]+$', maxLength: 253 }),
    },
    { required: ['name', 'key'] },
  );

function serverSchema(): Schema {
  return obj(
    'One MCP server: reached by url, or by an in-cluster Service (the egress NetworkPolicy then admits exactly its pods on its target port).',
    {
      name: str('Unique server name, 1-20 lowercase letters, digits and dashes; the model sees its tools as mcp__<name>__<tool>.', {
        pattern: MCP_SERVER_NAME_RE.source,
        maxLength: 20,
      }),
      tools: arr(
        "The server's tools the model may call, by the server's names, or ['*'] for every tool it lists.",
        str('A tool name, or *.', {
          maxLength: 64,
          'x-kubernetes-validations': [
            {
              rule: `self == '*' || self.matches(${cel(MCP_TOOL_NAME_RE.source)})`,
              messageExpression: `"invalid MCP tool name '" + self + "': letters, digits, '_' and '-', at most 64, or '*' alone"`,
            },
          ],
        }),
        {
          minItems: 1,
          maxItems: 64,
          'x-kubernetes-list-type': 'set',
          'x-kubernetes-validations': [
            {
              rule: "!self.exists(t, t == '*') || self.size() == 1",
              message: "'*' stands alone: write tools: ['*'] for every tool, or list the tools by name",
            },
          ],
        },
      ),
      url: str(
        "The server's Streamable HTTP endpoint, an http(s) URL without credentials; its origin joins the rendered network.allow and the egress policy like any allow entry.",
        {
          maxLength: 2048,
          'x-kubernetes-validations': [
            {
              rule: "self.matches('^https?://[^\\\\s/@?#]+(/[^\\\\s]*)?$')",
              messageExpression: `"invalid MCP server url '" + self + "': give an absolute http(s) URL without user:password, e.g. https://mcp.example.com/mcp"`,
            },
          ],
        },
      ),
      service: obj(
        'An in-cluster Service serving the MCP endpoint; the runtime calls http://<name>.<namespace>.svc.<cluster domain>:<port><path>.',
        {
          name: str('Service name.', { pattern: DNS_LABEL, maxLength: 63 }),
          namespace: str('Service namespace (default: the Capsule namespace).', { pattern: DNS_LABEL, maxLength: 63 }),
          port: int('The Service port (the egress rule opens its target port on the pods).', { minimum: 1, maximum: 65535 }),
          path: str('Path of the endpoint (default /mcp).', { pattern: '^/[^\\s?#]*$', maxLength: 256 }),
        },
        { required: ['name', 'port'] },
      ),
      tokenSecretRef: secretKeyRef('Bearer token, sent as Authorization: Bearer <token>.'),
      headers: arr(
        'More headers, each value from a Secret key.',
        obj(
          'One header.',
          {
            name: str('Header name, e.g. X-Tenant (not Authorization: use tokenSecretRef).', {
              pattern: "^[A-Za-z0-9!#$%&'*+.^_`|~-]+$",
              maxLength: 128,
              'x-kubernetes-validations': [
                {
                  rule: `!(self.lowerAscii() in [${OWNED_HEADERS.map((h) => `'${h}'`).join(', ')}])`,
                  messageExpression: `"header '" + self + "' cannot be set: Authorization comes from tokenSecretRef, the others the MCP transport sets itself"`,
                },
              ],
            }),
            secretKeyRef: secretKeyRef('The header value.'),
          },
          { required: ['name', 'secretKeyRef'] },
        ),
        {
          maxItems: 16,
          'x-kubernetes-validations': [
            { rule: 'self.all(x, self.exists_one(y, y.name.lowerAscii() == x.name.lowerAscii()))', message: 'header names must be unique' },
          ],
        },
      ),
      sampling: enm(
        "The server's sampling/createMessage requests: refused (default), or run through the capsule's own driver against its spend ceiling.",
        MCP_SAMPLING,
      ),
      elicitation: enm("The server's elicitation/create requests: asked of the task's caller as input-required (default), or refused.", MCP_ELICITATION),
    },
    {
      required: ['name', 'tools'],
      'x-kubernetes-validations': [{ rule: 'has(self.url) != has(self.service)', message: 'an MCP server gives url or service, not both or neither' }],
    },
  );
}

export function mcpSchema(): Schema {
  return obj(
    "MCP servers whose tools the model may call beside the capsule's own (docs/mcp.md). A server the Capsule does not list is reachable by neither the runtime nor the egress NetworkPolicy.",
    {
      servers: arr('The MCP servers.', serverSchema(), {
        minItems: 1,
        maxItems: 16,
        'x-kubernetes-validations': [{ rule: 'self.all(x, self.exists_one(y, y.name == x.name))', message: 'MCP server names must be unique' }],
      }),
    },
    { required: ['servers'] },
  );
}
