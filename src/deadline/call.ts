import { DeadlineExceededError, DeadlineInsufficientError } from '../errors/deadline.js';
import { subscribeAbort, unsubscribeAbort } from '../signal/shared-abort.js';
import type { Deadline, HeaderFormat } from './deadline.js';

/** What the guarded call receives. */
export interface DeadlineCallContext {
  /** Aborts at the deadline (reason: DeadlineExceededError) or when the caller's signal aborts. */
  readonly signal: AbortSignal;
  /** Time left when the call started, in ms: bound every local timeout by it (SPEC D5). */
  readonly timeoutMs: number;
  /** Headers that carry the deadline to the next hop. */
  readonly headers: Record<string, string>;
}

export interface CallWithDeadlineOptions<T> {
  /** The dependency's name, for errors and metrics. */
  readonly name: string;
  /** The dependency's p99 in ms: with less time than this left, the call is not made (SPEC D4). */
  readonly p99Ms: number;
  readonly execute: (context: DeadlineCallContext) => Promise<T>;
  /** The caller's own cancellation; its abort rejects with its own reason, not a deadline error. */
  readonly signal?: AbortSignal;
  /** Which deadline headers to send on. */
  readonly headerFormat?: HeaderFormat;
}

/**
 * Runs one call inside a deadline (the seed's `chamarComPrazo`, SPEC D4, D5):
 * - fails with {@link DeadlineInsufficientError} before calling `execute` when less than `p99Ms` is left;
 * - otherwise gives `execute` an AbortSignal, the time left and the outgoing headers;
 * - settles with {@link DeadlineExceededError} as soon as the deadline passes, even when `execute`
 *   ignores its signal (its late result or error is then dropped).
 */
export function callWithDeadline<T>(deadline: Deadline, options: CallWithDeadlineOptions<T>): Promise<T> {
  const { name, p99Ms, execute, signal: callerSignal } = options;
  const clock = deadline.clock;
  const remaining = deadline.remainingMs();
  if (remaining <= 0 || remaining < p99Ms) {
    return Promise.reject(
      new DeadlineInsufficientError({ dependency: name, remainingMs: remaining, neededMs: p99Ms }),
    );
  }
  if (callerSignal?.aborted) return Promise.reject(callerSignal.reason);

  const started = clock.now();
  const controller = new AbortController();
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    const finish = (): boolean => {
      if (settled) return false;
      settled = true;
      clock.clearTimer(timer);
      if (callerSignal !== undefined) unsubscribeAbort(callerSignal, onCallerAbort);
      return true;
    };
    const onCallerAbort = (): void => {
      if (!finish()) return;
      controller.abort(callerSignal?.reason);
      reject(callerSignal?.reason);
    };
    const timer = clock.setTimer(() => {
      if (!finish()) return;
      const error = new DeadlineExceededError({
        dependency: name,
        elapsedMs: clock.now() - started,
        deadlineEpochMs: deadline.epochMs(),
      });
      controller.abort(error);
      reject(error);
    }, remaining);
    if (callerSignal !== undefined) subscribeAbort(callerSignal, onCallerAbort);

    let pending: Promise<T>;
    try {
      pending = execute({
        signal: controller.signal,
        timeoutMs: remaining,
        headers: deadline.toHeaders(options.headerFormat),
      });
    } catch (error) {
      pending = Promise.reject(error);
    }
    pending.then(
      (value) => {
        if (finish()) resolve(value);
      },
      (error: unknown) => {
        if (finish()) reject(error);
      },
    );
  });
}
