import { linkerdDuration } from './duration.js';
import { byService, groupLabels, labelled, routeNamesClash } from './group.js';
import { type KubernetesObject, metadataFor, retries, retryableHttpMatches } from './kubernetes.js';
import type { MeshPolicy, MeshRendering } from './policy.js';

/**
 * Linkerd (2.16+, SPEC X10): timeouts and retries are annotations on a route whose parent is the
 * Service — `timeout.linkerd.io/request` (the deadline), `timeout.linkerd.io/response` (one attempt,
 * not retried) or `retry.linkerd.io/timeout` (one attempt, retried), `retry.linkerd.io/limit`,
 * `retry.linkerd.io/http` (status codes) or `retry.linkerd.io/grpc` (status names). Annotations hold
 * for a whole route, so a dependency that retries gets two `HTTPRoute`s: one matching what prazo may
 * retry, one for the rest, sent once. Consecutive-failure ejection is `balancer.linkerd.io/failure-
 * accrual` on the Service, written as a partial Service for server-side apply.
 *
 * Values follow Linkerd's policy controller: durations are an integer and a unit (no fractions), the
 * limit a u16, HTTP conditions comma-separated codes or ranges (`502-504`), gRPC conditions names.
 *
 * Several dependencies on one Service (#24) each keep their own routes — the annotations are a
 * route's whole policy — named `<service>-prazo-<dependency>[-retryable]` so that none overwrites
 * another; Gateway API ranks routes of one parent by path specificity, as it ranks rules.
 */

export const LINKERD = Object.freeze({
  request: 'timeout.linkerd.io/request',
  response: 'timeout.linkerd.io/response',
  retryTimeout: 'retry.linkerd.io/timeout',
  retryLimit: 'retry.linkerd.io/limit',
  retryHttp: 'retry.linkerd.io/http',
  retryGrpc: 'retry.linkerd.io/grpc',
  accrual: 'balancer.linkerd.io/failure-accrual',
  maxFailures: 'balancer.linkerd.io/failure-accrual-consecutive-max-failures',
  minPenalty: 'balancer.linkerd.io/failure-accrual-consecutive-min-penalty',
  maxPenalty: 'balancer.linkerd.io/failure-accrual-consecutive-max-penalty',
});

/** gRPC codes as Linkerd names them (UNAVAILABLE = 14). */
const GRPC_CONDITION: Readonly<Record<number, string>> = Object.freeze({ 14: 'unavailable' });

export function renderLinkerd(policies: readonly MeshPolicy[]): MeshRendering {
  const services: KubernetesObject[] = [];
  const notes: string[] = [
    "timeout.linkerd.io/request is a fixed deadline per route; prazo uses what is left of each caller's deadline",
    'Linkerd has no retry budget for annotation retries: a failing route can be retried up to its limit on every request',
    'Linkerd has no hedging',
  ];
  // One route (or two) per dependency: a route's annotations are its whole policy, so two
  // dependencies cannot share one; their names tell them apart, within a Service and across them.
  const groups = byService(policies);
  const routesWith = (indexed: boolean): KubernetesObject[] =>
    groups.flatMap((group) => {
      const labels = groupLabels(group, indexed);
      return group.flatMap((policy) => routesOf(policy, labels.get(policy)));
    });
  const named = routesWith(false);
  const routes = routeNamesClash(named) ? routesWith(true) : named;
  // One Service, annotated once.
  for (const group of groups) services.push(serviceAccrual(group[0]!));
  for (const policy of policies) {
    const name = policy.dependency;
    if (retries(policy) && !policy.retryResponseTimeout) {
      notes.push(
        `${name}: a timed-out attempt is not retried (timeout.linkerd.io/response ${linkerdDuration(policy.attemptTimeoutMs)}, as prazo's retryResponseTimeout: false)`,
      );
    }
    if (retries(policy)) {
      notes.push(
        `${name}: no backoff between retries (prazo waits a random time up to ${policy.backoff.baseMs} ms, doubling)`,
      );
    }
  }
  return {
    files: [
      {
        name: 'linkerd.yaml',
        format: 'yaml',
        documents: [...routes, ...services],
        usage:
          'kubectl apply --server-side --field-manager=prazo -f linkerd.yaml (the Service documents only add annotations)',
      },
    ],
    notes,
  };
}

function routesOf(policy: MeshPolicy, label: string | undefined): KubernetesObject[] {
  const { placement } = policy;
  const grpc = placement.protocol === 'grpc';
  const parentRefs = [{ group: '', kind: 'Service', name: placement.service, port: placement.port }];
  const backendRefs = [{ name: placement.service, port: placement.port }];
  const attemptMs = Math.min(policy.attemptTimeoutMs, policy.deadlineMs);
  const route = (
    suffix: string,
    matches: unknown[],
    annotations: Record<string, string>,
  ): KubernetesObject =>
    grpc
      ? {
          apiVersion: 'gateway.networking.k8s.io/v1',
          kind: 'GRPCRoute',
          metadata: metadataFor(policy, suffix, annotations),
          spec: { parentRefs, rules: [{ backendRefs }] },
        }
      : {
          apiVersion: 'gateway.networking.k8s.io/v1',
          kind: 'HTTPRoute',
          metadata: metadataFor(policy, suffix, annotations),
          spec: { parentRefs, rules: [{ matches, backendRefs }] },
        };
  const path = [{ path: { type: 'PathPrefix', value: placement.path } }];
  const once = {
    [LINKERD.request]: linkerdDuration(attemptMs),
    [LINKERD.response]: linkerdDuration(attemptMs),
  };
  const plain = labelled('prazo', label);
  if (!retries(policy)) return [route(plain, path, once)];
  const retried: Record<string, string> = {
    [LINKERD.request]: linkerdDuration(policy.deadlineMs),
    [LINKERD.retryLimit]: String(policy.retries),
    ...(policy.retryResponseTimeout
      ? { [LINKERD.retryTimeout]: linkerdDuration(attemptMs) }
      : { [LINKERD.response]: linkerdDuration(attemptMs) }),
    ...(grpc
      ? { [LINKERD.retryGrpc]: policy.retryGrpcCodes.map((c) => GRPC_CONDITION[c]!).join(',') }
      : { [LINKERD.retryHttp]: policy.retryStatuses.map(String).join(',') }),
  };
  // gRPC: UNAVAILABLE is retried on every method (as gRPC does); HTTP: only what may run twice.
  if (grpc) return [route(plain, [], retried)];
  return [
    route(labelled('prazo', label, 'retryable'), retryableHttpMatches(policy), retried),
    route(plain, path, once),
  ];
}

function serviceAccrual(policy: MeshPolicy): KubernetesObject {
  const { ejection } = policy;
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name: policy.placement.service,
      namespace: policy.placement.namespace,
      annotations: {
        [LINKERD.accrual]: 'consecutive',
        [LINKERD.maxFailures]: String(ejection.consecutiveFailures),
        [LINKERD.minPenalty]: linkerdDuration(ejection.baseEjectionMs),
        [LINKERD.maxPenalty]: linkerdDuration(ejection.maxEjectionMs),
      },
    },
  };
}
