/**
 * The agent card: one document with the A2A 1.0 fields and the 0.3 ones, so a client of either
 * version that reads the card finds what it needs (see docs/a2a.md, "Agent card").
 */
import { createHash } from 'node:crypto';
import type { AgentCard } from '@a2a-js/sdk';

export interface SkillInput {
  id: string;
  name?: string;
  description?: string;
  tags?: string[];
  examples?: string[];
}

export interface AgentCardInput {
  name: string;
  version: string;
  description: string;
  /** One per LLM-visible tool of the capsule (see `skillsFromTools`). */
  skills?: SkillInput[];
  /** Whether push-notification configs are accepted (set by the server). */
  pushNotifications?: boolean;
}

/**
 * Media types a task's message may carry: text parts (text/plain) and data parts (application/json,
 * passed to the task as JSON text). A message with neither gets ContentTypeNotSupportedError.
 */
export const INPUT_MODES = ['text/plain', 'application/json'];

/** Skills for the agent card from a capsule's LLM-visible tools. */
export function skillsFromTools(tools: ReadonlyArray<{ name: string; description?: string }>): SkillInput[] {
  return tools.map((t) => ({ id: t.name, name: t.name, description: t.description ?? t.name, tags: ['tool'] }));
}

function skillJson(s: SkillInput) {
  return {
    id: s.id,
    name: s.name ?? s.id,
    description: s.description ?? s.name ?? s.id,
    tags: s.tags ?? [],
    ...(s.examples ? { examples: s.examples } : {}),
  };
}

/** Where each binding is served. JSON-RPC always; HTTP+JSON and gRPC when enabled. */
export interface CardEndpoints {
  jsonrpc: string;
  rest?: string;
  /** `host:port` (the form gRPC clients dial). */
  grpc?: string;
}

/** What the card says about authentication (auth.ts builds it). */
export interface CardSecurity {
  /** 1.0 ProtoJSON form, e.g. `{bearer: {httpAuthSecurityScheme: {scheme: 'Bearer'}}}`. */
  schemes: Record<string, unknown>;
  /** 0.3 (OpenAPI) form, e.g. `{bearer: {type: 'http', scheme: 'bearer'}}`. */
  schemes03: Record<string, unknown>;
  /** Names of schemes, any one of which is required (empty: anonymous access allowed). */
  anyOf: string[];
}

/**
 * The interfaces, preferred first: JSON-RPC 1.0, then HTTP+JSON and gRPC (1.0), then JSON-RPC 0.3
 * (the only binding served in 0.3, through the SDK's compat layer).
 */
export function interfaces(ep: CardEndpoints): Array<{ url: string; protocolBinding: string; protocolVersion: string }> {
  return [
    { url: ep.jsonrpc, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
    ...(ep.rest ? [{ url: ep.rest, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' }] : []),
    ...(ep.grpc ? [{ url: ep.grpc, protocolBinding: 'GRPC', protocolVersion: '1.0' }] : []),
    { url: ep.jsonrpc, protocolBinding: 'JSONRPC', protocolVersion: '0.3' },
  ];
}

/** The served card: A2A 1.0 fields plus the 0.3 ones (`url`, `protocolVersion`, `preferredTransport`). */
export function buildCardJson(c: AgentCardInput, ep: CardEndpoints, sec?: CardSecurity): Record<string, unknown> {
  const url = ep.jsonrpc;
  return {
    name: c.name,
    description: c.description,
    version: c.version,
    // A2A 1.0: first entry is preferred.
    supportedInterfaces: interfaces(ep),
    // A2A 0.3
    protocolVersion: '0.3.0',
    url,
    preferredTransport: 'JSONRPC',
    additionalInterfaces: [{ url, transport: 'JSONRPC' }],
    capabilities: { streaming: true, pushNotifications: c.pushNotifications ?? false },
    // 0.3 (OpenAPI) form here; strictCardJson swaps in the 1.0 form.
    ...(sec ? { securitySchemes: sec.schemes03, security: sec.anyOf.map((n) => ({ [n]: [] })) } : {}),
    defaultInputModes: INPUT_MODES,
    defaultOutputModes: ['text/plain'],
    skills: (c.skills ?? []).map(skillJson),
  };
}

export function buildCoreCard(c: AgentCardInput, ep: CardEndpoints): AgentCard {
  return {
    name: c.name,
    description: c.description,
    version: c.version,
    supportedInterfaces: interfaces(ep).map((i) => ({ ...i, tenant: '' })),
    provider: undefined,
    capabilities: { streaming: true, pushNotifications: c.pushNotifications ?? false, extensions: [] },
    // The SDK reads only interfaces and capabilities from this object; the served card is the JSON one.
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: INPUT_MODES,
    defaultOutputModes: ['text/plain'],
    skills: (c.skills ?? []).map((s) => {
      const j = skillJson(s);
      return {
        ...j,
        examples: s.examples ?? [],
        inputModes: [],
        outputModes: [],
        securityRequirements: [],
      };
    }),
    signatures: [],
  };
}

/** The 0.3-only top-level fields: a strict A2A 1.0 parser refuses a card that has them. */
const FIELDS_0_3 = ['protocolVersion', 'url', 'preferredTransport', 'additionalInterfaces'] as const;

/** The card for a client that asked for A2A 1.0: without the 0.3-only fields, security in 1.0 form. */
export function strictCardJson(card: Record<string, unknown>, sec?: CardSecurity): Record<string, unknown> {
  const c = { ...card };
  for (const f of FIELDS_0_3) delete c[f];
  delete c.security;
  delete c.securitySchemes;
  if (sec) {
    c.securitySchemes = sec.schemes;
    c.securityRequirements = sec.anyOf.map((n) => ({ schemes: { [n]: { list: [] } } }));
  }
  return c;
}

export interface CardVariant {
  body: string;
  etag: string;
}

function variant(card: Record<string, unknown>): CardVariant {
  const body = JSON.stringify(card);
  return { body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"` };
}

/**
 * The two card documents: `legacy` (1.0 and 0.3 fields together) for a request without a version
 * (which A2A says means 0.3, and which lenient 1.0 clients also send), `strict` (1.0 only) for a
 * request that asks for 1.0 in the `A2A-Version` header or query parameter.
 */
export function cardVariants(card: Record<string, unknown>, sec?: CardSecurity): { legacy: CardVariant; strict: CardVariant } {
  return { legacy: variant(card), strict: variant(strictCardJson(card, sec)) };
}

/** Whether an `If-None-Match` header matches `etag` (a list, `*`, weak `W/` forms allowed). */
export function etagMatches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  return ifNoneMatch.split(',').some((t) => {
    const v = t.trim();
    return v === '*' || v === etag || v === `W/${etag}`;
  });
}
