import type { Clock } from '../clock/clock.js';
import { thrownText } from '../errors/base.js';
import { RECORDER_LIMITS } from './constants.js';
import { type LatencyRecorderOptions, resolveRecorderOptions, type Settings } from './options.js';
import type { LatencySnapshot, LatencySource, Outcome } from './types.js';
import { LatencyWindow } from './window.js';

/**
 * A latency recorder per dependency (SPEC C1, C4, C5, H1): rotating windows, tower-style.
 *
 * Two windows are kept: the one being filled and the last full one. Reads (`quantile`, `lastWindow`)
 * see only the last **full** window, never a half-filled one, so a p99 does not swing at the start
 * of every window, and a value is at most two windows old. Rotation is lazy (checked on each record
 * and read against `clock.now()`), so the recorder arms no timer and needs no `close()`. When two or
 * more windows pass without a sample, the last full window is empty: an idle dependency has no p99,
 * rather than a stale one (tower's `RotatingHistogram` does the same).
 *
 * Hot path: `record` is O(1) and allocation-free once the sketch's bins are sized (windows are
 * reused, see `sketch.ts`; `allocation.test.ts` checks that 2M records trigger no young-generation GC). `quantile(q)` is served from a per-rotation cache (p50/p95/p99/p99.9
 * precomputed, up to 16 other `q` memoised), because the HTTP client and hedging ask on every request.
 *
 * Histogram library: DDSketch, for the reasons measured in `sketch.ts` and docs/calibration.md.
 * Nothing here awaits: construction is synchronous.
 */

export type { LatencyRecorderOptions } from './options.js';

/** A {@link LatencySource} with its settings visible. */
export interface LatencyRecorder extends LatencySource {
  readonly windowMs: number;
  readonly minSamples: number;
  readonly relativeAccuracy: number;
}

const PRECOMPUTED = [0.5, 0.95, 0.99, 0.999] as const;
const MAX_LATENCY_MS = RECORDER_LIMITS.maxLatencyMs;
const MIN_LATENCY_MS = RECORDER_LIMITS.minLatencyMs;

class RotatingRecorder implements LatencyRecorder {
  readonly windowMs: number;
  readonly minSamples: number;
  readonly relativeAccuracy: number;
  readonly #clock: Clock;
  readonly #onWindow: ((closed: LatencySnapshot) => void) | undefined;
  #current: LatencyWindow;
  #last: LatencyWindow;
  #lastSnapshot: LatencySnapshot | undefined;
  #lastTrusted = false;
  // Per-rotation quantile cache: fixed arrays, NaN meaning "no value".
  readonly #cacheQ = new Float64Array(RECORDER_LIMITS.maxCachedQuantiles);
  readonly #cacheV = new Float64Array(RECORDER_LIMITS.maxCachedQuantiles);
  #cacheSize = 0;

  constructor(s: Settings) {
    this.windowMs = s.windowMs;
    this.minSamples = s.minSamples;
    this.relativeAccuracy = s.relativeAccuracy;
    this.#clock = s.clock;
    this.#onWindow = s.onWindow;
    const now = s.clock.now();
    this.#current = new LatencyWindow(s.relativeAccuracy, now);
    this.#last = new LatencyWindow(s.relativeAccuracy, now - s.windowMs);
  }

  record(latencyMs: number, outcome: Outcome, at?: number, clock?: Clock): void {
    // Kept flat (no helper calls with the double): V8 boxes a double passed to a call it did not inline.
    // Nothing to learn from NaN, nor from what is not a number at all: a string ('12.5', read from a
    // header) would land in the sketch as a string (its max, its p99 strings, compared as text), and
    // null or an object would count as a 0 ms success.
    if (typeof latencyMs !== 'number' || Number.isNaN(latencyMs)) return;
    const now = clock === this.#clock && at !== undefined ? at : this.#clock.now();
    const elapsed = now - this.#current.startedAt;
    if (!(elapsed >= -this.windowMs && elapsed < this.windowMs)) this.#rotateIfDue(now);
    const w = this.#current;
    if (outcome === 'success') {
      const ms = latencyMs > 0 ? (latencyMs < MAX_LATENCY_MS ? latencyMs : MAX_LATENCY_MS) : 0;
      w.successes += 1;
      w.sketch.accept(ms < MIN_LATENCY_MS ? 0 : ms);
      if (ms > w.maxMs) w.maxMs = ms;
    } else if (outcome === 'timeout') {
      w.timeouts += 1;
    } else {
      w.errors += 1;
    }
  }

