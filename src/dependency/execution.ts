import type { Deadline } from '../deadline/deadline.js';
import { RetryBudgetExhaustedError } from '../errors/budget.js';
import type { FailureVerdict } from '../retry/classify.js';
import { mergeFailures } from '../retry/merge.js';
import { fitsDeadline, planRetry, type StopReason } from '../retry/planner.js';
import { Attempt, type AttemptOwner } from './attempt.js';
import type { DependencyCore } from './core.js';
import * as notify from './notify.js';
import { endEvent, failureOf, insufficient, outcomeOf, resultVerdict } from './outcome.js';
import { Settlement } from './settlement.js';
import type { AttemptKind, ExecuteOptions, Operation } from './types.js';

const HEDGE_LOST = 'another attempt of the same call answered first';

/**
 * One call through the executor: the attempt plan (SPEC R6), retries paid from the budget (R1),
 * `Retry-After` (R3), and at most one hedge (H1–H3), as a small callback-driven state machine — no
 * async function, no `AbortSignal.any`, one timer per attempt plus one for the hedge or the backoff.
 *
 * Endings: the first successful answer is returned. A failure that will not be retried ends the call:
 * a failed *result* (e.g. a 503 response) is returned as the server's answer; a thrown error is
 * rethrown, except when a retry was warranted and refused — by the budget (`RetryBudgetExhaustedError`,
 * cause = the error) or by time (`DeadlineInsufficientError` naming the attempt that did not start).
 */
export class Execution<T> extends Settlement<T> implements AttemptOwner<T> {
  readonly #operation: Operation<T>;
  readonly #idempotent: boolean;
  readonly deadline: Deadline;
  readonly idempotencyKey: string | undefined;
  /** Attempts started (numbering), and those that count against `attempts` (hedges do not). */
  #started = 0;
  #rounds = 0;
  #primary: Attempt<T> | undefined;
  #hedge: Attempt<T> | undefined;
  /** The failure(s) of a copy that ended while the other copy still raced. */
  #raceVerdict: FailureVerdict | undefined;

  constructor(
    core: DependencyCore,
    operation: Operation<T>,
    options: ExecuteOptions<T>,
    deadline: Deadline,
    key: string | undefined,
  ) {
    super(core, options);
    this.#operation = operation;
    this.deadline = deadline;
    this.idempotencyKey = key;
    this.#idempotent = options.idempotent === true || key !== undefined;
  }

  get name(): string {
    return this.core.name;
  }

  get clock() {
    return this.core.clock;
  }

  outgoingHeaders(deadline: Deadline): Record<string, string> {
    return deadline.toHeaders(this.core.headerFormat);
  }

  run(): Promise<T> {
    const core = this.core;
    const signal = this.options.signal;
    if (signal?.aborted) return Promise.reject(signal.reason);
    const now = core.clock.now();
    const remaining = this.deadline.remainingMsAt(now, this.core.clock);
    if (!fitsDeadline(remaining, core.p99Ms)) {
      notify.insufficient(core, remaining, 1);
      return Promise.reject(insufficient(core, remaining, 1));
    }
    core.budget.recordOriginal();
    const promise = this.open();
    this.#start('original', now);
    return promise;
  }

