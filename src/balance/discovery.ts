import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import type { LookupFunction } from 'node:net';
import type { Clock, Timer } from '../clock/clock.js';
import { thrownText } from '../errors/base.js';
import { discoveryError, noAddressError } from '../errors/capacity.js';
import { BALANCE_LIMITS, DISCOVERY_OPTIONS } from './options.js';

/**
 * DNS discovery of a dependency's instances (SPEC X5): a Kubernetes headless Service answers a name
 * with one A/AAAA record per ready pod, so every address of the name is an instance. The name is
 * looked up at start and again every `intervalMs` (on the injected clock, unref'd: it never keeps a
 * process alive); each answer is handed over whole, and the owner makes its instance set that list
 * (instances joining and leaving between two lookups, calls in flight finishing where they are).
 *
 * What a lookup that fails or comes back empty means: DNS trouble, or a Service scaled to zero. The
 * first keeps the instances there were (failing every call because the resolver hiccuped would turn
 * a DNS blip into an outage); the second too, for the same reason, and both are reported
 * (`onError`). A lookup that takes longer than the interval is not overlapped by another one.
 *
 * A lookup that never answers must not stop discovery: waited for, one lookup whose callback never
 * comes would keep every later one from starting, and a set that is empty would stay empty after the
 * resolver is back. So each lookup has its own timeout (`timeoutMs`, on the clock): unanswered by then, it is
 * given up — reported as a failed lookup (`ETIMEOUT`), the instances kept — and the next one goes at
 * the interval. A given-up lookup may still answer: its addresses are taken only when no newer
 * lookup has answered since (sequence numbers), so a late answer never replaces a newer one, and a
 * resolver that is merely slow is still heard; its failure is not reported twice.
 *
 * Why at most {@link MAX_UNANSWERED} lookups out at once: Node's `dns.lookup` is `getaddrinfo` on
 * libuv's thread pool (4 threads by default, shared with `fs`, `crypto` and `zlib`), and a given-up
 * lookup holds its thread until the resolver itself gives up (glibc: 5 s per try, 2 tries, per name
 * server and search domain: tens of seconds in a pod). Starting one per interval regardless would
 * take the whole pool while the cluster DNS is down, and stall every file read of the process. While
 * two are out, a round starts none (reported once); one that has been out for
 * {@link FORGET_UNANSWERED_MS} is no longer counted — longer than a resolver takes to give up, so
 * only a custom `lookup` that never calls back at all gets there, and it holds no thread.
 */

/** Lookups out at once: the one under way and one given up that has not answered yet. */
const MAX_UNANSWERED = 2;
/** A given-up lookup unanswered this long (ms) is no longer counted (see above). */
const FORGET_UNANSWERED_MS = 60_000;

export interface DiscoveryOptions {
  readonly hostname: string;
  readonly intervalMs: number;
  /**
   * How long one lookup may take, in ms; unanswered by then, it is given up and reported.
   * Default: {@link DISCOVERY_OPTIONS}' (5000).
   */
  readonly timeoutMs?: number | undefined;
  readonly clock: Clock;
  /** `dns.lookup`-compatible; called with `{ all: true }`. Default: Node's `dns.lookup`. */
  readonly lookup?: LookupFunction | undefined;
  /** A lookup's addresses, sorted, distinct, at most {@link BALANCE_LIMITS.maxInstances}. */
  readonly onAddresses: (addresses: readonly LookupAddress[]) => void;
  /**
   * A lookup failed, found no address, or gave no answer in time (`error` and its `code` say which);
   * the instances are kept.
   */
  readonly onError: (error: Error) => void;
}

