import { MAX_TIMER_DELAY_MS } from '../clock/clock.js';
import { DeadlineExceededError } from '../errors/deadline.js';
import { InvalidOptionsError } from '../errors/options.js';
import { defineOptions, type OptionsOf, option } from '../options/declare.js';
import { readOptions } from '../options/validator.js';
import { subscribeAbort, unsubscribeAbort } from '../signal/shared-abort.js';
import { type Deadline, HEADER_FORMAT_OPTIONS, isDeadline } from './deadline.js';
import { refusalOf } from './fits.js';
import { armDeadlineTimer, type DeadlineTimer } from './timer.js';

const isClock = option.hasMethods('now', 'epochNow', 'setTimer', 'clearTimer');

/** What the guarded call receives. */
export interface DeadlineCallContext {
  /** Aborts at the deadline (reason: DeadlineExceededError) or when the caller's signal aborts. */
  readonly signal: AbortSignal;
  /** Time left when the call started, in ms: bound every local timeout by it (SPEC D5). */
  readonly timeoutMs: number;
  /** Headers that carry the deadline to the next hop. */
  readonly headers: Record<string, string>;
}

/** Options of {@link callWithDeadline}, declared once (checked per call: they are given per call). */
export const CALL_WITH_DEADLINE_OPTIONS = defineOptions({
  /** The dependency's name, for errors and metrics. Required; 1–200 characters. */
  name: option.string({ required: true }),
  /** The dependency's p99 in ms: with less time than this left, the call is not made (SPEC D4). Required; [0, 2^31-1]. */
  p99Ms: option.number({ required: true, unit: 'ms', min: 0, max: MAX_TIMER_DELAY_MS }),
  /** The guarded call. Required. */
  execute: option.required(option.fn<(context: DeadlineCallContext) => Promise<unknown>>()),
  /** The caller's own cancellation; its abort rejects with its own reason, not a deadline error. */
  signal: option.signal(),
  /** Which deadline headers to send on. Default `x-deadline-epoch-ms` only. */
  headerFormat: option.nested(HEADER_FORMAT_OPTIONS),
});

export interface CallWithDeadlineOptions<T>
  extends Omit<OptionsOf<typeof CALL_WITH_DEADLINE_OPTIONS>, 'execute'> {
  readonly execute: (context: DeadlineCallContext) => Promise<T>;
}

/**
 * Runs one call inside a deadline (the seed's `chamarComPrazo`, SPEC D4, D5):
 * - fails with a DeadlineInsufficientError before calling `execute` when less than `p99Ms` is left
 *   (D4's one rule, `fits.ts`: at least the p99, and at least 1 ms);
 * - otherwise gives `execute` an AbortSignal, the time left and the outgoing headers;
 * - settles with {@link DeadlineExceededError} as soon as the deadline passes, even when `execute`
 *   ignores its signal (its late result or error is then dropped);
 * - a value `execute` returns instead of a promise is its result, as from an `async` function.
 */
export function callWithDeadline<T>(deadline: Deadline, options: CallWithDeadlineOptions<T>): Promise<T> {
  try {
    readOptions('callWithDeadline', CALL_WITH_DEADLINE_OPTIONS, options);
    if (!isDeadline(deadline)) {
      throw new InvalidOptionsError('callWithDeadline', [
        `\`deadline\` must be a Deadline, got ${typeof deadline}`,
      ]);
    }
    // The call's timer runs on the deadline's own clock: a look-alike without one is refused here,
    // not thrown at once out of a promise-returning call.
    if (!isClock((deadline as { clock?: unknown }).clock)) {
      throw new InvalidOptionsError('callWithDeadline', ['`deadline` must carry its `clock` (a Clock)']);
    }
  } catch (error) {
    return Promise.reject(error);
  }
  const { name, p99Ms, execute, signal: callerSignal } = options;
  const clock = deadline.clock;
  const remaining = deadline.remainingMs();
  const refused = refusalOf({ name, p99Ms }, remaining);
  if (refused !== undefined) return Promise.reject(refused);
  if (callerSignal?.aborted) return Promise.reject(callerSignal.reason);

  const started = clock.now();
  const controller = new AbortController();
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    let timer: DeadlineTimer | undefined;
    const finish = (): boolean => {
      if (settled) return false;
      settled = true;
      timer?.clear();
      if (callerSignal !== undefined) unsubscribeAbort(callerSignal, onCallerAbort);
      return true;
    };
    const onCallerAbort = (): void => {
      if (!finish()) return;
      controller.abort(callerSignal?.reason);
      reject(callerSignal?.reason);
    };
    const expire = (): void => {
      if (!finish()) return;
      const error = new DeadlineExceededError({
        dependency: name,
        elapsedMs: clock.now() - started,
        deadlineEpochMs: deadline.epochMs(),
      });
      controller.abort(error);
      reject(error);
    };
    // Beyond a timer's range (24.8 days) it is re-armed, and an endless deadline arms nothing (timer.ts).
    timer = armDeadlineTimer(clock, () => deadline.remainingMs(), expire);
    if (callerSignal !== undefined) subscribeAbort(callerSignal, onCallerAbort);

    const succeed = (value: T): void => {
      if (finish()) resolve(value);
    };
    const fail = (error: unknown): void => {
      if (finish()) reject(error);
    };
    // Whatever `execute` does — throws, returns a value or a thenable instead of a promise, returns a
    // promise whose `then` throws — the call settles through `finish`, so its timer and its caller's
    // listener go with it (a throw out of this executor would leave both armed until the deadline).
    try {
      const pending = execute({
        signal: controller.signal,
        timeoutMs: remaining,
        headers: deadline.toHeaders(options.headerFormat),
      });
      Promise.resolve(pending).then(succeed, fail);
    } catch (error) {
      fail(error);
    }
  });
}
