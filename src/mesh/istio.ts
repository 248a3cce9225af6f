import { IDEMPOTENCY_KEY_HEADER } from '../retry/constants.js';
import { gatewayDuration } from './duration.js';
import { byService, groupLabels, labelled } from './group.js';
import { type KubernetesObject, metadataFor, retries } from './kubernetes.js';
import { type MeshPolicy, type MeshRendering, percentileName } from './policy.js';

/**
 * Istio (SPEC X10): a `VirtualService` per host (the dependencies on one Service share it, #24) with,
 * per dependency, `timeout` (the deadline), `retries` with `attempts`, `perTryTimeout`
 * (`ceil(p99 × slack)`), `retryOn` and `backoff` on the requests prazo may retry, and `retries.attempts: 0` on the rest (Istio's default is 2 retries on connect failures
 * and 503, for every method) — and a `DestinationRule` with the connect timeout, outlier detection
 * and the retry budget (`trafficPolicy.retryBudget`: Envoy's, a share of the requests *in flight*).
 * Durations use Istio's `1h/1m/1s/1ms` spelling. Istio does not merge two VirtualServices of one host
 * for sidecars, and `kubectl apply` keeps the last of two of one name: one per host it is.
 */

/** gRPC status names as Envoy's `x-envoy-retry-grpc-on` spells them (UNAVAILABLE = 14). */
const GRPC_RETRY_ON: Readonly<Record<number, string>> = Object.freeze({ 14: 'unavailable' });

/** Istio `retryOn` for what prazo retries (SPEC R2, R4). */
export function istioRetryOn(policy: MeshPolicy): string {
  const on = ['connect-failure', 'refused-stream'];
  if (policy.retryResponseTimeout) on.push('reset');
  if (policy.placement.protocol === 'grpc') {
    for (const code of policy.retryGrpcCodes) on.push(GRPC_RETRY_ON[code]!);
  } else on.push(...policy.retryStatuses.map(String));
  return on.join(',');
}

export function renderIstio(policies: readonly MeshPolicy[]): MeshRendering {
  const documents: KubernetesObject[] = [];
  const notes: string[] = [
    "timeout is a fixed deadline per route; prazo uses what is left of each caller's deadline",
    'retryBudget limits retries in flight (a share of active requests), not retries per request over a window',
  ];
  for (const group of byService(policies)) {
    documents.push(virtualService(group), destinationRule(group, notes));
  }
  for (const policy of policies) {
    const name = policy.dependency;
    if (policy.hedge !== undefined) {
      notes.push(
        `${name}: Istio has no hedging; the hedge at the live ${percentileName(policy.hedge.percentile)} is not exported`,
      );
    }
    if (retries(policy) && !policy.retryResponseTimeout) {
      notes.push(
        `${name}: a connection lost before the response is not retried (Istio's "reset" would also retry a timed-out attempt, which prazo does not)`,
      );
    }
    if (retries(policy)) {
      notes.push(
        `${name}: retryBudget ${percentOf(policy)}% of requests in flight, at least ${minConcurrency(policy)} (prazo: ${policy.budget.maxRatio * 100}% of requests over ${policy.budget.windowMs} ms, at least ${policy.budget.minPerSecond}/s)`,
      );
    }
  }
  notes.push(
    `outlierDetection has no maximum ejection time: Envoy's default (300 s) applies, which is prazo's`,
  );
  return {
    files: [{ name: 'istio.yaml', format: 'yaml', documents, usage: 'kubectl apply -f istio.yaml' }],
    notes,
  };
}

/**
 * The VirtualService of one host (one port: `conflicts.ts`). Istio takes a host's first matching
 * route, and a `prefix` is a plain string prefix, so the dependencies' routes go longest path first:
 * `/read/all` before `/read` before `/`.
 */
function virtualService(group: readonly MeshPolicy[]): KubernetesObject {
  const labels = groupLabels(group);
  const ordered = [...group].sort((a, b) => b.placement.path.length - a.placement.path.length);
  const http = ordered.flatMap((policy) => routesOf(policy, labels.get(policy)));
  return {
    apiVersion: 'networking.istio.io/v1',
    kind: 'VirtualService',
    metadata: metadataFor(group, 'prazo'),
    spec: { hosts: [group[0]!.placement.host], http },
  };
}

