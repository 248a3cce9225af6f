import { type Clock, MAX_TIMER_DELAY_MS } from '../clock/clock.js';
import { systemClock } from '../clock/system.js';
import { DeadlineExceededError } from '../errors/deadline.js';
import { InvalidOptionsError } from '../errors/options.js';
import { defineOptions, type OptionsOf, option } from '../options/declare.js';
import { checkCallOptions } from '../options/validator.js';
import { DeadlineHeaders } from './constants.js';
import { formatGrpcTimeout } from './parse.js';

/** Options of {@link Deadline.after} and {@link Deadline.at}. */
export const DEADLINE_OPTIONS = defineOptions({
  /** Where time comes from. Default: the system clock. */
  clock: option.clock(),
});

export type DeadlineOptions = OptionsOf<typeof DEADLINE_OPTIONS>;

/** RFC 9110 token: what a header name may contain. */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** Which headers {@link Deadline.toHeaders} writes (SPEC D1, D5), declared once. */
export const HEADER_FORMAT_OPTIONS = defineOptions({
  /** Name of the absolute epoch-ms header, or `false` to omit it. Default `x-deadline-epoch-ms`. */
  epochMs: option.matching<string | false>(
    'a header name (RFC 9110 token) or false',
    (v) => v === false || (typeof v === 'string' && v.length <= 256 && TOKEN.test(v)),
  ),
  /** Also write `grpc-timeout` (relative). Default false. */
  grpcTimeout: option.boolean({ default: false }),
  /** Also write `x-envoy-expected-rq-timeout-ms` (relative, whole ms, never below 1). Default false. */
  envoy: option.boolean({ default: false }),
});

export type HeaderFormat = OptionsOf<typeof HEADER_FORMAT_OPTIONS>;

const hasDeadlineMethods = option.hasMethods(
  'remainingMs',
  'remainingMsAt',
  'epochMs',
  'min',
  'cap',
  'toHeaders',
);

/**
 * True for a {@link Deadline}, also one made by another installed copy of prazo (read through its
 * methods, never by `instanceof`).
 */
export function isDeadline(value: unknown): value is Deadline {
  // Its own class first (a prototype read, where the method check reads five properties).
  return (
    (value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Deadline.prototype) ||
    hasDeadlineMethods(value)
  );
}

/** Which of a format's headers one write covers: all, the absolute one, or the relative ones. */
export type DeadlineHeaderForms = 'all' | 'absolute' | 'relative';

/**
 * The one writer of outgoing deadline headers (SPEC D1, D5): every form, for every integration —
 * {@link Deadline.toHeaders}, and prazo/http, which writes the absolute header when it dispatches an
 * attempt and the relative ones when the request is written. It writes the headers `format` asks for,
 * of a limit `leftMs` from now whose wall-clock instant is `epochNow + leftMs`, into `out`: a record,
 * or undici's flat `[name, value, ...]` list. The rules live here alone, so no two forms disagree:
 *
 * - the absolute `x-deadline-epoch-ms` (or `format.epochMs`'s name) is whole epoch ms, rounded down;
 * - `grpc-timeout` is never `0m`, which says "expired" (`formatGrpcTimeout`: `1n` at the least);
 * - `x-envoy-expected-rq-timeout-ms` is whole ms, never below 1: Envoy reads 0 as "no timeout" (its
 *   own router writes 1);
 * - an endless limit (`Infinity`, or NaN) writes **nothing**: there is no limit to carry, and the next
 *   hop treats the request as one without a deadline (its own default and cap apply);
 * - a finite limit further away than a timer can hold (2^31-1 ms, about 24.8 days) is written as that
 *   far: still a limit, never `Infinity` or an exponent.
 */
export function writeDeadlineHeaders(
  out: Record<string, string> | string[],
  format: HeaderFormat,
  leftMs: number,
  epochNow: number,
  forms: DeadlineHeaderForms = 'all',
): void {
  if (!(leftMs < Number.POSITIVE_INFINITY)) return;
  const ahead = leftMs > MAX_TIMER_DELAY_MS ? MAX_TIMER_DELAY_MS : leftMs;
  if (forms !== 'relative') {
    const name = format.epochMs === undefined ? DeadlineHeaders.epochMs : format.epochMs;
    if (name) put(out, name, epochText(Math.floor(epochNow + ahead)));
  }
  if (forms === 'absolute') return;
  const relative = ahead > 0 ? ahead : 0;
  if (format.grpcTimeout) put(out, DeadlineHeaders.grpcTimeout, formatGrpcTimeout(relative));
  if (format.envoy) {
    put(out, DeadlineHeaders.envoyExpected, relative >= 1 ? String(Math.floor(relative)) : '1');
  }
}

