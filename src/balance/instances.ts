import type { Clock } from '../clock/clock.js';
import type { RandomSource } from '../retry/backoff.js';
import {
  EjectionRecord,
  type EjectionSettings,
  type EjectionVerdict,
  Ejector,
  ejectionAllowance,
} from './ejection.js';
import { PeakEwma } from './peak-ewma.js';

/**
 * A dependency as several instances, and the pick of one per attempt (SPEC X5): **power of two
 * choices** over `cost = peak-EWMA latency × (in-flight + 1)` (Mitzenmacher; Finagle, linkerd2-proxy
 * and tower's `p2c` over `PeakEwma`). Two distinct instances are drawn at random and the cheaper one
 * wins: O(1) per pick whatever the number of instances, and, unlike "the least loaded of all", it
 * never herds every caller onto the same instance the moment it looks best. The in-flight factor
 * makes a fast instance take more traffic only until it queues; the peak-EWMA makes a slow one lose
 * its traffic on its first slow answer.
 *
 * Only instances in rotation are drawn from: they live in one array, each knowing its slot, so an
 * ejection or a return is a swap (O(1)) and a pick never filters. A call's own exclusions (a retry
 * avoids the instance that failed it, a hedge the one it hedges) are swapped to the end of the array
 * for the draw; with nothing else in rotation, the excluded ones are drawn from after all (a retry on
 * the same instance beats no retry). Ejection (`ejection.ts`) is decided as answers come in and at
 * each latency window's end, and undone at the first pick past an ejection's end: no timer.
 *
 * **An attempt cut before it answered is a censored observation.** With hedging on, an instance that
 * stalls on some of its answers never shows the stall: its attempt is overtaken by the hedge (sent a
 * hedge delay later, to another instance) and cancelled; with a deadline from upstream shorter than
 * the stall, the attempt is cut by the deadline. All that is known is that it would have taken longer
 * than it ran — about the hedge delay plus the winner's time, or the deadline — which is also what a
 * healthy instance's slowest answers take. Recorded as an answer of that length, or not at all (as
 * nobody's fault), the stalling instance looks no slower than its peers and keeps its share of picks:
 * the bench measures a fifth of the traffic on an instance slow on 5% of its answers (1% without
 * hedging), each stall costing a hedge from the budget; in the demo's "one slow instance", where every
 * stall is cut by the per-try deadline the hop above sends, 5% of the checkouts fail and the picker
 * never hears of it. The cut attempts are not all the same evidence:
 *
 * - `unanswered`: overtaken by a copy that started *later* (its hedge), or cut by the deadline after
 *   running past the dependency's p99 (prazo/http decides which, `call.ts`). The instance had not
 *   answered when a healthy one would have. It is charged, as a lower bound of its estimate, at least
 *   the attempt timeout — what its caller would have waited for it, at most: it might have run until
 *   then — and at least twice its estimate (or its own running time): an instance that keeps overrunning
 *   its estimate sees it doubled each time (an exponential search for a latency nobody observed), so
 *   repeated cuts reach in a few steps the cost of a failure (`penaltyMs`, the bound: an unanswered
 *   attempt is never worse than a failure). Doubled from the *previous charge* when the last cut was
 *   less than a decay ago, whatever answers came between: an instance fast on most answers and
 *   stalling on some (the demo's, 15%) has its estimate pulled back by the fast ones: charged each
 *   stall as a first one, it is probed again within ~3 s (23 picks of 210 in 10 s; 15 with the
 *   doubling kept), while a healthy instance whose rare tail answer lost one
 *   race pays as for one answer of twice its estimate. Why not charge a failure at once: with a
 *   heavy-tailed healthy latency (the demo's log-normal) a healthy instance loses a race on about one
 *   attempt in a hundred, and charging each loss as a failure keeps every instance penalised in turn
 *   in a simulation of the demo's supplier, herding the traffic onto whichever lost longest ago, while
 *   the stalling one keeps more of its share than with doubling. Why not the time it ran: that is the
 *   lower bound, about what a healthy instance's slowest answers take, so the picker cannot tell the
 *   two apart. Not a failure for ejection's streak either (it is not one);
 *   latency ejection counts these attempts instead: an instance whose share of them is far above its
 *   peers' is slow, whatever the p99 of the answers it did give (`ejection.ts`).
 * - `lost`: a hedge beaten by the attempt it hedged (it started a hedge delay later), or an attempt cut
 *   by a deadline shorter than the p99 (the caller's hurry, not the instance's slowness). The time it
 *   ran says nothing about the instance being fast or slow: it may raise the estimate (a lower bound),
 *   never lower it, and it is not a sample of the latency window.
 */

