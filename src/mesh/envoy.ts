import { IDEMPOTENCY_KEY_HEADER } from '../retry/constants.js';
import { protoDuration } from './duration.js';
import { mergeVirtualHosts } from './group.js';
import { minConcurrency } from './istio.js';
import {
  type MeshFile,
  type MeshPolicy,
  type MeshRendering,
  percentileName,
  type ThrottlePolicy,
} from './policy.js';

/**
 * Envoy v3 (SPEC X10), in the protos' own field names and protobuf-JSON units (durations as `"0.119s"`):
 * - a `RouteConfiguration` (`envoy.config.route.v3`): one virtual host per dependency whose route has
 *   `timeout` (the deadline), a `retry_policy` (`retry_on`, `num_retries`, `per_try_timeout` =
 *   `ceil(p99 × slack)`, full-jitter `retry_back_off`, `Retry-After` through
 *   `rate_limited_retry_back_off`, another host through the `previous_hosts` predicate, and
 *   `retriable_request_headers` so only idempotent methods or a request with an `idempotency-key` are
 *   retried), and `hedge_policy.hedge_on_per_try_timeout` when the dependency hedges;
 * - the clusters, as a `Bootstrap.static_resources` fragment (`envoy.config.cluster.v3.Cluster`):
 *   `connect_timeout`, `outlier_detection` and the retry budget in
 *   `circuit_breakers.thresholds[].retry_budget` (a share of the requests in flight);
 * - the adaptive throttle (docs/throttling.md) as Envoy's `admission_control` filter, one per
 *   dependency, in an `HttpConnectionManager.http_filters` fragment (see {@link admissionFilters}).
 */

const GRPC_RETRY_ON: Readonly<Record<number, string>> = Object.freeze({ 14: 'unavailable' });

export function renderEnvoy(policies: readonly MeshPolicy[]): MeshRendering {
  const notes: string[] = [
    "route timeout is a fixed deadline; prazo uses what is left of the caller's (Envoy follows a per-request one with the router's respect_expected_rq_timeout and prazo's headerFormat: { envoy: true })",
    'the retry budget limits retries in flight (a share of active requests), not retries per request over a window',
  ];
  const shared = sharedServiceNames(policies, notes);
  const virtualHosts = mergeVirtualHosts(policies.map((policy) => virtualHost(policy, notes, shared)));
  const clusters = policies.map(cluster);
  const filters = admissionFilters(policies, notes);
  return {
    files: [
      {
        name: 'envoy-route.yaml',
        format: 'yaml',
        documents: [{ name: 'prazo', virtual_hosts: virtualHosts }],
        usage: 'a RouteConfiguration: serve it over RDS, or set it as the HttpConnectionManager route_config',
      },
      {
        name: 'envoy-clusters.yaml',
        format: 'yaml',
        documents: [{ static_resources: { clusters } }],
        usage:
          'a Bootstrap fragment: merge static_resources.clusters into the bootstrap (or serve them over CDS)',
      },
      ...filters,
    ],
    notes,
  };
}

/**
 * Service names found in more than one namespace. A virtual host's short domains (`inventory`,
 * `inventory:8080`) name the Service as seen from its own namespace, so two namespaces' Services of
 * one name would both claim them, and Envoy refuses a RouteConfiguration that gives a domain twice.
 * Which one a bare name means depends on where the caller runs, which the export does not know: those
 * hosts keep only their namespaced domains (`inventory.shop`, the cluster FQDN), and a note says so.
 */
function sharedServiceNames(policies: readonly MeshPolicy[], notes: string[]): ReadonlySet<string> {
  const namespaces = new Map<string, Set<string>>();
  for (const { placement } of policies) {
    const seen = namespaces.get(placement.service) ?? new Set<string>();
    seen.add(placement.namespace);
    namespaces.set(placement.service, seen);
  }
  const shared = new Set([...namespaces].filter(([, ns]) => ns.size > 1).map(([service]) => service));
  for (const service of shared) {
    notes.push(
      `Service ${service} is in namespaces ${[...namespaces.get(service)!].join(', ')}: its virtual hosts match \`${service}.<namespace>\` and the cluster FQDN, not the bare \`${service}\` (Envoy refuses a domain given twice)`,
    );
  }
  return shared;
}

