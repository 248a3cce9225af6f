import { headEnd } from '../budget/window.js';
import type { Clock } from '../clock/clock.js';
import { ThrottledError } from '../errors/throttle.js';
import { readOptions } from '../options/validator.js';
import type { RandomSource } from '../retry/backoff.js';
import { THROTTLE_OPTIONS, type ThrottleOptions } from './options.js';

/**
 * Client-side adaptive throttling of one dependency (Google SRE book, "Handling Overload"; Envoy's
 * `admission_control`): the client counts the attempts it sends (`requests`) and those the
 * dependency *accepted* — answered with anything but its own failure — over a short sliding window,
 * and refuses a new call locally with probability
 *
 *     p = min(maxProbability, max(0, (requests − k × accepts) / (requests + 1)))
 *
 * Why a probability and not a breaker's open/closed switch: `p` moves with the window, one call at a
 * time, never past `maxProbability`. A dependency failing 30% of its calls loses nothing (k = 2
 * tolerates up to half); one failing most of them converges on `1 − maxProbability` of its calls
 * (refusals count as requests, so below 1/k accepted `p` settles at its cap), never more and never
 * none, so it is never hammered and never forgotten. There is no instant where all traffic stops and
 * no half-open state to tune: the probe share is the half-open state, always on, and its answers are
 * what lowers `p` again, the share sent growing e-fold every `windowMs / k` (docs/throttling.md).
 *
 * Counting: an attempt is counted when its outcome is known (counting it when it starts would take
 * every burst of concurrent calls to a healthy dependency for failures: fifty requests sent at once
 * are fifty unanswered requests for a few milliseconds). A hung dependency is therefore seen when
 * the attempt timeouts fire; until then the concurrency limit, when there is one, bounds what it
 * holds. A refused call counts as a request too (the SRE rule: what the application asked for),
 * which is what lets `p` approach its cap during an outage.
 *
 * **Spread, not drawn.** The refusals are spread evenly over the calls instead of drawn one coin flip
 * per call: each refusable call adds its admission share `1 − p` to a credit, and a call is let
 * through when the credit reaches a threshold, drawn uniformly in [0.5, 1.5) after each admission
 * (mean 1, so the share admitted is `1 − p` as with a coin flip). Why: the probes are the recovery
 * (docs/throttling.md). With a coin flip at p = 0.9, a client of 20 calls a second sends no probe at
 * all for a whole second once in eight, and 39 refusals in a row (2 s) were measured in the demo's
 * `recover`: the return went unseen and recovery took 3.4–3.6 s in two runs of five. Spread, a
 * probe goes out at least every ⌈1.5 / (1 − p)⌉ calls. The threshold is drawn (the executor's
 * `random`), not fixed at 1: a fixed one would make the admitted calls periodic, and calls of two
 * routes that alternate on one client at p = 0.5 would see one route always refused and the other
 * always sent; and clients started together do not probe in step.
 *
 * Memory is two rings of `buckets` counters and the credit; a decision is a few arithmetic
 * operations, and one random draw per admitted call while `p > 0`.
 */
export class AdaptiveThrottle {
  readonly k: number;
  readonly windowMs: number;
  readonly maxProbability: number;
  readonly minRequests: number;
  readonly #bucketMs: number;
  readonly #slots: number;
  readonly #requests: Float64Array;
  readonly #accepts: Float64Array;
  readonly #clock: Clock;
  readonly #random: RandomSource;
  #head = 0;
  #headIndex: number;
  /** Where the head bucket ends (`(headIndex + 1) × bucketMs`): a reading before it moves nothing. */
  #headEndsAt: number;
  #sumRequests = 0;
  #sumAccepts = 0;
  /** The admission share accumulated since the last call let through while refusing (see above). */
  #credit = 0;
  /**
   * What the credit must reach for the next call to go out: uniform in [0.5, 1.5), drawn at the first
   * call that may be refused (NaN until then: a healthy dependency's client never draws).
   */
  #threshold = Number.NaN;

