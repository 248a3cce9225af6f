import { DeadlineInsufficientError } from '../errors/deadline.js';

/**
 * SPEC D4, written once: an attempt with less time left than the dependency's p99 is not started.
 * Started anyway, it fails by construction (it needs the p99 to have a 99% chance) and only adds load
 * to a dependency that will be abandoned before it answers. Every place that starts something under a
 * deadline asks this module — the executor's planner (first attempt, retry, after a queue or a backoff
 * wait), `callWithDeadline`, the stores (`prazo/pg`, `prazo/mysql`, `prazo/redis`), the gRPC
 * interceptor — so they cannot disagree on a boundary: the same time left and p99 give the same
 * verdict, and the same `DeadlineInsufficientError` with the same numbers, through every one of them.
 *
 * The floor, {@link MIN_ATTEMPT_MS}: a dependency whose p99 is ~0 (an in-process cache, a store
 * call's default `p99Ms: 0`) still needs a timer tick to be started and judged; with less than 1 ms
 * left the deadline would fire before the attempt could answer, so nothing is started.
 */

/** The least time worth starting an attempt with, in ms, even for a dependency whose p99 is ~0. */
export const MIN_ATTEMPT_MS = 1;

/** What an attempt needs (the dependency's p99; a hedge: its live median), never less than {@link MIN_ATTEMPT_MS}. */
export const neededMs = (latencyMs: number): number =>
  latencyMs > MIN_ATTEMPT_MS ? latencyMs : MIN_ATTEMPT_MS;

/**
 * True when an attempt may start: at least the dependency's p99 is left, and at least 1 ms. False for
 * NaN (an unreadable remaining time is not time to start in).
 */
export function fitsDeadline(remainingMs: number, p99Ms: number): boolean {
  return remainingMs >= neededMs(p99Ms);
}

/** Who is refused and by how much: the dependency's name and p99, and which attempt (default the first). */
export interface FitTarget {
  readonly name: string;
  readonly p99Ms: number;
}

/**
 * The refusal, with its numbers: the time left (to the microsecond; never below 0, as a `Deadline`
 * reads it: a deadline 5 ms gone has 0 ms left, not -5) and what was needed: the dependency's p99,
 * at least 1 ms (the rule `fitsDeadline` applied).
 * `attempt` names a retry (the first attempt's message omits it).
 */
export function insufficientError(
  target: FitTarget,
  remainingMs: number,
  attempt?: number,
): DeadlineInsufficientError {
  return new DeadlineInsufficientError({
    dependency: target.name,
    remainingMs: remainingMs > 0 ? remainingMs : 0,
    neededMs: neededMs(target.p99Ms),
    attempt,
  });
}

/**
 * The refusal for `remainingMs` left, or `undefined` when the attempt fits: the form for callers that
 * deliver the error their own way (a gRPC status, a rejected promise).
 */
export function refusalOf(
  target: FitTarget,
  remainingMs: number,
  attempt?: number,
): DeadlineInsufficientError | undefined {
  return fitsDeadline(remainingMs, target.p99Ms)
    ? undefined
    : insufficientError(target, remainingMs, attempt);
}

/**
 * Throws the refusal when less than the p99 is left (SPEC D4), before any I/O; `onInsufficient` hears
 * of it first, with the time left (an integration's `deadline-insufficient` event).
 */
export function assertFits(
  target: FitTarget,
  remainingMs: number,
  onInsufficient?: (remainingMs: number) => void,
): void {
  if (fitsDeadline(remainingMs, target.p99Ms)) return;
  onInsufficient?.(remainingMs);
  throw insufficientError(target, remainingMs);
}
