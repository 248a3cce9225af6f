import type { LookupFunction } from 'node:net';
import { defineOptions, type OptionsOf, option } from '../options/declare.js';

/**
 * The options of a dependency seen as several instances (SPEC X5), declared once: what
 * `createHttpClient`, the interceptor's dependency entries and `prazo.config.yaml` read, with every
 * default and bound here and the reasoning behind each.
 */

/** Fixed bounds of an instance set. */
export const BALANCE_LIMITS = Object.freeze({
  /**
   * Instances of one dependency (configured origins, or addresses a name resolves to). A Kubernetes
   * Service with more endpoints than this is better balanced by a proxy than by each client; the
   * bound keeps a DNS answer from growing memory and metrics without limit.
   */
  maxInstances: 1_024,
});

/** `http(s)://host:port` of a configured origin (no path, query or fragment), or undefined. */
export function normalizeOrigin(value: unknown): string | undefined {
  let url: URL;
  try {
    // Inside the guard: `instanceof` throws on a revoked Proxy.
    if (typeof value !== 'string' && !(value instanceof URL)) return undefined;
    url = new URL(value);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
  if (url.pathname !== '/' || url.search !== '' || url.hash !== '') return undefined;
  if (url.username !== '' || url.password !== '') return undefined;
  return url.origin;
}

/** The `user:password@` of a URL's text (before its path), hidden from messages. */
const USERINFO = /^((?:[^:/?#]*:)?\/\/)[^/?#]*@/;

/** An origin's text as a problem shows it: its first 60 characters, with any credentials hidden. */
export const shownOrigin = (text: string): string => text.replace(USERINFO, '$1…@').slice(0, 60);

/** The peak-EWMA latency estimate each pick reads (see `peak-ewma.ts`). */
export const PEAK_EWMA_OPTIONS = defineOptions({
  /**
   * How fast the estimate forgets, in ms: a fast answer moves it by `1 − exp(−Δt / decayMs)`, and an
   * instance nobody picks looks `e` times cheaper every `decayMs`. Default 10000 (Finagle's and
   * linkerd2-proxy's); [100, 600000].
   */
  decayMs: option.number({ default: 10_000, unit: 'ms', min: 100, max: 600_000 }),
  /**
   * The estimate of an instance before its first answer, in ms. Default 30 (linkerd2-proxy's): low
   * enough that a new instance gets traffic at once, high enough that it does not get all of it
   * (its cost grows with its in-flight requests until its first answers set the estimate).
   * (0, 60000].
   */
  initialEstimateMs: option.number({ default: 30, unit: 'ms', min: 0, exclusiveMin: true, max: 60_000 }),
});

/**
 * Latency ejection: an instance whose p99 over a window is `factor` times the median of the other
 * instances' p99s, and above the dependency's own healthy p99, is ejected like a failing one. No
 * peer does this (Envoy's issue 288, open since 2016; their statistical ejectors need 5+ hosts and
 * look at success rates only). Why these defaults:
 *
 * - `factor` 3: the p99s of healthy instances of one service differ by well under 2× (placement,
 *   a noisy neighbour, GC); 3× is outside that spread, and the instance the demo calls "one slow
 *   instance" (15% of answers stalled 1.5 s) has a p99 about 30× its peers'. The floor (the
 *   dependency's `p99Ms`) keeps a 3 ms instance among 1 ms ones, harmless, from being ejected.
 * - `windowMs` 10 s: the recorder's and the retry budget's window, long enough for `minSamples` at
 *   10 requests a second per instance, short enough to act within seconds of a stall starting.
 * - `minSamples` 100: a "p99" of fewer samples is the maximum of a handful of calls (the recorder's
 *   own rule); at 100 it is the second-largest of the window. An instance the picker already starves
 *   does not reach it — the picker is doing the job then.
 *
 * The median is of the *other* instances, so that two instances can judge each other.
 */
export const LATENCY_EJECTION_OPTIONS = defineOptions({
  /** How many times the other instances' median p99 an instance's p99 must exceed. Default 3; [1.5, 100]. */
  factor: option.number({ default: 3, min: 1.5, max: 100 }),
  /** The window the p99s are measured over, in ms. Default 10000; [1000, 600000]. */
  windowMs: option.number({ default: 10_000, unit: 'ms', min: 1_000, max: 600_000 }),
  /** Answers an instance needs in a window to be judged (and to be a peer others are judged by). Default 100; integer [20, 1000000]. */
  minSamples: option.integer({ default: 100, min: 20, max: 1_000_000 }),
});

export type LatencyEjectionOptions = OptionsOf<typeof LATENCY_EJECTION_OPTIONS>;

/**
 * Ejection (Envoy's and gRPC's outlier detection, with their defaults, plus latency): an instance
 * with `consecutiveFailures` failures in a row (connect failures, 5xx, timeouts; not 4xx, not a
 * pushback, not a call the caller cancelled) leaves the rotation for `baseEjectionMs × n`, n the
 * times it was ejected recently, at most `maxEjectionMs`; then it returns on probation, where one
 * failure ejects it again. At most `maxEjectedShare` of the instances are out at once, but at least
 * one of two or more (Envoy and gRPC alike: with 3 instances and 10%, one), and never the last one.
 */
export const EJECTION_OPTIONS = defineOptions(
  {
    /** Failures in a row that eject an instance. Default 5 (Envoy's `consecutive_5xx`); integer [1, 1000]. */
    consecutiveFailures: option.integer({ default: 5, min: 1, max: 1_000 }),
    /** The first ejection's length, in ms; the n-th recent one lasts n times this. Default 30000; [100, 3600000]. */
    baseEjectionMs: option.number({ default: 30_000, unit: 'ms', min: 100, max: 3_600_000 }),
    /** The longest ejection, in ms. Default 300000 (Envoy's); [100, 86400000], not below `baseEjectionMs`. */
    maxEjectionMs: option.number({ default: 300_000, unit: 'ms', min: 100, max: 86_400_000 }),
    /**
     * The share of instances that may be ejected at once; at least one of two or more is always
     * allowed, the last one never. Default 0.1 (Envoy's and gRPC's 10%); [0, 1].
     */
    maxEjectedShare: option.number({ default: 0.1, min: 0, max: 1 }),
    /** Latency ejection (see `LATENCY_EJECTION_OPTIONS`): options, or `false` for none. Default on. */
    latency: option.toggle(LATENCY_EJECTION_OPTIONS),
  },
  (o, report, { valid }) => {
    if (valid('baseEjectionMs', 'maxEjectionMs') && o.maxEjectionMs < o.baseEjectionMs) {
      report(
        'maxEjectionMs',
        `(${o.maxEjectionMs}) must not be below \`baseEjectionMs\` (${o.baseEjectionMs})`,
      );
    }
  },
);

export type EjectionOptions = OptionsOf<typeof EJECTION_OPTIONS>;

/**
 * DNS discovery (a Kubernetes headless Service): every A/AAAA record of the origin's host name is an
 * instance, looked up again every `intervalMs`; instances join and leave between two lookups, and a
 * lookup that fails, comes back empty or does not answer within `timeoutMs` keeps the instances
 * there were.
 */
export const DISCOVERY_OPTIONS = defineOptions({
  /**
   * Time between two lookups, in ms. Default 5000: CoreDNS answers for Kubernetes Services with a 5 s
   * TTL, so a new pod is seen within one TTL plus one interval. [100, 3600000].
   */
  intervalMs: option.number({ default: 5_000, unit: 'ms', min: 100, max: 3_600_000 }),
  /**
   * How long one lookup may take, in ms: unanswered by then, it is given up (reported as a failed
   * lookup, `ETIMEOUT`; the instances there were kept) and the next one goes at the interval; its
   * answer, if it ever comes, is taken only while no newer lookup has answered. Default 5000: the
   * cluster DNS answers a Service name in milliseconds (a cache miss forwarded upstream in about a
   * second), and glibc's and musl's resolvers give a name server 5 s before they try again, so a
   * lookup still out at 5 s has lost a try to a dead or overloaded server. Shorter gives up answers
   * that were on their way; longer keeps a set that never had an instance waiting longer. [100, 60000].
   */
  timeoutMs: option.number({ default: 5_000, unit: 'ms', min: 100, max: 60_000 }),
  /**
   * A `dns.lookup`-compatible function, called with `{ all: true }` for every address of the name
   * (one that returns a promise instead of calling back, as `dns.promises.lookup`, is heard too).
   * Default: the client's `lookup`, else Node's `dns.lookup`.
   */
  lookup: option.fn<LookupFunction>('a function like dns.lookup'),
});

export type DiscoveryOptions = OptionsOf<typeof DISCOVERY_OPTIONS>;

const isOriginList = (v: unknown): v is readonly string[] => {
  try {
    return Array.isArray(v) && v.length >= 1 && v.length <= BALANCE_LIMITS.maxInstances;
  } catch {
    return false; // a revoked Proxy: no list
  }
};

/**
 * An entry of `origins` as a problem shows it. The caller's list may hold anything: `String()` throws
 * on an object without a prototype, a revoked Proxy or a `toString` that throws, and reading the entry
 * itself may throw (a getter, a Proxy's trap); the problem must still be reported.
 */
function shownEntry(read: () => unknown): string {
  try {
    return JSON.stringify(shownOrigin(String(read())));
  } catch {
    return 'a value that cannot be shown';
  }
}

/**
 * What a dependency says about its instances: a fixed list (`origins`) or DNS discovery of its
 * origin's name, how picks weigh latency (`balance`) and when an instance is ejected (`ejection`).
 * Read by `createHttpClient`, the interceptor's dependency entries and the config file alike.
 */
export const INSTANCES_OPTIONS = defineOptions(
  {
    /**
     * The dependency's instances, each an origin (`http://10.0.0.1:8080`, no path): every call picks
     * one (power of two choices over peak-EWMA latency × in-flight), a retry goes to another one than
     * the one that failed, a hedge to another one than the one it hedges. 1 to 1024 distinct origins.
     */
    origins: option.matching<readonly string[]>(
      `a list of 1 to ${BALANCE_LIMITS.maxInstances} origins such as "http://10.0.0.1:8080"`,
      isOriginList,
    ),
    /**
     * Find the instances by DNS: every address the origin's host name resolves to (a Kubernetes
     * headless Service), looked up again every `intervalMs`. `true` for the defaults, or options.
     */
    discovery: option.toggle(DISCOVERY_OPTIONS),
    /** The latency estimate picks compare. Default: decay 10 s, initial estimate 30 ms. */
    balance: option.nested(PEAK_EWMA_OPTIONS),
    /** When an instance leaves the rotation: options, `true` for the defaults, `false` for never. Default on. */
    ejection: option.toggle(EJECTION_OPTIONS),
  },
  (o, report, { given }) => {
    const origins = o.origins;
    if (origins !== undefined && isOriginList(origins)) {
      const seen = new Set<string>();
      for (let i = 0; i < origins.length; i += 1) {
        let origin: string | undefined;
        try {
          origin = normalizeOrigin(origins[i]);
        } catch {
          origin = undefined; // an entry that cannot be read (a getter, a Proxy's trap)
        }
        if (origin === undefined) {
          report(
            ['origins', i],
            `must be an http(s) origin such as "http://10.0.0.1:8080" (no path), got ${shownEntry(() => origins[i])}`,
          );
        } else if (seen.has(origin)) {
          report(['origins', i], `repeats ${origin}`);
        } else seen.add(origin);
      }
    }
    const discovery = given.discovery;
    if (origins !== undefined && discovery !== undefined && discovery !== false) {
      report('discovery', 'and `origins` are two ways to list the instances: give one');
    }
  },
);

export type InstancesOptions = OptionsOf<typeof INSTANCES_OPTIONS>;
