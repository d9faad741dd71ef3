/**
 * Numbers and duplicate keys in murmur.yaml (issue 38 §5): a value the runtime cannot use is
 * refused at validation, naming the field, the line and the allowed range, not at task time.
 */
import { describe, expect, it } from 'vitest';
import { parseManifest } from '../../runtime/manifest/capsule.ts';
import { MINIMAL, errorAt, errorsOf } from './helpers.ts';

const AGENT = `${MINIMAL}artifacts:
  - name: drv
    version: 1.0.0
    runtime: driver
inference:
  driver:
    artifact: drv
  model: m
`;

describe('manifest integers', () => {
  it('max_tokens beyond the safe integer range is refused naming the field, its line, the value as written and the range', () => {
    const e = errorAt(errorsOf(`${AGENT}  max_tokens: 18446744073709551616\n`), 'inference.max_tokens');
    expect(e.code).toBe('E-MAN-006');
    expect(e.location?.line).toBe(11);
    expect(e.message).toBe("'max_tokens' is 18446744073709551616, out of range (integer from 1 to 9007199254740991)");
    expect(e.hint).toContain('9007199254740991');
  });

  it('max_tokens: 2^64 (a string to YAML) is refused at its field and line with the range', () => {
    const e = errorAt(errorsOf(`${AGENT}  max_tokens: 2^64\n`), 'inference.max_tokens');
    expect(e.code).toBe('E-MAN-003');
    expect(e.location?.line).toBe(11);
    expect(e.message).toBe("'max_tokens' must be an integer, found the string '2^64'");
    expect(e.hint).toBe('give an integer from 1 to 9007199254740991');
  });

  it('memory_bytes: 1e30 (exponent notation) is refused at validation with the range', () => {
    const e = errorAt(errorsOf(`${MINIMAL}capabilities:\n  limits:\n    memory_bytes: 1e30\n`), 'capabilities.limits.memory_bytes');
    expect(e.code).toBe('E-MAN-003');
    expect(e.location?.line).toBe(5);
    expect(e.message).toBe("'memory_bytes' must be an integer written in digits (or a string like `512Mi`), found 1e30");
    expect(e.hint).toContain('4294967296');
  });

  it('memory_bytes above the 4 GiB a 32-bit linear memory can address is refused, written with a unit too', () => {
    const e = errorAt(errorsOf(`${MINIMAL}capabilities:\n  limits:\n    memory_bytes: 99999999999999999999Gi\n`), 'capabilities.limits.memory_bytes');
    expect(e.code).toBe('E-MAN-006');
    expect(e.message).toBe(
      "'memory_bytes' is 99999999999999999999Gi, out of range (integer from 1 to 4294967296 (4 GiB: a 32-bit linear memory), or a string like `512Mi` / `4GiB`)",
    );
    const big = errorAt(errorsOf(`${MINIMAL}capabilities:\n  limits:\n    memory_bytes: 4294967297\n`), 'capabilities.limits.memory_bytes');
    expect(big.code).toBe('E-MAN-006');
    expect(parseManifest(`${MINIMAL}capabilities:\n  limits:\n    memory_bytes: 4Gi\n`).capabilities.limits.memoryBytes).toBe(4 * 2 ** 30);
  });

  it('a float where an integer is expected is refused, also when its fraction is zero', () => {
    for (const v of ['2.0', '1.5', '1e3', '.inf']) {
      const e = errorAt(errorsOf(`${MINIMAL}lifecycle:\n  queue_depth: ${v}\n`), 'lifecycle.queue_depth');
      expect(e.code, v).toBe('E-MAN-003');
      expect(e.location?.line).toBe(4);
      expect(e.message).toBe(`'queue_depth' must be an integer written in digits, found ${v}`);
      expect(e.hint).toBe('give an integer from 1 to 9007199254740991');
    }
  });

  it('a deadline longer than a timer can hold is refused instead of firing at once', () => {
    const l = errorsOf(`${MINIMAL}capabilities:\n  limits:\n    deadline_seconds: 2147484\nlifecycle:\n  input_timeout_secs: 99999999\n`);
    const d = errorAt(l, 'capabilities.limits.deadline_seconds');
    expect(d.code).toBe('E-MAN-006');
    expect(d.message).toContain('2147483');
    expect(errorAt(l, 'lifecycle.input_timeout_secs').location?.line).toBe(7);
    expect(parseManifest(`${MINIMAL}capabilities:\n  limits:\n    deadline_seconds: 2147483\n`).capabilities.limits.deadlineSeconds).toBe(2147483);
  });

  it('a number field still takes a fraction or exponent within its range', () => {
    const m = parseManifest(`${AGENT}  compaction:\n    threshold: 5e-1\n`);
    expect(m.inference?.compaction.threshold).toBe(0.5);
  });
});

describe('manifest duplicate keys', () => {
  it('names the key, its dotted field, its line and the line it was first given', () => {
    const l = errorsOf(`${MINIMAL}lifecycle:\n  queue_depth: 1\n  conversation: threaded\n  queue_depth: 2\n`);
    const e = errorAt(l, 'lifecycle.queue_depth');
    expect(e.code).toBe('E-MAN-001');
    expect(e.location?.line).toBe(6);
    expect(e.message).toBe("duplicate key 'queue_depth' in 'lifecycle' (first given at line 4)");
    expect(e.hint).toContain('each key may appear once');
  });

  it('in a list item and at the top level', () => {
    const l = errorsOf(`name: demo\nversion: 1.0.0\nartifacts:\n  - name: a\n    version: '1'\n    name: b\nname: again\n`);
    expect(errorAt(l, 'artifacts[0].name').message).toBe("duplicate key 'name' in 'artifacts[0]' (first given at line 4)");
    const top = errorAt(l, 'name');
    expect(top.message).toBe("duplicate key 'name' in the manifest (first given at line 1)");
    expect(top.location?.line).toBe(7);
  });

  it('inside an opaque mapping (driver config) too', () => {
    const yaml = `${MINIMAL}artifacts:\n  - name: drv\n    version: 1.0.0\n    runtime: driver\ninference:\n  driver:\n    artifact: drv\n    config:\n      temperature: 1\n      temperature: 2\n  model: m\n`;
    const l = errorsOf(yaml);
    expect(errorAt(l, 'inference.driver.config.temperature').location?.line).toBe(12);
  });
});
