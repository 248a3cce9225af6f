import { DEPENDENCY_KINDS } from '../calibrate/kinds.js';
import {
  HEALTH_THRESHOLD_OPTIONS,
  POOL_CHECK_OPTIONS,
  PROMETHEUS_SERIES_OPTIONS,
} from '../calibrate/options.js';
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

/**
 * `histogram:` where the dependency's p99 is measured (SPEC C1, C4, X8): a latency `file`, relative to
 * the config, read at load time; or the fleet's series in Prometheus (`prometheus`), read by `prazo
 * calibrate --prometheus`, which writes the measured p99 back into `p99Ms`.
 */
export const HISTOGRAM_IN_FILE = defineOptions(
  {
    /** The file, relative to the config's directory. At most 4096 characters. Either this or `prometheus`. */
    file: option.string({ maxLength: 4096 }),
    ...SOURCE_OPTIONS.specs,
    /** The dependency's series in Prometheus: metric, selector, outcome label, unit (all optional). */
    prometheus: option.nested(PROMETHEUS_SERIES_OPTIONS),
    /** p99 of known-healthy windows, in ms, for the guard's jump check. (0, 86400000]. Default: none. */
    baselineP99Ms: option.number({ unit: 'ms', min: 0, exclusiveMin: true, max: 86_400_000 }),
  },
  (_values, report, { given }) => {
    if ((given.file === undefined) === (given.prometheus === undefined)) {
      report(
        given.file === undefined ? [] : 'prometheus',
        "give either `file` (a latency file read at load) or `prometheus` (the fleet's series, read by `prazo calibrate --prometheus`)",
      );
    } else if (given.prometheus !== undefined) {
      for (const key of ['format', 'metric', 'column', 'unit'] as const) {
        if (given[key] !== undefined)
          report(
            key,
            `belongs to a \`file\`; the Prometheus series takes its own (\`prometheus.metric\`, \`prometheus.unit\`)`,
          );
      }
    }
  },
);

/**
 * `store:` the dependency is a database or cache reached through a prazo store integration
 * (`prazo/mysql`, `prazo/redis`, `prazo/pg`; SPEC D7): which kind, and the settings that are the
 * store's, not the executor's. `mysqlOptionsFrom` / `redisOptionsFrom` turn the entry into the
 * integration's options (its name and p99 come from the entry itself).
 */
export const STORE_IN_FILE = defineOptions({
  /** Which store: `mysql`, `mariadb`, `redis` or `postgres`. Required. */
  kind: option.required(option.oneOf(['mysql', 'mariadb', 'redis', 'postgres'])),
  /**
   * Grace past the deadline before the client kills the statement (MySQL) or stops waiting (Redis),
   * in ms. Default: the integration's (100 for MySQL, 50 for Redis); [0, 60000].
   */
  cancelGraceMs: option.number({ unit: 'ms', min: 0, max: 60_000 }),
  /**
   * Redis only: how much earlier than the deadline a blocking command's server-side block ends, in
   * ms. Default 100; [0, 10000].
   */
  blockMarginMs: option.number({ unit: 'ms', min: 0, max: 10_000 }),
});

/** `pool:` the pool the dependency's calls hold a connection of, checked by Little's law (SPEC C6). */
export const POOL_IN_FILE = defineOptions({
  /** Connections in the pool. Required; integer [1, 10^6]. */
  size: POOL_CHECK_OPTIONS.specs.poolSize,
  /** Calls per second into it. Required; (0, 10^7] req/s. */
  rps: POOL_CHECK_OPTIONS.specs.rps,
});

const matches =
  (re: RegExp) =>
  (v: unknown): boolean =>
    typeof v === 'string' && re.test(v);

