import { createRetryBudget, isRetryBudget, type RetryBudget } from '../budget/budget.js';
import { RETRY_BUDGET_OPTIONS } from '../budget/options.js';
import { CALIBRATE_TIMEOUT_OPTIONS } from '../calibrate/options.js';
import { calibrateTimeout, type TimeoutCalibration } from '../calibrate/timeout.js';
import { type Clock, MAX_TIMER_DELAY_MS } from '../clock/clock.js';
import { systemClock } from '../clock/system.js';
import { TimerQueue, TimerQueues } from '../clock/timer-queue.js';
import { currentDeadline } from '../deadline/ambient.js';
import { Deadline, HEADER_FORMAT_OPTIONS, isDeadline } from '../deadline/deadline.js';
import { HEDGE_OPTIONS, hedgePlanOf } from '../hedge/options.js';
import { createHedgePolicy } from '../hedge/policy.js';
import { RECORDER_OPTIONS } from '../latency/options.js';
import { createLatencyRecorder } from '../latency/recorder.js';
import type { LatencySource } from '../latency/types.js';
import { ConcurrencyLimiter } from '../limit/limiter.js';
import { CONCURRENCY_LIMIT_OPTIONS } from '../limit/options.js';
import { defineOptions, type OptionsOf, option, pickOptions } from '../options/declare.js';
import { readOptions } from '../options/validator.js';
import { BACKOFF_OPTIONS, type RandomSource } from '../retry/backoff.js';
import { classifyFailure } from '../retry/classify.js';
import { isValidIdempotencyKey } from '../retry/idempotency.js';
import { THROTTLE_OPTIONS } from '../throttle/options.js';
import { type AdaptiveThrottle, throttleFrom } from '../throttle/throttle.js';
import type { DependencyCore, ErrorClassifier } from './core.js';
import { Listeners } from './events.js';
import type { ResultVerdict } from './types.js';

const isLatencySource = (value: unknown): value is LatencySource =>
  option.hasMethods('record', 'quantile')(value);

/**
 * The executor's options (`createDependency`), declared once (see `options/declare.ts`). This
 * declaration is what validates them, what `prazo.config.yaml` reads for each dependency (data mode:
 * `classifyError`, `random` and `clock` are code-only), and what clients built on the executor
 * (`prazo/http`) spread into their own options, so a bound or a default lives here and nowhere else.
 * Nested options reuse their components' declarations: `retryBudget` the budget's, `hedge` the
 * hedge policy's, `recorder` the latency recorder's, `backoff` the backoff's, `headerFormat` the
 * deadline's; the calibration options are `calibrateTimeout`'s own.
 */
