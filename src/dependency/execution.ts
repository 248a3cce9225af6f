import type { Timer } from '../clock/clock.js';
import type { Deadline } from '../deadline/deadline.js';
import { RetryBudgetExhaustedError } from '../errors/budget.js';
import { DeadlineInsufficientError } from '../errors/deadline.js';
import type { FailureVerdict } from '../retry/classify.js';
import { fitsDeadline, planRetry, type StopReason } from '../retry/planner.js';
import { Attempt, type AttemptOwner } from './attempt.js';
import type { DependencyCore } from './core.js';
import { endEvent, outcomeOf, resultVerdict } from './outcome.js';
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
export class Execution<T> implements AttemptOwner<T> {
  readonly #core: DependencyCore;
  readonly #operation: Operation<T>;
  readonly #options: ExecuteOptions<T>;
  readonly #idempotent: boolean;
  readonly deadline: Deadline;
  readonly idempotencyKey: string | undefined;
  #resolve!: (value: T) => void;
  #reject!: (error: unknown) => void;
  #settled = false;
  #started = 0;
  #rounds = 0;
  #primary: Attempt<T> | undefined;
  #hedge: Attempt<T> | undefined;
  #timer: Timer | undefined;
  /** A failure waiting for its fate: a racing attempt still runs, or a backoff is under way. */
  #heldOk = false;
  #held: unknown;
  #onCallerAbort: (() => void) | undefined;

  constructor(
    core: DependencyCore,
    operation: Operation<T>,
    options: ExecuteOptions<T>,
    deadline: Deadline,
    key: string | undefined,
  ) {
    this.#core = core;
    this.#operation = operation;
    this.#options = options;
    this.deadline = deadline;
    this.idempotencyKey = key;
    this.#idempotent = options.idempotent === true || key !== undefined;
  }

  get name(): string {
    return this.#core.name;
  }

  get clock() {
    return this.#core.clock;
  }

