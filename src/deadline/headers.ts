import type { Clock } from '../clock/clock.js';
import { systemClock } from '../clock/system.js';
import { OptionsValidator } from '../options/validator.js';
import { DEADLINE_DEFAULTS, DEADLINE_LIMITS, DeadlineHeaders } from './constants.js';
import { Deadline } from './deadline.js';
import { parseEpochMs, parseGrpcTimeout, parseRelativeMs } from './parse.js';

/** Header containers prazo reads: fetch `Headers` (or anything with `get`), or Node's header object. */
export type HeadersLike =
  | { get(name: string): string | null | undefined }
  | Readonly<Record<string, string | readonly string[] | number | undefined>>;

export interface IncomingDeadlineOptions {
  /** Deadline for a request that brings none (or only malformed ones), in ms. Default 2000; (0, maxMs]. */
  readonly defaultMs?: number;
  /** The most a caller can make this service wait, in ms (SPEC D2). Default 10000; (0, 2^31-1]. */
  readonly maxMs?: number;
  /**
   * Known skew of the senders' wall clocks, in ms: positive when they run ahead of ours (their
   * absolute deadlines are then read that much earlier). Default 0; [-3600000, 3600000].
   */
  readonly clockSkewMs?: number;
  readonly clock?: Clock;
}

/** Which header decided the deadline. */
export type DeadlineSource =
  | 'x-deadline-epoch-ms'
  | 'grpc-timeout'
  | 'x-envoy-expected-rq-timeout-ms'
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

/** Reads one header; with several values (a list, or repeats) the earliest valid one wins. */
function read(headers: HeadersLike, name: string, parse: Parser): number | undefined {
  const raw =
    typeof (headers as { get?: unknown }).get === 'function'
      ? (headers as { get(n: string): unknown }).get(name)
      : (headers as Record<string, unknown>)[name];
  if (typeof raw === 'string') return parse(raw);
  if (typeof raw === 'number') return Number.isFinite(raw) ? parse(String(raw)) : undefined;
  if (!Array.isArray(raw)) return undefined;
  let best: number | undefined;
  for (const item of raw.slice(0, 8)) {
    const v = typeof item === 'string' ? parse(item) : undefined;
    if (v !== undefined && (best === undefined || v < best)) best = v;
  }
  return best;
}

/** Validated, frozen options; see {@link createDeadlineReader}. */
function resolve(options: IncomingDeadlineOptions): Required<IncomingDeadlineOptions> {
  const v = new OptionsValidator('deadlineFromHeaders');
  const maxMs = v.number('maxMs', options.maxMs, {
    default: DEADLINE_DEFAULTS.maxMs,
    min: 0,
    exclusiveMin: true,
    max: DEADLINE_LIMITS.maxMs,
  });
  const defaultMs = v.number('defaultMs', options.defaultMs, {
    default: Math.min(DEADLINE_DEFAULTS.defaultMs, maxMs),
    min: 0,
    exclusiveMin: true,
    max: DEADLINE_LIMITS.maxMs,
  });
  if (defaultMs > maxMs) v.problem(`\`defaultMs\` (${defaultMs}) must not exceed \`maxMs\` (${maxMs})`);
  const clockSkewMs = v.number('clockSkewMs', options.clockSkewMs, {
    default: DEADLINE_DEFAULTS.clockSkewMs,
    min: -DEADLINE_LIMITS.maxSkewMs,
    max: DEADLINE_LIMITS.maxSkewMs,
  });
  v.done();
  return { defaultMs, maxMs, clockSkewMs, clock: options.clock ?? systemClock };
}

/**
 * Builds a reader of incoming deadlines with options validated once (use it on a server's hot path).
 *
 * Precedence: every header present and valid is a limit some hop asserted, so the **earliest** of
 * `x-deadline-epoch-ms` (absolute), `grpc-timeout` and `x-envoy-expected-rq-timeout-ms` (relative)
 * wins; on a tie, that order. None valid → `defaultMs` (SPEC D3). The result is then capped at
 * `now + maxMs` (SPEC D2) and never earlier than now: it always lies in [now, now + maxMs].
 */
export function createDeadlineReader(
  options: IncomingDeadlineOptions = {},
): (headers: HeadersLike) => IncomingDeadline {
  const { defaultMs, maxMs, clockSkewMs, clock } = resolve(options);
  return (headers) => {
    let rel = Number.POSITIVE_INFINITY;
    let source: DeadlineSource = 'default';
    if (headers !== null && typeof headers === 'object') {
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
      const envoy = read(headers, DeadlineHeaders.envoyExpected, parseRelativeMs);
      if (envoy !== undefined && envoy < rel) {
        rel = envoy;
        source = DeadlineHeaders.envoyExpected;
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
  return createDeadlineReader(options)(headers);
}

/** The deadline a request brings, capped by the local maximum; see {@link createDeadlineReader}. */
export function deadlineFromHeaders(headers: HeadersLike, options: IncomingDeadlineOptions = {}): Deadline {
  return createDeadlineReader(options)(headers).deadline;
}
