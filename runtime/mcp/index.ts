export { McpTools, type McpRuntimeTool, type McpToolsOptions } from './tools.ts';
export { McpConnection, MAX_RECONNECTS, type ServerRequests } from './connection.ts';
export { admitTools, modelToolName, MAX_DESCRIPTION_BYTES, MAX_SCHEMA_BYTES, MAX_TOOLS_PER_SERVER, type McpToolDef } from './inventory.ts';
export { toolOutcome, MCP_RESULT_MAX_BYTES } from './result.ts';
export { elicitationPrompt, elicitationResult } from './elicitation.ts';
