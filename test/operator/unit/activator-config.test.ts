/** Where the activator is, from the operator's environment (operator/controller/activator-config.ts), and the activator key both read. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { activatorEnv, ConfigError } from '../../../operator/activator/config.ts';
import { activatorKeyFrom } from '../../../operator/activator/key.ts';
import { activatorFromEnv } from '../../../operator/controller/activator-config.ts';

const good = {
  CAPSULE_ACTIVATOR_SERVICE: 'x-activator',
  CAPSULE_ACTIVATOR_NAMESPACE: 'ops',
  CAPSULE_ACTIVATOR_PORT: '8012',
  CAPSULE_ACTIVATOR_POD_LABELS: 'app.kubernetes.io/name=capsule-activator,app.kubernetes.io/instance=x',
};

describe('activator settings from the environment', () => {
  it('none set: no activator (no Capsule sleeps)', () => {
    expect(activatorFromEnv({ POD_NAMESPACE: 'ops' })).toBeUndefined();
  });

  it('the chart’s settings: the Service to watch, and the port and pod labels translate renders', () => {
    expect(activatorFromEnv(good)).toEqual({
      activator: { namespace: 'ops', port: 8012, podLabels: { 'app.kubernetes.io/name': 'capsule-activator', 'app.kubernetes.io/instance': 'x' } },
      service: { namespace: 'ops', name: 'x-activator' },
    });
  });

  it('the namespace defaults to POD_NAMESPACE and the port to 8012', () => {
    const { CAPSULE_ACTIVATOR_NAMESPACE: _n, CAPSULE_ACTIVATOR_PORT: _p, ...rest } = good;
    expect(activatorFromEnv({ ...rest, POD_NAMESPACE: 'here' })?.activator).toMatchObject({ namespace: 'here', port: 8012 });
  });

  const refused: Array<[string, Record<string, string>, RegExp]> = [
    ['a port that is not one is refused with E-OP-070', { CAPSULE_ACTIVATOR_PORT: '80x' }, /CAPSULE_ACTIVATOR_PORT '80x' is not a TCP port.*\[E-OP-070\]$/],
    ['a port out of range is refused with E-OP-070', { CAPSULE_ACTIVATOR_PORT: '70000' }, /\[E-OP-070\]$/],
    [
      'a label entry without = is refused naming its index (E-OP-071)',
      { CAPSULE_ACTIVATOR_POD_LABELS: 'a=b,nolabel' },
      /entry 1 'nolabel' is not a label.*\[E-OP-071\]$/,
    ],
    ['a bad label key is refused (E-OP-071)', { CAPSULE_ACTIVATOR_POD_LABELS: 'bad key=x' }, /entry 0 'bad key=x'.*\[E-OP-071\]$/],
    ['empty pod labels are refused (E-OP-071)', { CAPSULE_ACTIVATOR_POD_LABELS: ' , ' }, /CAPSULE_ACTIVATOR_POD_LABELS is empty.*\[E-OP-071\]$/],
    [
      'a Service name that is not a DNS label is refused (E-OP-072)',
      { CAPSULE_ACTIVATOR_SERVICE: 'Act_1' },
      /CAPSULE_ACTIVATOR_SERVICE 'Act_1'.*\[E-OP-072\]$/,
    ],
  ];
  for (const [name, over, message] of refused) it(name, () => expect(() => activatorFromEnv({ ...good, ...over })).toThrow(message));

  it('settings without the Service are refused, naming them (E-OP-072)', () => {
    expect(() => activatorFromEnv({ CAPSULE_ACTIVATOR_PORT: '8012' })).toThrow(/CAPSULE_ACTIVATOR_PORT set without CAPSULE_ACTIVATOR_SERVICE.*\[E-OP-072\]$/);
  });

  it('no namespace at all is refused (E-OP-072)', () => {
    expect(() => activatorFromEnv({ ...good, CAPSULE_ACTIVATOR_NAMESPACE: '' })).toThrow(/CAPSULE_ACTIVATOR_NAMESPACE is not set.*\[E-OP-072\]$/);
  });
});

describe('the activator key from the environment (operator/activator/key.ts), for the operator and the activator alike', () => {
  const KEY = 'Q7x2'.repeat(16);

  it('a key of 32 characters or more is taken as its bytes', () => {
    expect(activatorKeyFrom({ CAPSULE_ACTIVATOR_KEY: KEY })).toEqual(Buffer.from(KEY));
    expect(activatorEnv({ CAPSULE_ACTIVATOR_KEY: KEY }).apiKeyDigestKey).toEqual(Buffer.from(KEY));
  });

  it('the key is read from the file CAPSULE_ACTIVATOR_KEY_FILE names (the chart mounts the Secret); an unreadable file is E-OP-074 naming it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'activator-key-'));
    writeFileSync(join(dir, 'key'), KEY);
    expect(activatorKeyFrom({ CAPSULE_ACTIVATOR_KEY_FILE: join(dir, 'key') })).toEqual(Buffer.from(KEY));
    // The file wins over a key in the environment.
    expect(activatorKeyFrom({ CAPSULE_ACTIVATOR_KEY_FILE: join(dir, 'key'), CAPSULE_ACTIVATOR_KEY: 'z'.repeat(40) })).toEqual(Buffer.from(KEY));
    expect(() => activatorKeyFrom({ CAPSULE_ACTIVATOR_KEY_FILE: join(dir, 'absent') })).toThrow(
      new RegExp(`^CAPSULE_ACTIVATOR_KEY_FILE names ${join(dir, 'absent')}, which cannot be read .*\\[E-OP-074\\]$`),
    );
    writeFileSync(join(dir, 'short'), 'abc');
    expect(() => activatorEnv({ CAPSULE_ACTIVATOR_KEY_FILE: join(dir, 'short') })).toThrow(/\[E-OP-075\]$/);
  });

  it('a missing key stops either process with E-OP-074, naming the variable and the chart value', () => {
    for (const env of [{}, { CAPSULE_ACTIVATOR_KEY: '' }]) {
      expect(() => activatorKeyFrom(env)).toThrow(/^CAPSULE_ACTIVATOR_KEY is not set: .*activator\.enabled.*\[E-OP-074\]$/);
      expect(() => activatorEnv(env)).toThrow(ConfigError);
      expect(() => activatorEnv(env)).toThrow(/CAPSULE_ACTIVATOR_KEY is not set.*<release>-activator-key.*\[E-OP-074\]$/);
    }
  });

  it('a short key or one with whitespace is refused with E-OP-075, without quoting it', () => {
    const short = 'abc123'.repeat(5);
    expect(() => activatorKeyFrom({ CAPSULE_ACTIVATOR_KEY: short })).toThrow(/is 30 characters, shorter than 32.*\[E-OP-075\]$/);
    expect(() => activatorKeyFrom({ CAPSULE_ACTIVATOR_KEY: `${KEY}\n` })).toThrow(/holds whitespace.*\[E-OP-075\]$/);
    expect(() => activatorEnv({ CAPSULE_ACTIVATOR_KEY: short })).toThrow(/\[E-OP-075\]$/);
    try {
      activatorKeyFrom({ CAPSULE_ACTIVATOR_KEY: short });
    } catch (e) {
      expect((e as Error).message).not.toContain(short);
    }
  });
});
