/**
 * runtime/telemetry/prom-client-parts.ts loads prom-client's modules one by one, not its index (which
 * also loads the Pushgateway client and with it node:https / node:tls): the parts must be the
 * index's own exports, so a metric made from them is the library's metric in every respect.
 */
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import * as parts from '../../runtime/telemetry/prom-client-parts.ts';

const index = createRequire(import.meta.url)('prom-client') as Record<string, unknown>;

describe("prom-client's parts", () => {
  it.each(['Counter', 'Gauge', 'Histogram', 'Registry', 'collectDefaultMetrics'] as const)('%s is the index’s own export', (name) => {
    // biome-ignore lint/performance/noDynamicNamespaceImportAccess: the test is about the namespaces' members, named one by one
    expect(parts[name]).toBe(index[name]);
  });

  it('count and render through a registry of their own as the library does', async () => {
    const registry = new parts.Registry();
    const c = new parts.Counter({ name: 'parts_total', help: 'h', labelNames: ['k'] as const, registers: [registry] });
    c.inc({ k: 'v' }, 2);
    expect(await registry.metrics()).toContain('parts_total{k="v"} 2');
  });
});
