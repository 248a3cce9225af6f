/**
 * "Did you mean": the one place that turns a misspelt option, key or flag into the name it was
 * meant to be. Case, `_`, `-` and `.` are ignored (`maxratio`, `max_ratio`, `windowMS`), then the closest
 * name by edit distance (insertions, deletions, substitutions and swaps of neighbours count one each)
 * wins if it is close enough for the name's length: none below 4 characters, one edit up to 7, two
 * from 8 on; a name cut short (`slice` for `slice_ms`) or in the other number (`dependency`) counts as
 * one edit.
 * Inputs are bounded (64 characters), so a hostile key costs O(64²) per candidate at most.
 */

const MAX_LENGTH = 64;

const normalise = (name: string): string => name.toLowerCase().replace(/[_.-]/g, '');

/** `dependencies` → `dependency`, `attempts` → `attempt`: the name in the singular, roughly. */
const singular = (name: string): string => name.replace(/ies$/, 'y').replace(/s$/, '');

/** Most edits a name of `length` characters may be away from its suggestion (none below 4: noise). */
const allowance = (length: number): number => (length >= 8 ? 2 : length >= 4 ? 1 : 0);

/**
 * Optimal string alignment distance (Damerau–Levenshtein without repeated edits of a substring),
 * or `limit + 1` as soon as it is known to exceed `limit`.
 */
export function editDistance(a: string, b: string, limit = Number.POSITIVE_INFINITY): number {
  if (Math.abs(a.length - b.length) > limit) return limit + 1;
  let before: number[] = [];
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i += 1) {
    const cur = [i];
    let rowMin = i;
    for (let j = 1; j <= b.length; j += 1) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        d = Math.min(d, before[j - 2]! + 1);
      cur[j] = d;
      if (d < rowMin) rowMin = d;
    }
    if (rowMin > limit) return limit + 1;
    before = prev;
    prev = cur;
  }
  return Math.min(prev[b.length]!, limit + 1);
}

/** The name among `candidates` that `given` most likely meant, or undefined when none is close. */
export function closestName(given: string, candidates: Iterable<string>): string | undefined {
  if (given.length === 0 || given.length > MAX_LENGTH) return undefined;
  const target = normalise(given);
  const limit = allowance(target.length);
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const candidate of candidates) {
    if (candidate.length > MAX_LENGTH) continue;
    const near = normalise(candidate);
    // A name cut short (`p99` for `p99Ms`, `slice` for `slice_ms`) or in the other number
    // (`dependency` for `dependencies`) is one edit away.
    const cut = target.length >= 3 && near.startsWith(target) ? 1 : Number.POSITIVE_INFINITY;
    const plural = target.length >= 4 && singular(target) === singular(near) ? 1 : Number.POSITIVE_INFINITY;
    const edits = editDistance(target, near, limit);
    const d = Math.min(cut, plural, edits <= limit ? edits : Number.POSITIVE_INFINITY);
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
      if (d === 0) break;
    }
  }
  return best;
}

/** `; did you mean \`x\`?` for a misspelt name, or an empty string. */
export function didYouMean(given: string, candidates: Iterable<string>): string {
  const near = closestName(given, candidates);
  return near === undefined ? '' : `; did you mean \`${near}\`?`;
}

/**
 * The names other libraries give to what prazo calls something else: what got, ky, axios, undici and
 * cockatiel users type first. A key among `from` is answered with prazo's concept and one line of
 * why, rather than "unknown key": these are not typos, they are a different model (one fixed timeout
 * vs timeouts derived from a measured p99; retries vs attempts; an address in the config vs in code).
 * An entry applies where its concept lives: the options hold one of `to`, or (for `elsewhere`) a
 * dependency's `p99Ms`.
 */
interface ForeignName {
  /** Other libraries' names, normalised (lower case, no `_`, `-` or `.`). */
  readonly from: readonly string[];
  /** prazo's names for the concept, the first one present in the options is suggested. */
  readonly to: readonly string[];
  readonly why: string;
  /** Said when none of `to` is an option here (the concept lives in code, not in this file). */
  readonly elsewhere?: string;
}

const FOREIGN_NAMES: readonly ForeignName[] = Object.freeze([
  {
    from: ['timeout', 'timeoutms', 'requesttimeout', 'sockettimeout', 'readtimeout', 'responsetimeout'],
    to: ['p99Ms'],
    why: "prazo has no fixed timeout: the connect and response timeouts are derived from the dependency's measured p99 (`p99Ms` × slack), and the whole call is bounded by its deadline (`defaultDeadlineMs`, or the caller's)",
  },
  {
    from: ['connecttimeout', 'connectiontimeout', 'connecttimeoutms', 'connectiontimeoutms'],
    to: ['connectTimeoutMs', 'connectCapMs'],
    why: 'the connect timeout is derived (at most half an attempt); `connectCapMs` caps it',
  },
  {
    from: ['retries', 'retry', 'maxretries', 'retrycount', 'retrylimit', 'maxattempts', 'numretries'],
    to: ['attempts'],
    why: '`attempts` counts every attempt, the first included (`retries: 2` is `attempts: 3`), and a retry also needs room in the retry budget and in the deadline',
  },
  {
    from: ['origin', 'baseurl', 'prefixurl', 'url', 'host', 'hostname', 'target'],
    to: ['origin', 'origins'],
    why: 'prazo calls a dependency at its origin (scheme, host and port, no path); the path goes with each request',
    elsewhere:
      "the file holds a dependency's timing, not its address: give `origin` to `createHttpClient` (or the interceptor) in code, with the same `name`",
  },
]);

/**
 * The hint for a key another library would use (`timeout`, `retries`, `origin`, `baseURL`), when
 * `candidates` are options where that concept lives: `; did you mean \`attempts\`? <why>`, or
 * `; <elsewhere>` when the concept is not an option here. Undefined for any other key.
 */
export function foreignNameHint(given: string, candidates: readonly string[]): string | undefined {
  if (given.length === 0 || given.length > MAX_LENGTH) return undefined;
  const key = normalise(given);
  const entry = FOREIGN_NAMES.find((e) => e.from.includes(key));
  if (entry === undefined) return undefined;
  if (candidates.includes(given)) return undefined; // it is an option here after all
  const to = entry.to.find((name) => candidates.includes(name));
  if (to !== undefined) return `; did you mean \`${to}\`? ${entry.why}`;
  if (entry.elsewhere !== undefined && candidates.includes('p99Ms')) return `; ${entry.elsewhere}`;
  return undefined;
}
