import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import type { LookupFunction } from 'node:net';
import type { Clock, Timer } from '../clock/clock.js';
import { BALANCE_LIMITS } from './options.js';

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
 */

export interface DiscoveryOptions {
  readonly hostname: string;
  readonly intervalMs: number;
  readonly clock: Clock;
  /** `dns.lookup`-compatible; called with `{ all: true }`. Default: Node's `dns.lookup`. */
  readonly lookup?: LookupFunction | undefined;
  /** A lookup's addresses, sorted, distinct, at most {@link BALANCE_LIMITS.maxInstances}. */
  readonly onAddresses: (addresses: readonly LookupAddress[]) => void;
  /** A lookup failed, or found no address (`error` says which); the instances are kept. */
  readonly onError: (error: Error) => void;
}

export class DnsDiscovery {
  readonly #o: DiscoveryOptions;
  #timer: Timer | undefined;
  #stopped = false;
  #busy = false;
  /** Resolved by the first answer (addresses or error). */
  readonly ready: Promise<void>;
  #markReady!: () => void;

  constructor(options: DiscoveryOptions) {
    this.#o = options;
    this.ready = new Promise((resolve) => {
      this.#markReady = resolve;
    });
  }

  start(): void {
    this.refresh();
  }

  /** Looks the name up now (unless a lookup is under way), then again after the interval. */
  refresh(): void {
    if (this.#stopped || this.#busy) return;
    this.#busy = true;
    const done = (error: Error | null, addresses: readonly LookupAddress[]): void => {
      this.#busy = false;
      if (this.#stopped) return;
      try {
        if (error !== null) this.#o.onError(error);
        else if (addresses.length === 0) {
          this.#o.onError(
            Object.assign(new Error(`${this.#o.hostname} resolves to no address`), { code: 'ENODATA' }),
          );
        } else this.#o.onAddresses(addresses);
      } finally {
        this.#markReady();
        this.#arm();
      }
    };
    const lookup = (this.#o.lookup ?? dnsLookup) as LookupFunction;
    let answered = false;
    try {
      lookup(this.#o.hostname, { all: true }, (error, address, family) => {
        if (answered) return;
        answered = true;
        done(error, error ? [] : addressesOf(address, family));
      });
    } catch (error) {
      if (!answered) {
        answered = true;
        done(error instanceof Error ? error : new Error(String(error)), []);
      }
    }
  }

  /** Stops looking up; nothing is called afterwards. */
  stop(): void {
    this.#stopped = true;
    if (this.#timer !== undefined) this.#o.clock.clearTimer(this.#timer);
    this.#timer = undefined;
    this.#markReady();
  }

  #arm(): void {
    if (this.#stopped) return;
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
