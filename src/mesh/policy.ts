import { isRetryBudget } from '../budget/budget.js';
import { RETRY_BUDGET_OPTIONS } from '../budget/options.js';
import type { MeshDefaults } from '../config/body.js';
import type { DependencyConfig, MeshPlacement as GivenPlacement } from '../config/dependency.js';
import type { PrazoConfig } from '../config/load.js';
import type { Path } from '../config/problem.js';
import { DEPENDENCY_IN_FILE, MESH_DEFAULTS_IN_FILE, MESH_IN_FILE } from '../config/schema.js';
import { hedgePlanOf } from '../hedge/options.js';
import { BACKOFF_OPTIONS } from '../retry/backoff.js';
import { GRPC_UNAVAILABLE, RETRYABLE_STATUS } from '../retry/constants.js';
import { IDEMPOTENT_METHODS } from '../retry/idempotency.js';
import { THROTTLE_OPTIONS } from '../throttle/options.js';

/**
 * What a proxy or a gRPC channel must enforce for one dependency, in numbers (SPEC X10): the policy
 * prazo itself enforces in the client, read from the same file by the same loader, so the mesh and
 * the library cannot drift apart. Nothing is derived here a second time: the attempt timeout, the
 * connect timeout and the attempts that fit the deadline are the loader's `calibrateTimeout` result
 * (`DependencyConfig.calibration`, what `createDependency` computes); the budget, hedge, backoff and
 * adaptive throttle are the file's values with the declarations' defaults. The renderers (one per system) only translate
 * these numbers into each system's fields and say what the system cannot express.
 */

/** Where the dependency lives in the cluster (`mesh:` with its defaults applied). */
export interface MeshPlacement {
  /** The Kubernetes Service. */
  readonly service: string;
  readonly namespace: string;
  readonly port: number;
  /** Path prefix the policy applies to. */
  readonly path: string;
  readonly protocol: 'http' | 'grpc';
  /** gRPC: the fully-qualified service, or undefined for every service of the channel. */
  readonly grpcService: string | undefined;
  /** `service.namespace.svc.<clusterDomain>`. */
  readonly host: string;
}

/**
 * Outlier ejection. Issue #15 adds per-dependency ejection settings to the config; until then every
 * dependency gets the defaults prazo documents, which are Envoy's and gRPC's: 5 consecutive failures,
 * ejected 30 s, growing with repeated ejections up to 300 s.
 */
export interface EjectionPolicy {
  readonly consecutiveFailures: number;
  readonly baseEjectionMs: number;
  readonly maxEjectionMs: number;
}

export const EJECTION_DEFAULTS: EjectionPolicy = Object.freeze({
  consecutiveFailures: 5,
  baseEjectionMs: 30_000,
  maxEjectionMs: 300_000,
});

/** The one place a dependency's own ejection settings plug in (issue #15): today, the defaults. */
function ejectionOf(_dependency: DependencyConfig): EjectionPolicy {
  return EJECTION_DEFAULTS;
}

/** The retry budget (SPEC R1): a share of the requests in a sliding window, with a floor per second. */
export interface BudgetPolicy {
  readonly windowMs: number;
  /** Extra attempts (retries + hedges) per original request. */
  readonly maxRatio: number;
  /** Extra attempts per second allowed whatever the traffic. */
  readonly minPerSecond: number;
}

/**
 * The adaptive throttle (docs/throttling.md): refuse a call with probability
 * min(maxProbability, max(0, (requests − k × accepts) / (requests + 1))) over the last `windowMs`, once
 * the window holds `minRequests`. The file's `throttle` with its declaration's defaults.
 */
export interface ThrottlePolicy {
  readonly k: number;
  readonly windowMs: number;
  readonly buckets: number;
  readonly maxProbability: number;
  readonly minRequests: number;
}

export interface HedgeDelay {
  /** The fixed delay for systems without a live quantile, in ms (integer). */
  readonly delayMs: number;
  /** The live quantile prazo hedges at (0.95 by default). */
  readonly percentile: number;
  /** Where `delayMs` came from, in words: "the histogram's p95", "mesh.hedgeDelayMs", "the p99 (no histogram)". */
  readonly from: string;
}

