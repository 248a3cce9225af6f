import { createHealthyWindowTracker, type HealthyWindowTrackerOptions } from '../calibrate/health-tracker.js';
import type { Clock } from '../clock/clock.js';
import type { HeaderFormat } from '../deadline/deadline.js';
import { createDependency, type Dependency } from '../dependency/dependency.js';
import { DEPENDENCY_OPTIONS, type DependencyOptions } from '../dependency/options.js';
import { executorOf } from '../dependency/transport.js';
import { thrownText } from '../errors/base.js';
import { createLatencyRecorder, type LatencyRecorderOptions } from '../latency/recorder.js';
import type { LatencySnapshot } from '../latency/types.js';
import { option } from '../options/declare.js';
import type { OptionsValidator } from '../options/validator.js';
import { HTTP_DEFAULTS } from './constants.js';

/**
 * The executor a client runs its calls through: the one given (`dependency`), or one built from the
 * executor options. With `live`, the client owns the recorder (it must hear every window close) and
 * recalibrates the executor in place around a new p99 (same budget, recorder and listeners): see
 * {@link createLiveP99} below.
 */

/**
 * The executor's options prazo/http does not take from its own options: those it sets itself (`name`,
 * `defaultDeadlineMs`, `headerFormat` from `deadlineHeaders`, `clock`), and those it does not offer.
 */
const NOT_FROM_HTTP = [
  'name',
  'defaultDeadlineMs',
  'headerFormat',
  'clock',
  'forceSlack',
  'connectCapMs',
  'overheadMs',
  'classifyError',
] as const;

/** An executor option a client (or an interceptor's entry) takes as its own and hands to `createDependency`. */
export type ExecutorKey = Exclude<(typeof DEPENDENCY_OPTIONS.keys)[number], (typeof NOT_FROM_HTTP)[number]>;

/**
 * Options that configure the executor (passed to `createDependency`): derived from the executor's own
 * declaration (`DEPENDENCY_OPTIONS`), so `hedge`, `p99Ms` and the rest are declared once.
 */
export const EXECUTOR_KEYS: readonly ExecutorKey[] = Object.freeze(
  DEPENDENCY_OPTIONS.keys.filter(
    (key): key is ExecutorKey => !(NOT_FROM_HTTP as readonly string[]).includes(key),
  ),
);

export interface Live {
  readonly p99: LiveP99;
  /** Set by the client: called with every closed window of the recorder. */
  onWindow: (window: LatencySnapshot) => void;
  /** A new executor planning with `p99Ms`, sharing the current one's budget and recorder. */
  rebuild(p99Ms: number, current: Dependency): Dependency | undefined;
}

export function readExecutor(
  v: OptionsValidator,
  raw: Record<string, unknown>,
  shared: { defaultDeadlineMs: number; headerFormat: HeaderFormat; clock: Clock },
): { dependency: Dependency | undefined; live: Live | undefined } {
  if (raw.dependency !== undefined) {
    if (executorOf(raw.dependency) === undefined) {
      v.problem('`dependency` must be an executor made with createDependency()');
      return { dependency: undefined, live: undefined };
    }
    const extra = [...EXECUTOR_KEYS, 'deadlineHeaders', 'live'].filter((k) => raw[k] !== undefined);
    if (extra.length > 0) v.problem(`\`dependency\` is given: configure ${extra.join(', ')} on it, not here`);
    return { dependency: raw.dependency as Dependency, live: undefined };
  }
  const given = Object.fromEntries(EXECUTOR_KEYS.map((k) => [k, raw[k]]).filter(([, x]) => x !== undefined));
  const options = { name: raw.name, ...given, ...shared } as DependencyOptions;
  if (raw.live === undefined || raw.live === false) {
    return { dependency: v.absorb(() => createDependency(options)), live: undefined };
  }
  return readLive(v, raw, options);
}

