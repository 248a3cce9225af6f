import {
  isRetryBudget,
  type RetryBudget,
  type RetryBudgetOptions,
  reconfigureRetryBudget,
} from '../budget/budget.js';
import type { TimeoutCalibration } from '../calibrate/timeout.js';
import type { Clock } from '../clock/clock.js';
import { InvalidOptionsError } from '../errors/options.js';
import type { LatencySource } from '../latency/types.js';
import { isOptionsObject, type OptionsOf } from '../options/declare.js';
import { checkCallOptions, OptionsValidator } from '../options/validator.js';
import { generateIdempotencyKey, isValidIdempotencyKey } from '../retry/idempotency.js';
import { type DependencyCore, UNMANAGED } from './core.js';
import type { DependencyListener } from './events.js';
import { Execution, OperationTransport } from './execution.js';
import {
  DEPENDENCY_UPDATE_OPTIONS,
  type DependencyOptions,
  type DependencyUpdate,
  EXECUTE_OPTIONS,
  type ExecuteOptions,
  invalidCallOption,
  resolveDeadline,
  resolveDependency,
} from './options.js';
import {
  type Call,
  type CallTerms,
  type Carrier,
  EXECUTOR,
  type Executor,
  type ExecutorPlan,
  type PlanFollower,
  type PreparedUpdate,
  type Transport,
} from './transport.js';
import type { ConfigVersion, Disposable, Operation } from './types.js';

/**
 * One executor for any dependency (HTTP, gRPC, a database): it holds the dependency's calibrated
 * timeouts (SPEC C1–C3), its retry budget (R1), its latency recorder and hedge policy (H1), and runs
 * any async operation under the plan — deadline first, then attempts, retries paid from the budget,
 * and at most one hedge. What the operation throws is judged by `isRetryable`; what it returns, by
 * the call's `classify`.
 */
export interface Dependency {
  readonly name: string;
  /** The healthy p99 planned with, in ms: an attempt with less time left is not started. */
  readonly p99Ms: number;
  /**
   * True while `p99Ms` is a starting value, not a measurement (SPEC C8, `p99Assumed`): until a
   * measured p99 replaces it (`recalibrate`, `update({ p99Ms })`), with a `p99-measured` event.
   */
  readonly p99Assumed: boolean;
  /** Calibrated timeouts (`calibrateTimeout` against `defaultDeadlineMs`), with any warning. */
  readonly timeouts: TimeoutCalibration;
  readonly budget: RetryBudget;
  readonly recorder: LatencySource;
  /**
   * Where the concurrency limit stands (SPEC X7), or undefined without one: the limit in force (the
   * adaptive one's current value), attempts in flight, calls waiting for a slot and the queue's bound.
   */
  concurrency():
    | {
        readonly limit: number;
        readonly inFlight: number;
        readonly queued: number;
        readonly maxQueue: number;
        readonly adaptive: boolean;
      }
    | undefined;
  /**
   * Where the adaptive throttle stands (docs/throttling.md), or undefined when it is switched off: the
   * attempts counted in its window (refused calls included), those accepted, and the probability a
   * new call is refused with now.
   */
  throttling():
    | { readonly requests: number; readonly accepts: number; readonly probability: number }
    | undefined;
  /**
   * Runs `operation` under the plan. `options.idempotent` (or an `idempotencyKey`) allows retries and
   * hedges; without it the operation runs exactly once (SPEC R5). Rejects with the operation's error,
   * `DeadlineInsufficientError`, `DeadlineExceededError`, `ResponseTimeoutError`,
   * `RetryBudgetExhaustedError`, `ConcurrencyLimitError`, or the caller signal's reason.
   */
  execute<T>(operation: Operation<T>, options?: ExecuteOptions<T>): Promise<T>;
  /** Subscribes to every decision (attempt, retry, hedge, budget refused, deadline insufficient). */
  on(listener: DependencyListener): Disposable;
  /**
   * Takes new settings in place (SPEC X9): the same dependency — its name, budget, recorder, listeners
   * and identity — planning from now on with the options it was made with, changed by `changes` (any
   * of p99Ms, attempts, slack, forceSlack, connectCapMs, overheadMs, defaultDeadlineMs, retryBudget,
   * hedge, backoff, retryResponseTimeout; a key given as `undefined` returns to its default). The
   * timeouts are recalibrated, the hedge rebuilt, the retry budget reconfigured in place (its counts
   * kept); a client built on the dependency (prazo/http) re-derives its phase timeouts. Calls in flight
   * keep the plan they started with: an update never lengthens an attempt, adds one or moves a
   * deadline of a call already running. Throws one `InvalidOptionsError` listing every problem (a key
   * that cannot change while running is named as such) and then changes nothing.
   */
  update(changes: OptionsOf<typeof DEPENDENCY_UPDATE_OPTIONS>): void;
  /**
   * Plans with a new healthy p99 from now on (live calibration, SPEC X2): `update({ p99Ms })`.
   * Throws `InvalidOptionsError` for a p99 the options do not allow (the plan is then unchanged).
   */
  recalibrate(p99Ms: number): void;
  /** The config version its settings come from, once a config watcher applied one (prazo/config). */
  readonly configVersion: ConfigVersion | undefined;
}

