/**
 * Two event counts over a sliding window of time buckets: constant memory whatever the rate, O(1)
 * per event (a rotation touches at most every bucket once, however long the pause before it).
 *
 * The window is `buckets` buckets of `bucketMs`. A ring of `buckets + 1` slots keeps one bucket more
 * than the window, so each count can be read over the span that makes the budget conservative:
 * - `originals()` sums the newest `buckets` buckets: a span of at most `windowMs` (it may forget the
 *   oldest partial bucket early), so the allowance derived from it is never larger than the truth;
 * - `extras()` sums all `buckets + 1` slots: a span of at least `windowMs`, so every extra attempt
 *   spent in the last `windowMs` is still counted against the budget.
 * Together: extras in any `windowMs` interval ending now ≤ what the budget counts ≤ its allowance
 * computed from originals in that same interval (the invariant the property tests check).
 */
export class BucketWindow {
  readonly #bucketMs: number;
  readonly #slots: number;
  readonly #originals: Float64Array;
  readonly #extras: Float64Array;
  /** Slot of the newest bucket, and that bucket's index on the time axis (`floor(now / bucketMs)`). */
  #head = 0;
  #headIndex: number;
  /** Where the head bucket ends (`(headIndex + 1) × bucketMs`): a reading before it moves nothing. */
  #headEndsAt: number;
  #sumOriginals = 0;
  #sumExtras = 0;

  constructor(windowMs: number, buckets: number, now: number) {
    this.#bucketMs = windowMs / buckets;
    this.#slots = buckets + 1;
    this.#originals = new Float64Array(this.#slots);
    this.#extras = new Float64Array(this.#slots);
    this.#headIndex = Math.floor(now / this.#bucketMs);
    this.#headEndsAt = headEnd(this.#headIndex, this.#bucketMs);
  }

  /**
   * Moves the window to `now`. A reading that is not a finite number is not a time: ignored (taken,
   * one `Infinity` would put the head where no later reading reaches, and the counts would never
   * expire again: a lifetime ratio, an outage's retries let through); a head never placed on a finite
   * reading (a clock that read NaN at first) is placed on the first one.
   *
   * Time that goes backwards (it should not: monotonic) is ignored, counts kept, until the clock is
   * back past the head. A late reading is one such; a clock stepped back for good (NTP, a
   * wall-clock `now`) freezes the window for the length of the step, which keeps every count (the
   * ratio is then over a longer span, never over nothing). Taking a step back as a new start would
   * forget less, but a caller whose readings alternate between two time bases (an epoch `now` passed
   * with a monotonic clock) would then empty the window at every jump forward and be granted every
   * extra attempt: a budget that fails open. This one cannot.
   */
  advance(now: number): void {
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
      this.#originals.fill(0);
      this.#extras.fill(0);
      this.#sumOriginals = 0;
      this.#sumExtras = 0;
      return;
    }
    const slots = this.#slots;
    for (; steps > 0; steps -= 1) {
      // The slot after the head is the oldest (its originals already left the sum): recycle it.
      const reused = this.#head + 1 === slots ? 0 : this.#head + 1;
      this.#sumExtras -= this.#extras[reused]!;
      this.#extras[reused] = 0;
      this.#originals[reused] = 0;
      this.#head = reused;
      // The new oldest slot now falls out of the originals' span.
      const oldest = reused + 1 === slots ? 0 : reused + 1;
      this.#sumOriginals -= this.#originals[oldest]!;
    }
  }

  #moveHead(index: number): void {
    this.#headIndex = index;
    this.#headEndsAt = headEnd(index, this.#bucketMs);
  }

  addOriginal(): void {
    this.#originals[this.#head]! += 1;
    this.#sumOriginals += 1;
  }

  addExtra(count = 1): void {
    this.#extras[this.#head]! += count;
    this.#sumExtras += count;
  }

  /** Originals in the newest `buckets` buckets (call `advance` first). */
  originals(): number {
    return this.#sumOriginals;
  }

  /** Extras in all `buckets + 1` slots (call `advance` first). */
  extras(): number {
    return this.#sumExtras;
  }
}

/**
 * Where the bucket `index` of a ring of `bucketMs` buckets ends: a reading before it moves nothing,
 * which spares most readings a division (several per call). A head never placed on a finite reading
 * gets NaN, which no reading is before: the next one takes the full path, and places it.
 */
export function headEnd(index: number, bucketMs: number): number {
  return Number.isFinite(index) ? (index + 1) * bucketMs : Number.NaN;
}
