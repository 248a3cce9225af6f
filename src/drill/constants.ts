/** Defaults and bounds of `prazo drill` (SPEC V2), in one place. Durations in ms unless named `S`. */
export const DRILL_DEFAULTS = Object.freeze({
  /** Load time, in seconds. */
  durationS: 10,
  /** Offered rate on the routes that use the replaced dependency, req/s. */
  rate: 20,
  /**
   * Load multiple: the dependent routes run at `rate × load` (`--load 5`: five times the traffic that
   * reaches the dependency), the independent routes at their own rate, unchanged (issue 23).
   */
  load: 1,
  /** Offered rate on the independent routes (the probe), req/s. */
  independentRate: 10,
  /** The probe's requests are failures after this long (the user's deadline), in ms. */
  probeTimeoutMs: 2_000,
  /** Pass threshold: success rate of the independent routes, %. */
  minSuccessPct: 99.9,
  /**
   * The healthy phase run first, in seconds: the same loads with the double answering at once, so
   * the independent routes' p99 bound is relative to what the same run measured without the
   * incident. 0 skips it (then only `maxP99Ms` bounds the p99, when given).
   */
  healthyS: 3,
  /** Pass threshold: the independent routes' p99 at most this multiple of their healthy p99. */
  p99VsHealthy: 2,
  /**
   * ...and never below this, in ms: a healthy p99 of 5 ms doubled is 10 ms, the size of one event-loop
   * pause on a loaded 2-core machine, and at 5× the load the services' own CPU (100 refusals a
   * second through three processes) moved the catalog's p99 from 16 to 50 ms with the pool at
   * 13 of 15. A pool that ran dry costs its waiters a whole held call (the double holds each for the
   * configured timeout, hundreds of ms: the issue's dry pool put the catalog's p50 at 138 ms), far
   * above it.
   */
  p99FloorMs: 60,
  /** The dependency replaced when the target is the demo. */
  demoDependency: 'supplier',
  /** Timeout of the naive demo stack in a drill: the 30 s of the seed's "library default". */
  naiveTimeoutMs: 30_000,
  /** Config file read when none is named and one exists in the working directory. */
  configFile: 'prazo.config.yaml',
});

export const DRILL_LIMITS = Object.freeze({
  maxDurationS: 3_600,
  maxHealthyS: 600,
  maxLoad: 100,
  maxRate: 10_000,
  maxConnections: 1_000,
  maxTimeoutMs: 600_000,
});

/** Exit codes of `prazo drill`. */
export const DrillExit = Object.freeze({ pass: 0, fail: 1, badInput: 2 });

/** The environment variable a started service reads to find the double (`--start`). */
export const DOUBLE_URL_ENV = 'PRAZO_DRILL_DOUBLE_URL';
