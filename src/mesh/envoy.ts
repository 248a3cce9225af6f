import { IDEMPOTENCY_KEY_HEADER } from '../retry/constants.js';
import { protoDuration } from './duration.js';
import { mergeVirtualHosts } from './group.js';
import { minConcurrency } from './istio.js';
import type { MeshPolicy, MeshRendering } from './policy.js';

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
 *   `circuit_breakers.thresholds[].retry_budget` (a share of the requests in flight).
 */

const GRPC_RETRY_ON: Readonly<Record<number, string>> = Object.freeze({ 14: 'unavailable' });

export function renderEnvoy(policies: readonly MeshPolicy[]): MeshRendering {
  const notes: string[] = [
    "route timeout is a fixed deadline; prazo uses what is left of the caller's (Envoy follows a per-request one with the router's respect_expected_rq_timeout and prazo's headerFormat: { envoy: true })",
    'the retry budget limits retries in flight (a share of active requests), not retries per request over a window',
  ];
  const virtualHosts = mergeVirtualHosts(policies.map((policy) => virtualHost(policy, notes)));
  const clusters = policies.map(cluster);
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
    ],
    notes,
  };
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

function virtualHost(policy: MeshPolicy, notes: string[]): Record<string, unknown> {
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
        `${name}: hedges at per_try_timeout ${attemptMs} ms and keeps the first attempt running, instead of hedging at the live p${Math.round(policy.hedge.percentile * 100)} (about ${policy.hedge.delayMs} ms from ${policy.hedge.from}); a fixed p95 would hedge every request once latency rises`,
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
      placement.service,
      `${placement.service}:${placement.port}`,
      `${placement.service}.${placement.namespace}`,
      `${placement.service}.${placement.namespace}:${placement.port}`,
    ],
    routes: [{ name, match: { prefix: placement.path }, route }],
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
