/** Defaults and bounds of `prazo drill` (SPEC V2), in one place. Durations in ms unless named `S`. */
export const DRILL_DEFAULTS = Object.freeze({
  /** Load time, in seconds. */
  durationS: 10,
  /** Offered rate on the routes that use the replaced dependency, req/s. */
  rate: 20,
  /** Offered rate on the independent routes (the probe), req/s. */
  independentRate: 10,
  /** The probe's requests are failures after this long (the user's deadline), in ms. */
  probeTimeoutMs: 2_000,
  /** Pass threshold: success rate of the independent routes, %. */
  minSuccessPct: 99.9,
  /** Pass threshold: p99 latency of the independent routes, in ms. */
  maxP99Ms: 1_000,
  /** The dependency replaced when the target is the demo. */
  demoDependency: 'supplier',
  /** Timeout of the naive demo stack in a drill: the 30 s of the seed's "library default". */
  naiveTimeoutMs: 30_000,
  /** Config file read when none is named and one exists in the working directory. */
  configFile: 'prazo.config.yaml',
});

export const DRILL_LIMITS = Object.freeze({
  maxDurationS: 3_600,
  maxRate: 10_000,
  maxConnections: 1_000,
  maxTimeoutMs: 600_000,
});

/** Exit codes of `prazo drill`. */
export const DrillExit = Object.freeze({ pass: 0, fail: 1, badInput: 2 });

/** The environment variable a started service reads to find the double (`--start`). */
export const DOUBLE_URL_ENV = 'PRAZO_DRILL_DOUBLE_URL';