/** The name of a dependency's `admission_control` filter: the key its route enables it by. */
export const admissionFilterName = (dependency: string): string => `prazo.admission_control.${dependency}`;

const ADMISSION_CONTROL = 'envoy.extensions.filters.http.admission_control.v3.AdmissionControl';
const FILTER_CONFIG = 'envoy.config.route.v3.FilterConfig';
const ROUTER = 'envoy.extensions.filters.http.router.v3.Router';
/** gRPC status codes, OK (0) to UNAUTHENTICATED (16): the range `grpc_success_status` accepts. */
const GRPC_CODES = 17;

/**
 * The adaptive throttle as Envoy's `admission_control` (the same rule, from the same SRE chapter):
 * Envoy refuses with min(max_rejection_probability, ((n − s / sr_threshold) / (n + 1))^(1/aggression)),
 * so sr_threshold = 1/k and aggression 1 give prazo's (requests − k × accepts) / (requests + 1).
 *
 * Where it goes, and why there: the filter has no per-route settings, and a listener-wide one would
 * count every dependency in one window. An upstream (cluster) filter would be per dependency, but it
 * never sees a per-try timeout or a connect failure (the router resets the upstream request; no
 * response passes through it), so a hung dependency would never be throttled. So each dependency gets
 * its own downstream filter, `disabled: true` in the connection manager and enabled by its own route
 * (`typed_per_filter_config` with an empty `FilterConfig.config`, Envoy ≥ 1.27's route-based filter
 * chain): its window counts that route's requests only, the router's 503/504 for a timeout or a
 * refused connection among them, and a refusal happens before the router, so it is never retried.
 * What counts as accepted is what prazo accepts: every status but the ones it retries (408, 429, 500,
 * 502, 503, 504), every gRPC code but UNAVAILABLE.
 */
function admissionFilters(policies: readonly MeshPolicy[], notes: string[]): MeshFile[] {
  const throttled = policies.filter((p) => p.throttle !== undefined);
  if (throttled.length === 0) return [];
  notes.push(
    "admission_control does not count the requests it refuses (prazo counts them, as the SRE rule does): below 1/k of attempts accepted prazo's refusals climb to maxProbability, Envoy's stay at 1 - k x the accepted share; it counts one outcome per request (after Envoy's own retries), per worker thread, in 1 s steps, and takes a pushback-marked 503 for a failure",
  );
  const filters = throttled.map((policy) => {
    const t = policy.throttle!;
    const config = admissionControl(policy, t);
    const windowS = envoyWindowS(t.windowMs);
    notes.push(
      `${policy.dependency}: admission_control with k ${t.k} as sr_threshold ${percent(1 / t.k)}% and aggression 1, window ${t.windowMs} ms as sampling_window ${windowS} s${windowS * 1_000 === t.windowMs ? '' : ' (Envoy counts whole seconds)'}, minRequests ${t.minRequests} as rps_threshold ${rpsThreshold(t)}/s, maxProbability ${t.maxProbability} as max_rejection_probability ${percent(t.maxProbability)}%`,
    );
    return { name: admissionFilterName(policy.dependency), disabled: true, typed_config: config };
  });
  return [
    {
      name: 'envoy-http-filters.yaml',
      format: 'yaml',
      documents: [
        {
          http_filters: [
            ...filters,
            { name: 'envoy.filters.http.router', typed_config: { '@type': `type.googleapis.com/${ROUTER}` } },
          ],
        },
      ],
      usage:
        "an HttpConnectionManager fragment: put these http_filters before the router of the listener that serves envoy-route.yaml (each is off by default; its dependency's route turns it on)",
    },
  ];
}

/** Envoy reads sampling_window in whole seconds (rounded down, 1 s steps): prazo's window, rounded up. */
const envoyWindowS = (windowMs: number): number => Math.max(1, Math.ceil(windowMs / 1_000));

/**
 * Envoy refuses nothing while the window's average rate, floor(requests / window s), is below
 * rps_threshold; prazo while the window holds fewer than minRequests. Rounded up: never earlier.
 */
const rpsThreshold = (t: ThrottlePolicy): number => Math.ceil(t.minRequests / envoyWindowS(t.windowMs));