export class DnsDiscovery {
  readonly #o: DiscoveryOptions;
  readonly #timeoutMs: number;
  #timer: Timer | undefined;
  #stopped = false;
  /** Lookups started so far: each one's sequence number. */
  #started = 0;
  /** The sequence number of the newest lookup whose addresses were taken. */
  #newest = 0;
  /** The lookup under way (neither answered nor given up) and its timeout. */
  #current: { readonly seq: number; readonly timeout: Timer } | undefined;
  /** Given-up lookups not answered yet: sequence number → when each started. */
  readonly #unanswered = new Map<number, number>();
  /** A round found too many lookups out and said so: not again until a lookup starts. */
  #saidBusy = false;
  /** Resolved by the first outcome (addresses, an error, or a lookup given up). */
  readonly ready: Promise<void>;
  #markReady!: () => void;

  constructor(options: DiscoveryOptions) {
    this.#o = options;
    this.#timeoutMs = options.timeoutMs ?? DISCOVERY_OPTIONS.defaults.timeoutMs;
    this.ready = new Promise((resolve) => {
      this.#markReady = resolve;
    });
  }

  start(): void {
    this.refresh();
  }

  /** Looks the name up now (unless a lookup is under way), then again after the interval. */
  refresh(): void {
    if (this.#stopped || this.#current !== undefined) return;
    const clock = this.#o.clock;
    const now = clock.now();
    for (const [seq, at] of this.#unanswered) {
      // Also forgotten when the clock reads before it started (stepped back) or reads NaN: kept, it
      // would count until the clock came back, and two such lookups stop discovery (EBUSY) till then.
      const out = now - at;
      if (!(out >= 0 && out < FORGET_UNANSWERED_MS)) this.#unanswered.delete(seq);
    }
    if (this.#unanswered.size >= MAX_UNANSWERED) {
      const said = this.#saidBusy;
      this.#saidBusy = true;
      try {
        if (!said) this.#o.onError(this.#busyError(now));
      } finally {
        this.#markReady();
        this.#arm();
      }
      return;
    }
    this.#saidBusy = false;
    this.#started += 1;
    const seq = this.#started;
    const timeout = clock.setTimer(() => this.#giveUp(seq, now), this.#timeoutMs, { unref: true });
    this.#current = { seq, timeout };
    const lookup = (this.#o.lookup ?? dnsLookup) as LookupFunction;
    let answered = false;
    // A custom lookup may fail with anything (a string, a plain object), or answer what cannot be read
    // (a revoked Proxy, a getter that throws): the owner gets an Error, never the throw (it would reach
    // the lookup's own code, and this lookup would hang until its timeout).
    const settle = (error: unknown, address: unknown, family: unknown): void => {
      if (answered) return;
      answered = true;
      let failure: Error | null = null;
      let addresses: LookupAddress[] = [];
      if (error) failure = errorOf(error);
      else {
        try {
          addresses = addressesOf(address, family);
        } catch (unreadable) {
          failure = errorOf(unreadable);
        }
      }
      this.#answer(seq, failure, addresses);
    };
    try {
      const returned: unknown = lookup(this.#o.hostname, { all: true }, settle);
      // `dns.promises.lookup` (or any async function) where the callback style is expected never calls
      // back: its answer is the promise's, and its rejection, left unhandled, would end the process.
      // The value is taken as a callback's, the rejection as a failed lookup.
      if (isThenable(returned)) {
        returned.then(
          (address) => settle(null, address, undefined),
          (error: unknown) => settle(failureOf(error), undefined, undefined),
        );
      }
    } catch (error) {
      settle(failureOf(error), undefined, undefined);
    }
  }

  /** Stops looking up; nothing is called afterwards. */
  stop(): void {
    this.#stopped = true;
    if (this.#timer !== undefined) this.#o.clock.clearTimer(this.#timer);
    if (this.#current !== undefined) this.#o.clock.clearTimer(this.#current.timeout);
    this.#timer = undefined;
    this.#current = undefined;
    this.#unanswered.clear();
    this.#markReady();
  }

  /** Lookup `seq` answered: the one under way is delivered whole; a given-up one only if newest. */
  #answer(seq: number, error: Error | null, addresses: readonly LookupAddress[]): void {
    if (this.#stopped) return;
    if (this.#current?.seq !== seq) {
      // Given up earlier: its failure was reported then (as a timeout); its addresses still count
      // when no newer lookup's have been taken since.
      this.#unanswered.delete(seq);
      if (error === null && addresses.length > 0 && seq > this.#newest) {
        this.#newest = seq;
        this.#o.onAddresses(addresses);
      }
      return;
    }
    this.#o.clock.clearTimer(this.#current.timeout);
    this.#current = undefined;
    try {
      if (error !== null) this.#o.onError(error);
      else if (addresses.length === 0) this.#o.onError(noAddressError(this.#o.hostname));
      else {
        this.#newest = seq;
        this.#o.onAddresses(addresses);
      }
    } finally {
      this.#markReady();
      this.#arm();
    }
  }

  /** Lookup `seq` (started at `startedAt`) did not answer within the timeout: given up, reported. */
  #giveUp(seq: number, startedAt: number): void {
    if (this.#stopped || this.#current?.seq !== seq) return;
    this.#current = undefined;
    this.#unanswered.set(seq, startedAt);
    try {
      this.#o.onError(
        discoveryError(
          'ETIMEOUT',
          `the lookup of ${this.#o.hostname} did not answer within ${this.#timeoutMs} ms`,
        ),
      );
    } finally {
      this.#markReady();
      this.#arm();
    }
  }

  #busyError(now: number): Error {
    const oldest = Math.min(...this.#unanswered.values());
    return discoveryError(
      'EBUSY',
      `${this.#unanswered.size} lookups of ${this.#o.hostname} are still unanswered (the oldest for ` +
        `${Math.round(now - oldest)} ms): no new lookup until one answers`,
    );
  }

  /** The next round, after the interval (one timer at a time, whoever asked for a lookup). */
  #arm(): void {
    if (this.#stopped) return;
    if (this.#timer !== undefined) this.#o.clock.clearTimer(this.#timer);
    this.#timer = this.#o.clock.setTimer(
      () => {
        this.#timer = undefined;
        this.refresh();
      },
      this.#o.intervalMs,
      { unref: true },
    );
  }
}

/** What a lookup threw or rejected with, as an Error (a falsy value too: it is a failure here). */
const failureOf = (error: unknown): Error =>
  error === undefined || error === null ? new Error('the lookup failed') : errorOf(error);

/** Whether a lookup returned a promise (an async function) rather than only calling back. */
function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    value !== null &&
    (typeof value === 'object' || typeof value === 'function') &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}

/** What a lookup failed with, as an Error (its message the value's text, when it has one). */
function errorOf(error: unknown): Error {
  try {
    if (error instanceof Error) return error;
  } catch {
    // A revoked Proxy: not even its prototype can be read.
  }
  return new Error(thrownText(error));
}

/** What a lookup callback gave (one address, or the `all: true` list), as a sorted distinct list. */
function addressesOf(address: unknown, family: unknown): LookupAddress[] {
  const raw: unknown[] = Array.isArray(address) ? address : [{ address, family }];
  const seen = new Map<string, LookupAddress>();
  for (const entry of raw) {
    const a = (entry ?? {}) as { address?: unknown; family?: unknown };
    if (typeof a.address !== 'string' || a.address.length === 0) continue;
    const fam = a.family === 6 || a.family === 'IPv6' || a.address.includes(':') ? 6 : 4;
    if (!seen.has(a.address)) seen.set(a.address, { address: a.address, family: fam });
  }
  return [...seen.values()]
    .sort((x, y) => (x.address < y.address ? -1 : x.address > y.address ? 1 : 0))
    .slice(0, BALANCE_LIMITS.maxInstances);
}

/** `http://10.0.0.5:8080`, `http://[fd00::5]:8080`: the origin of one address on `protocol` and `port`. */
export function addressOrigin(protocol: string, address: LookupAddress, port: string): string {
  const host = address.family === 6 ? `[${address.address}]` : address.address;
  return `${protocol}//${host}${port === '' ? '' : `:${port}`}`;
}
