import { type Clock, MAX_TIMER_DELAY_MS } from '../clock/clock.js';
import { systemClock } from '../clock/system.js';
import { defineOptions, type OptionsOf, option, type Resolved } from '../options/declare.js';
import { readOptions } from '../options/validator.js';
import { DeadlineHeaders, MAX_DEADLINE_HEADER_LENGTH } from './constants.js';
import { Deadline, refuseBareClock } from './deadline.js';
import { parseConnectTimeout, parseEnvoyTimeoutMs, parseEpochMs, parseGrpcTimeout } from './parse.js';

/** Header containers prazo reads: fetch `Headers` (or anything with `get`), or Node's header object. */
export type HeadersLike =
  | { get(name: string): string | null | undefined }
  | Readonly<Record<string, string | readonly string[] | number | undefined>>;

/**
 * How a service treats the deadlines its requests bring (SPEC D2, D3, D8), declared once: the
 * reader, every server integration (`prazo/server`, `prazo/grpc`) and the config's `service` section.
 */
export const INCOMING_DEADLINE_OPTIONS = defineOptions(
  {
    /**
     * Deadline of a request that brings none (or only malformed ones), in ms (SPEC D3). Default 2000
     * (or `maxMs` when that is smaller); (0, 2^31-1], at most `maxMs`.
     */
    defaultMs: option.number({
      default: 2_000,
      unit: 'ms',
      min: 0,
      exclusiveMin: true,
      max: MAX_TIMER_DELAY_MS,
    }),
    /**
     * The most a caller can make this service hold a request, in ms: the incoming deadline becomes
     * `min(received, now + maxMs)` (SPEC D2). Default 10000; (0, 2^31-1].
     */
    maxMs: option.number({
      default: 10_000,
      unit: 'ms',
      min: 0,
      exclusiveMin: true,
      max: MAX_TIMER_DELAY_MS,
    }),
    /**
     * Known skew of the senders' wall clocks, in ms, applied to `x-deadline-epoch-ms` (SPEC D8):
     * positive when they run ahead of ours (their absolute deadlines are then read that much earlier).
     * Default 0; [-3600000, 3600000].
     */
    clockSkewMs: option.number({ default: 0, unit: 'ms', min: -3_600_000, max: 3_600_000 }),
    /** Where time comes from. Default: the system clock. */
    clock: option.clock(),
  },
  (o, report, { given, valid }) => {
    if (given.defaultMs !== undefined && valid('defaultMs', 'maxMs') && o.defaultMs > o.maxMs) {
      report('defaultMs', `(${o.defaultMs}) must not exceed \`maxMs\` (${o.maxMs})`);
    }
  },
);

export type IncomingDeadlineOptions = OptionsOf<typeof INCOMING_DEADLINE_OPTIONS>;

export interface ResolvedIncoming {
  readonly defaultMs: number;
  readonly maxMs: number;
  readonly clockSkewMs: number;
  readonly clock: Clock;
}

/**
 * The options' values once read (`OptionsValidator.read(INCOMING_DEADLINE_OPTIONS, given)`), defaults
 * applied: `defaultMs` follows a `maxMs` below 2000 when not given.
 */
export function incomingDefaults(
  o: Resolved<(typeof INCOMING_DEADLINE_OPTIONS)['specs']>,
  given: IncomingDeadlineOptions | undefined,
): ResolvedIncoming {
  const defaultMs = given?.defaultMs === undefined ? Math.min(o.defaultMs, o.maxMs) : o.defaultMs;
  return { defaultMs, maxMs: o.maxMs, clockSkewMs: o.clockSkewMs, clock: o.clock ?? systemClock };
}

/** Which header decided the deadline. */
export type DeadlineSource =
  | 'x-deadline-epoch-ms'
  | 'grpc-timeout'
  | 'x-envoy-expected-rq-timeout-ms'
  | 'connect-timeout-ms'
  | 'default';

export interface IncomingDeadline {
  readonly deadline: Deadline;
  readonly source: DeadlineSource;
  /** True when the caller asked for more than `maxMs` and was cut down to it. */
  readonly capped: boolean;
  /** True when the request arrived with its deadline already gone. */
  readonly expired: boolean;
}

type Parser = (value: string) => number | undefined;

/** Values of one header looked at, at most: a repeat beyond is not read (bounded cost). */
const MAX_VALUES = 8;

/**
 * The earliest valid value of a header's text. A repeated header arrives joined with commas
 * (`"T1, T2"`: node:http for unknown headers, fetch `Headers.get`), so each comma-separated value
 * counts; at most {@link MAX_VALUES}, each bounded by the parser.
 */
function earliest(text: string, parse: Parser, best: number | undefined): number | undefined {
  if (text.length > MAX_VALUES * (MAX_DEADLINE_HEADER_LENGTH + 2)) return best;
  let start = 0;
  for (let n = 0; n < MAX_VALUES && start <= text.length; n += 1) {
    const comma = text.indexOf(',', start);
    const end = comma === -1 ? text.length : comma;
    const v = parse(text.slice(start, end));
    if (v !== undefined && (best === undefined || v < best)) best = v;
    if (comma === -1) break;
    start = comma + 1;
  }
  return best;
}

/** Reads one header; with several values (a list, repeats, a comma-joined repeat) the earliest valid one wins. */
function read(headers: HeadersLike, name: string, parse: Parser): number | undefined {
  const raw =
    typeof (headers as { get?: unknown }).get === 'function'
      ? (headers as { get(n: string): unknown }).get(name)
      : (headers as Record<string, unknown>)[name];
  if (typeof raw === 'string') return earliest(raw, parse, undefined);
  if (typeof raw === 'number') return Number.isFinite(raw) ? parse(String(raw)) : undefined;
  if (!Array.isArray(raw)) return undefined;
  let best: number | undefined;
  for (const item of raw.slice(0, MAX_VALUES)) {
    if (typeof item === 'string') best = earliest(item, parse, best);
  }
  return best;
}

