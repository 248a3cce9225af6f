import type { LookupFunction } from 'node:net';
import type { Dispatcher } from 'undici';
import type { InstancesOptions } from '../balance/options.js';
import type { Clock } from '../clock/clock.js';
import type { HeaderFormat } from '../deadline/deadline.js';
import type { Dependency } from '../dependency/dependency.js';
import type { DependencyOptions } from '../dependency/options.js';
import type { ExecutorKey, Live, LiveCalibrationOptions } from './executor.js';
import type { InstanceSettings } from './instances.js';

/**
 * What every client takes, whoever owns its executor. The executor's own options (`attempts`,
 * `hedge`, ...) are typed from the executor's declaration (`DEPENDENCY_OPTIONS`): declared once.
 */
export interface HttpClientBaseOptions extends Pick<DependencyOptions, Exclude<ExecutorKey, 'p99Ms'>> {
  /** The dependency's name, in errors, events and metrics. Required, 1-100 characters. */
  readonly name: string;
  /**
   * `http://host:port` or `https://host:port` (no path, query or fragment). Required, unless
   * `origins` lists the instances; with `discovery`, the name whose addresses are the instances.
   */
  readonly origin?: string | URL;
  /**
   * The dependency's instances, each an origin (`['http://10.0.0.1:8080', 'http://10.0.0.2:8080']`):
   * each attempt picks one by power of two choices over peak-EWMA latency × in-flight, a retry goes
   * to another one than the one that failed, a hedge to another one than the one it hedges, and
   * each has a connection pool of its own (SPEC X5). 1 to 1024 distinct origins. Exclusive with
   * `origin`. Declared in `INSTANCES_OPTIONS` (prazo/options).
   */
  readonly origins?: InstancesOptions['origins'];
  /**
   * Find the instances by DNS (a Kubernetes headless Service): every A/AAAA record of `origin`'s host
   * name is an instance, looked up again every `intervalMs` (default 5000) with `lookup` (default:
   * this client's `lookup`, else `dns.lookup`). `true` or options.
   */
  readonly discovery?: InstancesOptions['discovery'];
  /** The latency estimate picks compare: `decayMs` (default 10000), `initialEstimateMs` (default 30). */
  readonly balance?: InstancesOptions['balance'];
  /**
   * When an instance leaves the rotation (Envoy's defaults: 5 consecutive failures, 30 s growing to
   * 300 s, at most 10% ejected but at least one of two or more; plus latency ejection, a p99 3× its
   * peers'). Options, `true`, or `false` for never. Default on.
   */
  readonly ejection?: InstancesOptions['ejection'];
  /**
   * Live calibration (SPEC X2, C4): plan with the dependency's healthy measured p99 instead of
   * `p99Ms` (which becomes the starting point), within `[minP99Ms, maxP99Ms]` (default `[p99Ms / 2,
   * p99Ms × 2]`), never learning from a window the healthy-window guard refuses. `true` or options.
   * Needs recorder options (not a recorder instance). Default off.
   */
  readonly live?: boolean | LiveCalibrationOptions;
  /**
   * Connect phase, all of the origin's addresses included, in ms (SPEC C2). Default `min(400, attempt
   * timeout / 2)`; must stay below the attempt timeout, so that a dead instance is reported as
   * CONNECT_TIMEOUT and retried at once (SPEC R4). Range (0, 60000].
   */
  readonly connectTimeoutMs?: number;
  /**
   * From the request written to the response head, in ms. Default and ceiling: the attempt timeout
   * `ceil(p99Ms × slack)`, which the executor enforces from the attempt's start; a smaller value
   * tightens the head phase alone. Always bounded by the remaining deadline.
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

/**
 * A client that builds its own executor: `p99Ms` is required. (A `dependency` given beside it is
 * refused when the options are read, with the keys to move onto that executor.)
 */
export interface OwnExecutorOptions {
  /**
   * The dependency's healthy p99 in ms, measured from a histogram (SPEC C1). With less time than this
   * left the call fails with DEADLINE_INSUFFICIENT without touching a socket (SPEC D4, R6); the
   * attempt (response) timeout is `ceil(p99Ms × slack)`. Required unless `dependency` is given.
   * Range (0, 86400000].
   */
  readonly p99Ms: number;
  readonly dependency?: Dependency;
}

/**
 * A client that runs through an executor made elsewhere: the executor's options are that executor's,
 * so none of them (`p99Ms`, `attempts`, `hedge`, ...) is given here.
 */
export type SharedExecutorOptions = {
  /**
   * An executor made with `createDependency` to run the calls through (its p99, attempts, budget,
   * hedging and recorder), e.g. shared with another client of the same service. Exclusive with the
   * executor's own options (`p99Ms`, `attempts`, `slack`, `retryBudget`, `hedge`, `recorder`,
   * `backoff`, `retryResponseTimeout`, `pushback`, `random`).
   */
  readonly dependency: Dependency;
} & { readonly [K in ExecutorKey]?: undefined };

/**
 * Options of {@link createHttpClient}. Validated once, at construction; every problem is listed in one
 * `InvalidOptionsError`. Defaults and bounds live in `constants.ts` (`HTTP_DEFAULTS`, `HTTP_LIMITS`).
 * Either `p99Ms` (the client builds its executor) or a `dependency` (an executor made with
 * `createDependency`), said at compile time as well as at run time.
 */
export type HttpClientOptions = HttpClientBaseOptions & (OwnExecutorOptions | SharedExecutorOptions);

/** A route's options (an origin's dependency), validated, defaults applied: the client's and the interceptor's. */
export interface ResolvedRoute {
  readonly name: string;
  /** The executor calls start with (live calibration recalibrates it). */
  readonly dependency: Dependency;
  /** Live calibration, when on. */
  readonly live: Live | undefined;
  /** The timeouts given explicitly (the others follow the executor's calibration). */
  readonly explicit: {
    readonly connectMs: number | undefined;
    readonly responseMs: number | undefined;
    readonly bodyMs: number | undefined;
  };
  readonly responseTimeoutMs: number;
  readonly bodyTimeoutMs: number;
  readonly defaultDeadlineMs: number;
  readonly deadlineHeaders: HeaderFormat;
  readonly generateIdempotencyKey: boolean;
  /** Several instances (origins or discovery), or undefined for one origin. */
  readonly instances: InstanceSettings | undefined;
  readonly clock: Clock;
}

/** The options after validation, with defaults applied. */
export interface ResolvedHttpClientOptions extends ResolvedRoute {
  /** Normalised origin, e.g. `http://127.0.0.1:8080`. */
  readonly origin: string;
  readonly connectTimeoutMs: number;
  readonly connections: number | undefined;
  readonly autoSelectFamily: boolean;
  readonly lookup: LookupFunction | undefined;
  readonly dispatcher: Dispatcher | undefined;
}

/**
 * One origin's dependency for {@link interceptor}: the executor's options (or a `dependency`), and how
 * its calls are timed and carry their deadline. The connect phase, the pool and the resolver are the
 * dispatcher's (your `Agent`'s); a request that waits its whole attempt for a connection fails with
 * QUEUE_TIMEOUT (never written, retried at once).
 */
export type HttpDependencyOptions = Omit<
  HttpClientBaseOptions,
  'origin' | 'connectTimeoutMs' | 'connections' | 'autoSelectFamily' | 'lookup' | 'dispatcher' | 'clock'
> &
  (OwnExecutorOptions | SharedExecutorOptions);

/** Options of {@link interceptor}. Validated once; every problem listed in one `InvalidOptionsError`. */
export interface InterceptorOptions {
  /**
   * The dependencies it manages, by origin (`http(s)://host:port`, no path): their options, as
   * `{ 'http://inventory:8080': { name: 'inventory', p99Ms: 85, attempts: 2, hedge: true } }`. Or a
   * function of the origin, for origins known only at run time: called once per origin (the answer
   * is kept), `undefined` for an origin to pass through. Default: none (every origin passes through).
   */
  readonly dependencies?:
    | Readonly<Record<string, HttpDependencyOptions>>
    | ((origin: string) => HttpDependencyOptions | undefined);
  /**
   * Which headers carry the deadline on calls to origins it does not manage. Default
   * `{ epochMs: 'x-deadline-epoch-ms' }`. A managed origin's are its own (`deadlineHeaders`).
   */
  readonly deadlineHeaders?: HeaderFormat;
  /** Where time comes from. Default: the system clock. */
  readonly clock?: Clock;
}