const NOT_IDEMPOTENT = Object.freeze({ idempotent: false });

/**
 * Creates a dependency executor. Options are validated once, here, every problem reported together
 * in one `InvalidOptionsError`.
 *
 * @example
 * const inventory = createDependency({ name: 'inventory', p99Ms: 180, attempts: 2, hedge: true });
 * const stock = await inventory.execute(
 *   ({ signal, headers }) => fetchStock(sku, { signal, headers }),
 *   { idempotent: true },
 * );
 */
export function createDependency(options: DependencyOptions): Dependency {
  let { core, timeouts } = resolveDependency(options);
  /** The options in force: what the next update changes. */
  let given: DependencyOptions = options;
  let version: ConfigVersion | undefined;
  const ownBudget = !isRetryBudget(options.retryBudget);
  const { clock } = core;
  /** Names `execute`'s per-call problems (the name never changes: an update keeps it). */
  const executeContext = `${core.name}.execute`;
  /** Whoever plans with this executor besides itself (prazo/http's clients), held weakly. */
  const followers = new Set<WeakRef<PlanFollower>>();
  const liveFollowers = (): PlanFollower[] => {
    const out: PlanFollower[] = [];
    for (const ref of followers) {
      const follower = ref.deref();
      if (follower === undefined) followers.delete(ref);
      else out.push(follower);
    }
    return out;
  };

  /** Validates an update against the options in force and the dependency's followers; changes nothing. */
  const prepare = (changes: unknown, label?: ConfigVersion): PreparedUpdate => {
    const context = `${core.name}.update`;
    const update = readUpdate(context, changes, ownBudget);
    const merged = { ...given, ...update } as DependencyOptions;
    // SPEC C8: an update that says whether its p99 is assumed (prazo/config's watcher gives every
    // live key) is taken at its word; otherwise a p99 given to it (`recalibrate`, live calibration)
    // is a measured one, and ends the assumption.
    const nextAssumed = Object.hasOwn(update, 'p99Assumed')
      ? update.p99Assumed === true
      : update.p99Ms === undefined && given.p99Assumed === true;
    const measured = given.p99Assumed === true && !nextAssumed;
    (merged as { p99Assumed?: boolean }).p99Assumed = nextAssumed;
    if (!ownBudget) (merged as { retryBudget?: unknown }).retryBudget = given.retryBudget;
    // The budget options are validated by building a throwaway budget; the dependency's own is then
    // reconfigured in place, so its counts survive.
    // The same concurrency limiter (SPEC X7): one limit, whichever plan.
    const next = resolveDependency({ ...merged, recorder: core.recorder }, core.events, context, {
      limiter: core.limiter,
      throttle: core.throttle,
    });
    const nextCore: DependencyCore = { ...next.core, budget: core.budget };
    const problems = liveFollowers().flatMap((f) => f.check(nextCore));
    if (problems.length > 0) throw new InvalidOptionsError(context, problems);
    const keys = Object.freeze(Object.keys(update));
    return {
      commit(): void {
        const previous = core;
        if (ownBudget) reconfigureRetryBudget(core.budget, merged.retryBudget as RetryBudgetOptions);
        core = nextCore;
        timeouts = next.timeouts;
        given = merged;
        if (label !== undefined) version = label;
        const assumedP99Ms = measured ? previous.p99Ms : undefined;
        for (const follower of liveFollowers()) follower.follow(core);
        if (core.events.active) {
          core.events.emit({ type: 'update', dependency: core.name, keys, version: label });
          if (assumedP99Ms !== undefined)
            core.events.emit({
              type: 'p99-measured',
              dependency: core.name,
              assumedP99Ms,
              p99Ms: core.p99Ms,
            });
        }
      },
    };
  };

  const executor: Executor = {
    get plan() {
      return core;
    },
    follow(follower: PlanFollower): void {
      followers.add(new WeakRef(follower));
    },
    prepare,
  };

  const dependency: Dependency = {
    name: core.name,
    get p99Ms() {
      return core.p99Ms;
    },
    get p99Assumed() {
      return given.p99Assumed === true;
    },
    get timeouts() {
      return timeouts;
    },
    get configVersion() {
      return version;
    },
    budget: core.budget,
    recorder: core.recorder,
    concurrency: () => core.limiter?.state(),
    throttling: () => core.throttle?.state(clock.now()),
    execute<T>(operation: Operation<T>, callOptions: ExecuteOptions<T> = NOT_IDEMPOTENT): Promise<T> {
      if (typeof operation !== 'function') {
        return Promise.reject(
          new InvalidOptionsError(`${core.name}.execute`, ['`operation` must be a function']),
        );
      }
      const plan = core; // the call keeps the plan it starts with, whatever updates follow
      const now = clock.now(); // the call's one reading at its start
      // Whatever the caller's options throw (a bad value, a getter) rejects the call, never escapes.
      try {
        if (callOptions !== NOT_IDEMPOTENT) checkCallOptions(executeContext, EXECUTE_OPTIONS, callOptions);
        const idempotencyKey = callOptions.idempotencyKey;
        let key: string | undefined;
        if (idempotencyKey !== undefined) {
          key = idempotencyKey === true ? generateIdempotencyKey() : idempotencyKey;
          if (!isValidIdempotencyKey(key)) invalidCallOption(plan.name, 'idempotencyKey', idempotencyKey);
        }
        const deadline = resolveDeadline(callOptions.deadline, plan.name, plan.defaultDeadlineMs, clock, now);
        return new OperationTransport(plan, operation, callOptions, deadline, key).run(now);
      } catch (error) {
        return Promise.reject(error);
      }
    },
    on(listener: DependencyListener): Disposable {
      return core.events.add(listener);
    },
    update(changes: DependencyUpdate): void {
      prepare(changes).commit();
    },
    recalibrate(p99Ms: number): void {
      prepare({ p99Ms }).commit();
    },
  };
  // The seam integrations drive it through (transport.ts): not enumerable, this copy's symbol.
  Object.defineProperty(dependency, EXECUTOR, { value: executor });
  Object.freeze(dependency);
  return dependency;
}

