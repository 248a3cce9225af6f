/**
 * Starting values per kind of call (SPEC C8; seed 003, "Valores típicos por tipo de chamada"): before
 * anything is measured, a dependency declared with `kind:` starts from the p99 of its kind, and is
 * *assumed* until a measurement replaces it. The seed's point stands: these numbers only calibrate the
 * first expectation, they never replace a measurement, and what is never acceptable is no timeout at
 * all — so a new dependency gets a number that is explicit, cited, and marked as not measured.
 *
 * Every starting value is a published figure, or a sum of published figures, never a guess of ours
 * (docs/calibration.md has the table with its sources):
 *
 * - the p99 of one request inside a datacenter, measured at its caller: **10 ms** (Dean & Barroso,
 *   "The Tail at Scale", CACM 56(2), 2013, Table 1: one random leaf request, 99%ile);
 * - a round trip between availability zones of one region: **2 ms** (Microsoft Azure, "What are
 *   availability zones?": "a round-trip latency of less than 2 ms"; AWS says "single-digit
 *   millisecond");
 * - a round trip between continents: **150 ms** (J. Dean, "Latency numbers every programmer should
 *   know", LADIS 2009 keynote, after P. Norvig: "send packet CA → Netherlands → CA");
 * - reading 1 MB sequentially from memory: **0.25 ms** (same table).
 *
 * Where a figure is a typical value rather than a p99, the larger published figure is taken: a
 * starting p99 that is too low cuts healthy calls, and windows full of cut calls are refused by the
 * healthy-window guard (SPEC C4), so live calibration could never replace it. One that is too high
 * only waits longer than needed until it is measured.
 *
 * The same table bounds a p99 that *is* measured: below 1 ms a call over the network is faster than
 * two datacenter round trips (0.5 ms each, same table), above 10 minutes it is not a call a deadline
 * can cover. Either is far more often a unit read wrong (seconds as milliseconds: 0.13 "ms") than a
 * real dependency, so it is refused unless the kind says otherwise (`in-process`, `same-zone-cache`)
 * or the entry says `unusualP99: true`.
 */

import { InvalidOptionsError } from '../errors/options.js';
import { didYouMean } from '../options/suggest.js';

/** The kinds of call, from the nearest to the farthest. */
export const DEPENDENCY_KINDS = Object.freeze([
  'in-process',
  'same-zone-cache',
  'same-zone-database',
  'same-zone-service',
  'cross-zone',
  'cross-region',
  'third-party-api',
] as const);

export type DependencyKind = (typeof DEPENDENCY_KINDS)[number];

/** What one kind of call starts from, and which measured p99s are plausible for it. */
export interface KindProfile {
  /** The p99 a dependency of this kind starts from before it is measured, in ms. */
  readonly startingP99Ms: number;
  /** How the starting value is made, in words (the sources are in docs/calibration.md). */
  readonly basis: string;
  /** The smallest measured p99 taken without `unusualP99`, in ms (exclusive of 0 for in-process). */
  readonly minP99Ms: number;
}

/** Published figures the table is made of, in ms (see the module comment for each source). */
export const PUBLISHED_FIGURES = Object.freeze({
  /** "The Tail at Scale", Table 1: p99 of one leaf request in a datacenter, measured at the root. */
  datacenterRequestP99Ms: 10,
  /** Azure availability zones: round trip between zones of a region, "less than 2 ms". */
  crossZoneRoundTripMs: 2,
  /** Dean/Norvig: "send packet CA → Netherlands → CA". */
  intercontinentalRoundTripMs: 150,
  /** Dean/Norvig: "round trip within same datacenter". */
  datacenterRoundTripMs: 0.5,
  /** Dean/Norvig: "read 1 MB sequentially from memory". */
  memoryReadMbMs: 0.25,
  /** Redis, "Diagnosing latency issues": a Unix domain socket's latency "can be as low as 30 µs". */
  fastestSocketMs: 0.03,
  /** Round trips before a new HTTPS connection's first answer: TCP (RFC 9293), TLS 1.3 (RFC 8446), the request. */
  newHttpsRoundTrips: 3,
});

const F = PUBLISHED_FIGURES;

/** The smallest p99 plausible for a call over a network, in ms: two datacenter round trips. */
export const NETWORK_MIN_P99_MS = 2 * F.datacenterRoundTripMs;
/** The largest p99 plausible for any call a deadline covers, in ms: 10 minutes. */
export const MAX_PLAUSIBLE_P99_MS = 600_000;

/** `table` and each of its profiles frozen: a table frozen on the outside only kept its rows writable. */
function deepFreeze<T extends Record<string, object>>(table: T): Readonly<T> {
  for (const row of Object.values(table)) Object.freeze(row);
  return Object.freeze(table);
}

