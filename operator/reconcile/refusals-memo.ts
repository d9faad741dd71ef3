/**
 * The runtime's manifest validator (translate's `runtimeRefusals`) memoised per Capsule by the
 * digest of the rendered murmur.yaml. Parsing and validating the rendered file (yaml compose +
 * the runtime's schema walk) was the largest part of a reconcile after the API calls
 * (bench/operator.ts, CPU profile: ~55% of translate), and a resync renders the same file for
 * every unchanged Capsule. The verdict is a pure function of (file, number of the Capsule's own
 * artifacts), so the memo can only return what the validator would: any change to the file
 * (an edit that makes it invalid again, a Hook's grant, a peer's port) changes the digest and
 * runs the validator afresh.
 *
 * What stays: one entry per Capsule in the cache (the controller forgets it when the Capsule is
 * deleted): a 64-character digest, a number and the problem list (empty for a valid Capsule), about
 * 200 bytes; 1 000 Capsules ≈ 0.2 MiB. Keyed by Capsule rather than by digest so the size is
 * bounded by the Capsules that exist, with no LRU to thrash when a resync walks them all.
 */
import { sha256 } from '../translate/builders/common.ts';
import { runtimeRefusals, type Problem } from '../translate/index.ts';

interface Entry {
  digest: string;
  nArtifacts: number;
  problems: Problem[];
}

export class RefusalsMemo {
  private entries = new Map<string, Entry>();
  /** Validator runs (misses); tests read it to see the memo at work. */
  runs = 0;

  constructor(private readonly validate: (murmurYaml: string, nArtifacts: number) => Problem[] = runtimeRefusals) {}

  /** The validator's verdict on `murmurYaml` for the Capsule `key`, run only when the file changed. */
  check(key: string, murmurYaml: string, nArtifacts: number): Problem[] {
    const digest = sha256(murmurYaml);
    const e = this.entries.get(key);
    if (e && e.digest === digest && e.nArtifacts === nArtifacts) return e.problems.map((p) => ({ ...p }));
    this.runs++;
    const problems = this.validate(murmurYaml, nArtifacts);
    this.entries.set(key, { digest, nArtifacts, problems: problems.map((p) => ({ ...p })) });
    return problems;
  }

  forget(key: string): void {
    this.entries.delete(key);
  }

  get size(): number {
    return this.entries.size;
  }
}
