/**
 * The Capsule CRD's MCP server rules (operator/crd/mcp.ts) and the manifest validator's
 * (runtime/manifest/mcp.ts) are one set of rules: on the same names, tool names and header names,
 * admission (the generated schema's pattern, maxLength and CEL list) and the validator agree. The
 * CEL here is read, not run (the `operator` project's mcp.test.ts runs it on a real API server).
 */
import { describe, expect, it } from 'vitest';
import { capsuleCrd } from '../../../operator/crd/capsule.ts';
import { checkMcpHeaderName, checkMcpServerName, checkMcpToolEntry } from '../../../runtime/manifest/mcp.ts';

interface StringSchema {
  pattern?: string;
  maxLength?: number;
  'x-kubernetes-validations'?: { rule: string }[];
}

const server = (() => {
  const crd = capsuleCrd() as any;
  return crd.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.mcp.properties.servers.items.properties;
})();

/** What the OpenAPI part of a string schema admits: its pattern and maxLength. */
const openApiAdmits = (s: StringSchema, v: string): boolean =>
  (s.pattern === undefined || new RegExp(s.pattern).test(v)) && v.length <= (s.maxLength ?? Infinity);

/** The quoted strings of a CEL rule (`'a', 'b'`), unescaped as CEL reads them. */
const celStrings = (rule: string): string[] => [...rule.matchAll(/'((?:[^'\\]|\\.)*)'/g)].map((m) => m[1]!.replace(/\\\\/g, '\\'));

describe('Capsule CRD spec.mcp.servers[] against the manifest validator', () => {
  it('admits exactly the server names the validator admits', () => {
    for (const v of ['docs', 'a', 'd-1', 'a'.repeat(20), 'a'.repeat(21), 'Docs_1', '-docs', 'docs-', '']) {
      expect(openApiAdmits(server.name, v), v).toBe(checkMcpServerName(v) === undefined);
    }
  });

  it("admits exactly the tool entries the validator admits, '*' included", () => {
    const item = server.tools.items as StringSchema;
    const rule = item['x-kubernetes-validations']![0]!.rule;
    expect(rule).toMatch(/^self == '\*' \|\| self\.matches\('.*'\)$/);
    const re = new RegExp(celStrings(rule)[1]!);
    const admits = (v: string): boolean => openApiAdmits(item, v) && (v === '*' || re.test(v));
    for (const v of ['search', 'get-sum', 'a_b', '*', 'a'.repeat(64), 'a'.repeat(65), 'bad name', 'x.y', '**', '']) {
      expect(admits(v), v).toBe(checkMcpToolEntry(v) === undefined);
    }
  });

  it('refuses exactly the header names the validator refuses, Authorization and the transport headers included', () => {
    const name = server.headers.items.properties.name as StringSchema;
    const unsettable = celStrings(name['x-kubernetes-validations']![0]!.rule);
    const admits = (v: string): boolean => openApiAdmits(name, v) && !unsettable.includes(v.toLowerCase());
    const owned = ['Authorization', 'HOST', 'Content-Type', 'Content-Length', 'Accept', 'Mcp-Session-Id', 'mcp-protocol-version', 'Last-Event-ID'];
    for (const v of [...owned, 'Connection', 'Transfer-Encoding', 'X-Tenant', 'X-Api-Key', 'X-Ok~1', 'bad header', 'x:y']) {
      expect(admits(v), v).toBe(checkMcpHeaderName(v) === undefined);
    }
  });
});
