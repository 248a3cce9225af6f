import { LATE_TIMER_MS, MAX_TIMER_DELAY_MS, runAfterIo, type Timer } from '../clock/clock.js';
import { ON_DUE, type QueuedBound, type TimerQueue } from '../clock/timer-queue.js';
import type { Deadline } from '../deadline/deadline.js';
import { fitsDeadline, insufficientError, neededMs } from '../deadline/fits.js';
import { thrownText } from '../errors/base.js';
import { RetryBudgetExhaustedError } from '../errors/budget.js';
import { ConcurrencyLimitError } from '../errors/capacity.js';
import { isQueueTimeout } from '../errors/guards.js';
import type { LimitWaiter } from '../limit/limiter.js';
import type { FailureVerdict } from '../retry/classify.js';
import { mergeFailures } from '../retry/merge.js';
import { planRetry, type StopReason } from '../retry/planner.js';
import { markDependencyFailure } from '../retry/pushback.js';
import { subscribeAbort, unsubscribeAbort } from '../signal/shared-abort.js';
import { Attempt, type AttemptOwner } from './attempt.js';
import type { DependencyCore } from './core.js';
import * as notify from './notify.js';
import type { ExecuteOptions } from './options.js';
import { discardSafely, endEvent, endedByClient, failureOf, outcomeOf, resultVerdict } from './outcome.js';
import type { CallTrace, TraceOutcome } from './trace.js';
import type { AttemptSlice, Call, Carrier, Transport } from './transport.js';
import type { AttemptKind, Operation, ResultVerdict } from './types.js';

const HEDGE_LOST = 'another attempt of the same call answered first';
const PUSHED_BACK = 'another attempt of the same call was pushed back: the call ends with its answer';

/**
 * One call through the executor: the attempt plan (SPEC R6), retries paid from the budget (R1),
 * `Retry-After` (R3), and at most one hedge (H1–H3), as a small callback-driven state machine — no
 * async function, no `AbortSignal.any`, one timer per attempt plus one for the hedge or the backoff.
 *
 * Final (nothing outside src/dependency extends it): what an attempt is and how the call's end
 * reaches its caller are its {@link Transport}'s — the promise of `dependency.execute`
 * ({@link OperationTransport}), or prazo/http's handler callbacks — opened by `openCall`.
 *
 * Endings: the first successful answer is delivered. A failure that will not be retried ends the
 * call: a failed *result* (e.g. a 503 response) is delivered as the server's answer; a thrown error is
 * delivered as the failure, except when a retry was warranted and refused — by the budget
 * (`RetryBudgetExhaustedError`, cause = the error) or by time (`DeadlineInsufficientError` naming the
 * attempt that did not start).
 */