export const DEPENDENCY_OPTIONS = defineOptions({
  /** The dependency's name, in errors, events and metrics. Required; 1–100 characters. */
  name: option.string({ required: true, maxLength: 100 }),
  /**
   * Its healthy p99 in ms, from a histogram (SPEC C1): with less time than this left a call fails
   * with DEADLINE_INSUFFICIENT without being attempted (SPEC D4, R6). Required; (0, 86400000].
   */
  p99Ms: option.number({ required: true, unit: 'ms', min: 0, exclusiveMin: true, max: 86_400_000 }),
  /**
   * `p99Ms` is a starting value, not a measurement (SPEC C8: the typical value of the dependency's
   * `kind`, which prazo/config sets): the dependency says so (`p99Assumed`, the metrics' mark) until
   * a measured p99 replaces it (`recalibrate`, `update({ p99Ms })`, live calibration), which emits
   * a `p99-measured` event. Default false.
   */
  p99Assumed: option.boolean({ default: false }),
  ...pickOptions(CALIBRATE_TIMEOUT_OPTIONS, ['attempts', 'slack', 'forceSlack', 'connectCapMs', 'overheadMs'])
    .specs,
  /**
   * Deadline of a call with no `deadline` and no ambient one, in ms; also the deadline the attempts are
   * fitted into at construction (SPEC C3). Default 2000; (0, 2^31-1].
   */
  defaultDeadlineMs: option.number({
    default: 2_000,
    unit: 'ms',
    min: 0,
    exclusiveMin: true,
    max: MAX_TIMER_DELAY_MS,
  }),
  /**
   * The retry budget retries and hedges draw from (SPEC R1, H3): a budget shared with other
   * dependencies (`createRetryBudget()`), or options for this one's own. Default: 10 s, 10%, 3/s.
   */
  retryBudget: option.instanceOr<RetryBudget, (typeof RETRY_BUDGET_OPTIONS)['specs']>(
    { describe: 'a RetryBudget (from createRetryBudget)', test: isRetryBudget },
    RETRY_BUDGET_OPTIONS,
  ),
  /**
   * Hedged requests (SPEC H1–H3): `true` for the defaults, options, or false/undefined for none. The
   * hedge delay's default ceiling is the attempt timeout (a later hedge could not beat it).
   */
  hedge: option.toggle(HEDGE_OPTIONS),
  /**
   * The latency source attempts are recorded into and hedges read from: a recorder (shared, or one a
   * client listens to), or options for this dependency's own. Default: the recorder's defaults.
   */
  recorder: option.instanceOr<LatencySource, (typeof RECORDER_OPTIONS)['specs']>(
    { describe: 'a latency source (with record and quantile)', test: (v) => isLatencySource(v) },
    RECORDER_OPTIONS,
  ),
  /**
   * A concurrency limit (SPEC X7): at most `maxInFlight` attempts in flight to the dependency (or an
   * adaptive limit that follows min RTT ÷ current RTT), at most `maxQueue` calls waiting for a slot;
   * past that a call fails at once with CONCURRENCY_LIMITED, never sent, never retried, never
   * recorded as the dependency's latency. Default: none.
   */
  concurrencyLimit: option.nested(CONCURRENCY_LIMIT_OPTIONS),
  /**
   * Adaptive throttling (client-side admission control, docs/throttling.md): once most recent attempts
   * fail, a new call is refused locally with probability max(0, (requests − k × accepts) /
   * (requests + 1)), at most `maxProbability`: THROTTLED at once, nothing sent, nothing recorded, no
   * budget spent, not retried. `false` switches it off. Default on (`true`): k 2, a 1 s window, at
   * most 90% refused, nothing refused under 10 requests in the window.
   */
  throttle: option.toggle(THROTTLE_OPTIONS),
  /** Full-jitter backoff ceilings between retries, in ms. Default `{ baseMs: 25, capMs: 1000 }`. */
  backoff: option.nested(BACKOFF_OPTIONS),
  /** Retry response timeouts of idempotent calls by default (SPEC R4). Default false. */
  retryResponseTimeout: option.boolean({ default: false }),
  /**
   * Honour a server's pushback (SPEC X6): a failed answer carrying `grpc-retry-pushback-ms` with a
   * negative or unparseable value (what prazo/server and prazo/grpc send when the handler's own
   * dependency failed) ends the call with that answer: no retry, no hedge. A non-negative value is the
   * wait before the retry, in ms. `false` ignores the header. Default true.
   */
  pushback: option.boolean({ default: true }),
  /** Classifies thrown errors (gRPC, database drivers...). Default `classifyFailure`. */
  classifyError: option.fn<ErrorClassifier>(),
  /** Which deadline headers each attempt carries (SPEC D1, D5). Default `x-deadline-epoch-ms` only. */
  headerFormat: option.nested(HEADER_FORMAT_OPTIONS),
  /** Uniform [0, 1) numbers for jitter. Default `Math.random`; inject one for deterministic tests. */
  random: option.fn<RandomSource>(),
  /** Where time comes from. Default: the system clock. */
  clock: option.clock(),
});

export type DependencyOptions = OptionsOf<typeof DEPENDENCY_OPTIONS>;

/**
 * Per-call options of `dependency.execute`, declared once. Given on every call, so they are checked
 * on the call without allocating: unknown keys, the deadline and the idempotency key (see
 * `dependency.ts`).
 */