/**
 * The last instant written and its text: calls that start within the same millisecond with the same
 * limit (a busy service's, every few µs) write the same header, and a number's text is most of its cost.
 */
let lastEpoch = Number.NaN;
let lastEpochText = '';

function epochText(epochMs: number): string {
  if (epochMs !== lastEpoch) {
    lastEpoch = epochMs;
    lastEpochText = String(epochMs);
  }
  return lastEpochText;
}

function put(out: Record<string, string> | string[], name: string, value: string): void {
  if (Array.isArray(out)) out.push(name, value);
  else out[name] = value;
}

/**
 * Refuses a time that is not a number (a header's text, a config string, a BigInt): added to a clock
 * reading it would concatenate or throw, and a string compared with a number is read as one, so
 * `Deadline.after('100')` at `now` 5 lasted 5095 ms and `Deadline.at('1700000000100')` was expired.
 * NaN stays a number: the methods give it their documented meaning.
 */
function checkMs(context: string, name: string, value: unknown): void {
  if (typeof value !== 'number') {
    throw new InvalidOptionsError(context, [
      `\`${name}\` must be a number of ms, got ${value === null ? 'null' : typeof value}`,
    ]);
  }
}

const isClock = option.hasMethods('now', 'epochNow', 'setTimer', 'clearTimer');

/**
 * Refuses a `Clock` given where its options go (`Deadline.after(100, clock)`, as `afterAt` takes it):
 * read as options it has no `clock` key, and the deadline would run on the system clock, silently
 * (a test advancing its fake clock then sees nothing happen). Used by every deadline maker that
 * takes `{ clock }`.
 */
export function refuseBareClock(context: string, options: unknown): void {
  if (options !== undefined && isClock(options)) {
    throw new InvalidOptionsError(context, ['the options are a Clock: pass it as `{ clock }`']);
  }
}

function checkDeadlineOptions(context: string, options: DeadlineOptions | undefined): void {
  refuseBareClock(context, options);
  checkCallOptions(context, DEADLINE_OPTIONS, options);
}

/**
 * An absolute instant by which a whole operation must be done (SPEC D1). Immutable: combining
 * deadlines (`min`, `cap`, `slice`) returns the earlier one, never moves one. It lives on the
 * monotonic clock inside the process and turns into wall-clock epoch ms only when it leaves (headers),
 * and into a relative delay only when a timer is armed (grpc-js's `deadline.ts` does the same).
 */
export class Deadline {
  /** `instanceof Deadline` holds for a deadline of another installed copy of prazo too (its methods). */
  static [Symbol.hasInstance](value: unknown): boolean {
    return isDeadline(value);
  }

  /** Monotonic instant (the clock's `now()` scale) at which the deadline passes. */
  readonly at: number;
  readonly clock: Clock;
  #controller: AbortController | undefined;

  private constructor(at: number, clock: Clock) {
    this.at = at;
    this.clock = clock;
  }

  /**
   * A deadline `ms` from now. NaN or negative `ms` gives an already expired deadline, `Infinity` an
   * endless one; `ms` that is not a number throws INVALID_OPTIONS, and so does a Clock passed in
   * place of `{ clock }` (it would have been ignored for the system clock).
   */
  static after(ms: number, options?: DeadlineOptions): Deadline {
    checkMs('Deadline.after', 'ms', ms);
    checkDeadlineOptions('Deadline.after', options);
    const clock = options?.clock ?? systemClock;
    return new Deadline(clock.now() + (ms > 0 ? ms : 0), clock);
  }

  /**
   * A deadline `ms` after `now`, a reading of `clock` the caller just took: saves a clock read on a hot
   * path. NaN or negative `ms` gives an already expired deadline.
   */
  static afterAt(now: number, ms: number, clock: Clock): Deadline {
    if (typeof ms !== 'number') checkMs('Deadline.afterAt', 'ms', ms);
    return new Deadline(now + (ms > 0 ? ms : 0), clock);
  }

  /**
   * A deadline at a wall-clock epoch in ms (as received from another host). A past instant, NaN or
   * `-Infinity` gives an already expired deadline; `Infinity` an endless one, as `after(Infinity)`.
   * An epoch that is not a number (a header's text: read the request with `deadlineFromHeaders`)
   * throws INVALID_OPTIONS.
   */
  static at(epochMs: number, options?: DeadlineOptions): Deadline {
    checkMs('Deadline.at', 'epochMs', epochMs);
    checkDeadlineOptions('Deadline.at', options);
    const clock = options?.clock ?? systemClock;
    const now = clock.now();
    const delta = epochMs === Number.POSITIVE_INFINITY ? epochMs : epochMs - clock.epochNow();
    return new Deadline(now + (delta > 0 ? delta : 0), clock);
  }

