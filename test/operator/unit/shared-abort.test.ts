/**
 * operator/kube/shared-abort.ts: the signal an informer's watches and a scraper's fetches all
 * listen to takes as many listeners as there are requests in flight, without Node's leak warning,
 * and its abort still reaches every one of them.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { sharedAbort } from '../../../operator/kube/shared-abort.ts';

const warnings: Error[] = [];
const onWarning = (w: Error) => {
  if (w.name === 'MaxListenersExceededWarning') warnings.push(w);
};
afterEach(() => {
  process.off('warning', onWarning);
  warnings.length = 0;
});

async function listenersWarned(ac: AbortController, n: number): Promise<{ warned: number; aborted: number }> {
  process.on('warning', onWarning);
  let aborted = 0;
  for (let i = 0; i < n; i++) ac.signal.addEventListener('abort', () => aborted++);
  // Node emits the warning on the tick after the listener that crossed the bound.
  await new Promise<void>((r) => process.nextTick(r));
  ac.abort();
  return { warned: warnings.length, aborted };
}

describe('sharedAbort', () => {
  it('takes 50 listeners on its signal without a MaxListenersExceededWarning, and aborts each', async () => {
    expect(await listenersWarned(sharedAbort(), 50)).toEqual({ warned: 0, aborted: 50 });
  });
});