export const EXECUTE_OPTIONS = defineOptions({
  /**
   * Whether the operation can safely run more than once (SPEC R5): GET, HEAD, OPTIONS, PUT, DELETE,
   * or a request carrying an idempotency key. A non-idempotent operation runs exactly once. Required
   * (`execute(operation)` without options is not idempotent).
   */
  idempotent: option.boolean({ required: true }),
  /**
   * The deadline: a `Deadline`, or a number of ms from now. Never later than the ambient one
   * (`currentDeadline()`): a callee never extends its caller. Default: the ambient deadline, else the
   * dependency's `defaultDeadlineMs`. A number must be in [0, 2^31-1].
   */
  deadline: option.value<Deadline | number>(
    'a Deadline or a number of ms in [0, 2147483647]',
    (v) => isDeadline(v) || (typeof v === 'number' && v >= 0 && v <= MAX_TIMER_DELAY_MS),
  ),
  /** The caller's own cancellation. */
  signal: option.signal(),
  /** Judges a result that did not throw (a response with a status). Default: every result is a success. */
  classify: option.fn<(result: never) => ResultVerdict>(),
  /** Releases a result that will not be returned (a losing hedge, a retried 503 to drain). */
  discard: option.fn<(result: never) => void>(),
  /** Retry a response timeout (the server may have done the work). Default: the dependency's (SPEC R4). */
  retryResponseTimeout: option.boolean(),
  /**
   * An idempotency key carried end to end in the `idempotency-key` header of every attempt (SPEC R5):
   * the request becomes retryable and hedgeable even when `idempotent` is false. `true` generates a
   * random one for this call (a POST the caller wants retried). 1–255 visible ASCII characters.
   */
  idempotencyKey: option.matching<string | true>(
    'true or 1 to 255 visible ASCII characters',
    (v) => v === true || (typeof v === 'string' && isValidIdempotencyKey(v)),
  ),
});

/**
 * Per-call options of `dependency.execute` (`EXECUTE_OPTIONS`), with the
 * result type `T` that `classify` and `discard` see.
 */
export interface ExecuteOptions<T> extends Omit<OptionsOf<typeof EXECUTE_OPTIONS>, 'classify' | 'discard'> {
  /** Judges a result that did not throw (a response with a status). Default: every result is a success. */
  readonly classify?: (result: T) => ResultVerdict;
  /**
   * Releases a result that will not be returned (a losing hedge, a retried 503 whose body must be
   * drained so its connection goes back to the pool).
   */
  readonly discard?: (result: T) => void;
}

/** Throws the `InvalidOptionsError` of one bad per-call option, with the declaration's words. */
export function invalidCallOption(name: string, key: 'deadline' | 'idempotencyKey', value: unknown): never {
  readOptions(`${name}.execute`, pickOptions(EXECUTE_OPTIONS, [key]), { [key]: value });
  throw new Error('unreachable: the option read as valid');
}

/**
 * The deadline a call runs under (SPEC D1, D5): the one given (a `Deadline`, or ms from now), else the
 * ambient one, else the default — and never later than the ambient one, so a callee cannot extend
 * the time its caller has (an explicit 28 s inside a 2 s request still gets 2 s). Throws
 * `InvalidOptionsError` for a `given` that is neither.
 * The executor's one rule, for `execute` and every transport's call alike (`openCall`).
 */
export function resolveDeadline(
  given: Deadline | number | undefined,
  name: string,
  defaultDeadlineMs: number,
  clock: Clock,
  now: number,
): Deadline {
  const ambient = currentDeadline();
  if (given === undefined) return ambient ?? Deadline.afterAt(now, defaultDeadlineMs, clock);
  let own: Deadline;
  if (typeof given === 'number') {
    if (!(given >= 0 && given <= MAX_TIMER_DELAY_MS)) invalidCallOption(name, 'deadline', given);
    own = Deadline.afterAt(now, given, clock);
  } else if (isDeadline(given)) own = given;
  else invalidCallOption(name, 'deadline', given);
  return own.min(ambient);
}

/**
 * What `dependency.update(...)` may change while calls run (SPEC X9): the plan's numbers — the p99
 * and the calibration inputs, the default deadline, the retry budget's settings, hedging, backoff,
 * retrying response timeouts. Each is read by a call once, when it starts (a call keeps the plan it
 * started with), or is a budget shared by every call and reconfigured in place. What is not here is
 * the dependency's identity or a part others hold: its `name` (metrics, the config's key), its
 * `recorder` (hedging and prazo/otel read it), its `headerFormat` (prazo/http fixes the route's
 * headers at construction), `clock`, `random` and `classifyError`.
 */
export const LIVE_KEYS = Object.freeze([
  'p99Ms',
  'p99Assumed',
  'attempts',
  'slack',
  'forceSlack',
  'connectCapMs',
  'overheadMs',
  'defaultDeadlineMs',
  'retryBudget',
  'hedge',
  'backoff',
  'retryResponseTimeout',
] as const);