/** How one attempt's answer counts for its instance. */
export type InstanceVerdict =
  /** An answer: latency recorded, the failure streak ends. */
  | 'success'
  /** A connect failure, 5xx, timeout: recorded with at least the failure penalty, streak grows. */
  | 'failure'
  /**
   * Cut before it answered, past the time a healthy answer takes (overtaken by its hedge, or cut by
   * the deadline past the p99): censored. Charged at least the attempt timeout and twice the estimate.
   */
  | 'unanswered'
  /** Cut before it answered, early (a hedge that lost, a short deadline): a lower bound, never lowering the estimate. */
  | 'lost'
  /** Nobody's fault (a 4xx, a pushback, cancelled by its caller): in-flight released, nothing else. */
  | 'neutral';

/** What an instance set reports (prazo/http turns each into a `DependencyEvent`). */
export interface InstanceListener {
  ejected(instance: string, verdict: EjectionVerdict, ejectionMs: number, ejections: number): void;
  returned(instance: string): void;
  added(instance: string): void;
  removed(instance: string): void;
}

/**
 * A reading this far (ms) before the latest one is a clock stepped back, not a late reading: the
 * readings of attempts ending about together arrive out of order by a few ms (an event loop turn).
 */
const STEP_BACK_MS = 1_000;

export interface InstanceSetOptions {
  readonly clock: Clock;
  /** Uniform [0, 1): the dependency's PRNG. */
  readonly random: RandomSource;
  readonly decayMs: number;
  readonly initialEstimateMs: number;
  /** Undefined: never eject. */
  readonly ejection: EjectionSettings | undefined;
  /** The dependency's healthy p99 in ms: latency ejection's floor (read at each window's end). */
  readonly floorMs: () => number;
  /** The latency a failure counts with at least, in ms (attempt timeouts): failing fast is not fast. */
  readonly penaltyMs: () => number;
  /** The attempt timeout, in ms: what an unanswered attempt is charged at least. */
  readonly timeoutMs: () => number;
  /**
   * The share of an instance's attempts that may be unanswered without it being slow: the share of a
   * dependency's attempts past the point they are counted from (1 − the hedge percentile with
   * hedging, 1% without: past the p99). Latency ejection's floor for that share.
   */
  readonly unansweredFloor: () => number;
  readonly listener?: InstanceListener;
}

/** One instance: its key (an origin), its value (what dispatches to it), its load and standing. */
export class Instance<T> {
  readonly key: string;
  readonly value: T;
  inFlight = 0;
  /** Picks since it was added (for metrics). */
  picks = 0;
  readonly ewma: PeakEwma;
  readonly ejection: EjectionRecord;
  /** Index in the set's rotation, or −1 when out (ejected, removed). */
  slot = -1;
  removed = false;
  /** The last unanswered attempt's charge, in ms, and when (the next one within the decay doubles it). */
  cutChargeMs = 0;
  cutAt = Number.NEGATIVE_INFINITY;

  constructor(key: string, value: T, ewma: PeakEwma, ejection: EjectionRecord) {
    this.key = key;
    this.value = value;
    this.ewma = ewma;
    this.ejection = ejection;
  }
}

/** One instance as metrics and tests read it. */
export interface InstanceState {
  readonly instance: string;
  readonly inFlight: number;
  readonly picks: number;
  /** The peak-EWMA latency estimate now, in ms. */
  readonly estimateMs: number;
  readonly state: 'active' | 'probation' | 'ejected';
  /** Recent ejections (the multiplier of the next one's length). */
  readonly ejections: number;
}

