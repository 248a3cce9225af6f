import type { Clock } from '../clock/clock.js';
import { thrownText } from '../errors/base.js';
import { GradientLimit, gradientSettings } from './gradient.js';
import type { ConcurrencyLimitOptions } from './options.js';

/**
 * A dependency's concurrency limit (SPEC X7), the bulkhead between a service and one of its
 * dependencies: at most `limit` attempts in flight at once (fixed, or adaptive: {@link GradientLimit}),
 * at most `maxQueue` calls waiting for a slot, first come first served; a call that finds the queue
 * full is refused at once.
 *
 * Why a limit on top of deadlines and the retry budget: a deadline bounds how long *one* call waits,
 * the budget how many *extra* attempts are sent; neither bounds how many calls pile onto a dependency
 * that slowed down. By Little's law in-flight = rate × latency, so a dependency at 10× its latency
 * holds 10× the connections, sockets and memory of its callers, and every other route of the caller
 * that shares them suffers. With a limit, the excess fails in microseconds with its own code, and the
 * dependency's queue (its latency) stops growing.
 *
 * The executor is the only user: it asks for a slot before an attempt is sent (`tryAcquire`, or
 * `enqueue` to wait), releases it when the attempt is over *on the wire* (the response's last byte,
 * or the request torn down: what the server counts as in flight), and feeds the RTT of each answered
 * attempt to the adaptive limit (`sample`).
 */
export interface LimitWaiter {
  /**
   * A slot is this waiter's now (it holds one: release it when its attempt is over). Must not throw:
   * a throw is turned into a process warning, never into the releaser's error, and the slot stays
   * the waiter's.
   */
  granted(): void;
  /** Set by the limiter while queued; the waiter must not touch it. */
  queued?: boolean;
}

/** What the limit stands at (metrics, errors). */
export interface ConcurrencyLimitState {
  readonly limit: number;
  readonly inFlight: number;
  readonly queued: number;
  readonly maxQueue: number;
  readonly adaptive: boolean;
}

const LIMITER = Symbol.for('prazo.concurrencyLimiter');

export class ConcurrencyLimiter {
  readonly [LIMITER] = true;
  readonly maxQueue: number;
  readonly #fixed: number;
  readonly #gradient: GradientLimit | undefined;
  #inFlight = 0;
  /** FIFO of waiters; cancelled ones are skipped when reached (and compacted when many). */
  #queue: LimitWaiter[] = [];
  #head = 0;
  #queued = 0;

  constructor(options: ConcurrencyLimitOptions, clock: Clock) {
    const adaptive = options.adaptive;
    if (adaptive !== undefined && adaptive !== false) {
      const settings = gradientSettings(adaptive);
      this.#gradient = new GradientLimit(settings, clock.now());
      this.#fixed = settings.initial;
    } else {
      this.#fixed = options.maxInFlight ?? 1;
    }
    this.maxQueue = options.maxQueue ?? this.#fixed;
  }

  get limit(): number {
    return this.#gradient === undefined ? this.#fixed : this.#gradient.limit;
  }

  get inFlight(): number {
    return this.#inFlight;
  }

  get queued(): number {
    return this.#queued;
  }

  state(): ConcurrencyLimitState {
    return Object.freeze({
      limit: this.limit,
      inFlight: this.#inFlight,
      queued: this.#queued,
      maxQueue: this.maxQueue,
      adaptive: this.#gradient !== undefined,
    });
  }

  /** Takes a slot when one is free and nobody waits for it (waiters are served first). */
  tryAcquire(): boolean {
    if (this.#inFlight >= this.limit || this.#queued > 0) return false;
    this.#inFlight += 1;
    return true;
  }

  /**
   * Waits for a slot: false (not queued) when the queue is full. For a call that could not take one
   * ({@link tryAcquire} false): a waiter is granted by a later release or a grown limit, never inside
   * this call (its caller arms its wait after it returns), so one queued while a slot is free waits
   * for the next release.
   */
  enqueue(waiter: LimitWaiter): boolean {
    if (this.#queued >= this.maxQueue) return false;
    waiter.queued = true;
    this.#queue.push(waiter);
    this.#queued += 1;
    return true;
  }

  /** A waiter gives up (its deadline, its caller): it leaves the queue. */
  cancel(waiter: LimitWaiter): void {
    if (waiter.queued !== true) return;
    waiter.queued = false;
    this.#queued -= 1;
    if (this.#queue.length - this.#head > 2 * this.#queued + 32) this.#compact();
  }

  /** A slot is free again; the next waiter gets it. */
  release(): void {
    if (this.#inFlight > 0) this.#inFlight -= 1;
    this.#grant();
  }

  /** One answered attempt's RTT, in ms, at `now` (the adaptive limit learns from it). */
  sample(rttMs: number, now: number): void {
    if (this.#gradient?.sample(rttMs, now, this.#inFlight + this.#queued)) this.#grant();
  }

  #grant(): void {
    while (this.#queued > 0 && this.#inFlight < this.limit) {
      const waiter = this.#queue[this.#head]!;
      this.#head += 1;
      if (waiter.queued !== true) continue;
      waiter.queued = false;
      this.#queued -= 1;
      this.#inFlight += 1;
      try {
        waiter.granted();
      } catch (error) {
        // The waiter's failure is its own: thrown on, it would land in whoever released the slot (an
        // unrelated attempt ending, which it would leave unsettled) and strand the waiters behind it.
        // The slot stays the waiter's, as `granted` says: it releases it (or leaks it) itself.
        process.emitWarning(
          `prazo concurrency limit: a waiter's grant threw: ${thrownText(error)}`,
          'PrazoWarning',
        );
      }
    }
    if (this.#head > 64 && this.#head * 2 > this.#queue.length) this.#compact();
  }

  #compact(): void {
    this.#queue = this.#queue.slice(this.#head).filter((w) => w.queued === true);
    this.#head = 0;
  }
}

/** True for a limiter made by any copy of prazo (shared across live recalibrations of a client). */
export function isConcurrencyLimiter(value: unknown): value is ConcurrencyLimiter {
  return value !== null && typeof value === 'object' && (value as Record<symbol, unknown>)[LIMITER] === true;
}