export interface MeshPolicy {
  readonly dependency: string;
  /** The entry's index in the file's `dependencies` (for problem locations). */
  readonly index: number;
  readonly placement: MeshPlacement;
  readonly p99Ms: number;
  /** The deadline the attempts are fitted into (`defaultDeadlineMs`), in ms, rounded up: the whole request. */
  readonly deadlineMs: number;
  /** Per-attempt response timeout `ceil(p99 × slack)`, in ms. */
  readonly attemptTimeoutMs: number;
  /** Connect timeout, in ms. */
  readonly connectTimeoutMs: number;
  /** Attempts that fit the deadline, the first included. */
  readonly attempts: number;
  /** `attempts - 1`. */
  readonly retries: number;
  /** Full-jitter backoff ceilings between retries, in ms. */
  readonly backoff: { readonly baseMs: number; readonly capMs: number };
  /** HTTP statuses prazo retries (SPEC R2). */
  readonly retryStatuses: readonly number[];
  /** gRPC status codes prazo retries: UNAVAILABLE only. */
  readonly retryGrpcCodes: readonly number[];
  /** Whether a response timeout is retried (SPEC R4; default false: the server may have done the work). */
  readonly retryResponseTimeout: boolean;
  /** Methods that may run twice (RFC 9110 §9.2.2); other requests are retried only with an `idempotency-key`. */
  readonly idempotentMethods: readonly string[];
  readonly budget: BudgetPolicy;
  /** Undefined when the dependency does not hedge. */
  readonly hedge: HedgeDelay | undefined;
  readonly ejection: EjectionPolicy;
  /** Undefined when the dependency's throttle is switched off (`throttle: false`). */
  readonly throttle: ThrottlePolicy | undefined;
}

/** A problem of the export, at a key path of the file (located by the caller, like the loader's). */
export interface MeshProblem {
  /** The dependency it is about, if one. */
  readonly dependency?: string;
  readonly path: Path;
  readonly message: string;
}

/**
 * A Kubernetes Service name: the API server validates it as an RFC 1035 label, stricter than the
 * RFC 1123 label of other names (a Service named `9lives` is refused). The config's own check is the RFC 1123 one (`DNS_LABEL`, shared
 * with the namespace); a name it accepts but no Service can have would be exported for a Service
 * that cannot exist (#24).
 */
export const SERVICE_NAME = /^(?=.{1,63}$)[a-z]([-a-z0-9]*[a-z0-9])?$/;
const SERVICE_NAME_RULE =
  "an RFC 1035 label: starts with a letter a-z, then a-z, 0-9 or '-', ends with a letter or digit, at most 63 characters";

/**
 * A Service's host, `service.namespace.svc.<clusterDomain>`, is a DNS name: at most 253 characters,
 * each label at most 63 (RFC 1035; Istio validates a VirtualService's and a DestinationRule's host
 * so). A 63-character Service in a 63-character namespace leaves 120 for the cluster domain.
 */
const DNS_NAME_MAX = 253;
const DNS_LABEL_MAX = 63;

