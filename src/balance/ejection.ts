import { RECORDER_LIMITS } from '../latency/constants.js';
import { clearSketch, createSketch, type Sketch, sketchQuantile } from '../latency/sketch.js';
import type { EjectionOptions, LatencyEjectionOptions } from './options.js';
import { EJECTION_OPTIONS, LATENCY_EJECTION_OPTIONS } from './options.js';

/**
 * When an instance leaves the rotation, and when it comes back (SPEC X5). Two ways out:
 *
 * - **Consecutive failures** (Envoy's `consecutive_5xx`, gRPC's failure-percentage's simple cousin):
 *   `consecutiveFailures` failures in a row. A success resets the count; an answer that is nobody's
 *   fault (a 4xx, a pushback, a call its caller cancelled) neither counts nor resets.
 * - **Latency**: at the end of each window, an instance whose p99 exceeds `factor` × the median p99
 *   of its peers (the other instances with enough answers in the window) and the dependency's own
 *   healthy p99 (the floor); or whose share of *unanswered* attempts (overtaken by their hedge, or
 *   cut by the deadline past the p99: `instances.ts`) exceeds `factor` × its peers' median share and
 *   the share of any dependency's attempts past the point they are counted from (1 − the hedge
 *   percentile with hedging, 1% without). The second test is the one hedging and short deadlines
 *   need: an instance whose slow answers are all cut never shows them, only attempts cut at about the
 *   hedge delay plus one answer elsewhere, or at the deadline — a p99 like its peers'. What it cannot
 *   hide is how often that happens: a healthy instance is cut so on a few attempts in a thousand (its
 *   tail must pass the hedge delay, then lose to a whole answer elsewhere), one stalling on 15% of its
 *   answers on 15% of them. Both tests read the same window, `minSamples` answers and two judged
 *   instances at least; an unanswered attempt is a sample of the window at the latency it was charged.
 *
 * An ejection lasts `baseEjectionMs × n`, where n counts the instance's recent ejections (one less for
 * every `baseEjectionMs` it stayed in since it last returned), at most `maxEjectionMs`: an instance
 * that keeps failing stays out longer, one that failed once a day always gets the base time. It then
 * returns **on probation**: one failure (or one outlying window) ejects it again at once, n grown; it
 * leaves probation after `consecutiveFailures` successes in a row and, with latency ejection, one
 * latency window. Only time spent out of probation forgives levels. The share bound (`maxEjectedShare`, at
 * least one of two or more, never the last one) is the caller's (`InstanceSet`): it knows how many
 * are out.
 */

/** Resolved ejection settings (defaults applied); `latency` undefined when latency ejection is off. */
export interface EjectionSettings {
  readonly consecutiveFailures: number;
  readonly baseEjectionMs: number;
  readonly maxEjectionMs: number;
  readonly maxEjectedShare: number;
  readonly latency: Required<LatencyEjectionOptions> | undefined;
}

/** The settings of `ejection: true | {...}`, defaults applied. */
export function ejectionSettings(given: boolean | EjectionOptions | undefined): EjectionSettings | undefined {
  if (given === false) return undefined;
  const o = given === true || given === undefined ? {} : given;
  const d = EJECTION_OPTIONS.defaults;
  const l = o.latency;
  return Object.freeze({
    consecutiveFailures: o.consecutiveFailures ?? d.consecutiveFailures,
    baseEjectionMs: o.baseEjectionMs ?? d.baseEjectionMs,
    maxEjectionMs: o.maxEjectionMs ?? d.maxEjectionMs,
    maxEjectedShare: o.maxEjectedShare ?? d.maxEjectedShare,
    latency: l === false ? undefined : latencySettings(l === true || l === undefined ? {} : l),
  });
}

/**
 * Latency ejection's settings, defaults applied. A key given as `undefined` (valid: it reads as its
 * default) keeps the default: spread over the defaults it would replace it, and a `factor` of
 * undefined compared every p99 with NaN, switching latency ejection off without a word.
 */