/** A share as an Envoy `Percent` value, without float noise (0.57 → 57, not 56.99999999999999). */
const percent = (share: number): number => Number((share * 100).toPrecision(12));

function admissionControl(policy: MeshPolicy, t: ThrottlePolicy): Record<string, unknown> {
  const key = admissionFilterName(policy.dependency);
  return {
    '@type': `type.googleapis.com/${ADMISSION_CONTROL}`,
    success_criteria: {
      http_criteria: { http_success_status: successRanges(policy.retryStatuses) },
      grpc_criteria: {
        grpc_success_status: Array.from({ length: GRPC_CODES }, (_, code) => code).filter(
          (code) => !policy.retryGrpcCodes.includes(code),
        ),
      },
    },
    sampling_window: protoDuration(envoyWindowS(t.windowMs) * 1_000),
    aggression: { default_value: 1, runtime_key: `${key}.aggression` },
    sr_threshold: { default_value: { value: percent(1 / t.k) }, runtime_key: `${key}.sr_threshold` },
    rps_threshold: { default_value: rpsThreshold(t), runtime_key: `${key}.rps_threshold` },
    max_rejection_probability: {
      default_value: { value: percent(t.maxProbability) },
      runtime_key: `${key}.max_rejection_probability`,
    },
  };
}

/** The statuses in [100, 600) other than `failures`, as Envoy's half-open `Int32Range`s. */
function successRanges(failures: readonly number[]): Array<{ start: number; end: number }> {
  const ranges: Array<{ start: number; end: number }> = [];
  let start = 100;
  for (const status of [...failures].sort((a, b) => a - b)) {
    if (status < start || status >= 600) continue;
    if (status > start) ranges.push({ start, end: status });
    start = status + 1;
  }
  if (start < 600) ranges.push({ start, end: 600 });
  return ranges;
}

/** Envoy `retry_on` for what prazo retries (SPEC R2, R4). */
function retryOn(policy: MeshPolicy): string {
  const on = [
    'connect-failure',
    'refused-stream',
    policy.retryResponseTimeout ? 'reset' : 'reset-before-request',
  ];
  if (policy.placement.protocol === 'grpc') on.push(...policy.retryGrpcCodes.map((c) => GRPC_RETRY_ON[c]!));
  else on.push('retriable-status-codes');
  return on.join(',');
}

function virtualHost(
  policy: MeshPolicy,
  notes: string[],
  shared: ReadonlySet<string>,
): Record<string, unknown> {
  const { placement } = policy;
  const name = policy.dependency;
  const attemptMs = Math.min(policy.attemptTimeoutMs, policy.deadlineMs);
  const route: Record<string, unknown> = { cluster: name };
  if (policy.retries === 0) {
    // One attempt: the attempt timeout is the whole request (a per_try_timeout needs a retry policy).
    route.timeout = protoDuration(attemptMs);
  } else {
    route.timeout = protoDuration(policy.deadlineMs);
    route.retry_policy = retryPolicy(policy);
  }
  if (policy.hedge !== undefined) {
    if (policy.retries > 0) {
      route.hedge_policy = { hedge_on_per_try_timeout: true };
      notes.push(
        `${name}: hedges at per_try_timeout ${attemptMs} ms and keeps the first attempt running, instead of hedging at the live ${percentileName(policy.hedge.percentile)} (about ${policy.hedge.delayMs} ms from ${policy.hedge.from}); a fixed p95 would hedge every request once latency rises`,
      );
    } else {
      notes.push(`${name}: one attempt: Envoy's hedge is a retry, so there is none`);
    }
  }
  if (placement.protocol === 'grpc') {
    // gRPC carries its deadline: honour a caller's grpc-timeout, never beyond the configured one.
    route.max_stream_duration = { grpc_timeout_header_max: protoDuration(policy.deadlineMs) };
  }
  if (policy.retries > 0) {
    notes.push(
      `${name}: retry budget ${Math.min(100, policy.budget.maxRatio * 100)}% of requests in flight, at least ${minConcurrency(policy)} (prazo: ${policy.budget.maxRatio * 100}% of requests over ${policy.budget.windowMs} ms, at least ${policy.budget.minPerSecond}/s)`,
    );
    if (!policy.retryResponseTimeout) {
      notes.push(
        `${name}: reset-before-request retries a connection lost before the request was sent; prazo also retries one lost before any response byte`,
      );
    }
  }
  return {
    name,
    domains: [
      placement.host,
      `${placement.host}:${placement.port}`,
      ...(shared.has(placement.service) ? [] : [placement.service, `${placement.service}:${placement.port}`]),
      `${placement.service}.${placement.namespace}`,
      `${placement.service}.${placement.namespace}:${placement.port}`,
    ],
    routes: [
      {
        name,
        match: { prefix: placement.path },
        route,
        // Its own admission_control filter, off by default in the connection manager, on here.
        ...(policy.throttle === undefined
          ? {}
          : {
              typed_per_filter_config: {
                [admissionFilterName(name)]: { '@type': `type.googleapis.com/${FILTER_CONFIG}`, config: {} },
              },
            }),
      },
    ],
  };
}