/** Every dependency's mesh policy, or the problems that keep one from being exported. */
export function meshPolicies(config: PrazoConfig): {
  readonly policies: readonly MeshPolicy[];
  readonly problems: readonly MeshProblem[];
} {
  const defaults: MeshDefaults = config.mesh ?? {};
  const namespace = defaults.namespace ?? 'default';
  const clusterDomain = defaults.clusterDomain ?? MESH_DEFAULTS_IN_FILE.defaults.clusterDomain;
  const policies: MeshPolicy[] = [];
  const problems: MeshProblem[] = [];
  const longLabel = clusterDomain.split('.').find((label) => label.length > DNS_LABEL_MAX);
  if (longLabel !== undefined) {
    // The file's check is the domain's characters; a label of a DNS name is at most 63 of them.
    problems.push({
      path: ['mesh', 'clusterDomain'],
      message: `\`${longLabel.slice(0, 20)}…\` (${longLabel.length} characters) is longer than a DNS label may be (${DNS_LABEL_MAX}): no Service host ends in it`,
    });
  }
  let index = 0;
  for (const dependency of config.dependencies.values()) {
    const at = ['dependencies', index];
    const name = dependency.options.name;
    if (dependency.mesh === false) {
      index += 1;
      continue;
    }
    const mesh = placementOf(dependency);
    if (mesh.service === undefined && !SERVICE_NAME.test(name)) {
      problems.push({
        dependency: name,
        path: [...at, 'name'],
        message: `\`${name}\` is not a Kubernetes Service name (${SERVICE_NAME_RULE}): give \`mesh.service\``,
      });
    } else if (mesh.service !== undefined && !SERVICE_NAME.test(mesh.service)) {
      problems.push({
        dependency: name,
        path: [...at, 'mesh', 'service'],
        message: `\`${mesh.service}\` is not a Kubernetes Service name (${SERVICE_NAME_RULE})`,
      });
    } else if (mesh.grpcService !== undefined && mesh.protocol !== 'grpc') {
      problems.push({
        dependency: name,
        path: [...at, 'mesh', 'grpcService'],
        message: 'names a gRPC service, but the dependency is not `protocol: grpc`',
      });
    } else {
      const policy = policyOf(dependency, index, { namespace, clusterDomain });
      const { host } = policy.placement;
      if (host.length > DNS_NAME_MAX) {
        problems.push({
          dependency: name,
          path: [...at, 'mesh'],
          message: `its host \`${host.slice(0, 40)}…\` is ${host.length} characters, more than a DNS name may have (${DNS_NAME_MAX}): Istio refuses it and Envoy cannot resolve it; shorten the Service, namespace or \`mesh.clusterDomain\``,
        });
      } else policies.push(policy);
    }
    index += 1;
  }
  return { policies, problems };
}

function policyOf(
  dependency: DependencyConfig,
  index: number,
  defaults: { namespace: string; clusterDomain: string },
): MeshPolicy {
  const { options, calibration } = dependency;
  const mesh = placementOf(dependency);
  const service = mesh.service ?? options.name;
  const namespace = mesh.namespace ?? defaults.namespace;
  const placement: MeshPlacement = Object.freeze({
    service,
    namespace,
    port: mesh.port ?? MESH_IN_FILE.defaults.port,
    path: mesh.path ?? MESH_IN_FILE.defaults.path,
    protocol: mesh.protocol ?? MESH_IN_FILE.defaults.protocol,
    grpcService: mesh.grpcService,
    host: `${service}.${namespace}.svc.${defaults.clusterDomain}`,
  });
  const given = options.retryBudget;
  const budget = given === undefined || isRetryBudget(given) ? {} : given;
  const backoff = options.backoff ?? {};
  return Object.freeze({
    dependency: options.name,
    index,
    placement,
    p99Ms: options.p99Ms,
    deadlineMs: Math.ceil(options.defaultDeadlineMs ?? DEPENDENCY_DEFAULT_DEADLINE_MS),
    attemptTimeoutMs: calibration.responseMs,
    connectTimeoutMs: Math.ceil(calibration.connectMs),
    attempts: calibration.attempts,
    retries: calibration.attempts - 1,
    backoff: Object.freeze({
      baseMs: Math.ceil(backoff.baseMs ?? BACKOFF_OPTIONS.defaults.baseMs),
      capMs: Math.ceil(backoff.capMs ?? BACKOFF_OPTIONS.defaults.capMs),
    }),
    retryStatuses: Object.freeze([...RETRYABLE_STATUS].sort((a, b) => a - b)),
    retryGrpcCodes: Object.freeze([GRPC_UNAVAILABLE]),
    retryResponseTimeout: options.retryResponseTimeout ?? false,
    idempotentMethods: Object.freeze([...IDEMPOTENT_METHODS]),
    budget: Object.freeze({
      windowMs: budget.windowMs ?? RETRY_BUDGET_OPTIONS.defaults.windowMs,
      maxRatio: budget.maxRatio ?? RETRY_BUDGET_OPTIONS.defaults.maxRatio,
      minPerSecond: budget.minPerSecond ?? RETRY_BUDGET_OPTIONS.defaults.minPerSecond,
    }),
    hedge: hedgeOf(dependency),
    ejection: ejectionOf(dependency),
    throttle: throttleOf(dependency),
  });
}

