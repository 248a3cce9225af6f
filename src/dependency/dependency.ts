import type { RetryBudget } from '../budget/budget.js';
import type { TimeoutCalibration } from '../calibrate/timeout.js';
import { type Clock, MAX_TIMER_DELAY_MS } from '../clock/clock.js';
import { currentDeadline } from '../deadline/ambient.js';
import { Deadline, isDeadline } from '../deadline/deadline.js';
import { InvalidOptionsError } from '../errors/options.js';
import type { LatencySource } from '../latency/types.js';
import { pickOptions } from '../options/declare.js';
import { checkOptionKeys, readOptions } from '../options/validator.js';
import { generateIdempotencyKey, isValidIdempotencyKey } from '../retry/idempotency.js';
import { registerCore } from './core.js';
import type { DependencyListener } from './events.js';
import { OperationExecution } from './execution.js';
import { type DependencyOptions, EXECUTE_OPTIONS, resolveDependency } from './options.js';
import type { Disposable, ExecuteOptions, Operation } from './types.js';

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
  /** Calibrated timeouts (`calibrateTimeout` against `defaultDeadlineMs`), with any warning. */
  readonly timeouts: TimeoutCalibration;
  readonly budget: RetryBudget;
  readonly recorder: LatencySource;
  /**
   * Runs `operation` under the plan. `options.idempotent` (or an `idempotencyKey`) allows retries and
   * hedges; without it the operation runs exactly once (SPEC R5). Rejects with the operation's error,
   * `DeadlineInsufficientError`, `DeadlineExceededError`, `ResponseTimeoutError`,
   * `RetryBudgetExhaustedError`, or the caller signal's reason.
   */
  execute<T>(operation: Operation<T>, options?: ExecuteOptions<T>): Promise<T>;
  /** Subscribes to every decision (attempt, retry, hedge, budget refused, deadline insufficient). */
  on(listener: DependencyListener): Disposable;
  /**
   * Plans with a new healthy p99 from now on (live calibration, SPEC X2): the same dependency —
   * its name, budget, recorder, listeners and identity — with its timeouts (and the hedge ceiling that
   * follows them) recalibrated from `p99Ms` and the options it was made with. Calls in flight keep the
   * plan they started with. Throws `InvalidOptionsError` for a p99 the options do not allow (the plan
   * is then unchanged).
   */
  recalibrate(p99Ms: number): void;
}

const NOT_IDEMPOTENT = Object.freeze({ idempotent: false });

/** Throws the `InvalidOptionsError` of one bad per-call option, with the declaration's words. */
function invalid(name: string, key: 'deadline' | 'idempotencyKey', value: unknown): never {
  readOptions(`${name}.execute`, pickOptions(EXECUTE_OPTIONS, [key]), { [key]: value });
  throw new Error('unreachable: the option read as valid');
}

/**
 * The deadline a call runs under (SPEC D1, D5): the one given (a `Deadline`, or ms from now), else the
 * ambient one, else the default — and never later than the ambient one, so a callee cannot extend
 * the time its caller has (an explicit 28 s inside a 2 s request still gets 2 s). Throws
 * `InvalidOptionsError` for a `given` that is neither. For integrations that start calls of their own.
 */
export function callDeadline(
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
    if (!(given >= 0 && given <= MAX_TIMER_DELAY_MS)) invalid(name, 'deadline', given);
    own = Deadline.afterAt(now, given, clock);
  } else if (isDeadline(given)) own = given;
  else invalid(name, 'deadline', given);
  return own.min(ambient);
}

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
  const { clock, defaultDeadlineMs } = core;
  const dependency: Dependency = Object.freeze({
    name: core.name,
    get p99Ms() {
      return core.p99Ms;
    },
    get timeouts() {
      return timeouts;
    },
    budget: core.budget,
    recorder: core.recorder,
    execute<T>(operation: Operation<T>, callOptions: ExecuteOptions<T> = NOT_IDEMPOTENT): Promise<T> {
      if (typeof operation !== 'function') {
        return Promise.reject(
          new InvalidOptionsError(`${core.name}.execute`, ['`operation` must be a function']),
        );
      }
      let key: string | undefined;
      let deadline: Deadline;
      const now = clock.now(); // the call's one reading at its start
      try {
        if (callOptions !== NOT_IDEMPOTENT)
          checkOptionKeys(`${core.name}.execute`, EXECUTE_OPTIONS, callOptions);
        const given = callOptions.idempotencyKey;
        if (given !== undefined) {
          key = given === true ? generateIdempotencyKey() : given;
          if (!isValidIdempotencyKey(key)) invalid(core.name, 'idempotencyKey', given);
        }
        deadline = callDeadline(callOptions.deadline, core.name, defaultDeadlineMs, clock, now);
      } catch (error) {
        return Promise.reject(error);
      }
      return new OperationExecution(core, operation, callOptions, deadline, key).run(now);
    },
    on(listener: DependencyListener): Disposable {
      return core.events.add(listener);
    },
    recalibrate(p99Ms: number): void {
      const given = { ...options, p99Ms, retryBudget: core.budget, recorder: core.recorder };
      const next = resolveDependency(given, core.events);
      core = next.core;
      timeouts = next.timeouts;
      registerCore(dependency, core);
    },
  });
  registerCore(dependency, core);
  return dependency;
}