export class InstanceSet<T> {
  readonly #o: InstanceSetOptions;
  readonly #ejector: Ejector | undefined;
  /** In rotation (active or on probation), each at its `slot`. */
  readonly #rotation: Instance<T>[] = [];
  readonly #ejected: Instance<T>[] = [];
  readonly #all = new Map<string, Instance<T>>();
  /** The earliest instant an ejected instance returns (+∞: none out). */
  #nextReturn = Number.POSITIVE_INFINITY;
  #windowEnd: number;
  /** The latest finite reading seen (see `#time`). */
  #latest = Number.NEGATIVE_INFINITY;

  constructor(options: InstanceSetOptions) {
    this.#o = options;
    this.#ejector = options.ejection === undefined ? undefined : new Ejector(options.ejection);
    const windowMs = options.ejection?.latency?.windowMs;
    this.#windowEnd = windowMs === undefined ? Number.POSITIVE_INFINITY : options.clock.now() + windowMs;
  }

  /** Instances known (in rotation or ejected). */
  get size(): number {
    return this.#all.size;
  }

  /** Instances in rotation. */
  get available(): number {
    return this.#rotation.length;
  }

  keys(): string[] {
    return [...this.#all.keys()];
  }

  get(key: string): Instance<T> | undefined {
    return this.#all.get(key);
  }

  /**
   * Makes the set exactly `entries`: new keys join (in rotation at once, with the initial estimate),
   * keys no longer listed leave (their attempts in flight settle normally). Returns the values that
   * left, for their owner to close.
   */
  replace(entries: readonly { readonly key: string; readonly value: T }[], at = this.#o.clock.now()): T[] {
    const now = this.#time(at);
    const wanted = new Set<string>();
    for (const { key, value } of entries) {
      wanted.add(key);
      if (this.#all.has(key)) continue;
      const ewma = new PeakEwma(this.#o.decayMs, this.#o.initialEstimateMs, now);
      const record = new EjectionRecord(now, this.#o.ejection?.latency !== undefined);
      const instance = new Instance(key, value, ewma, record);
      this.#all.set(key, instance);
      this.#enter(instance);
      this.#o.listener?.added(key);
    }
    const gone: T[] = [];
    for (const [key, instance] of this.#all) {
      if (wanted.has(key)) continue;
      this.#all.delete(key);
      instance.removed = true;
      if (instance.slot >= 0) this.#leave(instance);
      else this.#dropEjected(instance);
      gone.push(instance.value);
      this.#o.listener?.removed(key);
    }
    return gone;
  }

  /**
   * Picks the instance for one attempt at `at` (a clock reading; see `#time`), avoiding `exclude` when
   * anything else is in rotation, and counts it in flight: settle it once with {@link settle}.
   * Undefined only for an empty set.
   */
  pick(at: number, exclude?: readonly Instance<T>[]): Instance<T> | undefined {
    const now = this.#time(at);
    if (now >= this.#nextReturn && now < Number.POSITIVE_INFINITY) this.#returnDue(now);
    const list = this.#rotation;
    let m = list.length;
    if (m === 0) return undefined;
    if (exclude !== undefined) {
      for (const e of exclude) {
        const slot = e.slot;
        if (slot >= 0 && slot < m && list[slot] === e) {
          m -= 1;
          this.#swap(slot, m);
        }
      }
      if (m === 0) m = list.length; // nothing else in rotation: the excluded ones after all
    }
    let chosen: Instance<T>;
    if (m === 1) chosen = list[0]!;
    else {
      const a = Math.floor(this.#uniform() * m) % m;
      let b = Math.floor(this.#uniform() * (m - 1)) % (m - 1);
      if (b >= a) b += 1;
      const x = list[a]!;
      const y = list[b]!;
      chosen = x.ewma.atMost(x.inFlight + 1, y.ewma, y.inFlight + 1, now) ? x : y;
    }
    chosen.inFlight += 1;
    chosen.picks += 1;
    return chosen;
  }

  /**
   * The attempt on `instance` ended at `at` after `latencyMs`, with `verdict`. Call once per pick. An
   * instance this set did not pick (another set's, or one it no longer holds) changes nothing here:
   * ejected through this set, it would be taken out of this set's rotation at a slot it does not hold.
   */
  settle(instance: Instance<T>, verdict: InstanceVerdict, latencyMs: number, at: number): void {
    if (this.#all.get(instance.key) !== instance) {
      // Removed by `replace` while its attempt ran: the attempt is over all the same.
      if (instance.removed && instance.inFlight > 0) instance.inFlight -= 1;
      return;
    }
    if (instance.inFlight > 0) instance.inFlight -= 1;
    const now = this.#time(at);
    // Without a time, nothing is judged: an ejection until Infinity would never end.
    if (verdict === 'neutral' || !Number.isFinite(now)) return;
    const ejector = this.#ejector;
    const record = instance.ejection;
    if (verdict === 'lost') {
      instance.ewma.atLeast(latencyMs, now);
    } else if (verdict === 'unanswered') {
      const charged = this.#unansweredCharge(instance, latencyMs, now);
      instance.ewma.atLeast(charged, now);
      if (ejector !== undefined) {
        ejector.record(record, charged);
        ejector.unanswered(record);
      }
    } else {
      if (verdict === 'failure') {
        const penalty = this.#o.penaltyMs();
        instance.ewma.observe(latencyMs > penalty ? latencyMs : penalty, now);
      } else instance.ewma.observe(latencyMs, now);
      if (ejector !== undefined) {
        ejector.record(record, latencyMs);
        if (verdict === 'success') ejector.success(record, now);
        else if (ejector.failure(record)) this.#eject(instance, { reason: 'failures' }, now);
      }
    }
    if (now >= this.#windowEnd) this.#closeWindow(now);
    else if (Number.isNaN(this.#windowEnd)) {
      // The clock read NaN when the set was made: the first window starts at the first real reading
      // (left at NaN, no window would ever close: latency ejection off for good).
      this.#windowEnd = now + this.#ejector!.settings.latency!.windowMs;
    }
  }

  /**
   * What an unanswered attempt that had run `ranMs` costs its instance's estimate: at least the attempt
   * timeout, twice the larger of its estimate and `ranMs`, and twice the previous cut's charge when
   * that was less than a decay ago; at most a failure's penalty.
   */
  #unansweredCharge(instance: Instance<T>, ranMs: number, now: number): number {
    const estimate = instance.ewma.estimateAt(now);
    const doubled = 2 * (estimate > ranMs ? estimate : ranMs);
    const timeout = this.#o.timeoutMs();
    const penalty = this.#o.penaltyMs();
    const again = now - instance.cutAt < this.#o.decayMs ? 2 * instance.cutChargeMs : 0;
    const floor = doubled > timeout ? doubled : timeout;
    const wanted = again > floor ? again : floor;
    const charged = wanted < penalty ? wanted : penalty > ranMs ? penalty : ranMs;
    instance.cutChargeMs = charged;
    instance.cutAt = now;
    return charged;
  }

  /**
   * The dependency's draw in [0, 1): a source that gives anything else (NaN, a negative, 1 or more:
   * a user's `random`) gets 0 below the range and just under 1 above it, never an index outside the
   * rotation (as `fullJitterMs` reads the same source).
   */
  #uniform(): number {
    const u = this.#o.random();
    return u >= 0 && u < 1 ? u : u >= 1 ? 1 - Number.EPSILON : 0;
  }

  /**
   * `at`, a reading the caller took, or the set's own clock when it is not a finite number: taken, one
   * `Infinity` would eject an instance until Infinity, or return every ejected one on a probation
   * that never ends with an estimate that never decays. A reading more than {@link STEP_BACK_MS}
   * before the latest one is a clock stepped back (a custom clock on the wall time, or one bad reading
   * far ahead): every instant the set keeps moves back with it (`#shift`), as the adaptive limit
   * rebases its window. Kept where they were, an instance ejected before the step would stay out, a
   * peak would not decay and no latency window would close until the clock came back to them.
   */
  #time(at: number): number {
    const now = Number.isFinite(at) ? at : this.#o.clock.now();
    if (!Number.isFinite(now)) return now;
    const back = this.#latest - now;
    if (back > STEP_BACK_MS) this.#shift(-back);
    if (now > this.#latest || back > STEP_BACK_MS) this.#latest = now;
    return now;
  }

  /** Moves every instant the set keeps by `delta` ms (see `#time`). */
  #shift(delta: number): void {
    this.#windowEnd += delta;
    this.#nextReturn += delta;
    for (const instance of this.#all.values()) {
      instance.ewma.shift(delta);
      instance.cutAt += delta;
      const record = instance.ejection;
      record.since += delta;
      record.ejectedUntil += delta;
      record.probationUntil += delta;
    }
  }

  /** Every instance's state now (metrics, tests). */
  states(at = this.#o.clock.now()): InstanceState[] {
    const now = this.#time(at);
    if (now >= this.#nextReturn && now < Number.POSITIVE_INFINITY) this.#returnDue(now);
    return [...this.#all.values()].map((i) =>
      Object.freeze({
        instance: i.key,
        inFlight: i.inFlight,
        picks: i.picks,
        estimateMs: i.ewma.estimateAt(now),
        state: i.ejection.phase,
        ejections: i.ejection.level,
      }),
    );
  }

  #eject(instance: Instance<T>, verdict: EjectionVerdict, now: number): boolean {
    const ejector = this.#ejector!;
    const allowed = ejectionAllowance(this.#all.size, ejector.settings.maxEjectedShare);
    if (this.#ejected.length >= allowed || instance.slot < 0) return false;
    const ms = ejector.eject(instance.ejection, now);
    this.#leave(instance);
    this.#ejected.push(instance);
    const until = instance.ejection.ejectedUntil;
    if (until < this.#nextReturn) this.#nextReturn = until;
    this.#o.listener?.ejected(instance.key, verdict, ms, instance.ejection.level);
    return true;
  }

  #returnDue(now: number): void {
    let next = Number.POSITIVE_INFINITY;
    const out = this.#ejected;
    for (let i = out.length - 1; i >= 0; i -= 1) {
      const instance = out[i]!;
      const until = instance.ejection.ejectedUntil;
      if (until > now) {
        if (until < next) next = until;
        continue;
      }
      out.splice(i, 1);
      this.#ejector!.restore(instance.ejection, now);
      // On probation it must earn its traffic back: it starts as costly as the costliest peer (at
      // least the initial estimate), not at the near-zero its estimate decayed to while it was out.
      let worst = this.#o.initialEstimateMs;
      for (const peer of this.#rotation) {
        const estimate = peer.ewma.estimateAt(now);
        if (estimate > worst) worst = estimate;
      }
      instance.ewma.reset(worst, now);
      this.#enter(instance);
      this.#o.listener?.returned(instance.key);
    }
    this.#nextReturn = next;
  }

  #closeWindow(now: number): void {
    const ejector = this.#ejector!;
    const windowMs = ejector.settings.latency!.windowMs;
    // The next window starts now, aligned to the period (a quiet spell skips whole windows).
    this.#windowEnd += Math.ceil((now - this.#windowEnd + 1e-9) / windowMs) * windowMs;
    if (this.#windowEnd <= now) this.#windowEnd = now + windowMs;
    const all = [...this.#all.values()];
    const outliers = ejector.latencyOutliers(
      all.map((i) => i.ejection),
      this.#o.floorMs(),
      this.#o.unansweredFloor(),
    );
    if (outliers.length > 0) {
      const byRecord = new Map<EjectionRecord, Instance<T>>();
      for (const i of all) byRecord.set(i.ejection, i);
      for (const { record, verdict } of outliers) {
        const instance = byRecord.get(record);
        if (instance === undefined || !this.#eject(instance, verdict, now)) break;
      }
    }
    for (const i of all) ejector.windowClosed(i.ejection, now);
  }

  #enter(instance: Instance<T>): void {
    instance.slot = this.#rotation.length;
    this.#rotation.push(instance);
  }

  #leave(instance: Instance<T>): void {
    const list = this.#rotation;
    const slot = instance.slot;
    const last = list.pop()!;
    if (last !== instance) {
      list[slot] = last;
      last.slot = slot;
    }
    instance.slot = -1;
  }

  #dropEjected(instance: Instance<T>): void {
    const i = this.#ejected.indexOf(instance);
    if (i >= 0) this.#ejected.splice(i, 1);
  }

  #swap(i: number, j: number): void {
    if (i === j) return;
    const list = this.#rotation;
    const a = list[i]!;
    const b = list[j]!;
    list[i] = b;
    b.slot = i;
    list[j] = a;
    a.slot = j;
  }
}