function retryPolicy(policy: MeshPolicy): Record<string, unknown> {
  const http = policy.placement.protocol === 'http';
  const { baseMs, capMs } = policy.backoff;
  return {
    retry_on: retryOn(policy),
    num_retries: policy.retries,
    per_try_timeout: protoDuration(Math.min(policy.attemptTimeoutMs, policy.deadlineMs)),
    ...(http ? { retriable_status_codes: [...policy.retryStatuses] } : {}),
    // base_interval must be > 0: a zero base keeps Envoy's default (25 ms).
    ...(baseMs > 0
      ? {
          retry_back_off: {
            base_interval: protoDuration(baseMs),
            max_interval: protoDuration(Math.max(baseMs, capMs)),
          },
        }
      : {}),
    // Retry-After (SPEC R3), in seconds; one longer than the deadline is dropped for the backoff.
    rate_limited_retry_back_off: {
      reset_headers: [{ name: 'retry-after', format: 'SECONDS' }],
      max_interval: protoDuration(policy.deadlineMs),
    },
    retry_host_predicate: [
      {
        name: 'envoy.retry_host_predicates.previous_hosts',
        typed_config: {
          '@type': 'type.googleapis.com/envoy.extensions.retry.host.previous_hosts.v3.PreviousHostsPredicate',
        },
      },
    ],
    host_selection_retry_max_attempts: 3,
    // SPEC R5: retried only when idempotent (a method of RFC 9110 §9.2.2) or carrying a key.
    ...(http
      ? {
          retriable_request_headers: [
            ...policy.idempotentMethods.map((method) => ({
              name: ':method',
              string_match: { exact: method },
            })),
            { name: IDEMPOTENCY_KEY_HEADER, present_match: true },
          ],
        }
      : {}),
  };
}

function cluster(policy: MeshPolicy): Record<string, unknown> {
  const { placement, ejection } = policy;
  const name = policy.dependency;
  return {
    name,
    type: 'STRICT_DNS',
    connect_timeout: protoDuration(policy.connectTimeoutMs),
    load_assignment: {
      cluster_name: name,
      endpoints: [
        {
          lb_endpoints: [
            {
              endpoint: {
                address: { socket_address: { address: placement.host, port_value: placement.port } },
              },
            },
          ],
        },
      ],
    },
    ...(policy.retries > 0
      ? {
          circuit_breakers: {
            thresholds: [
              {
                priority: 'DEFAULT',
                retry_budget: {
                  budget_percent: { value: Math.min(100, policy.budget.maxRatio * 100) },
                  min_retry_concurrency: minConcurrency(policy),
                },
              },
            ],
          },
        }
      : {}),
    outlier_detection: {
      consecutive_5xx: ejection.consecutiveFailures,
      base_ejection_time: protoDuration(ejection.baseEjectionMs),
      max_ejection_time: protoDuration(ejection.maxEjectionMs),
    },
    ...(placement.protocol === 'grpc'
      ? {
          typed_extension_protocol_options: {
            'envoy.extensions.upstreams.http.v3.HttpProtocolOptions': {
              '@type': 'type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions',
              explicit_http_config: { http2_protocol_options: {} },
            },
          },
        }
      : {}),
  };
}
