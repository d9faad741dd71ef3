/**
 * The conformance suite's client under test: the runtime's own MCP client (McpTools over the SDK,
 * through the guarded fetch), given the scenario server's URL as its last argument. It plays the
 * model and the task's caller: connects, lists the tools, calls each one (with the arguments a
 * scenario's tool wants), answers an elicitation as a caller who accepts the defaults, and exits
 * non-zero when the runtime's client fails.
 */
import { McpTools, elicitationResult } from '../../../runtime/mcp/index.ts';

const url = process.argv.at(-1)!;
const u = new URL(url);
const ARGS: Record<string, Record<string, unknown>> = { add_numbers: { a: 5, b: 3 } };

const mcp = await McpTools.open({
  servers: [{ name: 'conformance', url, tools: ['*'], headersEnv: {}, sampling: 'refuse', elicitation: 'input-required' }],
  allow: [`${u.protocol}//${u.host}`],
  env: {},
  deadlineSeconds: 20,
  taken: new Set(),
  requests: { elicit: async (_server, params) => elicitationResult(params, '{}') },
});
let failed = false;
const trace = {
  write: (type: string, fields: Record<string, unknown>) => {
    process.stdout.write(`${JSON.stringify({ event_type: type, ...fields })}\n`);
    if (type === 'mcp_server' && fields.status !== 'connected') failed = true;
  },
};
mcp.attach(trace as never);
for (const t of mcp.tools()) {
  const remote = t.spec.name.replace(/^mcp__conformance__/, '');
  const r = await t.run(ARGS[remote] ?? {}, new AbortController().signal);
  process.stdout.write(`${t.spec.name}: ${r.isError ? 'error' : 'ok'}: ${r.content.slice(0, 500)}\n`);
  if (r.isError) failed = true;
}
await mcp.close();
process.exit(failed ? 1 : 0);