function latencySettings(given: LatencyEjectionOptions): Required<LatencyEjectionOptions> {
  const settings: Record<string, unknown> = { ...LATENCY_EJECTION_OPTIONS.defaults };
  for (const [key, value] of Object.entries(given)) if (value !== undefined) settings[key] = value;
  return Object.freeze(settings) as Required<LatencyEjectionOptions>;
}

/** How many of `n` instances may be out at once: the share, but at least one of two, never all. */
export function ejectionAllowance(n: number, share: number): number {
  if (n < 2) return 0;
  return Math.min(n - 1, Math.max(1, Math.floor(n * share + 1e-9)));
}

export type EjectionPhase = 'active' | 'probation' | 'ejected';

/** One instance's standing with the ejector. */
export class EjectionRecord {
  phase: EjectionPhase = 'active';
  /** Failures in a row (active), or successes in a row (probation). */
  streak = 0;
  /** Recent ejections: the multiplier of the next ejection's length. */
  level = 0;
  ejectedUntil = 0;
  /** When it last became active (added, or out of probation): the level is forgiven from there. */
  since: number;
  /** On probation until at least this instant (one latency window after its return). */
  probationUntil = 0;
  /** This window's answers (latency ejection), how many, and how many of them were unanswered attempts. */
  readonly window: Sketch | undefined;
  samples = 0;
  unanswered = 0;
  /** The last closed window held enough of its answers to judge it (`minSamples`). */
  judged = false;

  constructor(now: number, latency: boolean) {
    this.since = now;
    this.window = latency ? createSketch(0.01) : undefined;
  }
}

/** Why an instance was ejected, with the numbers. */
export interface EjectionVerdict {
  readonly reason: 'failures' | 'latency';
  /** Its p99 in the window and its peers' median, for a latency ejection. */
  readonly p99Ms?: number;
  readonly peerP99Ms?: number;
  /** Its share of unanswered attempts in the window and its peers' median share. */
  readonly unansweredShare?: number;
  readonly peerUnansweredShare?: number;
}

export class Ejector {
  readonly settings: EjectionSettings;

  constructor(settings: EjectionSettings) {
    this.settings = settings;
  }

  /**
   * A success: the failure streak ends; on probation, one more success towards leaving it (at once
   * after `consecutiveFailures` of them without latency ejection; with it, also not before a latency
   * window has closed since the return: see {@link windowClosed}).
   */
  success(r: EjectionRecord, now: number): void {
    if (r.phase === 'probation') {
      r.streak += 1;
      if (this.settings.latency === undefined && r.streak >= this.settings.consecutiveFailures)
        this.#activate(r, now);
    } else if (r.phase === 'active') r.streak = 0;
  }

  /**
   * A latency window closed at `now` and `r` was not ejected: probation may end, once a window that
   * held enough of its answers to judge it has passed (a window it was too little used in proves
   * nothing: leaving probation then would forgive its ejections at the next, judged, window).
   */
  windowClosed(r: EjectionRecord, now: number): void {
    if (
      r.phase === 'probation' &&
      r.judged &&
      now >= r.probationUntil &&
      r.streak >= this.settings.consecutiveFailures
    )
      this.#activate(r, now);
  }

