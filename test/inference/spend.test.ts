import { describe, expect, it } from 'vitest';
import { MurError } from '../../runtime/errors.ts';
import { SpendMeter } from '../../runtime/inference/spend.ts';

describe('spend ceiling inference.max_session_tokens', () => {
  it('admits before dispatch, reserving input + max output tokens', () => {
    const m = new SpendMeter(1000);
    const a = m.admit(300, 200);
    expect(a.admitted).toBe(true);
    expect(m.reserved).toBe(500);
    expect(m.spent).toBe(0);
  });

  it('refuses a call whose reservation would pass the ceiling (the caller never dispatches it)', () => {
    const m = new SpendMeter(1000);
    const a = m.admit(300, 200);
    const b = m.admit(400, 200);
    expect(b.admitted).toBe(false);
    if (b.admitted) return;
    expect(b.refusal).toMatchObject({ requested: 600, spent: 0, reserved: 500, limit: 1000, latched: false });
    expect(b.refusal.message).toMatch(/max_session_tokens = 1000/);
    // the refused call reserved nothing
    expect(m.reserved).toBe(500);
    expect(a.admitted).toBe(true);
  });

  it('exactly reaching the ceiling is admitted', () => {
    const m = new SpendMeter(500);
    expect(m.admit(300, 200).admitted).toBe(true);
  });

  it('settles with the measured tokens, releasing the reservation', () => {
    const m = new SpendMeter(1000);
    const a = m.admit(300, 200);
    if (!a.admitted) throw new Error('not admitted');
    m.settle(a.ticket, { inputTokens: 300, outputTokens: 50 });
    expect(m.reserved).toBe(0);
    expect(m.spent).toBe(350);
    expect(m.admit(400, 250).admitted).toBe(true); // 350 + 650 = 1000
  });

  it('a dropped call charges its input only', () => {
    const m = new SpendMeter(1000);
    const a = m.admit(300, 200);
    if (!a.admitted) throw new Error('not admitted');
    m.drop(a.ticket);
    expect(m.spent).toBe(300);
    expect(m.reserved).toBe(0);
    expect(() => m.drop(a.ticket)).toThrow(MurError);
  });

  it('latches after a refusal: a later call that would fit is refused too', () => {
    const m = new SpendMeter(1000);
    expect(m.admit(900, 200).admitted).toBe(false);
    expect(m.latched).toBe(true);
    const small = m.admit(1, 1);
    expect(small.admitted).toBe(false);
    if (!small.admitted) expect(small.refusal.latched).toBe(true);
  });

  it('no ceiling admits everything; an invalid ceiling is a typed error', () => {
    const m = new SpendMeter();
    expect(m.admit(10 ** 9, 10 ** 9).admitted).toBe(true);
    expect(() => new SpendMeter(-1)).toThrow(/max_session_tokens/);
  });
});

describe('spend ceiling refusal as an error', () => {
  it('spendCeilingError carries E-INF-011, the refusal message and the manifest field', async () => {
    const { spendCeilingError } = await import('../../runtime/inference/spend.ts');
    const m = new SpendMeter(10);
    const a = m.admit(8, 8);
    if (a.admitted) throw new Error('should be refused');
    const e = spendCeilingError(a.refusal);
    expect(e.code).toBe('E-INF-011');
    expect(e.message).toBe(a.refusal.message);
    expect(e.location?.field).toBe('inference.max_session_tokens');
  });
});
