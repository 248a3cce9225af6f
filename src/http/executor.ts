import type { Clock } from '../clock/clock.js';
import type { HeaderFormat } from '../deadline/deadline.js';
import { createDependency, type Dependency } from '../dependency/dependency.js';
import { DEPENDENCY_OPTIONS, type DependencyOptions } from '../dependency/options.js';
import { executorOf } from '../dependency/transport.js';
import { createLatencyRecorder, type LatencyRecorderOptions } from '../latency/recorder.js';
import type { LatencySnapshot } from '../latency/types.js';
import { option } from '../options/declare.js';
import type { OptionsValidator } from '../options/validator.js';
import { createLiveP99, type LiveCalibrationOptions, type LiveP99 } from './live.js';

/**
 * The executor a client runs its calls through: the one given (`dependency`), or one built from the
 * executor options. With `live`, the client owns the recorder (it must hear every window close) and
 * recalibrates the executor in place around a new p99 (same budget, recorder and listeners).
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
          `prazo: live calibration of ${options.name} kept p99 ${current.p99Ms} ms: ${String(error)}`,
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
