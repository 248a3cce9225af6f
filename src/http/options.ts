import type { LookupFunction } from 'node:net';
import type { Dispatcher } from 'undici';
import type { Clock } from '../clock/clock.js';
import type { HeaderFormat } from '../deadline/deadline.js';
import type { LatencySource } from '../latency/types.js';

/**
 * Options of {@link createHttpClient}. Validated once, at construction; every problem is listed in one
 * `InvalidOptionsError`. Defaults and bounds live in `constants.ts` (`HTTP_DEFAULTS`, `HTTP_LIMITS`).
 */
export interface HttpClientOptions {
  /** The dependency's name, in errors, events and metrics. Required, non-empty. */
  readonly name: string;
  /** `http://host:port` or `https://host:port` (no path, query or fragment). Required. */
  readonly origin: string | URL;
  /**
   * The dependency's healthy p99 in ms, measured (SPEC C1). With less time than this left in the
   * deadline the call fails with DEADLINE_INSUFFICIENT without touching a socket (SPEC D4). When
   * omitted and a `recorder` is given, the recorder's live p99 is used once it has a full window
   * ("live calibration"); with neither, only an expired deadline fails fast. Range (0, 2^31-1].
   */
  readonly p99Ms?: number;
  /** Where this dependency's latencies go (by outcome) and where the live p99 comes from. */
  readonly recorder?: LatencySource;
  /** Attempts including the original (retries belong to the executor). Integer in [1, 10]. */
  readonly attempts?: number;
  /** Connect phase, all of the origin's addresses included, in ms (SPEC C2). Default 400; (0, 60000]. */
  readonly connectTimeoutMs?: number;
  /**
   * From the request written to the response head, in ms. Default `ceil(p99Ms × 1.4)` (SPEC C1) when
   * `p99Ms` is given, else 1000. Range (0, 2^31-1]. Always bounded by the remaining deadline.
   */
  readonly responseTimeoutMs?: number;
  /**
   * Longest silence between two body chunks while the consumer is reading, in ms. Default: the
   * response timeout. Range (0, 2^31-1]. Always bounded by the remaining deadline.
   */
  readonly bodyTimeoutMs?: number;
  /** Deadline of a call that brings none and runs outside any ambient deadline, in ms. Default 2000. */
  readonly defaultDeadlineMs?: number;
  /**
   * Which headers carry the deadline downstream (SPEC D1, D5). Default `{ epochMs:
   * 'x-deadline-epoch-ms' }`; add `grpcTimeout: true` and/or `envoy: true` for relative forms.
   */
  readonly deadlineHeaders?: HeaderFormat;
  /** Header name of the idempotency key (SPEC R5). Default `idempotency-key`. */
  readonly idempotencyKeyHeader?: string;
  /**
   * Give every non-idempotent request (POST, PATCH, ...) that has no key a generated one, making it
   * retryable and hedgeable end to end (SPEC R5, H2). Default false: such a request is sent once.
   */
  readonly generateIdempotencyKey?: boolean;
  /** Pool size (connections to the origin). Default unlimited (undici's default). Integer >= 1. */
  readonly connections?: number;
  /** Try the origin's other addresses when one does not connect (happy eyeballs). Default true. */
  readonly autoSelectFamily?: boolean;
  /** A `dns.lookup`-compatible resolver for the origin's host. Default: the system resolver. */
  readonly lookup?: LookupFunction;
  /**
   * Your own undici dispatcher (an Agent, a Pool, a composed one). The client then neither creates
   * nor closes a pool, and the connect timeout is whatever that dispatcher uses.
   */
  readonly dispatcher?: Dispatcher;
  /** Where time comes from. Default: the system clock. */
  readonly clock?: Clock;
}

/** The options after validation, with defaults applied. */
export interface ResolvedHttpClientOptions {
  readonly name: string;
  /** Normalised origin, e.g. `http://127.0.0.1:8080`. */
  readonly origin: string;
  readonly p99Ms: number | undefined;
  readonly recorder: LatencySource | undefined;
  readonly attempts: number | undefined;
  readonly connectTimeoutMs: number;
  readonly responseTimeoutMs: number;
  readonly bodyTimeoutMs: number;
  readonly defaultDeadlineMs: number;
  readonly deadlineHeaders: HeaderFormat;
  readonly idempotencyKeyHeader: string;
  readonly generateIdempotencyKey: boolean;
  readonly connections: number | undefined;
  readonly autoSelectFamily: boolean;
  readonly lookup: LookupFunction | undefined;
  readonly dispatcher: Dispatcher | undefined;
  readonly clock: Clock;
}