  /** Starts an attempt; `now` is the executor clock's reading at its start, when just taken. */
  #start(kind: AttemptKind, now: number = this.core.clock.now()): void {
    const core = this.core;
    const remaining = this.deadline.remainingMsAt(now, this.core.clock);
    // On a tie the deadline is what ran out (it has passed when the timer fires): say so (SPEC D6).
    const byDeadline = remaining <= core.responseMs;
    const timeoutMs = byDeadline ? remaining : core.responseMs;
    const n = ++this.#started;
    const attempt = new Attempt<T>(this, kind, n, timeoutMs, core.connectMs, byDeadline, now);
    if (kind === 'hedge') {
      this.#hedge = attempt;
    } else {
      this.#rounds += 1;
      this.#primary = attempt;
    }
    notify.attempt(core, kind, n);
    attempt.start(this.#operation);
    // The operation may have ended the call synchronously (it aborted the caller's signal).
    if (this.settled) return;
    if (kind === 'original' && core.hedge !== undefined && this.#idempotent) this.#armHedge(timeoutMs);
  }

  #armHedge(timeoutMs: number): void {
    const delay = this.core.hedge?.delayMs();
    if (delay === undefined || delay >= timeoutMs) return;
    this.timer = this.core.clock.setTimer(() => this.#fireHedge(), delay, { unref: true });
  }

  #fireHedge(): void {
    this.timer = undefined;
    if (this.settled || this.#primary === undefined) return;
    const core = this.core;
    if (!fitsDeadline(this.deadline.remainingMs(), core.p99Ms)) return;
    if (core.budget.tryConsume()) this.#start('hedge');
    else notify.budgetRefused(core, 'hedge');
  }

  ended(attempt: Attempt<T>, ok: boolean, value: unknown, timedOut: boolean): void {
    const core = this.core;
    const latencyMs = core.clock.now() - attempt.started;
    const verdict = ok ? resultVerdict(this.options.classify, value as T) : undefined;
    const outcome = outcomeOf(ok, verdict, value, timedOut);
    core.recorder.record(latencyMs, outcome);
    if (core.events.active) core.events.emit(endEvent(core.name, attempt, latencyMs, ok, outcome, value));
    this.#detach(attempt);
    if (this.settled) {
      if (ok) this.discard(value as T);
    } else if (ok && (verdict === undefined || !verdict.retryable)) {
      this.#win(attempt, value as T);
    } else {
      const failure = failureOf(core, this.options, ok, verdict, value);
      // Two copies can fail in turn: the decision weighs both, not just the last one to end.
      const earlier = this.#raceVerdict;
      if (earlier !== undefined && !earlier.retryable) {
        if (ok) this.discard(value as T); // the earlier, final failure stays the answer
      } else this.hold(ok, value);
      const merged = earlier === undefined ? failure : mergeFailures(earlier, failure);
      if (this.#primary !== undefined || this.#hedge !== undefined) {
        this.#raceVerdict = merged; // the race goes on
        return;
      }
      this.#raceVerdict = undefined;
      this.clearTimer(); // a hedge not sent yet: the retry plan takes over
      this.#afterFailure(merged);
    }
  }

  cancelled(attempt: Attempt<T>): void {
    const core = this.core;
    if (core.events.active) {
      const latencyMs = core.clock.now() - attempt.started;
      core.events.emit(endEvent(core.name, attempt, latencyMs, false, 'cancelled', undefined));
    }
    this.#detach(attempt);
  }

  protected cancelAll(reason: unknown): void {
    this.#primary?.cancel(reason);
    this.#hedge?.cancel(reason);
  }

  #detach(attempt: Attempt<T>): void {
    if (attempt === this.#primary) this.#primary = undefined;
    else if (attempt === this.#hedge) this.#hedge = undefined;
  }

  #afterFailure(verdict: FailureVerdict): void {
    const core = this.core;
    const remaining = this.deadline.remainingMs();
    const decision = planRetry({
      verdict,
      idempotent: this.#idempotent,
      attemptsMade: this.#rounds,
      maxAttempts: core.maxAttempts,
      remainingMs: remaining,
      p99Ms: core.p99Ms,
      backoff: core.backoff,
      random: core.random,
    });
    if (decision.action === 'stop') {
      this.#stop(decision.reason, remaining, decision.waitMs);
    } else if (!core.budget.tryConsume()) {
      notify.budgetRefused(core, 'retry');
      this.#stop('budget', remaining);
    } else {
      if (decision.wait === 'retry-after') notify.retryAfter(core, decision.delayMs, true);
      if (decision.delayMs > 0) {
        this.timer = core.clock.setTimer(() => this.#afterWait(), decision.delayMs);
      } else {
        this.releaseHeld();
        this.#start('retry');
      }
    }
  }

  #afterWait(): void {
    this.timer = undefined;
    if (this.settled) return;
    const remaining = this.deadline.remainingMs();
    // A late timer can eat into the slice the plan reserved: check again; the held failure still stands.
    if (fitsDeadline(remaining, this.core.p99Ms)) {
      this.releaseHeld();
      this.#start('retry');
    } else {
      this.#stop('deadline-insufficient', remaining);
    }
  }

  #stop(reason: StopReason | 'budget', remaining: number, waitMs?: number): void {
    const core = this.core;
    const next = this.#started + 1;
    if (reason === 'deadline-insufficient') notify.insufficient(core, remaining, next);
    else if (reason === 'retry-after-too-long') notify.retryAfter(core, waitMs ?? 0, false);
    const { ok, value } = this.takeHeld();
    if (ok) {
      this.finish(true, value); // a failed result is the server's answer: returned
    } else if (reason === 'budget') {
      const { originals, extras } = core.budget.state();
      const error = new RetryBudgetExhaustedError({ dependency: core.name, originals, extras, cause: value });
      this.finish(false, error);
    } else {
      const timeUp = reason === 'deadline-insufficient';
      this.finish(false, timeUp ? insufficient(core, remaining, next) : value);
    }
  }

  #win(attempt: Attempt<T>, value: T): void {
    const core = this.core;
    const other = this.#primary ?? this.#hedge;
    if (other !== undefined) {
      // The loser is recorded at the instant it lost: a lower bound of its latency. Leaving it out
      // would hide the slow tail from the recorder, lower the live p95 and make hedging feed itself.
      core.recorder.record(core.clock.now() - other.started, 'success');
      other.cancel(new DOMException(HEDGE_LOST, 'AbortError'));
    }
    if (attempt.kind === 'hedge') notify.hedgeWon(core, attempt.attempt);
    this.releaseHeld();
    this.finish(true, value);
  }
}