/** Keys of the executor's options that exist but cannot change while it runs, and why. */
const NOT_LIVE: Readonly<Record<string, string>> = Object.freeze({
  name: 'it names the dependency in errors, events, metrics and the config',
  recorder: 'hedging and the metrics read the recorder it has',
  headerFormat: 'a client fixes the headers it writes when it is made',
  clock: 'every timer and window of the dependency runs on it',
  random: 'it is fixed when the dependency is made',
  classifyError: 'it is fixed when the dependency is made',
  throttle: 'its window counts what the calls in flight started with',
  concurrencyLimit: 'the calls in flight hold its slots and the waiting ones its queue',
  pushback: 'it is fixed when the dependency is made',
});

/** Reads an update: every problem (unknown keys, keys that cannot change, bad values) in one error. */
function readUpdate(context: string, changes: unknown, ownBudget: boolean): DependencyUpdate {
  const v = new OptionsValidator(context);
  if (!isOptionsObject(changes)) {
    v.problem('`changes` must be an object such as { p99Ms: 250 }');
    v.done();
  }
  // No prototype: an own `__proto__` key stays a key (refused as unknown), never a prototype.
  const live: Record<string, unknown> = Object.create(null);
  for (const [key, value] of Object.entries(changes as Record<string, unknown>)) {
    const why = Object.hasOwn(NOT_LIVE, key) ? NOT_LIVE[key] : undefined;
    if (why !== undefined) v.problem(`cannot change while the dependency runs (${why})`, [key]);
    else live[key] = value;
  }
  if (!ownBudget && live.retryBudget !== undefined) {
    v.problem('draws from a shared budget given in code: change that budget, not this dependency', [
      'retryBudget',
    ]);
    delete live.retryBudget;
  }
  v.read(DEPENDENCY_UPDATE_OPTIONS, live);
  v.done();
  return Object.freeze({ ...live }) as DependencyUpdate;
}

/**
 * Opens a call on `plan` (one the executor handed out: {@link Executor}'s `plan`, or
 * {@link unmanagedPlan}) carried by `transport`. Throws `InvalidOptionsError` for a deadline that is
 * neither a `Deadline` nor ms in range.
 */
export function openCall<T, C extends Carrier>(
  plan: ExecutorPlan,
  transport: Transport<T, C>,
  terms: CallTerms,
  now: number,
): Call {
  const core = plan as DependencyCore;
  const resolved =
    terms.continued ??
    resolveDeadline(
      terms.deadline,
      core.name,
      terms.defaultDeadlineMs ?? core.defaultDeadlineMs,
      core.clock,
      now,
    );
  const deadline = terms.ceiling === undefined ? resolved : resolved.min(terms.ceiling);
  return new Execution<T, C>(
    core,
    transport,
    deadline,
    terms.idempotent,
    terms.key,
    terms.retryResponseTimeout,
  );
}

/**
 * The plan of an origin nobody configured (an interceptor passing a call through): one attempt,
 * bounded by the deadline alone, nothing recorded, nothing retried, every answer the server's
 * ({@link UNMANAGED}, named and timed for this origin).
 */
export function unmanagedPlan(name: string, clock: Clock): ExecutorPlan {
  return Object.freeze({ ...UNMANAGED, name, clock });
}
