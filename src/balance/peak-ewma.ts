/**
 * The latency estimate of one instance: a peak-sensitive, time-decayed moving average of its
 * response times (Finagle's PeakEwma, as tower and linkerd2-proxy use it).
 *
 * Why peak, and why decay in time rather than per sample:
 *
 * - **A slow answer is believed at once.** A sample above the estimate *replaces* it: one 1.5 s stall
 *   makes the instance look 1.5 s slow immediately, so the next picks avoid it. A plain EWMA would
 *   need dozens of slow samples to move, and hand the slow instance its share of traffic meanwhile.
 * - **A fast answer is believed slowly.** A sample below the estimate moves it by
 *   `1 − exp(−Δt / decay)`, where Δt is the time since the last sample: the estimate forgets in
 *   *time*, not in samples, so an instance answering 1,000 fast requests a second does not wash out
 *   a stall in a millisecond.
 * - **An idle estimate decays towards zero.** Read at `now`, the estimate is
 *   `value × exp(−(now − updatedAt) / decay)`: an instance nobody picks (because it looked slow) looks
 *   cheaper as time passes, until a pick probes it again. That is how a slow instance that recovered
 *   gets traffic back, with no health check: at the default 10 s decay, a 1.5 s peak against 20 ms
 *   peers is probed again within about 40 s, and sooner under load (the peers' cost grows with their
 *   in-flight requests).
 *
 * Both updates are the same formula: with `w = exp(−Δt / decay)`, the decayed value is `value × w`
 * (what a read at that instant returns) and a sample `r` below it gives `value × w + r × (1 − w)`.
 * Defaults (`balance/options.ts`): decay 10 s, initial estimate 30 ms (linkerd2-proxy's; Finagle and
 * tower use 1 s, which keeps a new instance out of rotation until its estimate decays).
 */
/** The largest |exponent| {@link PeakEwma.atMost} uses: `e^700` is finite, `e^710` is not. */
const MAX_EXPONENT = 700;

export class PeakEwma {
  #value: number;
  #at: number;
  readonly #decayMs: number;

  constructor(decayMs: number, initialMs: number, now: number) {
    this.#decayMs = decayMs;
    this.#value = initialMs;
    this.#at = now;
  }

  /** The estimate at `now`, in ms: the stored value decayed for the time since it was stored. */
  estimateAt(now: number): number {
    const elapsed = now - this.#at;
    return elapsed > 0 ? this.#value * Math.exp(-elapsed / this.#decayMs) : this.#value;
  }

  /**
   * Whether this estimate × `weight` is at most `other`'s × `otherWeight` at `now` (two instances'
   * costs, in flight counted): the same comparison as two `estimateAt(now)` reads, with one `exp`
   * instead of two, none when both were stored at the same instant. Both decay at the same rate, so
   * only the difference of their ages matters: `a · e^(−(now − tA)/d) ≤ b · e^(−(now − tB)/d)` is
   * `a · e^((tA − tB)/d) ≤ b`. The exponent is bounded (±700: `e^709` is the largest finite double)
   * so that a zero estimate never meets an infinite factor (0 × ∞ is NaN). The picker's hot path.
   */
  atMost(weight: number, other: PeakEwma, otherWeight: number, now: number): boolean {
    const a = this.#at < now ? this.#at : now; // an estimate stored "after" now is not decayed
    const b = other.#at < now ? other.#at : now;
    const left = this.#value * weight;
    const right = other.#value * otherWeight;
    if (a === b) return left <= right;
    let exponent = (a - b) / this.#decayMs;
    if (exponent > MAX_EXPONENT) exponent = MAX_EXPONENT;
    else if (exponent < -MAX_EXPONENT) exponent = -MAX_EXPONENT;
    return left * Math.exp(exponent) <= right;
  }

  /** Takes one response time (ms) observed at `now`. A NaN, negative or infinite sample is ignored. */
  observe(rttMs: number, now: number): void {
    if (!(rttMs >= 0 && rttMs < Number.POSITIVE_INFINITY)) return;
    const elapsed = now - this.#at;
    const w = elapsed > 0 ? Math.exp(-elapsed / this.#decayMs) : 1;
    const decayed = this.#value * w;
    this.#value = rttMs >= decayed ? rttMs : decayed + rttMs * (1 - w);
    if (elapsed > 0 || this.#unplaced(now)) this.#at = now;
  }

  /**
   * The estimate was stored at no time (the clock read NaN when its instance was added) and `now` is
   * one: it takes that time. Left at NaN, every elapsed time is NaN, and the estimate never decays
   * again — an instance that was slow once keeps its peak, and loses its traffic, for good.
   */
  #unplaced(now: number): boolean {
    return Number.isNaN(this.#at) && Number.isFinite(now);
  }

  /**
   * Takes a *lower bound* of one response time (ms) at `now`: an attempt cancelled before it answered
   * (a hedge race's loser) took longer than this, by how much nobody knows. A bound above the estimate
   * is a peak, believed at once; one below it says nothing about the instance being fast, so it moves
   * nothing (as an answer it would be averaged in, as if the instance had answered that fast).
   */
  atLeast(boundMs: number, now: number): void {
    if (!(boundMs >= 0 && boundMs < Number.POSITIVE_INFINITY)) return;
    if (boundMs <= this.estimateAt(now)) return;
    this.#value = boundMs;
    if (now > this.#at || this.#unplaced(now)) this.#at = now;
  }

  /** Moves the instant the estimate was stored by `deltaMs` (its set's clock was stepped back). */
  shift(deltaMs: number): void {
    this.#at += deltaMs;
  }

  /** Starts over from `valueMs` at `now` (an instance returning from ejection). */
  reset(valueMs: number, now: number): void {
    this.#value = valueMs;
    this.#at = now;
  }
}
