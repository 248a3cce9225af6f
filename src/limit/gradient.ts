import { RECORDER_LIMITS } from '../latency/constants.js';
import type { AdaptiveLimitOptions } from './options.js';
import { ADAPTIVE_LIMIT_OPTIONS } from './options.js';

/** Resolved adaptive-limit settings (defaults applied). */
export type GradientSettings = Required<AdaptiveLimitOptions>;

/**
 * The settings of `adaptive: true | {...}`, defaults applied. A key given as `undefined` (valid: it
 * reads as its default) keeps the default: spread over the defaults it would replace it, and an
 * `initial` of undefined made the limit NaN, which refuses nothing (no limit at all).
 */
export function gradientSettings(given: true | AdaptiveLimitOptions): GradientSettings {
  const settings: Record<string, unknown> = { ...ADAPTIVE_LIMIT_OPTIONS.defaults };
  if (given !== true) {
    for (const [key, value] of Object.entries(given)) if (value !== undefined) settings[key] = value;
    // The default start brought into the range the caller gave: `{ max: 10 }` starts at 10, not 20.
    if (given.initial === undefined) {
      const { min, max, initial } = settings as GradientSettings;
      settings.initial = initial > max ? max : initial < min ? min : initial;
    }
  }
  return Object.freeze(settings) as GradientSettings;
}

/**
 * The adaptive limit's controller (see `ADAPTIVE_LIMIT_OPTIONS` for the why of each number): fed one
 * RTT per answered attempt, it judges each window — `gradient = clamp(tolerance × minRtt / meanRtt,
 * 0.5, 1)`, target `limit × gradient + √limit`, limit moved towards it by `smoothing` — and reads as a
 * number in [`min`, `max`]. The minimum RTT is the least window mean over the last
 * `minRttHorizonMs`, kept as two half-horizon minima (the older one forgotten at each rotation), so
 * it is O(1) in memory and time and it can move up when the dependency's healthy latency does.
 *
 * Pure: time comes in with each sample, nothing is armed.
 */
export class GradientLimit {
  readonly #s: GradientSettings;
  #limit: number;
  #windowStart: number;
  #sum = 0;
  #count = 0;
  /** Most attempts in flight or waiting seen in this window (app-limited check). */
  #peak = 0;
  #minOld = Number.POSITIVE_INFINITY;
  #minNew = Number.POSITIVE_INFINITY;
  #rotateAt: number;

  constructor(settings: GradientSettings, now: number) {
    this.#s = settings;
    this.#limit = settings.initial;
    this.#windowStart = now;
    this.#rotateAt = now + settings.minRttHorizonMs / 2;
  }

  /** The limit now: a whole number of attempts in [`min`, `max`]. */
  get limit(): number {
    return Math.floor(this.#limit);
  }

  /** The least RTT over the horizon, in ms (undefined before the first judged window). */
  get minRttMs(): number | undefined {
    const min = Math.min(this.#minOld, this.#minNew);
    return min === Number.POSITIVE_INFINITY ? undefined : min;
  }

  /**
   * One RTT (ms) observed at `now`, with `demand` attempts in flight or waiting for a slot; returns
   * true when the limit changed. A NaN or negative RTT is ignored; so is a `now` that is not a finite
   * number, and one more than a window before the window's start is a pause (`#rebase`).
   */
  sample(rttMs: number, now: number, demand: number): boolean {
    const before = this.limit;
    const elapsed = now - this.#windowStart;
    if (elapsed >= this.#s.windowMs && elapsed < Number.POSITIVE_INFINITY) this.#judge(now);
    else if (!(elapsed >= -this.#s.windowMs && elapsed < Number.POSITIVE_INFINITY) && Number.isFinite(now))
      this.#rebase(now);
    if (demand > this.#peak) this.#peak = demand;
    if (rttMs >= 0 && rttMs < Number.POSITIVE_INFINITY) {
      // Clamped as the recorder clamps (a broken clock's difference can be any double): a few samples
      // near 1e308 would sum to Infinity, and a mean of Infinity over a minimum of Infinity is NaN,
      // which as the limit admits everything.
      this.#sum += rttMs > RECORDER_LIMITS.maxLatencyMs ? RECORDER_LIMITS.maxLatencyMs : rttMs;
      this.#count += 1;
    }
    return this.limit !== before;
  }

  /**
   * `now` is more than a window before the window's start (a clock stepped back: a reading a moment
   * late is only ignored), or the start was never a finite reading: the window and the horizon resume
   * from `now`, as after a pause, instead of waiting for the clock to come back (an `Infinity` reading
   * is never taken: it would end judging for good).
   */
  #rebase(now: number): void {
    const shift = Number.isFinite(this.#windowStart) ? now - this.#windowStart : 0;
    this.#rotateAt = Number.isFinite(this.#rotateAt)
      ? this.#rotateAt + shift
      : now + this.#s.minRttHorizonMs / 2;
    this.#windowStart = now;
  }

  #judge(now: number): void {
    const s = this.#s;
    const count = this.#count;
    const rtt = count > 0 ? this.#sum / count : 0;
    const peak = this.#peak;
    this.#windowStart = now;
    this.#sum = 0;
    this.#count = 0;
    this.#peak = 0;
    if (count < s.minSamples || !(rtt > 0)) return;
    if (now >= this.#rotateAt) {
      this.#minOld = this.#minNew;
      this.#minNew = Number.POSITIVE_INFINITY;
      this.#rotateAt = now + s.minRttHorizonMs / 2;
    }
    if (rtt < this.#minNew) this.#minNew = rtt;
    const minRtt = Math.min(this.#minOld, this.#minNew);
    const raw = (s.tolerance * minRtt) / rtt;
    const gradient = raw < 0.5 ? 0.5 : raw > 1 ? 1 : raw;
    const limit = this.#limit;
    // Growth must be earned: with less than half the limit in use, the caller is the bottleneck.
    if (gradient === 1 && peak < limit / 2) return;
    const target = limit * gradient + Math.sqrt(limit);
    const next = limit * (1 - s.smoothing) + target * s.smoothing;
    this.#limit = next < s.min ? s.min : next > s.max ? s.max : next;
  }
}
