/** The checked-in CRD YAML (crds/ and the chart's crds/) is exactly what `npm run gen:crds` renders. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { CRD_DIRS, ROOT, renderCrds } from '../../operator/crd/generate.ts';
import { COMMIT_TABLE, HANDLERS } from '../../runtime/contracts/commit-table.ts';

describe('generated CRDs', () => {
  const files = renderCrds();
  for (const dir of CRD_DIRS) {
    for (const [name, text] of Object.entries(files)) {
      it(`${dir}/${name} is up to date (run npm run gen:crds)`, () => {
        expect(readFileSync(join(ROOT, dir, name), 'utf8')).toBe(text);
      });
    }
  }

  it('the Hook rules are rendered from the commit table', () => {
    const crd = parse(files['murmur.io_hooks.yaml']!);
    const spec = crd.spec.versions[0].schema.openAPIV3Schema.properties.spec;
    expect(spec.properties.binding.enum).toEqual([...HANDLERS]);
    const rules: Array<{ rule: string; messageExpression: string }> = spec['x-kubernetes-validations'];
    expect(rules).toHaveLength(4);
    for (const h of HANDLERS) expect(rules[1]!.rule).toContain(`'${h}': '${COMMIT_TABLE[h].policy}'`);
    for (const h of HANDLERS.filter((x) => !COMMIT_TABLE[x].asyncAllowed)) expect(rules[2]!.rule).toContain(`'${h}'`);
  });
});
