import type { LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import { addressOrigin, DnsDiscovery } from '../balance/discovery.js';
import type { EjectionSettings, EjectionVerdict } from '../balance/ejection.js';
import {
  type Instance,
  type InstanceListener,
  InstanceSet,
  type InstanceState,
} from '../balance/instances.js';
import { QUANTILES } from '../calibrate/sources/types.js';
import type { Clock } from '../clock/clock.js';
import type { ExecutorPlan } from '../dependency/transport.js';
import type { DependencyEvent } from '../dependency/types.js';
import { discoveryError, NoInstanceError } from '../errors/capacity.js';
import type { Dispatch } from './handler.js';
import { endedError } from './pool.js';

/**
 * What a failed attempt costs an instance's estimate, in attempt timeouts: a failure is worth a caller
 * waiting out several timeouts (the attempt, its retry, the budget it spends), not one. At one timeout
 * a refused instance (its failures take no time) still won about a pick in five against healthy peers
 * whose peaks reach the p99, and each of those picks spent a retry; at 10 it is probed again only once
 * its estimate has decayed tenfold (about 23 s at the 10 s decay), and ejection does the rest.
 */
const FAILURE_PENALTY_TIMEOUTS = 10;
/**
 * A route's instances (SPEC X5): the origins an HTTP dependency is reached at — a fixed list, or the
 * addresses its name resolves to (DNS discovery of a Kubernetes headless Service) — each with what
 * dispatches to it, picked per attempt by the balance's {@link InstanceSet}. `createHttpClient`
 * gives each instance a connection pool of its own; the interceptor dispatches to the `Agent` below
 * it with the instance's origin (the Agent keeps one pool per origin). The set's decisions
 * (ejections, returns, instances joining and leaving) become the dependency's events, so prazo/otel
 * and any listener see them with the rest.
 */

/** Where one instance's attempts go: its origin, and its own dispatcher (the client's pool) if any. */
export interface Target {
  readonly origin: string;
  /** Undefined: the dispatcher below the call (the interceptor's `Agent`). */
  readonly dispatch?: Dispatch;
  /** Closes what the target owns (its pool), gracefully: attempts in flight finish. */
  close?(): Promise<void>;
  destroy?(): Promise<void>;
}

/** A route's instance settings, validated (`validate.ts`). */
export interface InstanceSettings {
  /** The fixed list, normalised. Undefined with discovery. */
  readonly origins: readonly string[] | undefined;
  /** DNS discovery of the route's origin name. */
  readonly discovery:
    | {
        readonly intervalMs: number;
        readonly timeoutMs: number;
        readonly lookup: LookupFunction | undefined;
      }
    | undefined;
  readonly decayMs: number;
  readonly initialEstimateMs: number;
  readonly ejection: EjectionSettings | undefined;
}

export class RouteInstances {
  readonly set: InstanceSet<Target>;
  /**
   * The `host` header of a discovered instance's requests (`inventory:8080`): the request goes to
   * an address, but it is for the Service's name (virtual hosts, TLS server name).
   */
  readonly host: string | undefined;
  readonly hostname: string | undefined;
  readonly #name: string;
  readonly #discovery: DnsDiscovery | undefined;
  readonly #make: (origin: string) => Target;
  #waiting: ((error: Error | undefined) => void)[] = [];
  /** Why there is no instance: the last lookup's error, while the set is empty. */
  #failure: Error | undefined;
  #closed = false;
  /**
   * Set by `close()` / `destroy()`: a call still waiting for an instance, or asking for one after,
   * ends with undici's closed or destroyed error, the caller's lifecycle (not recorded): NO_INSTANCE,
   * recorded as the dependency failing, would make a closed interceptor's calls read as an outage.
   */
  #ended: 'closed' | 'destroyed' | undefined;
  readonly #closing = new Set<Promise<void>>();

  constructor(
    name: string,
    origin: string,
    settings: InstanceSettings,
    clock: Clock,
    core: () => ExecutorPlan,
    make: (origin: string) => Target,
  ) {
    this.#name = name;
    this.#make = make;
    const emit = (event: DependencyEvent): void => {
      const events = core().events;
      if (events.active) events.emit(event);
    };
    const listener: InstanceListener = {
      ejected: (instance: string, verdict: EjectionVerdict, ejectionMs: number, ejections: number) =>
        emit({ type: 'instance-ejected', dependency: name, instance, ...verdict, ejectionMs, ejections }),
      returned: (instance) => emit({ type: 'instance-returned', dependency: name, instance }),
      added: (instance) => emit({ type: 'instance-added', dependency: name, instance }),
      removed: (instance) => emit({ type: 'instance-removed', dependency: name, instance }),
    };
    this.set = new InstanceSet<Target>({
      clock,
      random: () => core().random(),
      decayMs: settings.decayMs,
      initialEstimateMs: settings.initialEstimateMs,
      ejection: settings.ejection,
      floorMs: () => core().p99Ms,
      penaltyMs: () => FAILURE_PENALTY_TIMEOUTS * core().attemptTimeoutMs,
      timeoutMs: () => core().attemptTimeoutMs,
      // With hedging, a share above what it hedges is the instance's; without, nothing is overtaken:
      // an attempt is unanswered only when a deadline cut it past the dependency's p99.
      unansweredFloor: () => 1 - (core().hedge?.percentile ?? QUANTILES.p99),
      listener,
    });
    const discovery = settings.discovery;
    if (discovery === undefined) {
      this.host = undefined;
      this.hostname = undefined;
      this.#discovery = undefined;
      this.#update(settings.origins ?? [origin]);
      return;
    }
    const url = new URL(origin);
    this.host = url.host;
    this.hostname = url.hostname.replace(/^\[|\]$/g, '');
    const failed = (error: Error): void => {
      emit({ type: 'discovery-failed', dependency: name, hostname: this.hostname!, error });
      if (this.set.size > 0) return; // the instances there were stay
      this.#failure = new NoInstanceError({ dependency: name, hostname: this.hostname, cause: error });
      this.#wake(this.#failure);
    };
    this.#discovery = new DnsDiscovery({
      hostname: this.hostname,
      intervalMs: discovery.intervalMs,
      timeoutMs: discovery.timeoutMs,
      clock,
      lookup: discovery.lookup,
      onAddresses: (addresses) => {
        const origins = instanceOrigins(url.protocol, addresses, url.port);
        if (origins.length === 0) {
          failed(discoveryError('ENODATA', `${this.hostname} resolves to no IP address`));
          return;
        }
        this.#failure = undefined;
        this.#update(origins);
      },
      onError: (error) => failed(error),
    });
    this.#discovery.start();
  }

  /**
   * Calls `ready` once there is an instance to pick (at once when there is), or with the error that
   * says why there is none (discovery failed and never found one).
   */
  whenAvailable(ready: (error: Error | undefined) => void): void {
    if (this.#ended !== undefined) ready(endedError(this.#ended));
    else if (this.set.available > 0) ready(undefined);
    else if (this.#failure !== undefined || this.#closed)
      ready(this.#failure ?? new NoInstanceError({ dependency: this.#name }));
    else this.#waiting.push(ready);
  }

  /** Looks the name up again now (a test, or after a failure). */
  refresh(): void {
    this.#discovery?.refresh();
  }

  /** Resolves once discovery has answered at least once (at once for a fixed list). */
  get ready(): Promise<void> {
    return this.#discovery?.ready ?? Promise.resolve();
  }

  states(): InstanceState[] {
    return this.set.states();
  }

  /** Every target's origin (instances in rotation and ejected). */
  origins(): string[] {
    return this.set.keys();
  }

  /** Stops discovery and closes every target (in flight attempts finish first). */
  async close(): Promise<void> {
    this.#ended ??= 'closed';
    this.#stop();
    const gone = this.set.replace([]);
    await Promise.all([...gone.map((t) => t.close?.()), ...this.#closing]);
  }

  /**
   * Stops discovery, keeping the instances it found: calls running on them finish, and their retries
   * and hedges still pick among them (an interceptor forgetting an origin it met at run time).
   */
  stopDiscovery(): void {
    this.#stop();
  }

  async destroy(): Promise<void> {
    this.#ended = 'destroyed';
    this.#stop();
    const gone = this.set.replace([]);
    await Promise.all(gone.map((t) => t.destroy?.()));
  }

  #stop(): void {
    this.#closed = true;
    this.#discovery?.stop();
    const ended = this.#ended;
    this.#wake(ended === undefined ? new NoInstanceError({ dependency: this.#name }) : endedError(ended));
  }

  #update(origins: readonly string[]): void {
    if (this.#closed) return;
    const entries = origins.map((key) => ({ key, value: this.set.get(key)?.value ?? this.#make(key) }));
    for (const target of this.set.replace(entries)) {
      const closing = target.close?.();
      if (closing === undefined) continue;
      const tracked = closing.catch(() => {}).finally(() => this.#closing.delete(tracked));
      this.#closing.add(tracked);
    }
    if (this.set.available > 0) this.#wake(undefined);
  }

  #wake(error: Error | undefined): void {
    const waiting = this.#waiting;
    if (waiting.length === 0) return;
    this.#waiting = [];
    for (const ready of waiting) ready(error);
  }
}

/**
 * The instances a lookup's addresses are: each address's origin in one spelling (WHATWG URL's:
 * `0:0:0:0:0:0:0:1`, `::0001` and `::1` are one `[::1]`; `::ffff:10.0.0.5` is `10.0.0.5`), each once.
 * A custom `lookup` may answer anything. What is not an IP address (a name, `host:port`, an address a
 * URL cannot carry such as a scoped `fe80::1%eth0`) is not an instance: its pool could not be made
 * (undici's constructor throws, here inside discovery's callback, where nothing catches it), and
 * the other addresses of the answer must still be taken. One server under several spellings is one
 * instance: counted as several, a retry or a hedge "to another instance" goes back to it (SPEC X5).
 */
function instanceOrigins(protocol: string, addresses: readonly LookupAddress[], port: string): string[] {
  const out = new Set<string>();
  for (const given of addresses) {
    // An IPv4-mapped IPv6 address (`::ffff:10.0.0.5`, a resolver's V4MAPPED answer) is that IPv4 host.
    const address = given.address.replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/i, '');
    const family = isIP(address);
    if (family === 0) continue;
    try {
      out.add(new URL(addressOrigin(protocol, { address, family }, port)).origin);
    } catch {
      // Not an address a request can go to.
    }
  }
  return [...out];
}

export type { Instance };
