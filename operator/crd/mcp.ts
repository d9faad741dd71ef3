/**
 * `spec.mcp` of the Capsule CRD: the MCP servers whose tools the model may call (docs/mcp.md, "On
 * Kubernetes"). Every rule the runtime's validator also holds — the name and tool-name patterns and
 * lengths, the header-name token, the headers a server cannot set, the sampling and elicitation
 * values — is imported from runtime/manifest/mcp.ts, so admission refuses what the runtime would
 * refuse at start, with one definition of each.
 *
 * What stays written here differs by kind, not by accident: this is an OpenAPI schema with CEL rules
 * checked by the API server, the runtime's is a parser of murmur.yaml. So the cross-field rules
 * (unique names, '*' alone, url xor service) are CEL expressions here and code there, the
 * Kubernetes-only keys (service, Secret refs) have no manifest twin, `command` (stdio) has no CRD
 * twin (the binary would have to be in the runtime image: docs/mcp.md), and the list and string
 * bounds with no manifest rule (16 servers, 64 tools, 16 headers, url 2048, header name 128) are
 * there because the API server prices every CEL rule by the largest input the schema admits.
 */
import {
  MCP_ELICITATION,
  MCP_HEADER_NAME_RE,
  MCP_SAMPLING,
  MCP_SERVER_NAME_MAX,
  MCP_SERVER_NAME_RE,
  MCP_TOOL_NAME_MAX,
  MCP_TOOL_NAME_RE,
  MCP_UNSETTABLE_HEADERS,
} from '../../runtime/manifest/mcp.ts';
import { arr, enm, int, obj, str, DNS_LABEL, type Schema } from './schema.ts';

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
      name: str(`Unique server name, 1-${MCP_SERVER_NAME_MAX} lowercase letters, digits and dashes; the model sees its tools as mcp__<name>__<tool>.`, {
        pattern: MCP_SERVER_NAME_RE.source,
        maxLength: MCP_SERVER_NAME_MAX,
      }),
      tools: arr(
        "The server's tools the model may call, by the server's names, or ['*'] for every tool it lists.",
        str('A tool name, or *.', {
          maxLength: MCP_TOOL_NAME_MAX,
          'x-kubernetes-validations': [
            {
              rule: `self == '*' || self.matches(${cel(MCP_TOOL_NAME_RE.source)})`,
              messageExpression: `"invalid MCP tool name '" + self + "': letters, digits, '_' and '-', at most ${MCP_TOOL_NAME_MAX}, or '*' alone"`,
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
          // The runtime parses the URL (WHATWG, checkMcpUrl), which CEL cannot: this pattern
          // refuses what is visible without parsing (a scheme other than http(s), user:password@,
          // white space). A URL it lets through and the parser refuses (a bad port, say) still ends
          // Ready=False InvalidManifest: the operator runs the manifest validator on what it renders.
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
              pattern: MCP_HEADER_NAME_RE.source,
              maxLength: 128,
              'x-kubernetes-validations': [
                {
                  rule: `!(self.lowerAscii() in [${MCP_UNSETTABLE_HEADERS.map((h) => `'${h}'`).join(', ')}])`,
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