  /** Milliseconds left; never negative. */
  remainingMs(): number {
    const left = this.at - this.clock.now();
    return left > 0 ? left : 0;
  }

  /**
   * Milliseconds left at `now`, a reading of `clock` the caller just took: saves a clock read on a hot
   * path. With another clock than the deadline's, the reading means nothing here and time is read anew.
   */
  remainingMsAt(now: number, clock: Clock): number {
    if (clock !== this.clock) return this.remainingMs();
    const left = this.at - now;
    return left > 0 ? left : 0;
  }

  /** True once no time is left: exactly when `remainingMs()` reads 0 (also for a clock reading NaN). */
  expired(): boolean {
    return !(this.clock.now() < this.at);
  }

  /** The deadline as wall-clock epoch ms, read now (what goes on the wire). */
  epochMs(): number {
    return this.clock.epochNow() + (this.at - this.clock.now());
  }

  /**
   * The earlier of two deadlines. Two deadlines on different clocks (a test's fake one, another
   * copy's) are compared by the time they have left. No other deadline (`undefined`, or `null`) is
   * no limit: this one.
   */
  min(other: Deadline | undefined): Deadline {
    if (other === undefined || other === null || other === this) return this;
    if (other.clock === this.clock) return other.at < this.at ? other : this;
    return other.remainingMs() < this.remainingMs() ? other : this;
  }

  /**
   * This deadline, but no later than `maxMs` from now (a local ceiling, SPEC D2). NaN or negative
   * `maxMs` gives an already expired deadline, `Infinity` this one; `maxMs` that is not a number
   * throws INVALID_OPTIONS.
   */
  cap(maxMs: number): Deadline {
    if (typeof maxMs !== 'number') checkMs('Deadline.cap', 'maxMs', maxMs);
    const limit = this.clock.now() + (maxMs > 0 ? maxMs : 0);
    return limit < this.at ? new Deadline(limit, this.clock) : this;
  }

  /** A child deadline for one component: `min(this, now + ms)` (its slice of a latency budget, SPEC B2). */
  slice(ms: number): Deadline {
    if (typeof ms !== 'number') checkMs('Deadline.slice', 'ms', ms);
    return this.cap(ms);
  }

  /**
   * An AbortSignal that aborts with a {@link DeadlineExceededError} when the deadline passes. Created
   * on first read (most deadlines never need one), backed by a single unref'd timer that is re-armed
   * for deadlines beyond a timer's range; an endless deadline's never aborts and arms no timer (as
   * `armDeadlineTimer`). It adds no listener of its own.
   */
  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      const controller = new AbortController();
      this.#arm(controller); // kept only once armed: a clock whose setTimer threw leaves no dead signal
      this.#controller = controller;
    }
    return this.#controller.signal;
  }

  #arm(controller: AbortController): void {
    const left = this.at - this.clock.now();
    // Not `left <= 0`: a clock reading NaN (a user's broken Clock) would re-arm a 0 ms timer forever.
    if (!(left > 0)) {
      controller.abort(new DeadlineExceededError({ deadlineEpochMs: this.epochMs() }));
      return;
    }
    if (left === Number.POSITIVE_INFINITY) return;
    const fire = (): void => this.#arm(controller);
    this.clock.setTimer(fire, Math.min(left, MAX_TIMER_DELAY_MS), { unref: true });
  }

  /**
   * The outgoing header(s) that carry this deadline on (SPEC D1, D5), from one reading of the clock:
   * the absolute `x-deadline-epoch-ms` (or the name `format.epochMs` gives) and, on request, the
   * relative `grpc-timeout` (never `0m`) and `x-envoy-expected-rq-timeout-ms` (whole ms, never below
   * 1), written by {@link writeDeadlineHeaders}. An endless deadline (`Deadline.after(Infinity)`)
   * sends **no header**; one further away than a timer can hold is written as that far. A `format`
   * that is not one (an `epochMs` name that is not an RFC 9110 token, an unknown key) throws
   * INVALID_OPTIONS, as it does where `headerFormat` is an option.
   */
  toHeaders(format: HeaderFormat = {}): Record<string, string> {
    checkCallOptions('Deadline.toHeaders', HEADER_FORMAT_OPTIONS, format);
    const headers: Record<string, string> = {};
    const left = this.at - this.clock.now();
    if (left < Number.POSITIVE_INFINITY) writeDeadlineHeaders(headers, format, left, this.clock.epochNow());
    return headers;
  }

  toString(): string {
    return `Deadline(${Math.floor(this.remainingMs())} ms left)`;
  }
}