const { retryBudget: _instanceOrOptions, ...liveSpecs } = pickOptions(DEPENDENCY_OPTIONS, LIVE_KEYS).specs;

/**
 * The options of `dependency.update`: the executor's own declarations of its `LIVE_KEYS`, with
 * `retryBudget` as options only (a budget instance cannot be swapped under running calls).
 */
export const DEPENDENCY_UPDATE_OPTIONS = defineOptions({
  ...liveSpecs,
  /** A new healthy p99, in ms (0, 86400000]; optional in an update (the one in force stays). */
  p99Ms: option.optional(DEPENDENCY_OPTIONS.specs.p99Ms),
  /**
   * New settings for the dependency's own retry budget, applied in place: the counts are kept (a
   * changed window keeps the extras spent and starts its originals again). `undefined` restores the
   * defaults. A dependency given a shared budget instance keeps it: change that budget's own settings.
   */
  retryBudget: option.nested(RETRY_BUDGET_OPTIONS),
});

/** What `dependency.update` takes: any of the live keys (see `DEPENDENCY_UPDATE_OPTIONS`); a key given as `undefined` returns to its default. */
export type DependencyUpdate = OptionsOf<typeof DEPENDENCY_UPDATE_OPTIONS>;

/** What an updated (or recalibrated) executor keeps of the one it replaces (SPEC X2): its concurrency limiter and its throttle's counts. */
export interface SharedParts {
  readonly limiter?: ConcurrencyLimiter | undefined;
  readonly throttle?: AdaptiveThrottle | undefined;
}

/** Validates every option (all problems reported together) and builds what the executions share. */
export function resolveDependency(
  options: DependencyOptions,
  events: Listeners = new Listeners(),
  context = 'createDependency',
  shared: SharedParts = {},
): {
  core: DependencyCore;
  timeouts: TimeoutCalibration;
} {
  const o = readOptions(context, DEPENDENCY_OPTIONS, options);
  const clock = o.clock ?? systemClock;
  const timeouts = calibrateTimeout({
    p99Ms: o.p99Ms,
    userDeadlineMs: o.defaultDeadlineMs,
    attempts: o.attempts,
    slack: o.slack,
    forceSlack: o.forceSlack,
    connectCapMs: o.connectCapMs,
    overheadMs: o.overheadMs,
  });
  const budget = isRetryBudget(o.retryBudget)
    ? o.retryBudget
    : createRetryBudget({ ...o.retryBudget, clock: o.retryBudget?.clock ?? clock });
  const recorder = isLatencySource(o.recorder)
    ? o.recorder
    : createLatencyRecorder({ ...o.recorder, clock: o.recorder?.clock ?? clock });
  const hedgePlan = hedgePlanOf(o.hedge, timeouts.responseMs);
  const core: DependencyCore = {
    name: o.name,
    p99Ms: o.p99Ms,
    maxAttempts: o.attempts,
    attemptTimeoutMs: timeouts.responseMs,
    connectTimeoutMs: timeouts.connectMs,
    defaultDeadlineMs: o.defaultDeadlineMs,
    clock,
    random: o.random ?? Math.random,
    backoff: {
      baseMs: o.backoff?.baseMs ?? BACKOFF_OPTIONS.defaults.baseMs,
      capMs: o.backoff?.capMs ?? BACKOFF_OPTIONS.defaults.capMs,
    },
    budget,
    recorder,
    hedge: hedgePlan && createHedgePolicy(recorder, hedgePlan.options),
    limiter:
      shared.limiter ??
      (o.concurrencyLimit === undefined ? undefined : new ConcurrencyLimiter(o.concurrencyLimit, clock)),
    patience: o.concurrencyLimit?.patience === true,
    throttle:
      o.throttle === false ? undefined : (shared.throttle ?? throttleFrom(o.throttle, clock, o.random)),
    retryResponseTimeout: o.retryResponseTimeout,
    pushback: o.pushback,
    classifyError: o.classifyError ?? classifyFailure,
    headerFormat: o.headerFormat,
    events,
    attemptTimers: new TimerQueue(clock, timeouts.responseMs),
    hedgeTimers: new TimerQueues(clock),
  };
  return { core, timeouts };
}
