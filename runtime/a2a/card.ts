/**
 * The agent card: one document with the A2A 1.0 fields and the 0.3 ones, so a client of either
 * version that reads the card finds what it needs (see docs/a2a.md, "Agent card").
 */
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
}

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

/** The served card: A2A 1.0 fields plus the 0.3 ones (`url`, `protocolVersion`, `preferredTransport`). */
export function buildCardJson(c: AgentCardInput, url: string): Record<string, unknown> {
  return {
    name: c.name,
    description: c.description,
    version: c.version,
    // A2A 1.0: first entry is preferred.
    supportedInterfaces: [
      { url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
      { url, protocolBinding: 'JSONRPC', protocolVersion: '0.3' },
    ],
    // A2A 0.3
    protocolVersion: '0.3.0',
    url,
    preferredTransport: 'JSONRPC',
    additionalInterfaces: [{ url, transport: 'JSONRPC' }],
    capabilities: { streaming: true, pushNotifications: false },
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: (c.skills ?? []).map(skillJson),
  };
}

export function buildCoreCard(c: AgentCardInput, url: string): AgentCard {
  return {
    name: c.name,
    description: c.description,
    version: c.version,
    supportedInterfaces: [
      { url, protocolBinding: 'JSONRPC', protocolVersion: '1.0', tenant: '' },
      { url, protocolBinding: 'JSONRPC', protocolVersion: '0.3', tenant: '' },
    ],
    provider: undefined,
    capabilities: { streaming: true, pushNotifications: false, extensions: [] },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
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