  #activate(r: EjectionRecord, now: number): void {
    r.phase = 'active';
    r.streak = 0;
    r.since = now;
  }

  /** A failure: true when it warrants an ejection (the streak reached the threshold, or on probation). */
  failure(r: EjectionRecord): boolean {
    if (r.phase === 'ejected') return false;
    if (r.phase === 'probation') return true;
    r.streak += 1;
    return r.streak >= this.settings.consecutiveFailures;
  }

  /** One of this window's samples was an unanswered attempt (see `instances.ts`). */
  unanswered(r: EjectionRecord): void {
    if (r.window !== undefined) r.unanswered += 1;
  }

  /** An answer's latency for this window (an unanswered attempt's: what it was charged). */
  record(r: EjectionRecord, latencyMs: number): void {
    if (r.window === undefined || !(latencyMs >= 0 && latencyMs < Number.POSITIVE_INFINITY)) return;
    const { minLatencyMs, maxLatencyMs } = RECORDER_LIMITS;
    r.window.accept(latencyMs < minLatencyMs ? 0 : latencyMs > maxLatencyMs ? maxLatencyMs : latencyMs);
    r.samples += 1;
  }

  /** Ejects `r` at `now`: returns the ejection's length in ms. */
  eject(r: EjectionRecord, now: number): number {
    const { baseEjectionMs: base, maxEjectionMs } = this.settings;
    // One level forgiven for every base period it stayed active (probation does not count).
    // (`active > 0` is false for NaN: an instance added while the clock read NaN has no time in.)
    const active = now - r.since;
    const forgiven = r.phase === 'active' && active > 0 ? Math.floor(active / base) : 0;
    // Past the longest ejection the level stops growing, so forgiving it starts from there.
    const top = Math.ceil(Math.max(base, maxEjectionMs) / base);
    r.level = Math.min(top, Math.max(0, r.level - forgiven) + 1);
    const ms = Math.min(base * r.level, Math.max(base, maxEjectionMs));
    r.phase = 'ejected';
    r.streak = 0;
    r.ejectedUntil = now + ms;
    this.clearWindow(r);
    return ms;
  }

  /** Back in rotation at `now`, on probation (for one latency window at least, when it is on). */
  restore(r: EjectionRecord, now: number): void {
    r.phase = 'probation';
    r.streak = 0;
    r.probationUntil = now + (this.settings.latency?.windowMs ?? 0);
    r.judged = false;
    this.clearWindow(r);
  }

  clearWindow(r: EjectionRecord): void {
    if (r.window !== undefined) clearSketch(r.window);
    r.samples = 0;
    r.unanswered = 0;
  }

  /**
   * The window closed: the records (of instances in rotation) that are outliers, by p99 or by share
   * of unanswered attempts (above `unansweredFloor` too), worst first, each with its verdict. Every
   * window is cleared afterwards. Needs two judged instances at least.
   */
  latencyOutliers<R extends EjectionRecord>(
    records: readonly R[],
    floorMs: number,
    unansweredFloor: number,
  ): { readonly record: R; readonly verdict: EjectionVerdict }[] {
    const latency = this.settings.latency;
    if (latency === undefined) return [];
    const judged: { record: R; p99: number; share: number }[] = [];
    for (const record of records) {
      record.judged = record.phase !== 'ejected' && record.samples >= latency.minSamples;
      if (record.judged && record.window !== undefined) {
        const p99 = sketchQuantile(record.window, 0.99);
        if (p99 !== undefined) judged.push({ record, p99, share: record.unanswered / record.samples });
      }
      this.clearWindow(record);
    }
    const m = judged.length;
    if (m < 2) return [];
    const p99s = judged.map((j) => j.p99).sort((a, b) => a - b);
    const shares = judged.map((j) => j.share).sort((a, b) => a - b);
    const out: { record: R; verdict: EjectionVerdict; ratio: number }[] = [];
    for (const { record, p99, share } of judged) {
      const peer = medianWithout(p99s, p99);
      const peerShare = medianWithout(shares, share);
      const slow = p99 > latency.factor * peer && p99 > floorMs;
      const unanswered = share > latency.factor * peerShare && share > unansweredFloor;
      if (!slow && !unanswered) continue;
      const ratio = Math.max(
        slow ? p99 / peer : 0,
        unanswered ? share / Math.max(peerShare, unansweredFloor) : 0,
      );
      const verdict: EjectionVerdict = unanswered
        ? {
            reason: 'latency',
            p99Ms: p99,
            peerP99Ms: peer,
            unansweredShare: share,
            peerUnansweredShare: peerShare,
          }
        : { reason: 'latency', p99Ms: p99, peerP99Ms: peer };
      out.push({ record, verdict, ratio });
    }
    return out.sort((a, b) => b.ratio - a.ratio);
  }
}

/** The median of the sorted `values` without one occurrence of `own` (its peers'). */
function medianWithout(sorted: readonly number[], own: number): number {
  const j = sorted.indexOf(own);
  const n = sorted.length - 1; // peers
  const at = (r: number): number => sorted[r < j ? r : r + 1]!;
  return n % 2 === 1 ? at((n - 1) / 2) : (at(n / 2 - 1) + at(n / 2)) / 2;
}
