/**
 * The abort of a long-lived part (an informer, a scraper) whose signal every request it makes
 * listens to while in flight: an informer's watches (one per watched namespace, for as long as it
 * runs), a scraper's concurrent fetches (USAGE_SCRAPE_CONCURRENCY). Node warns "Possible
 * EventTarget memory leak detected" past 10 listeners on one signal, which an operator watching
 * 11 namespaces printed once per informer at start although nothing leaked: each listener goes
 * with its request (Node's stream `eos` removes it). So the signal has no listener bound.
 */
import { setMaxListeners } from 'node:events';

export function sharedAbort(): AbortController {
  const ac = new AbortController();
  setMaxListeners(0, ac.signal);
  return ac;
}