  constructor(options: ThrottleOptions | undefined, clock: Clock, random: RandomSource) {
    const o = readOptions('throttle', THROTTLE_OPTIONS, options ?? {});
    this.k = o.k;
    this.windowMs = o.windowMs;
    this.maxProbability = o.maxProbability;
    this.minRequests = o.minRequests;
    this.#bucketMs = o.windowMs / o.buckets;
    this.#slots = o.buckets;
    this.#requests = new Float64Array(o.buckets);
    this.#accepts = new Float64Array(o.buckets);
    this.#clock = clock;
    this.#random = random;
    this.#headIndex = Math.floor(clock.now() / this.#bucketMs);
    this.#headEndsAt = headEnd(this.#headIndex, this.#bucketMs);
  }

  /**
   * Whether a new call may go out at `now` (the executor clock's reading): while `p > 0`, a share
   * `1 − p` of the calls, spread evenly. A refusal counts as a request; an admitted call is counted
   * when its attempt ends ({@link count}).
   */
  admit(now: number): boolean {
    this.#advance(now);
    const requests = this.#sumRequests;
    if (requests < this.minRequests) return true;
    const raw = (requests - this.k * this.#sumAccepts) / (requests + 1);
    // Capped first: a cap of 0 refuses nothing (a credit of 1 per call would still miss a threshold
    // drawn above 1 now and then).
    const p = raw < this.maxProbability ? raw : this.maxProbability;
    if (!(p > 0)) return true;
    if (!(this.#threshold >= 0.5)) {
      // The first refusable call: a random phase, so that clients started together do not probe in step.
      this.#threshold = this.#draw();
      this.#credit = (this.#draw() - 0.5) * this.#threshold;
    }
    const credit = this.#credit + 1 - p;
    if (credit >= this.#threshold) {
      this.#credit = credit - this.#threshold;
      this.#threshold = this.#draw();
      return true;
    }
    this.#credit = credit;
    this.#requests[this.#head]! += 1;
    this.#sumRequests += 1;
    return false;
  }

  /**
   * An attempt's end at `now`: `accepted` when the dependency answered with anything but its own
   * failure. An attempt that says nothing about the dependency (a losing hedge, a request that never
   * left the local queue) is not counted at all.
   */
  count(now: number, accepted: boolean): void {
    this.#advance(now);
    const head = this.#head;
    this.#requests[head]! += 1;
    this.#sumRequests += 1;
    if (accepted) {
      this.#accepts[head]! += 1;
      this.#sumAccepts += 1;
    }
  }

  /** Whether a new call would be refused with some probability at `now` (the dependency is failing). */
  refusing(now: number): boolean {
    this.#advance(now);
    return this.#probability() > 0;
  }

  /**
   * The error of a call refused at `now`: the window's numbers, which the `throttled` event carries
   * too. Every door (the executor, gRPC, the stores) fails a refused call with it.
   */
  refusal(dependency: string, now: number): ThrottledError {
    const { requests, accepts, probability } = this.state(now);
    return new ThrottledError({ dependency, requests, accepts, probability, windowMs: this.windowMs });
  }

  /** The counts and the refusal probability at `now` (metrics, the error of a refused call). */
  state(now: number = this.#clock.now()): ThrottleState {
    this.#advance(now);
    return { requests: this.#sumRequests, accepts: this.#sumAccepts, probability: this.#probability() };
  }

  /** A threshold uniform in [0.5, 1.5) (a source that gives anything outside [0, 1) gets 1). */
  #moveHead(index: number): void {
    this.#headIndex = index;
    this.#headEndsAt = headEnd(index, this.#bucketMs);
  }

  #draw(): number {
    const u = this.#random();
    return u >= 0 && u < 1 ? 0.5 + u : 1;
  }

  #probability(): number {
    const requests = this.#sumRequests;
    if (requests < this.minRequests) return 0;
    const p = (requests - this.k * this.#sumAccepts) / (requests + 1);
    return p > 0 ? (p < this.maxProbability ? p : this.maxProbability) : 0;
  }

  /**
   * Moves the window to `now`. Time that goes backwards (it should not: monotonic) is ignored, and so
   * is a reading that is not a finite number: one `Infinity` taken would put the head where no later
   * reading reaches, and the window would never move again (a failure's refusals for good). A head
   * never placed on a finite reading (a clock that read NaN at first) is placed on the first one.
   */
  #advance(now: number): void {
    if (now < this.#headEndsAt) return; // still in the head bucket (most calls), or back in time
    const index = Math.floor(now / this.#bucketMs);
    if (!Number.isFinite(index)) return;
    let steps = index - this.#headIndex;
    if (!(steps > 0 && steps < Number.POSITIVE_INFINITY)) {
      if (!Number.isFinite(this.#headIndex)) this.#moveHead(index);
      return;
    }
    this.#moveHead(index);
    if (steps >= this.#slots) {
      this.#requests.fill(0);
      this.#accepts.fill(0);
      this.#sumRequests = 0;
      this.#sumAccepts = 0;
      return;
    }
    const slots = this.#slots;
    for (; steps > 0; steps -= 1) {
      const next = this.#head + 1 === slots ? 0 : this.#head + 1;
      this.#sumRequests -= this.#requests[next]!;
      this.#sumAccepts -= this.#accepts[next]!;
      this.#requests[next] = 0;
      this.#accepts[next] = 0;
      this.#head = next;
    }
  }
}

/** Where a throttle stands: the window's counts and the probability a new call is refused with. */
export interface ThrottleState {
  readonly requests: number;
  readonly accepts: number;
  readonly probability: number;
}

/** What an integration's `throttle` option reads as: `false` off, `true` / undefined the defaults, or the throttle's options. */
export type ThrottleToggle = boolean | ThrottleOptions | undefined;

/** The throttle a `throttle` option asks for (one per dependency), or none when it is switched off. */
export function throttleFrom(
  toggle: ThrottleToggle,
  clock: Clock,
  random: RandomSource | undefined,
): AdaptiveThrottle | undefined {
  if (toggle === false) return undefined;
  return new AdaptiveThrottle(toggle === true ? undefined : toggle, clock, random ?? Math.random);
}

const BY_TARGET = new WeakMap<object, AdaptiveThrottle>();

/**
 * The throttle shared by the calls given the same `target` (a store's per-call functions: the pool or
 * connection they are handed is one database, one dependency), made at its first call with that
 * call's options; later calls' options are not read.
 */
export function throttleOf(
  target: object,
  toggle: ThrottleToggle,
  clock: Clock,
  random: RandomSource | undefined,
): AdaptiveThrottle | undefined {
  if (toggle === false) return undefined;
  let throttle = BY_TARGET.get(target);
  if (throttle === undefined) {
    throttle = throttleFrom(toggle, clock, random)!;
    BY_TARGET.set(target, throttle);
  }
  return throttle;
}

/**
 * How a store reads a failure for the throttle: `true` the server answered (an error it sent: a
 * constraint, a syntax error), `false` it did not (refused, reset, our deadline, its own kill), and
 * undefined for what says nothing of the server (refused before sending, the caller's abort).
 */
export type AcceptedBy = (error: unknown, aborted: boolean) => boolean | undefined;

/**
 * Counts `work`'s outcome on `throttle` once it is known, and passes it on. `success` false: only a
 * failure is counted (taking a connection is not a statement; failing to take one is the server not
 * answering).
 */
export async function countedBy<T>(
  throttle: AdaptiveThrottle | undefined,
  accepted: AcceptedBy,
  clock: Clock,
  signal: AbortSignal | undefined,
  work: () => Promise<T>,
  success = true,
): Promise<T> {
  if (throttle === undefined) return work();
  try {
    const result = await work();
    if (success) throttle.count(clock.now(), true);
    return result;
  } catch (error) {
    const verdict = accepted(error, signal?.aborted === true);
    if (verdict !== undefined) throttle.count(clock.now(), verdict);
    throw error;
  }
}
