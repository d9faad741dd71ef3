/** The sleep state machine (operator/controller/sleep-machine.ts): one named row per behaviour. */
import { describe, expect, it } from 'vitest';
import { nextSleepAction, type SleepMachineInput } from '../../../operator/controller/sleep-machine.ts';

const NOW = 1_800_000_000_000;
const base: SleepMachineInput = {
  afterIdleSeconds: 900,
  policyReason: 'Awake',
  policyMessage: 'sleeps after 15m0s idle',
  state: 'Awake',
  readyPods: 1,
  idle: [{ idleSeconds: 10, at: NOW - 1000 }],
  staleAfterMs: 60_000,
  activatorReady: true,
  wakeRequests: 0,
  now: NOW,
};
const idle = (...s: number[]) => s.map((idleSeconds) => ({ idleSeconds, at: NOW - 1000 }));

const rows: Array<[string, Partial<SleepMachineInput>, { kind: string; reason: string; message?: string | RegExp }]> = [
  ['an awake capsule idle past afterIdle on its only pod sleeps', { idle: idle(901) }, { kind: 'sleep', reason: 'Idle', message: 'idle for 15m1s' }],
  ['an awake capsule idle exactly afterIdle sleeps', { idle: idle(900) }, { kind: 'sleep', reason: 'Idle', message: 'idle for 15m0s' }],
  ['every ready pod must be idle: one busy pod keeps it awake', { readyPods: 2, idle: idle(2000, 0) }, { kind: 'stay', reason: 'Awake', message: /busy$/ }],
  [
    'every ready pod must be idle long enough: the least idle one counts',
    { readyPods: 2, idle: idle(2000, 300) },
    { kind: 'stay', reason: 'Awake', message: /idle for 5m0s$/ },
  ],
  [
    'two pods both idle past afterIdle: sleeps, naming the least idle',
    { readyPods: 2, idle: idle(2000, 950) },
    { kind: 'sleep', reason: 'Idle', message: 'idle for 15m50s' },
  ],
  ['a busy capsule (idle 0) never sleeps', { idle: idle(0) }, { kind: 'stay', reason: 'Awake', message: /busy$/ }],
  [
    'a ready pod not scraped yet keeps it awake',
    { readyPods: 2, idle: [...idle(2000), undefined] },
    { kind: 'stay', reason: 'Awake', message: /fresh idle reading/ },
  ],
  ['a stale reading is not trusted', { idle: [{ idleSeconds: 5000, at: NOW - 120_000 }] }, { kind: 'stay', reason: 'Awake', message: /fresh idle reading/ }],
  ['no ready pod: nothing to observe, no sleep', { readyPods: 0, idle: [] }, { kind: 'stay', reason: 'Awake', message: /no ready pod/ }],
  [
    'no activator endpoint ready: stays awake (nothing would answer)',
    { idle: idle(5000), activatorReady: false },
    { kind: 'stay', reason: 'Awake', message: /no activator endpoint/ },
  ],
  [
    'afterIdle never: stays awake with the policy reason',
    { afterIdleSeconds: null, policyReason: 'AlwaysAwake', policyMessage: 'spec.sleep.afterIdle is never', idle: idle(99_999) },
    { kind: 'stay', reason: 'AlwaysAwake', message: 'spec.sleep.afterIdle is never' },
  ],
  ['a WakeRequested Event while awake changes nothing', { wakeRequests: 3, idle: idle(10) }, { kind: 'stay', reason: 'Awake', message: /idle for 10s$/ }],
  ['asleep without wake requests: stays asleep', { state: 'Sleeping', readyPods: 0, idle: [] }, { kind: 'stay', reason: 'Idle' }],
  [
    'asleep, a WakeRequested Event since it slept: wakes',
    { state: 'Sleeping', readyPods: 0, idle: [], wakeRequests: 1 },
    { kind: 'wake', reason: 'WakeRequested', message: /a request/ },
  ],
  [
    'asleep while its last pod still terminates, a wake request: wakes',
    { state: 'Sleeping', readyPods: 1, wakeRequests: 2 },
    { kind: 'wake', reason: 'WakeRequested', message: /2 requests/ },
  ],
  [
    'asleep and sleeping turned off (afterIdle never): wakes',
    { state: 'Sleeping', readyPods: 0, idle: [], afterIdleSeconds: null, policyReason: 'AlwaysAwake', policyMessage: 'never' },
    { kind: 'wake', reason: 'SleepDisabled' },
  ],
  ['waking without a ready pod: stays waking', { state: 'Waking', readyPods: 0, idle: [] }, { kind: 'stay', reason: 'WakeRequested' }],
  ['waking with a ready pod: ready', { state: 'Waking', readyPods: 1, idle: [] }, { kind: 'ready', reason: 'Awake', message: 'awake: 1 ready pod' }],
  ['waking, sleeping turned off meanwhile, a pod ready: ready', { state: 'Waking', readyPods: 2, afterIdleSeconds: null }, { kind: 'ready', reason: 'Awake' }],
];

describe('sleep state machine', () => {
  for (const [name, over, want] of rows) {
    it(name, () => {
      const got = nextSleepAction({ ...base, ...over });
      expect({ kind: got.kind, reason: got.reason }).toEqual({ kind: want.kind, reason: want.reason });
      if (typeof want.message === 'string') expect(got.message).toBe(want.message);
      else if (want.message) expect(got.message).toMatch(want.message);
    });
  }
});