  outgoingHeaders(deadline: Deadline): Record<string, string> {
    return deadline.toHeaders(this.#core.headerFormat);
  }

  run(): Promise<T> {
    const core = this.#core;
    const signal = this.#options.signal;
    if (signal?.aborted) return Promise.reject(signal.reason);
    const remaining = this.deadline.remainingMs();
    if (!fitsDeadline(remaining, core.p99Ms)) return Promise.reject(this.#insufficient(remaining, 1));
    core.budget.recordOriginal();
    const promise = new Promise<T>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    if (signal !== undefined) {
      this.#onCallerAbort = () => this.#abortByCaller(signal.reason);
      signal.addEventListener('abort', this.#onCallerAbort, { once: true });
    }
    this.#start('original');
    return promise;
  }

  #start(kind: AttemptKind): void {
    const core = this.#core;
    const remaining = this.deadline.remainingMs();
    const byDeadline = remaining < core.responseMs;
    const timeoutMs = byDeadline ? remaining : core.responseMs;
    const n = ++this.#started;
    const attempt = new Attempt<T>(this, kind, n, timeoutMs, core.connectMs, byDeadline);
    if (kind === 'hedge') {
      this.#hedge = attempt;
    } else {
      this.#rounds += 1;
      this.#primary = attempt;
    }
    if (core.events.active) core.events.emit({ type: 'attempt', dependency: core.name, kind, attempt: n });
    attempt.start(this.#operation);
    if (kind === 'original' && core.hedge !== undefined && this.#idempotent) this.#armHedge(timeoutMs);
  }

  #armHedge(timeoutMs: number): void {
    const delay = this.#core.hedge?.delayMs();
    if (delay === undefined || delay >= timeoutMs) return;
    this.#timer = this.#core.clock.setTimer(() => this.#fireHedge(), delay, { unref: true });
  }

  #fireHedge(): void {
    this.#timer = undefined;
    if (this.#settled || this.#primary === undefined) return;
    const core = this.#core;
    const remaining = this.deadline.remainingMs();
    if (!fitsDeadline(remaining, core.p99Ms)) return;
    if (!core.budget.tryConsume()) {
      if (core.events.active)
        core.events.emit({ type: 'budget-refused', dependency: core.name, kind: 'hedge' });
      return;
    }
    this.#start('hedge');
  }

  ended(attempt: Attempt<T>, ok: boolean, value: unknown, timedOut: boolean): void {
    const core = this.#core;
    const latencyMs = core.clock.now() - attempt.started;
    const verdict = ok ? resultVerdict(this.#options.classify, value as T) : undefined;
    const outcome = outcomeOf(ok, verdict, value, timedOut);
    core.recorder.record(latencyMs, outcome);
    if (core.events.active) core.events.emit(endEvent(core.name, attempt, latencyMs, ok, outcome, value));
    if (attempt === this.#primary) this.#primary = undefined;
    else this.#hedge = undefined;
    if (this.#settled) return;
    if (ok && (verdict === undefined || !verdict.retryable)) {
      this.#win(attempt, value as T);
      return;
    }
    this.#hold(ok, value);
    if (this.#primary !== undefined || this.#hedge !== undefined) return; // the race goes on
    this.#clearTimer(); // a hedge not sent yet: the failure is handled by the retry plan instead
    const failure: FailureVerdict = ok
      ? { retryable: true, immediate: false, kind: 'status', retryAfterMs: verdict?.retryAfterMs }
      : core.classifyError(value, {
          retryResponseTimeout: this.#options.retryResponseTimeout ?? core.retryResponseTimeout,
          nowEpochMs: core.clock.epochNow(),
        });
    this.#afterFailure(failure);
  }

  cancelled(attempt: Attempt<T>): void {
    const core = this.#core;
    if (core.events.active) {
      const latencyMs = core.clock.now() - attempt.started;
      core.events.emit(endEvent(core.name, attempt, latencyMs, false, 'cancelled', undefined));
    }
    if (attempt === this.#primary) this.#primary = undefined;
    else if (attempt === this.#hedge) this.#hedge = undefined;
  }

  late(value: T): void {
    this.#discard(value);
  }

  #afterFailure(verdict: FailureVerdict): void {
    const core = this.#core;
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
      return;
    }
    if (!core.budget.tryConsume()) {
      if (core.events.active)
        core.events.emit({ type: 'budget-refused', dependency: core.name, kind: 'retry' });
      this.#stop('budget', remaining);
      return;
    }
    if (decision.wait === 'retry-after' && core.events.active) {
      core.events.emit({
        type: 'retry-after',
        dependency: core.name,
        waitMs: decision.delayMs,
        honoured: true,
      });
    }
    if (decision.delayMs > 0) {
      this.#timer = core.clock.setTimer(() => this.#retryAfterWait(), decision.delayMs);
    } else {
      this.#releaseHeld();
      this.#start('retry');
    }
  }

  #retryAfterWait(): void {
    this.#timer = undefined;
    if (this.#settled) return;
    const remaining = this.deadline.remainingMs();
    // A late timer can eat into the slice the plan reserved: check again, the held failure still stands.
    if (!fitsDeadline(remaining, this.#core.p99Ms)) {
      this.#stop('deadline-insufficient', remaining);
      return;
    }
    this.#releaseHeld();
    this.#start('retry');
  }

  #stop(reason: StopReason | 'budget', remaining: number, waitMs?: number): void {
    const core = this.#core;
    const next = this.#started + 1;
    if (core.events.active) {
      if (reason === 'deadline-insufficient') {
        core.events.emit({
          type: 'deadline-insufficient',
          dependency: core.name,
          remainingMs: remaining,
          neededMs: core.p99Ms,
          attempt: next,
        });
      } else if (reason === 'retry-after-too-long') {
        core.events.emit({
          type: 'retry-after',
          dependency: core.name,
          waitMs: waitMs ?? 0,
          honoured: false,
        });
      }
    }
    const ok = this.#heldOk;
    const value = this.#held;
    this.#heldOk = false;
    this.#held = undefined;
    if (ok) {
      this.#finish(true, value); // a failed result is the server's answer: returned
    } else if (reason === 'budget') {
      const { originals, extras } = core.budget.state();
      const dependency = core.name;
      this.#finish(false, new RetryBudgetExhaustedError({ dependency, originals, extras, cause: value }));
    } else {
      this.#finish(false, reason === 'deadline-insufficient' ? this.#insufficient(remaining, next) : value);
    }
  }

  #win(attempt: Attempt<T>, value: T): void {
    const other = this.#primary ?? this.#hedge;
    const core = this.#core;
    if (other !== undefined) {
      // The loser is recorded at the instant it lost: a lower bound of its latency. Leaving it out
      // would hide the slow tail from the recorder, lower the live p95 and make hedging feed itself.
      core.recorder.record(core.clock.now() - other.started, 'success');
      other.cancel(new DOMException(HEDGE_LOST, 'AbortError'));
    }
    if (attempt.kind === 'hedge' && core.events.active) {
      core.events.emit({ type: 'hedge-won', dependency: core.name, attempt: attempt.attempt });
    }
    this.#releaseHeld();
    this.#finish(true, value);
  }

  #abortByCaller(reason: unknown): void {
    if (this.#settled) return;
    this.#primary?.cancel(reason);
    this.#hedge?.cancel(reason);
    this.#releaseHeld();
    this.#finish(false, reason);
  }

  #finish(ok: boolean, value: unknown): void {
    this.#settled = true;
    this.#clearTimer();
    if (this.#onCallerAbort !== undefined)
      this.#options.signal?.removeEventListener('abort', this.#onCallerAbort);
    if (ok) this.#resolve(value as T);
    else this.#reject(value);
  }

  /** Keeps the latest failure; a failed result it replaces is released. */
  #hold(ok: boolean, value: unknown): void {
    this.#releaseHeld();
    this.#heldOk = ok;
    this.#held = value;
  }

  #releaseHeld(): void {
    if (this.#heldOk) this.#discard(this.#held as T);
    this.#heldOk = false;
    this.#held = undefined;
  }

  #discard(value: T): void {
    const discard = this.#options.discard;
    if (discard === undefined) return;
    try {
      discard(value);
    } catch (error) {
      process.emitWarning(`prazo: discard() threw for ${this.#core.name}: ${String(error)}`, 'PrazoWarning');
    }
  }

  #insufficient(remainingMs: number, attempt: number): DeadlineInsufficientError {
    const core = this.#core;
    if (core.events.active && attempt === 1) {
      core.events.emit({
        type: 'deadline-insufficient',
        dependency: core.name,
        remainingMs,
        neededMs: core.p99Ms,
        attempt,
      });
    }
    return new DeadlineInsufficientError({
      dependency: core.name,
      remainingMs,
      neededMs: core.p99Ms,
      attempt,
    });
  }

  #clearTimer(): void {
    if (this.#timer !== undefined) {
      this.#core.clock.clearTimer(this.#timer);
      this.#timer = undefined;
    }
  }
}