function routesOf(policy: MeshPolicy, label: string | undefined): Record<string, unknown>[] {
  const { placement } = policy;
  const route = [{ destination: { host: placement.host, port: { number: placement.port } } }];
  const uri = { prefix: placement.path };
  const http: Record<string, unknown>[] = [];
  const retryAll = retries(policy) && placement.protocol === 'grpc';
  if (retries(policy)) {
    http.push({
      name: labelled('prazo', label, 'retryable'),
      // gRPC retries UNAVAILABLE on every method (gRPC documents it as never processed); HTTP only
      // idempotent methods and requests with an idempotency key.
      match: retryAll
        ? [{ uri }]
        : [
            ...policy.idempotentMethods.map((method) => ({ uri, method: { exact: method } })),
            { uri, headers: { [IDEMPOTENCY_KEY_HEADER]: { regex: '.+' } } },
          ],
      timeout: gatewayDuration(policy.deadlineMs),
      retries: {
        attempts: policy.retries,
        perTryTimeout: gatewayDuration(Math.min(policy.attemptTimeoutMs, policy.deadlineMs)),
        retryOn: istioRetryOn(policy),
        ...(policy.backoff.baseMs > 0 ? { backoff: gatewayDuration(policy.backoff.baseMs) } : {}),
        retryIgnorePreviousHosts: true,
      },
      route,
    });
  }
  if (!retryAll) {
    http.push({
      name: retries(policy) ? labelled('prazo', label, 'once') : labelled('prazo', label),
      match: [{ uri }],
      timeout: gatewayDuration(Math.min(policy.attemptTimeoutMs, policy.deadlineMs)),
      retries: { attempts: 0 },
      route,
    });
  }
  return http;
}

const percentOf = (policy: MeshPolicy): number => Math.min(100, policy.budget.maxRatio * 100);

/**
 * prazo's floor is a rate (`minPerSecond`); Envoy's a concurrency. By Little's law, retries arriving
 * at that rate, each lasting at most one attempt timeout, are `rate × timeout` in flight.
 */
export function minConcurrency(policy: MeshPolicy): number {
  return Math.min(
    UINT32_MAX,
    Math.max(1, Math.ceil((policy.budget.minPerSecond * policy.attemptTimeoutMs) / 1000)),
  );
}

/**
 * Envoy's `min_retry_concurrency` and Istio's `minRetryConcurrency` are uint32: a floor of 10^6
 * retries/s over an attempt of hours is more, and a number past 2^32 − 1 makes Envoy refuse the
 * cluster. A floor that large is no floor at all; the largest value stands for it.
 */
export const UINT32_MAX = 4_294_967_295;

/**
 * The DestinationRule of one host. Its traffic policy is the host's, not a path's, so the
 * dependencies of one Service share it: the longest connect timeout (each attempt is still cut at its
 * own per-try timeout), the largest budget percent, and their minimum retry concurrencies added.
 */
function destinationRule(group: readonly MeshPolicy[], notes: string[]): KubernetesObject {
  const { ejection } = group[0]!; // the defaults, for every dependency (policy.ts)
  const connectMs = Math.max(...group.map((p) => p.connectTimeoutMs));
  const retrying = group.filter(retries);
  const budget =
    retrying.length === 0
      ? undefined
      : {
          percent: Math.max(...retrying.map(percentOf)),
          minRetryConcurrency: Math.min(
            UINT32_MAX,
            retrying.reduce((n, p) => n + minConcurrency(p), 0),
          ),
        };
  if (group.length > 1) {
    notes.push(
      `${group.map((p) => p.dependency).join(', ')}: one DestinationRule for ${group[0]!.placement.host}: connectTimeout ${gatewayDuration(connectMs)} (the longest of theirs)${budget === undefined ? '' : `, retryBudget ${budget.percent}% (the largest), at least ${budget.minRetryConcurrency} (theirs added)`}`,
    );
  }
  return {
    apiVersion: 'networking.istio.io/v1',
    kind: 'DestinationRule',
    metadata: metadataFor(group, 'prazo'),
    spec: {
      host: group[0]!.placement.host,
      trafficPolicy: {
        connectionPool: { tcp: { connectTimeout: gatewayDuration(connectMs) } },
        // Connect failures, timeouts and 5xx count alike (splitExternalLocalOriginErrors off), as in prazo.
        outlierDetection: {
          consecutive5xxErrors: ejection.consecutiveFailures,
          baseEjectionTime: gatewayDuration(ejection.baseEjectionMs),
        },
        ...(budget === undefined ? {} : { retryBudget: budget }),
      },
    },
  };
}