export class Execution<T, C extends Carrier = Carrier>
  implements AttemptOwner<T, C>, LimitWaiter, Call, QueuedBound
{
  /** The plan the call runs with (its attempts read it too). */
  readonly core: DependencyCore;
  readonly deadline: Deadline;
  /** True once the call's end was delivered. */
  settled = false;
  /** The one pending timer: the hedge's, the backoff's, or the end of a wait for a slot. */
  #timer: Timer | undefined;
  /**
   * The failure held while its fate is open (a racing copy still runs, or a backoff is under way):
   * `#heldOk` for a failed result, which is always either delivered or handed to `discard` (a 503
   * whose body must be drained), never dropped.
   */
  #heldOk = false;
  #held: unknown;
  readonly idempotencyKey: string | undefined;
  readonly #idempotent: boolean;
  readonly #retryResponseTimeout: boolean | undefined;
  /** Attempts started (numbering), and those that count against `attempts` (hedges do not). */
  #started = 0;
  #rounds = 0;
  #primary: Attempt<T, C> | undefined;
  #hedge: Attempt<T, C> | undefined;
  #hedgeDue = 0;
  /** The queue the hedge waits in (its delay's), and its entry there, until it fires or is cancelled. */
  #hedgeQueue: TimerQueue | undefined;
  #hedgeEntry = -1;
  /** When the backoff or Retry-After wait under way ends (the plan clock's instant). */
  #waitUntil = 0;
  /** True while the wait's timer holds only a range of it (the wait is longer than a timer can be). */
  #waitCut = false;
  /** The failure(s) of a copy that ended while the other copy still raced. */
  #raceVerdict: FailureVerdict | undefined;
  /** The attempt waiting for a slot of the concurrency limit (SPEC X7), and since when. */
  #waiting: 'original' | 'retry' | undefined;
  #waitingSince = 0;
  /** The limiter's mark while this call waits in its queue. */
  queued?: boolean;
  /** The copy being cancelled because the call ended otherwise (it lost a race, or was pushed back). */
  #dismissed: Attempt<T, C> | undefined;
  /** This call's trace, when its dependency is traced (prazo/otel, src/dependency/trace.ts). */
  #trace: CallTrace | undefined;
  /** The transport sends no new attempt (its client is closing): no retry, no hedge ({@link wrapUp}). */
  #closing = false;
  readonly #transport: Transport<T, C>;

  constructor(
    core: DependencyCore,
    transport: Transport<T, C>,
    deadline: Deadline,
    idempotent: boolean,
    key: string | undefined,
    retryResponseTimeout: boolean | undefined,
  ) {
    this.core = core;
    this.#transport = transport;
    this.deadline = deadline;
    this.idempotencyKey = key;
    this.#idempotent = idempotent || key !== undefined;
    this.#retryResponseTimeout = retryResponseTimeout;
  }

  /**
   * Starts the call at `now` (the executor clock's reading, just taken). With less time left than the
   * dependency's p99, it ends at once with DEADLINE_INSUFFICIENT, no attempt started (SPEC D4).
   */
  begin(now: number): void {
    const core = this.core;
    const remaining = this.deadline.remainingMsAt(now, core.clock);
    const tracer = core.events.tracer;
    if (tracer !== undefined)
      this.#trace = tracer.startCall(core.name, remaining, this.#transport.traceRequest?.());
    if (!fitsDeadline(remaining, core.p99Ms)) {
      notify.insufficient(core, this.#trace, remaining, 1);
      this.#finish(false, insufficientError(core, remaining, 1));
      return;
    }
    const throttle = core.throttle;
    if (throttle !== undefined && !throttle.admit(now)) {
      this.#throttled(now);
      return;
    }
    const limiter = core.limiter;
    if (limiter !== undefined && !limiter.tryAcquire()) {
      this.#wait('original', now, remaining);
      return;
    }
    if (this.#countOriginal(now, limiter !== undefined)) this.#start('original', now, limiter !== undefined);
  }

  /**
   * Counts the call's original in the budget. A budget is the caller's object (a shared one, or one
   * of its own making): one that throws ends this call with its error and gives back the slot the
   * attempt would have held, instead of leaving the call unstarted and the slot taken for ever.
   */
  #countOriginal(now: number, permit: boolean): boolean {
    const core = this.core;
    try {
      core.budget.recordOriginal(now, core.clock);
      return true;
    } catch (error) {
      if (permit) core.limiter!.release();
      this.#finish(false, error);
      return false;
    }
  }

  /** Pays a retry or a hedge from the budget; a budget that throws refuses it (as an empty one does). */
  #payExtra(now: number): boolean {
    const core = this.core;
    try {
      return core.budget.tryConsume(now, core.clock);
    } catch (error) {
      process.emitWarning(
        `prazo: the retry budget of ${core.name} threw: ${thrownText(error)}; the extra attempt is not sent`,
        'PrazoWarning',
      );
      return false;
    }
  }

  /**
   * Starts an attempt; `now` is the executor clock's reading at its start, when just taken. `permit`:
   * it holds a slot of the concurrency limit, which it gives back when it is over on the wire.
   */
  #start(kind: AttemptKind, now: number = this.core.clock.now(), permit = false): void {
    const core = this.core;
    if (this.settled) {
      // Ended by the caller's code on the way here (a `discard` or a listener aborted the call).
      if (permit) core.limiter!.release();
      return;
    }
    const remaining = this.deadline.remainingMsAt(now, core.clock);
    // On a tie the deadline is what ran out (it has passed when the timer fires): say so (SPEC D6).
    // A patient attempt (it holds a slot of the limit, its response timeout would not be retried,
    // and the dependency is answering: its throttle refuses nothing) waits up to the deadline: the
    // limit, not the timeout, protects the caller's pool. Against a dependency that stopped
    // answering, waiting is pure loss: its attempts are cut at the calibrated timeout again.
    const byDeadline =
      remaining <= core.attemptTimeoutMs ||
      (permit &&
        core.patience &&
        !(this.#retryResponseTimeout ?? core.retryResponseTimeout) &&
        (core.throttle === undefined || core.throttle.refusing(now) === false));
    const timeoutMs = byDeadline ? remaining : core.attemptTimeoutMs;
    const n = ++this.#started;
    const attempt = new Attempt<T, C>(this, kind, n, timeoutMs, byDeadline, now);
    const carrier = this.#transport.attempt(attempt);
    attempt.carrier = carrier;
    if (permit) attempt.holdPermit(core.limiter!);
    if (kind === 'hedge') {
      this.#hedge = attempt;
    } else {
      this.#rounds += 1;
      this.#primary = attempt;
    }
    notify.attempt(core, kind, n, carrier.instance);
    if (this.settled) return; // a listener ended the call: the attempt was cancelled, never started
    const trace = this.#trace;
    if (trace === undefined) carrier.start();
    else
      attempt.trace = trace.attempt(kind, n, remaining, timeoutMs, carrier.instance, () => carrier.start());
    // The attempt may have ended the call synchronously (it failed at once, or its caller gave up).
    if (this.settled) return;
    if (kind === 'original' && core.hedge !== undefined && this.#idempotent) this.#armHedge(timeoutMs, now);
  }

  /**
   * Arms the hedge: an entry in the queue of its delay (a call's hedge delay is the same as its
   * neighbours', so one clock timer serves them all), cancelled when the call ends first.
   */
  #armHedge(timeoutMs: number, now: number): void {
    const core = this.core;
    if (this.#closing) return;
    const delay = core.hedge?.delayMs(now, core.clock);
    if (delay === undefined || delay >= timeoutMs || this.#primary === undefined) return;
    this.#hedgeDue = now + delay;
    const queue = core.hedgeTimers.of(delay);
    this.#hedgeQueue = queue;
    this.#hedgeEntry = queue.add(this, now);
  }

  /** The hedge's delay came due in its queue. */
  [ON_DUE](): void {
    this.#hedgeQueue = undefined;
    this.#fireHedge(false);
  }

  #fireHedge(afterIo: boolean): void {
    if (this.settled || this.#primary === undefined || this.#closing) return;
    const core = this.core;
    const now = core.clock.now();
    if (!afterIo && now - this.#hedgeDue >= LATE_TIMER_MS) {
      // Late (the loop was busy): the primary's answer may be in its socket already, unread.
      this.timerLate(now - this.#hedgeDue);
      runAfterIo(core.clock, () => this.#fireHedge(true));
      return;
    }
    // A hedge races an attempt already under way: it needs the live median left, not D4's p99
    // (hedge/policy.ts); a source that cannot tell the median gets D4's rule.
    const remaining = this.deadline.remainingMsAt(now, core.clock);
    const needed = neededMs(core.hedge!.timeLeftMs(now, core.clock) ?? core.p99Ms);
    if (!(remaining >= needed)) {
      notify.hedgeSkipped(core, this.#trace, remaining, needed);
      return;
    }
    // A hedge is optional load: it never waits for a slot, and a refused one costs no budget.
    const limiter = core.limiter;
    if (limiter !== undefined && !limiter.tryAcquire()) {
      notify.limited(core, undefined, 'hedge', 'no-slot', 0);
      return;
    }
    if (this.#payExtra(now)) this.#start('hedge', now, limiter !== undefined);
    else {
      limiter?.release();
      notify.budgetRefused(core, this.#trace, 'hedge');
    }
  }

  /**
   * Waits in the concurrency limit's queue (SPEC X7) while an attempt started at the end would still
   * fit the deadline (`remaining − p99`); a full queue refuses at once. Nothing is sent meanwhile.
   */
  #wait(kind: 'original' | 'retry', now: number, remaining: number): void {
    const core = this.core;
    if (!core.limiter!.enqueue(this)) {
      this.#limited(kind, 'queue-full', 0);
      return;
    }
    this.#waiting = kind;
    this.#waitingSince = now;
    this.#armWait(remaining - core.p99Ms);
  }

  /**
   * Arms the queue wait's end `leftMs` away. A timer holds at most 2^31 − 1 ms (24.8 days): a wait
   * beyond it is re-armed a range at a time (the deadline read anew), an endless one arms nothing.
   */
  #armWait(leftMs: number): void {
    const clock = this.core.clock;
    if (leftMs <= MAX_TIMER_DELAY_MS) this.#timer = clock.setTimer(() => this.#waitedTooLong(), leftMs);
    else if (leftMs !== Number.POSITIVE_INFINITY)
      this.#timer = clock.setTimer(() => {
        this.#timer = undefined;
        if (this.#waiting !== undefined && !this.settled)
          this.#armWait(this.deadline.remainingMsAt(clock.now(), clock) - this.core.p99Ms);
      }, MAX_TIMER_DELAY_MS);
  }

  /** The concurrency limit hands this call a slot: its waiting attempt starts now, if it still fits. */
  granted(): void {
    const core = this.core;
    const kind = this.#waiting;
    this.#waiting = undefined;
    if (kind === undefined || this.settled) {
      core.limiter!.release();
      return;
    }
    this.#clearTimer();
    const now = core.clock.now();
    const remaining = this.deadline.remainingMsAt(now, core.clock);
    if (!fitsDeadline(remaining, core.p99Ms)) {
      core.limiter!.release();
      this.#stop('deadline-insufficient', remaining);
      return;
    }
    if (kind === 'original') {
      if (!this.#countOriginal(now, true)) return;
    } else this.#releaseHeld();
    this.#start(kind, now, true);
  }

  #waitedTooLong(): void {
    this.#timer = undefined;
    const kind = this.#waiting;
    if (kind === undefined || this.settled) return;
    this.#waiting = undefined;
    const core = this.core;
    core.limiter!.cancel(this);
    this.#limited(kind, 'queue-timeout', core.clock.now() - this.#waitingSince);
  }

  /**
   * The limit refused this call's attempt: nothing sent, nothing recorded. A refused retry delivers
   * the failed answer it would have retried (as a budget refusal does); otherwise the call fails with
   * CONCURRENCY_LIMITED (a refused retry's error as its cause).
   */
  #limited(kind: 'original' | 'retry', reason: 'queue-full' | 'queue-timeout', waitedMs: number): void {
    const core = this.core;
    notify.limited(core, this.#trace, kind, reason, waitedMs);
    const { ok, value } = this.#takeHeld();
    if (ok) {
      this.#finish(true, value);
      return;
    }
    const { limit, inFlight, queued, maxQueue } = core.limiter!.state();
    const cause = kind === 'retry' ? value : undefined;
    const error = new ConcurrencyLimitError({
      dependency: core.name,
      limit,
      inFlight,
      queued,
      maxQueue,
      reason,
      waitedMs,
      ...(cause === undefined ? {} : { cause }),
    });
    this.#finish(false, error);
  }

  /**
   * The adaptive throttle refused the call (docs/throttling.md): nothing sent, nothing recorded, no
   * original counted for the retry budget, no retry.
   */
  #throttled(now: number): void {
    const core = this.core;
    const throttle = core.throttle!;
    const error = throttle.refusal(core.name, now);
    const { requests, accepts, probability } = error;
    notify.throttled(core, this.#trace, requests, accepts, probability);
    this.#finish(false, error);
  }

  /** Starts a retry now: with a slot of the limit, or waiting for one (the held failure's slot freed first). */
  #retry(now: number): void {
    const limiter = this.core.limiter;
    if (limiter === undefined) {
      this.#releaseHeld();
      this.#start('retry', now);
    } else if (limiter.tryAcquire()) {
      this.#releaseHeld();
      this.#start('retry', now, true);
    } else if (limiter.queued >= limiter.maxQueue) {
      this.#limited('retry', 'queue-full', 0);
    } else {
      // A held 503 keeps its connection (and its slot) until it is drained: let it go before waiting.
      this.#releaseHeldResult();
      this.#wait('retry', now, this.deadline.remainingMsAt(now, this.core.clock));
    }
  }

  ended(attempt: Attempt<T, C>, ok: boolean, value: unknown, timedOut: boolean): void {
    // The transport hears first (prazo/http settles the instance: a retry started here picks with it).
    this.#transport.ended?.(attempt.carrier, ok, value, timedOut);
    try {
      this.#ended(attempt, ok, value, timedOut);
    } catch (error) {
      // Something below threw while the race was decided (a dispatcher's controller, a handler): the
      // call must still end. With its attempts over no timer is left to end it, and the caller would
      // wait forever. It ends with the error.
      this.abandon(error);
    }
  }

  #ended(attempt: Attempt<T, C>, ok: boolean, value: unknown, timedOut: boolean): void {
    const core = this.core;
    const now = Number.isNaN(attempt.endedAt) ? core.clock.now() : attempt.endedAt;
    const latencyMs = now - attempt.startedAt;
    const verdict = ok ? this.#transport.classify(value as T) : undefined;
    const outcome = outcomeOf(ok, verdict, value, timedOut);
    // The caller's own client closed or destroyed under the attempt: the caller's doing, not the
    // dependency's (`endedByClient`). It ends the call (it is not retryable), and is seen as cancelled.
    const byClient = !ok && endedByClient(value);
    // A request that waited for a connection and was never written says nothing about the dependency.
    if (ok || !(isQueueTimeout(value) || byClient)) {
      core.recorder.record(latencyMs, outcome, now, core.clock);
      // The adaptive limit learns from answers and from timeouts (a lower bound: the queue is growing).
      if (core.limiter !== undefined && outcome !== 'error') core.limiter.sample(latencyMs, now);
    }
    const seen = byClient ? 'cancelled' : outcome;
    if (core.events.active) core.events.emit(endEvent(core.name, attempt, latencyMs, ok, seen, value));
    if (attempt.trace !== undefined) this.#endTrace(attempt, seen, ok, value);
    this.#detach(attempt);
    const throttle = byClient ? undefined : core.throttle;
    if (throttle !== undefined) {
      // An answer, or a pushback (the dependency is up and said so: its own dependency failed, and
      // its own throttle sees that; counting it here would throttle every route this client serves)
      // is accepted; a failed answer or a timeout is not; a request never written to the wire says
      // nothing of the dependency; a thrown failure is judged with the retry plan below.
      if (ok) throttle.count(now, verdict === undefined || verdict.pushback === true || !verdict.retryable);
      else if (outcome === 'timeout') {
        if (!isQueueTimeout(value)) throttle.count(now, false);
      } else if (this.settled) throttle.count(now, false);
    }
    if (this.settled) {
      if (ok) this.#transport.discard(value as T);
    } else if (ok && verdict?.pushback === true) {
      this.#pushedBack(attempt, true, value);
    } else if (ok && (verdict === undefined || !verdict.retryable)) {
      this.#win(attempt, value as T);
    } else {
      const retryResponseTimeout = this.#retryResponseTimeout ?? core.retryResponseTimeout;
      const failure = failureOf(core, retryResponseTimeout, ok, verdict, value);
      // A timeout or a retryable failure is the dependency's (not accepted); another thrown failure
      // (a constraint violation, a 4xx-like error) is an answer.
      if (!ok && throttle !== undefined && outcome !== 'timeout') throttle.count(now, !failure.retryable);
      if (failure.pushback === true) {
        this.#pushedBack(attempt, ok, value);
        return;
      }
      // Two copies can fail in turn: the decision weighs both, not just the last one to end.
      const earlier = this.#raceVerdict;
      if (earlier !== undefined && !earlier.retryable) {
        if (ok) this.#transport.discard(value as T); // the earlier, final failure stays the answer
      } else this.#hold(ok, value);
      const merged = earlier === undefined ? failure : mergeFailures(earlier, failure);
      if (this.#primary !== undefined || this.#hedge !== undefined) {
        this.#raceVerdict = merged; // the race goes on
        return;
      }
      this.#raceVerdict = undefined;
      this.#clearTimer(); // a hedge not sent yet: the retry plan takes over
      this.#afterFailure(merged, now);
    }
  }

  cancelled(attempt: Attempt<T, C>): void {
    this.#transport.cancelled?.(attempt.carrier);
    const core = this.core;
    const throttle = core.throttle;
    if (core.events.active || throttle !== undefined) {
      const now = core.clock.now();
      const latencyMs = now - attempt.startedAt;
      if (core.events.active)
        core.events.emit(endEvent(core.name, attempt, latencyMs, false, 'cancelled', undefined));
      // A copy dismissed because the call ended otherwise, or cut short before the p99, says nothing
      // about the dependency; one still unanswered past the p99 counts as not accepted.
      if (throttle !== undefined && attempt !== this.#dismissed && latencyMs >= core.p99Ms)
        throttle.count(now, false);
    }
    if (attempt.trace !== undefined) this.#endTrace(attempt, 'cancelled', false, undefined);
    this.#detach(attempt);
  }

  timerLate(lateMs: number): void {
    notify.timerLate(this.core, lateMs);
  }

  /** The caller gave up: every attempt stops, the call ends with `reason`. */
  abandon(reason: unknown): void {
    if (this.settled) return;
    if (this.#waiting !== undefined) {
      this.#waiting = undefined;
      this.core.limiter?.cancel(this);
    }
    this.#primary?.cancel(reason);
    this.#hedge?.cancel(reason);
    this.#releaseHeld();
    this.#finish(false, reason);
  }

  /**
   * The transport sends no new attempt from now on: its client is closing (a graceful close lets
   * what is on the wire finish, and sends nothing more). No retry or hedge is started. An attempt in
   * flight goes on, and its end is the call's (a failure is not retried). A call between attempts (a
   * backoff or Retry-After wait, a wait for a slot of the limit) ends now with what it holds, as when
   * the budget refuses its retry: a failed answer (a 503) is delivered as the server's answer, a
   * thrown failure as it was thrown; a call that holds nothing (its original still waiting for a
   * slot) ends with `reason`. Otherwise such a call would sleep out its Retry-After (bounded only by
   * its deadline), then fail on the closed client, holding `close()` up as long.
   */
  wrapUp(reason: unknown): void {
    if (this.settled || this.#closing) return;
    this.#closing = true;
    if (this.#hedgeQueue !== undefined) {
      this.#hedgeQueue.cancel(this.#hedgeEntry);
      this.#hedgeQueue = undefined;
    }
    if (this.#primary !== undefined || this.#hedge !== undefined) return; // its end decides
    if (this.#waiting !== undefined) {
      this.#waiting = undefined;
      this.core.limiter?.cancel(this);
    }
    this.#clearTimer();
    // Nothing held: its original still waits for a slot, or its retry does (the 503 it would have
    // retried was let go to free its connection and slot first).
    if (this.#rounds === 0 || (!this.#heldOk && this.#held === undefined)) this.#finish(false, reason);
    else this.#stop('closing', this.deadline.remainingMsAt(this.core.clock.now(), this.core.clock));
  }

  #detach(attempt: Attempt<T, C>): void {
    if (attempt === this.#primary) this.#primary = undefined;
    else if (attempt === this.#hedge) this.#hedge = undefined;
  }

  #afterFailure(verdict: FailureVerdict, now: number): void {
    const core = this.core;
    const remaining = this.deadline.remainingMsAt(now, core.clock);
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
    } else if (this.#closing) {
      this.#stop('closing', remaining);
    } else if (!this.#payExtra(now)) {
      notify.budgetRefused(core, this.#trace, 'retry');
      this.#stop('budget', remaining);
    } else {
      if (decision.wait === 'retry-after') notify.retryAfter(core, this.#trace, decision.delayMs, true);
      if (this.settled) return; // a listener ended the call
      if (decision.delayMs > 0) {
        this.#waitUntil = now + decision.delayMs;
        this.#armWaitEnd(decision.delayMs);
      } else {
        this.#retry(now);
      }
    }
  }

  /**
   * Arms the end of a backoff or Retry-After wait `leftMs` away: a timer holds at most 2^31 − 1 ms
   * (24.8 days), so a longer wait (a Retry-After under an endless deadline) is armed a range at a time.
   */
  #armWaitEnd(leftMs: number): void {
    this.#waitCut = leftMs > MAX_TIMER_DELAY_MS;
    this.#timer = this.core.clock.setTimer(
      () => this.#afterWait(),
      this.#waitCut ? MAX_TIMER_DELAY_MS : leftMs,
    );
  }

  #afterWait(): void {
    this.#timer = undefined;
    if (this.settled) return;
    const now = this.core.clock.now();
    if (this.#waitCut) {
      this.#armWaitEnd(this.#waitUntil - now); // one range of a wait beyond a timer's reach has passed
      return;
    }
    const remaining = this.deadline.remainingMsAt(now, this.core.clock);
    // A late timer can eat into the slice the plan reserved: check again; the held failure still stands.
    if (fitsDeadline(remaining, this.core.p99Ms)) {
      this.#retry(now);
    } else {
      this.#stop('deadline-insufficient', remaining);
    }
  }

  #stop(reason: StopReason | 'budget' | 'closing', remaining: number, waitMs?: number): void {
    const core = this.core;
    const next = this.#started + 1;
    if (reason === 'deadline-insufficient') {
      notify.insufficient(core, this.#trace, remaining, next);
    } else if (reason === 'retry-after-too-long') {
      notify.retryAfter(core, this.#trace, waitMs ?? 0, false);
    }
    const { ok, value } = this.#takeHeld();
    if (ok) {
      this.#finish(true, value); // a failed result is the server's answer: delivered
    } else if (reason === 'budget') {
      const { originals, extras } = core.budget.state();
      const error = new RetryBudgetExhaustedError({ dependency: core.name, originals, extras, cause: value });
      this.#finish(false, error);
    } else if (reason === 'deadline-insufficient') {
      this.#finish(false, insufficientError(core, remaining, next));
    } else {
      // The dependency's own failure (refused, reset, a gRPC UNAVAILABLE...), given as it was thrown,
      // after this layer's plan: marked, so a server answering it pushes back (SPEC X6). A failure
      // that was never retryable (a constraint violation, a 4xx-like error) is the request's, unmarked.
      this.#finish(false, reason === 'not-retryable' ? value : markDependencyFailure(value, core.name));
    }
  }

  /**
   * The server pushed back (SPEC X6, gRPC A6): its answer is the call's, at once. No retry, no hedge
   * (a pending one is not sent, one in flight is cancelled without being recorded: it did not lose a
   * race, the call was ended), and an earlier copy's failure held meanwhile is released.
   */
  #pushedBack(attempt: Attempt<T, C>, ok: boolean, value: unknown): void {
    notify.pushback(this.core, this.#trace, attempt.kind, attempt.attempt);
    const other = this.#primary ?? this.#hedge;
    this.#dismissed = other;
    other?.cancel(new DOMException(PUSHED_BACK, 'AbortError'));
    this.#releaseHeld();
    this.#finish(ok, ok ? value : markDependencyFailure(value, this.core.name));
  }

  /**
   * Hands the call's end to its transport: `ok` with the value, or the error. Once: a call the
   * caller's code ended meanwhile (a listener or a `discard` aborted it) releases a value instead.
   */
  #finish(ok: boolean, value: unknown): void {
    if (this.settled) {
      if (ok) this.#transport.discard(value as T);
      return;
    }
    const trace = this.#trace;
    if (trace !== undefined) {
      // Ended before delivery: a span ended after the caller's code ran would cover that code's time.
      this.#trace = undefined;
      trace.end(ok, value, ok ? this.#transport.traceResult?.(value as T) : undefined);
    }
    this.settled = true;
    this.#clearTimer();
    this.#transport.deliver(ok, value);
  }

  /** Keeps the latest failure; a failed result it replaces is released. */
  #hold(ok: boolean, value: unknown): void {
    this.#releaseHeld();
    this.#heldOk = ok;
    this.#held = value;
    if (ok) this.#transport.hold(value as T);
  }

  /** Takes the held failure out: `ok` true for a failed result, false for a thrown error. */
  #takeHeld(): { readonly ok: boolean; readonly value: unknown } {
    const taken = { ok: this.#heldOk, value: this.#held };
    this.#heldOk = false;
    this.#held = undefined;
    return taken;
  }

  /**
   * Releases a held failed *result* (its connection and slot go back), keeping a held thrown error:
   * the retry waits for a slot, which this result may be holding (`needed`).
   */
  #releaseHeldResult(): void {
    if (this.#heldOk) this.#releaseHeld(true);
  }

  #releaseHeld(needed = false): void {
    const held = this.#held;
    const ok = this.#heldOk;
    this.#heldOk = false;
    this.#held = undefined;
    // Cleared first: a `discard` that aborts the call re-enters here with nothing left to release.
    if (ok) this.#transport.discard(held as T, needed);
  }

  #clearTimer(): void {
    if (this.#timer !== undefined) {
      this.core.clock.clearTimer(this.#timer);
      this.#timer = undefined;
    }
    if (this.#hedgeQueue !== undefined) {
      this.#hedgeQueue.cancel(this.#hedgeEntry);
      this.#hedgeQueue = undefined;
    }
  }

  /** A value that arrived after its attempt was over (timed out or cancelled): release it. */
  late(value: T): void {
    this.#transport.discard(value);
  }

  #endTrace(attempt: Attempt<T, C>, outcome: TraceOutcome, ok: boolean, value: unknown): void {
    const trace = attempt.trace!;
    attempt.trace = undefined;
    trace.end(outcome, ok, value, ok ? this.#transport.traceResult?.(value as T) : undefined);
  }

  #win(attempt: Attempt<T, C>, value: T): void {
    const core = this.core;
    const other = this.#primary ?? this.#hedge;
    if (other !== undefined) {
      // The loser is recorded at the instant it lost: a lower bound of its latency. Leaving it out
      // would hide the slow tail from the recorder, lower the live p95 and make hedging feed itself.
      const lostAfterMs = core.clock.now() - other.startedAt;
      core.recorder.record(lostAfterMs, 'success');
      this.#transport.lost?.(other.carrier, lostAfterMs);
      this.#dismissed = other;
      other.cancel(new DOMException(HEDGE_LOST, 'AbortError'));
    }
    if (attempt.kind === 'hedge') notify.hedgeWon(core, attempt.attempt);
    this.#releaseHeld();
    this.#finish(true, value);
  }
}

/**
 * `dependency.execute(operation, options)`'s transport: the call's end is a promise, each attempt one
 * run of a promise-returning operation bounded by one timer (the attempt is its own carrier:
 * `Attempt.runs`), the caller's signal listened to once for the whole call.
 */
export class OperationTransport<T> implements Transport<T, Attempt<T>> {
  readonly #operation: Operation<T>;
  readonly #options: ExecuteOptions<T>;
  readonly #name: string;
  readonly #call: Execution<T, Attempt<T>>;
  #resolve!: (value: T) => void;
  #reject!: (error: unknown) => void;
  #onCallerAbort: (() => void) | undefined;

  constructor(
    core: DependencyCore,
    operation: Operation<T>,
    options: ExecuteOptions<T>,
    deadline: Deadline,
    key: string | undefined,
  ) {
    this.#operation = operation;
    this.#options = options;
    this.#name = core.name;
    this.#call = new Execution(
      core,
      this,
      deadline,
      options.idempotent === true,
      key,
      options.retryResponseTimeout,
    );
  }

  /** Runs the call; `now` is the executor clock's reading at its start. */
  run(now: number): Promise<T> {
    const signal = this.#options.signal;
    if (signal?.aborted) return Promise.reject(signal.reason);
    const promise = new Promise<T>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    if (signal !== undefined) {
      const call = this.#call;
      this.#onCallerAbort = () => call.abandon(signal.reason);
      subscribeAbort(signal, this.#onCallerAbort);
    }
    this.#call.begin(now);
    return promise;
  }

  attempt(slice: AttemptSlice): Attempt<T> {
    return (slice as Attempt<T>).runs(this.#operation);
  }

  classify(value: T): ResultVerdict | undefined {
    return resultVerdict(this.#options.classify, value);
  }

  hold(): void {}

  discard(value: T): void {
    discardSafely(this.#options.discard, value, this.#name);
  }

  deliver(ok: boolean, value: unknown): void {
    const signal = this.#options.signal;
    if (this.#onCallerAbort !== undefined && signal !== undefined)
      unsubscribeAbort(signal, this.#onCallerAbort);
    if (ok) this.#resolve(value as T);
    else this.#reject(value);
  }
}