function readLive(
  v: OptionsValidator,
  raw: Record<string, unknown>,
  options: DependencyOptions,
): { dependency: Dependency | undefined; live: Live | undefined } {
  if (option.hasMethods('record')(raw.recorder)) {
    v.problem('`live` needs recorder options, not a recorder: it listens to every window that closes');
  }
  const liveOptions = (raw.live === true ? {} : raw.live) as LiveCalibrationOptions;
  const p99 = createLiveP99(
    typeof raw.p99Ms === 'number' ? raw.p99Ms : 1,
    liveOptions,
    v,
    raw.p99Assumed === true,
  );
  const own = (raw.recorder ?? {}) as LatencyRecorderOptions;
  const live: Live = {
    p99,
    onWindow: () => {},
    rebuild: (p99Ms, current) => {
      try {
        // The same executor, recalibrated in place: whoever holds `client.dependency` (prazo/otel's
        // instrumentation, a second client sharing it) keeps hearing its events and reading its
        // timeouts.
        current.recalibrate(p99Ms);
        return current;
      } catch (error) {
        process.emitWarning(
          `prazo: live calibration of ${options.name} kept p99 ${current.p99Ms} ms: ${thrownText(error)}`,
        );
        return undefined;
      }
    },
  };
  const recorder = v.absorb(() =>
    createLatencyRecorder({
      clock: options.clock,
      ...own,
      onWindow: (window) => {
        own.onWindow?.(window);
        live.onWindow(window);
      },
    }),
  );
  const dependency =
    recorder === undefined ? undefined : v.absorb(() => createDependency({ ...options, recorder }));
  return { dependency, live };
}

/**
 * Live calibration (SPEC X2, C4): the p99 a client plans with follows the dependency's *healthy*
 * measured p99, within operator bounds. Every closed recorder window is judged by the healthy-window
 * guard (error rate, timeout rate, p99 jump against the baseline); only healthy windows enter the
 * baseline (the median p99 of the last few), so an incident never teaches the client that slowness is
 * normal. A new p99 is adopted when the baseline, clamped to `[minP99Ms, maxP99Ms]`, moves more than
 * `changeRatio` away from the one in use; small wobbles change nothing.
 */

export interface LiveCalibrationOptions extends HealthyWindowTrackerOptions {
  /** Lowest p99 the client will plan with, in ms. Default `p99Ms / 2`; (0, 86400000]. */
  readonly minP99Ms?: number;
  /** Highest p99 the client will plan with, in ms. Default `p99Ms × 2`; (0, 86400000]. */
  readonly maxP99Ms?: number;
  /** Relative move of the healthy p99 that triggers a new plan. Default 0.1; [0, 10]. */
  readonly changeRatio?: number;
}

export interface LiveP99 {
  readonly minP99Ms: number;
  readonly maxP99Ms: number;
  /** Judges a closed window; returns the p99 to adopt now, or undefined to keep the current one. */
  observe(window: LatencySnapshot, currentP99Ms: number): number | undefined;
}

const MAX_P99_MS = 86_400_000;
/** How far from an assumed starting p99 live calibration may move by default: × or ÷ 20. */
const ASSUMED_SPREAD = 20;

/** Validates the options (problems prefixed `live.`, folded into the client's list by the caller). */
export function createLiveP99(
  initialP99Ms: number,
  options: LiveCalibrationOptions,
  v: OptionsValidator,
  assumed = false,
): LiveP99 {
  const o = options ?? {};
  const bound = { min: 0, exclusiveMin: true, max: MAX_P99_MS } as const;
  // An assumed p99 (SPEC C8: a kind's typical value) is a guess within an order of magnitude, not a
  // measurement to stay near: the default bounds let the first healthy window replace it.
  const spread = assumed ? ASSUMED_SPREAD : 2;
  const minP99Ms = v.number('live.minP99Ms', o.minP99Ms, { default: initialP99Ms / spread, ...bound });
  const maxP99Ms = v.number('live.maxP99Ms', o.maxP99Ms, {
    default: Math.min(MAX_P99_MS, initialP99Ms * spread),
    ...bound,
  });
  if (minP99Ms > maxP99Ms)
    v.problem(`\`live.minP99Ms\` (${minP99Ms}) must not exceed \`live.maxP99Ms\` (${maxP99Ms})`);
  const changeRatio = v.number('live.changeRatio', o.changeRatio, {
    default: HTTP_DEFAULTS.liveChangeRatio,
    min: 0,
    max: 10,
  });
  const { minP99Ms: _a, maxP99Ms: _b, changeRatio: _c, ...thresholds } = o;
  const tracker = v.absorb(() => createHealthyWindowTracker<LatencySnapshot>(thresholds), 'live: ');
  return {
    minP99Ms,
    maxP99Ms,
    observe(window, currentP99Ms) {
      if (tracker?.observe(window).health !== 'healthy') return undefined;
      const baseline = tracker.baselineP99();
      if (baseline === undefined || !(baseline > 0)) return undefined;
      const target = Math.min(maxP99Ms, Math.max(minP99Ms, baseline));
      return Math.abs(target - currentP99Ms) > changeRatio * currentP99Ms ? target : undefined;
    },
  };
}