// Each profile frozen too: one assignment into a shared, exported table moved every later start.
export const KIND_PROFILES: Readonly<Record<DependencyKind, KindProfile>> = deepFreeze({
  'in-process': {
    startingP99Ms: F.memoryReadMbMs,
    basis: 'reading 1 MB sequentially from memory (0.25 ms)',
    minP99Ms: 0,
  },
  'same-zone-cache': {
    startingP99Ms: F.datacenterRequestP99Ms,
    basis: 'the p99 of one request inside a datacenter (10 ms); no p99 of cache calls is published',
    minP99Ms: F.fastestSocketMs,
  },
  'same-zone-database': {
    startingP99Ms: F.datacenterRequestP99Ms,
    basis: 'the p99 of one request inside a datacenter (10 ms)',
    minP99Ms: NETWORK_MIN_P99_MS,
  },
  'same-zone-service': {
    startingP99Ms: F.datacenterRequestP99Ms,
    basis: 'the p99 of one request inside a datacenter (10 ms)',
    minP99Ms: NETWORK_MIN_P99_MS,
  },
  'cross-zone': {
    startingP99Ms: F.datacenterRequestP99Ms + F.crossZoneRoundTripMs,
    basis: 'a datacenter request p99 (10 ms) plus a round trip between zones (2 ms)',
    minP99Ms: NETWORK_MIN_P99_MS,
  },
  'cross-region': {
    startingP99Ms: F.datacenterRequestP99Ms + F.intercontinentalRoundTripMs,
    basis: 'a datacenter request p99 (10 ms) plus an intercontinental round trip (150 ms)',
    minP99Ms: NETWORK_MIN_P99_MS,
  },
  'third-party-api': {
    startingP99Ms: F.datacenterRequestP99Ms + F.newHttpsRoundTrips * F.intercontinentalRoundTripMs,
    basis:
      'a datacenter request p99 (10 ms) plus the 3 intercontinental round trips of a new HTTPS connection (TCP, TLS 1.3, the request: 3 × 150 ms)',
    minP99Ms: NETWORK_MIN_P99_MS,
  },
});

/**
 * The profile of `kind`, or `InvalidOptionsError` naming the kinds: looked up raw, `'__proto__'` gave
 * Object.prototype (a starting p99 of `undefined`) and a typo a TypeError.
 */
function profileOf(context: string, kind: unknown): KindProfile {
  if (typeof kind === 'string' && Object.hasOwn(KIND_PROFILES, kind)) {
    return KIND_PROFILES[kind as DependencyKind];
  }
  const shown = typeof kind === 'string' ? JSON.stringify(kind.slice(0, 40)) : String(kind);
  const hint = typeof kind === 'string' ? didYouMean(kind, DEPENDENCY_KINDS) : '';
  throw new InvalidOptionsError(context, [
    `\`kind\` must be one of ${DEPENDENCY_KINDS.join(', ')}, got ${shown}${hint}`,
  ]);
}

/** The p99 a dependency of `kind` starts from before it is measured, in ms. */
export const startingP99Ms = (kind: DependencyKind): number => profileOf('startingP99Ms', kind).startingP99Ms;

/** How a way out is named: the config's keys, or the CLI's flags. */
export type DeclaredIn = 'config' | 'flags';

/**
 * Why a measured `p99Ms` is not believable for a dependency of `kind` (undefined: no kind given, a
 * call over the network), or undefined when it is: below the kind's floor (1 ms over a network) or
 * above 10 minutes. The sentence says what to check first (the unit) and how to declare it real, in
 * the config's words or the CLI's (`declaredIn`).
 */
export function implausibleP99(
  p99Ms: number,
  kind: DependencyKind | undefined,
  declaredIn: DeclaredIn = 'config',
): string | undefined {
  const min = kind === undefined ? NETWORK_MIN_P99_MS : profileOf('implausibleP99', kind).minP99Ms;
  if (declaredIn !== 'config' && declaredIn !== 'flags') {
    // Anything but 'config' read as 'flags': the sentence then named CLI flags to a config's reader.
    const got =
      typeof declaredIn === 'string' ? JSON.stringify(String(declaredIn).slice(0, 40)) : typeof declaredIn;
    throw new InvalidOptionsError('implausibleP99', [`\`declaredIn\` must be config or flags, got ${got}`]);
  }
  const cfg = declaredIn === 'config';
  const unusual = cfg ? '`unusualP99: true`' : '--unusual-p99';
  const kindIs = (k: DependencyKind): string => (cfg ? `\`kind: ${k}\`` : `--kind ${k}`);
  const unit = cfg
    ? 'the unit (`histogram.unit`, a column named *_ms or *_seconds)'
    : 'the unit (--unit s|ms|us)';
  // Compared as they came, NaN passed both bounds: "plausible".
  if (typeof p99Ms !== 'number' || Number.isNaN(p99Ms)) {
    const got = typeof p99Ms === 'number' ? 'NaN' : `of type ${typeof p99Ms}`;
    return `p99 ${got} is not a number of ms: nothing was measured`;
  }
  const shown = Number(p99Ms.toPrecision(3));
  if (p99Ms < min) {
    const what = kind === undefined ? 'a call over a network' : `a ${kind} call`;
    const declare =
      kind === undefined
        ? `declare ${kindIs('in-process')} (or ${kindIs('same-zone-cache')}, down to ${KIND_PROFILES['same-zone-cache'].minP99Ms} ms), or ${unusual}`
        : `declare ${unusual}`;
    return `p99 ${shown} ms is below ${min} ms, faster than ${what} can be: a latency in seconds read as ms? Check ${unit}; if it is real, ${declare}`;
  }
  if (p99Ms > MAX_PLAUSIBLE_P99_MS) {
    return `p99 ${shown} ms is above 10 minutes, longer than any deadline covers: a latency in µs read as ms? Check ${unit}; if it is real, declare ${unusual}`;
  }
  return undefined;
}
