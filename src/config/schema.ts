import { HEALTH_THRESHOLD_OPTIONS, POOL_CHECK_OPTIONS } from '../calibrate/options.js';
import { SOURCE_OPTIONS } from '../calibrate/sources/types.js';
import { INCOMING_DEADLINE_OPTIONS } from '../deadline/headers.js';
import { DEPENDENCY_OPTIONS } from '../dependency/options.js';
import { HEDGE_OPTIONS } from '../hedge/options.js';
import { defineOptions, type OptionSpec, option } from '../options/declare.js';
import { CONFIG_LIMITS } from './constants.js';

/**
 * What `prazo.config.yaml` may hold, read with the library's own declarations (SPEC C7): a
 * `dependencies` entry *is* `createDependency`'s options (read in data mode: `classifyError`,
 * `random` and `clock` exist only in code), plus what only a file can say — a histogram file to
 * measure the p99 from, the pool it must not drain, `hedge.enabled`. The `service` section is the
 * incoming-deadline options of `prazo/server`, `calibration` the healthy-window guard's thresholds.
 * No key is listed twice: a new executor option is a new config key the moment it is declared.
 */

const list = (max: number): OptionSpec<readonly unknown[], false, false> =>
  option.matching<readonly unknown[]>(
    `a list of at most ${max} entries`,
    (v) => Array.isArray(v) && v.length <= max,
  );

/** `hedge:` in the file: the hedge options, and `enabled: false` to keep them but turn hedging off. */
export const HEDGE_IN_FILE = defineOptions(
  {
    ...HEDGE_OPTIONS.specs,
    /** False keeps the settings in the file but turns hedging off. Default true. */
    enabled: option.boolean({ default: true }),
  },
  (values, report, context) => HEDGE_OPTIONS.check(values, report, context),
);

/** `histogram:` a latency file to measure the p99 from (SPEC C1, C4), relative to the config. */
export const HISTOGRAM_IN_FILE = defineOptions({
  /** The file, relative to the config's directory. Required; at most 4096 characters. */
  file: option.string({ required: true, maxLength: 4096 }),
  ...SOURCE_OPTIONS.specs,
  /** p99 of known-healthy windows, in ms, for the guard's jump check. (0, 86400000]. Default: none. */
  baselineP99Ms: option.number({ unit: 'ms', min: 0, exclusiveMin: true, max: 86_400_000 }),
});

/** `pool:` the pool the dependency's calls hold a connection of, checked by Little's law (SPEC C6). */
export const POOL_IN_FILE = defineOptions({
  /** Connections in the pool. Required; integer [1, 10^6]. */
  size: POOL_CHECK_OPTIONS.specs.poolSize,
  /** Calls per second into it. Required; (0, 10^7] req/s. */
  rps: POOL_CHECK_OPTIONS.specs.rps,
});

/** One `dependencies` entry. */
export const DEPENDENCY_IN_FILE = defineOptions(
  {
    ...DEPENDENCY_OPTIONS.specs,
    /** The healthy p99 in ms, (0, 86400000] — or `histogram`, a file to measure it from. */
    p99Ms: option.optional(DEPENDENCY_OPTIONS.specs.p99Ms),
    hedge: option.toggle(HEDGE_IN_FILE),
    histogram: option.nested(HISTOGRAM_IN_FILE),
    pool: option.nested(POOL_IN_FILE),
  },
  (_values, report, { given }) => {
    if (given.p99Ms !== undefined && given.histogram !== undefined) {
      report('histogram', 'give either `p99Ms` or `histogram`, not both');
    } else if (given.p99Ms === undefined && given.histogram === undefined) {
      report([], 'needs `p99Ms` (the healthy p99 in ms) or `histogram` (a file to measure it from)');
    }
  },
);

/** `service:` how this service treats incoming deadlines (SPEC D2, D3, D8), and its name. */
export const SERVICE_IN_FILE = defineOptions(
  {
    /** The service's name. 1–200 characters. */
    name: option.string(),
    ...INCOMING_DEADLINE_OPTIONS.specs,
  },
  (values, report, context) => INCOMING_DEADLINE_OPTIONS.check(values, report, context),
);

/** The file's top level. */
export const CONFIG_FILE = defineOptions({
  /** The format's version. Default 1 (the only one). */
  version: option.matching<1>('1', (v) => v === 1),
  service: option.nested(SERVICE_IN_FILE),
  calibration: option.nested(HEALTH_THRESHOLD_OPTIONS),
  /** The dependencies, each with at least `name` and `p99Ms` (or `histogram`). */
  dependencies: list(CONFIG_LIMITS.maxDependencies),
  /** Latency budgets of the endpoints (SPEC B1, B2). */
  endpoints: list(CONFIG_LIMITS.maxEndpoints),
});