/** The names the reader looks for, with the other casings a header record may keep them in. */
const CASINGS: ReadonlyArray<readonly [string, readonly string[]]> = [
  DeadlineHeaders.epochMs,
  DeadlineHeaders.grpcTimeout,
  DeadlineHeaders.envoyExpected,
  DeadlineHeaders.connectTimeout,
].map((name) => [
  name,
  [name.replace(/(^|-)([a-z])/g, (_, dash: string, c: string) => dash + c.toUpperCase()), name.toUpperCase()],
]);

/**
 * A header record whose deadline headers are not under their lowercase names, read in the casings a
 * sender writes (`Grpc-Timeout`, `GRPC-TIMEOUT`), as HTTP names are case-insensitive (RFC 9110
 * §5.1): Node lowercases them, but a record built elsewhere (AWS API Gateway's `event.headers`, a
 * proxy's copy, a test) keeps the sender's case, and `Grpc-Timeout: 1S` was silently no deadline at
 * all. A fixed number of lookups (no walk over the record's keys, whose cost grows with it); a `get`
 * container (fetch `Headers`) folds case itself. Every casing found counts, as repeats do.
 */
function caseless(headers: HeadersLike): HeadersLike {
  if (typeof (headers as { get?: unknown }).get === 'function') return headers;
  const record = headers as Record<string, unknown>;
  for (const [name] of CASINGS) if (record[name] !== undefined) return headers;
  let folded: Record<string, unknown[]> | undefined;
  for (const [name, others] of CASINGS) {
    for (const other of others) {
      const value = record[other];
      if (value === undefined) continue;
      folded ??= {};
      const list = folded[name] ?? [];
      folded[name] = list;
      for (const item of Array.isArray(value) ? value.slice(0, MAX_VALUES) : [value]) {
        if (typeof item === 'string') list.push(item);
        else if (typeof item === 'number' && Number.isFinite(item)) list.push(String(item));
      }
    }
  }
  return (folded as HeadersLike | undefined) ?? headers;
}

/**
 * Builds a reader of incoming deadlines with options validated once (use it on a server's hot path).
 *
 * Precedence: every header present and valid is a limit some hop asserted, so the **earliest** of
 * `x-deadline-epoch-ms` (absolute), `grpc-timeout`, `x-envoy-expected-rq-timeout-ms` and Connect's
 * `connect-timeout-ms` (relative) wins; on a tie, that order. None valid → `defaultMs` (SPEC D3). The result is then capped at
 * `now + maxMs` (SPEC D2) and never earlier than now: it always lies in [now, now + maxMs].
 */
export function createDeadlineReader(
  options: IncomingDeadlineOptions = {},
  context = 'createDeadlineReader',
): (headers: HeadersLike) => IncomingDeadline {
  refuseBareClock(context, options);
  return deadlineReader(incomingDefaults(readOptions(context, INCOMING_DEADLINE_OPTIONS, options), options));
}

/** The reader of {@link createDeadlineReader}, from options already read (server integrations). */
export function deadlineReader(resolved: ResolvedIncoming): (headers: HeadersLike) => IncomingDeadline {
  const { defaultMs, maxMs, clockSkewMs, clock } = resolved;
  return (headers) => {
    let rel = Number.POSITIVE_INFINITY;
    let source: DeadlineSource = 'default';
    if (headers !== null && typeof headers === 'object') {
      headers = caseless(headers);
      const epoch = read(headers, DeadlineHeaders.epochMs, parseEpochMs);
      if (epoch !== undefined) {
        rel = epoch - clockSkewMs - clock.epochNow();
        source = DeadlineHeaders.epochMs;
      }
      const grpc = read(headers, DeadlineHeaders.grpcTimeout, parseGrpcTimeout);
      if (grpc !== undefined && grpc < rel) {
        rel = grpc;
        source = DeadlineHeaders.grpcTimeout;
      }
      const envoy = read(headers, DeadlineHeaders.envoyExpected, parseEnvoyTimeoutMs);
      if (envoy !== undefined && envoy < rel) {
        rel = envoy;
        source = DeadlineHeaders.envoyExpected;
      }
      const connect = read(headers, DeadlineHeaders.connectTimeout, parseConnectTimeout);
      if (connect !== undefined && connect < rel) {
        rel = connect;
        source = DeadlineHeaders.connectTimeout;
      }
    }
    if (source === 'default') rel = defaultMs;
    const capped = rel > maxMs;
    if (capped) rel = maxMs;
    const expired = !(rel > 0);
    return { deadline: Deadline.after(expired ? 0 : rel, { clock }), source, capped, expired };
  };
}

/** Reads the deadline a request brings; see {@link createDeadlineReader} for the rules. */
export function readIncomingDeadline(
  headers: HeadersLike,
  options: IncomingDeadlineOptions = {},
): IncomingDeadline {
  return createDeadlineReader(options, 'readIncomingDeadline')(headers);
}

/** The deadline a request brings, capped by the local maximum; see {@link createDeadlineReader}. */
export function deadlineFromHeaders(headers: HeadersLike, options: IncomingDeadlineOptions = {}): Deadline {
  return createDeadlineReader(options, 'deadlineFromHeaders')(headers).deadline;
}