/** A Kubernetes name: an RFC 1123 DNS label (lowercase letters, digits, `-`; at most 63). */
export const DNS_LABEL = /^(?=.{1,63}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

const dnsLabel = (what: string) =>
  option.string({
    maxLength: 63,
    pattern: {
      describe: `${what}: an RFC 1123 DNS label (a-z, 0-9 and '-', starting and ending with a letter or digit, at most 63 characters)`,
      test: matches(DNS_LABEL),
    },
  });

/**
 * `mesh:` in a dependency — where it lives in the cluster, for `prazo export` (SPEC X10): the
 * Kubernetes Service, its namespace and port, the route's path prefix and the protocol; `false` for
 * one no mesh proxies (a database). Only the export reads it; the library's own calls do not.
 */
export const MESH_IN_FILE = defineOptions({
  /** The Kubernetes Service the dependency is called through. Default: the dependency's `name`. */
  service: dnsLabel('a Service name'),
  /** Its namespace. Default: the top-level `mesh.namespace`, else `default`. */
  namespace: dnsLabel('a namespace'),
  /** The Service port. Default 80; integer [1, 65535]. */
  port: option.integer({ default: 80, min: 1, max: 65_535 }),
  /** Path prefix of the calls the policy applies to. Default `/`; starts with `/`, at most 1024 characters. */
  path: option.string({
    default: '/',
    maxLength: 1024,
    pattern: { describe: 'a path starting with `/`', test: matches(/^\/[^\s?#]*$/) },
  }),
  /** How it is called: `http` or `grpc` (retry conditions, HTTP/2, GRPCRoute). Default `http`. */
  protocol: option.oneOf(['http', 'grpc'], { default: 'http' }),
  /**
   * gRPC: the fully-qualified service the gRPC service config names (`shop.v1.Inventory`). Default:
   * every service of the channel.
   */
  grpcService: option.string({
    maxLength: 200,
    pattern: {
      describe: 'a fully-qualified gRPC service name (`package.Service`)',
      test: matches(/^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/),
    },
  }),
  /**
   * The fixed hedge delay, in ms, for systems that cannot read a live quantile (gRPC's
   * `hedgingDelay`). Default: the hedge percentile of the dependency's histogram, else its p99.
   * (0, 86400000].
   */
  hedgeDelayMs: option.number({ unit: 'ms', min: 0, exclusiveMin: true, max: 86_400_000 }),
});

/** The top-level `mesh:` — defaults for every dependency's `mesh`, and where routes attach. */
export const MESH_DEFAULTS_IN_FILE = defineOptions({
  /** Namespace of the dependencies' Services. Default `default`. */
  namespace: dnsLabel('a namespace'),
  /** The cluster's DNS domain (Istio hosts, Envoy addresses). Default `cluster.local`. */
  clusterDomain: option.string({
    default: 'cluster.local',
    maxLength: 253,
    pattern: {
      describe: 'a DNS domain (lowercase labels separated by dots)',
      test: matches(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/),
    },
  }),
  /**
   * Gateway API: the Gateway the HTTPRoutes attach to (north-south). Default: none, each route's
   * parent is its Service (GAMMA, east-west mesh routing).
   */
  gateway: option.nested(
    defineOptions({
      /** The Gateway's name. Required. */
      name: option.required(dnsLabel('a Gateway name')),
      /** Its namespace. Default: the route's. */
      namespace: dnsLabel('a namespace'),
      /** The listener to attach to. Default: every listener. */
      sectionName: dnsLabel('a listener name'),
    }),
  ),
});

/** One `dependencies` entry. */
// `p99Assumed` is not written in a file: an entry with `kind` and no measured p99 is assumed.
const { p99Assumed: _assumedInCode, ...EXECUTOR_SPECS_IN_FILE } = DEPENDENCY_OPTIONS.specs;

export const DEPENDENCY_IN_FILE = defineOptions(
  {
    ...EXECUTOR_SPECS_IN_FILE,
    /**
     * The healthy p99 in ms, (0, 86400000] — or `histogram`, a file to measure it from, or `kind`
     * alone, a starting value until it is measured.
     */
    p99Ms: option.optional(DEPENDENCY_OPTIONS.specs.p99Ms),
    /**
     * What kind of call it is: `in-process`, `same-zone-cache`, `same-zone-database`,
     * `same-zone-service`, `cross-zone`, `cross-region` or `third-party-api` (SPEC C8). Without a
     * measured p99 (`p99Ms`, `histogram.file`), the dependency starts from the kind's published
     * starting p99 (docs/calibration.md) and is marked *assumed* until it is measured. With one, the
     * kind says which p99s are plausible (below 1 ms only `in-process` and `same-zone-cache`).
     */
    kind: option.oneOf(DEPENDENCY_KINDS),
    /**
     * True accepts a measured p99 outside what its kind makes plausible (below 1 ms over a network,
     * above 10 minutes): one that is real, not a unit read wrong. Default false.
     */
    unusualP99: option.boolean({ default: false }),
    hedge: option.toggle(HEDGE_IN_FILE),
    histogram: option.nested(HISTOGRAM_IN_FILE),
    pool: option.nested(POOL_IN_FILE),
    store: option.nested(STORE_IN_FILE),
    mesh: option.toggle(MESH_IN_FILE),
  },
  (_values, report, { given }) => {
    const histogram = given.histogram as Record<string, unknown> | undefined;
    const fromFile = histogram !== null && typeof histogram === 'object' && histogram.file !== undefined;
    if (given.p99Ms !== undefined && fromFile) {
      report('histogram', 'give either `p99Ms` or a histogram `file`, not both');
    } else if (given.p99Ms === undefined && !fromFile && given.kind === undefined) {
      report(
        [],
        typeof histogram === 'object' && histogram !== null
          ? 'needs `p99Ms`: `histogram.prometheus` says where the fleet measures it, `prazo calibrate --prometheus URL --write` writes it (until then, `kind` gives a starting value)'
          : 'needs `p99Ms` (the healthy p99 in ms), `histogram` (a file to measure it from), or `kind` (a starting value per kind of call until it is measured: in-process, same-zone-cache, same-zone-database, same-zone-service, cross-zone, cross-region, third-party-api)',
      );
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
  /** The dependencies, each with at least `name` and `p99Ms` (or `histogram`, or `kind`). */
  dependencies: list(CONFIG_LIMITS.maxDependencies),
  /** Latency budgets of the endpoints (SPEC B1, B2). */
  endpoints: list(CONFIG_LIMITS.maxEndpoints),
  mesh: option.nested(MESH_DEFAULTS_IN_FILE),
});