/** The dependency's throttle, on unless `throttle: false`, each key defaulting to its declaration's. */
function throttleOf(dependency: DependencyConfig): ThrottlePolicy | undefined {
  const given = dependency.options.throttle;
  if (given === false) return undefined;
  const settings = given === true || given === undefined ? {} : given;
  const d = THROTTLE_OPTIONS.defaults;
  return Object.freeze({
    k: settings.k ?? d.k,
    windowMs: settings.windowMs ?? d.windowMs,
    buckets: settings.buckets ?? d.buckets,
    maxProbability: settings.maxProbability ?? d.maxProbability,
    minRequests: settings.minRequests ?? d.minRequests,
  });
}

/** `createDependency`'s default `defaultDeadlineMs`, read from the file's declaration. */
const DEPENDENCY_DEFAULT_DEADLINE_MS = DEPENDENCY_IN_FILE.defaults.defaultDeadlineMs;

/** The dependency's `mesh:` settings as given (`true` or absent: all defaults). */
const placementOf = (dependency: DependencyConfig): GivenPlacement =>
  typeof dependency.mesh === 'object' ? dependency.mesh : {};

/**
 * The fixed delay standing in for prazo's live hedge quantile. From the dependency's histogram when
 * its p99 came from one (the smallest measured quantile at or above the hedge percentile: p95 for the
 * default), else `mesh.hedgeDelayMs`, else the p99 — later than prazo would hedge, never earlier.
 * Clamped below at the hedge's `minDelayMs`; above the ceiling (`maxDelayMs`, default the attempt
 * timeout) prazo sends no hedge, and neither does the export.
 */
function hedgeOf(dependency: DependencyConfig): HedgeDelay | undefined {
  const { options, calibration } = dependency;
  // Read as the executor reads it: the same percentile, floor and ceiling (hedge/options.ts).
  const plan = hedgePlanOf(options.hedge, calibration.responseMs);
  if (plan === undefined) return undefined;
  const { percentile } = plan;
  let delay: number;
  let from: string;
  const mesh = placementOf(dependency);
  if (mesh.hedgeDelayMs !== undefined) {
    delay = mesh.hedgeDelayMs;
    from = 'mesh.hedgeDelayMs';
  } else if (dependency.p99Source !== 'config') {
    const d = dependency.p99Source.distribution;
    const measured: Array<[number, number, string]> = [];
    for (const [q, v, label] of [
      [0.5, d.p50, 'p50'],
      [0.95, d.p95, 'p95'],
      [0.99, d.p99, 'p99'],
      [0.999, d.p999, 'p99.9'],
    ] as const) {
      if (v !== undefined) measured.push([q, v, label]);
    }
    // The p99 is always there (the calibration rests on it); the p99.9 may not be.
    const [, value, label] = measured.find(([q]) => q >= percentile - 1e-12) ??
      measured[measured.length - 1] ?? [1, options.p99Ms, 'p99'];
    delay = value;
    from = `the histogram's ${label}`;
  } else {
    delay = options.p99Ms;
    from = 'the p99 (no histogram gives a p95; set mesh.hedgeDelayMs)';
  }
  const delayMs = Math.ceil(Math.max(plan.minDelayMs, delay));
  if (delayMs > plan.maxDelayMs) return undefined;
  return Object.freeze({ delayMs, percentile, from });
}

/**
 * A quantile as a percentile's name: 0.95 → `p95`, 0.995 → `p99.5`, 0.9999 → `p99.99` (rounding to
 * whole percents would name 0.995 `p100`, a quantile that hedges nothing).
 */
export const percentileName = (q: number): string => `p${Math.round(q * 10_000) / 100}`;

/** One output file of an export: its documents, written as YAML (multi-document) or JSON. */
export interface MeshFile {
  readonly name: string;
  readonly format: 'yaml' | 'json';
  readonly documents: readonly Readonly<Record<string, unknown>>[];
  /** How to apply it, in one line (printed by the CLI, a comment at the top of YAML). */
  readonly usage: string;
}

/** What a renderer makes of the policies: the files, and what the system could not express. */
export interface MeshRendering {
  readonly files: readonly MeshFile[];
  /** `<dependency>: <what was approximated or left out, with the numbers>`. */
  readonly notes: readonly string[];
  /** What the system would refuse in what was rendered (then nothing is written). */
  readonly problems?: readonly MeshProblem[];
}