  quantile(q: number, at?: number, clock?: Clock): number | undefined {
    this.#rotateIfDue(clock === this.#clock && at !== undefined ? at : this.#clock.now());
    if (!this.#lastTrusted || !(q > 0 && q < 1)) return undefined;
    const keys = this.#cacheQ;
    for (let i = 0; i < this.#cacheSize; i += 1) {
      if (keys[i] === q) {
        const value = this.#cacheV[i]!;
        return Number.isNaN(value) ? undefined : value;
      }
    }
    const value = this.#last.quantile(q);
    if (this.#cacheSize < keys.length) {
      keys[this.#cacheSize] = q;
      this.#cacheV[this.#cacheSize] = value ?? Number.NaN;
      this.#cacheSize += 1;
    }
    return value;
  }

  lastWindow(): LatencySnapshot | undefined {
    this.#rotateIfDue(this.#clock.now());
    return this.#lastSnapshot;
  }

  currentWindow(): LatencySnapshot {
    const now = this.#clock.now();
    this.#rotateIfDue(now);
    return this.#current.snapshot(now);
  }

  /**
   * Rotates when a window is over at `now`. A reading that is not a finite number is not a time:
   * ignored (taken, a NaN would rotate every later read into an empty window, and an `Infinity` would
   * put the window's start where no later reading reaches: no quantile ever again). A reading at most a window before the current window's
   * start is a late one, ignored; one further back is a clock that should be monotonic but was
   * stepped back, and the current window's time restarts from it, samples kept, instead of serving
   * the last window's quantiles, stale, until the clock is back where it was.
   */
  #rotateIfDue(now: number): void {
    const closed = this.#current;
    const elapsed = now - closed.startedAt;
    if (!(elapsed >= this.windowMs && elapsed < Number.POSITIVE_INFINITY)) {
      // Back in time, or a start never placed on a finite reading (a clock that read NaN at first).
      if (!(elapsed >= -this.windowMs) && Number.isFinite(now)) closed.startedAt = now;
      return;
    }
    const windows = Math.floor(elapsed / this.windowMs);
    const start = closed.startedAt + windows * this.windowMs;
    const closedSnapshot = closed.count > 0 ? closed.snapshot(closed.startedAt + this.windowMs) : undefined;
    const spare = this.#last;
    if (windows === 1) {
      this.#last = closed;
      this.#lastSnapshot = closedSnapshot ?? closed.snapshot(start);
      spare.reset(start);
      this.#current = spare;
    } else {
      // Idle for a whole window or more: the last full window is an empty one.
      spare.reset(start - this.windowMs);
      this.#last = spare;
      this.#lastSnapshot = spare.snapshot(start);
      closed.reset(start);
    }
    this.#refreshCache();
    if (closedSnapshot !== undefined) this.#notify(closedSnapshot);
  }

  #refreshCache(): void {
    const last = this.#lastSnapshot!;
    this.#lastTrusted = last.successes >= this.minSamples;
    const values = [last.p50, last.p95, last.p99, last.p999];
    for (let i = 0; i < PRECOMPUTED.length; i += 1) {
      this.#cacheQ[i] = PRECOMPUTED[i]!;
      this.#cacheV[i] = values[i] ?? Number.NaN;
    }
    this.#cacheSize = PRECOMPUTED.length;
  }

  #notify(closed: LatencySnapshot): void {
    if (this.#onWindow === undefined) return;
    try {
      this.#onWindow(closed);
    } catch (error) {
      process.emitWarning(`prazo latency recorder: onWindow threw: ${thrownText(error)}`, 'PrazoWarning');
    }
  }
}

/**
 * Creates a latency recorder (one per dependency). Synchronous, timer-free; see the module doc.
 * Throws `InvalidOptionsError` listing every bad option.
 *
 * @example
 * const latency = createLatencyRecorder({ windowMs: 10_000, minSamples: 100 });
 * latency.record(elapsedMs, 'success');
 * const p95 = latency.quantile(0.95); // undefined until a full window holds 100 successes
 */
export function createLatencyRecorder(options: LatencyRecorderOptions = {}): LatencyRecorder {
  return new RotatingRecorder(resolveRecorderOptions(options));
}
