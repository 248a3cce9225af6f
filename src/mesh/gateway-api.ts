import { gatewayDuration } from './duration.js';
import { type KubernetesObject, metadataFor, retries, retryableHttpMatches } from './kubernetes.js';
import type { MeshPolicy, MeshRendering } from './policy.js';

/**
 * Gateway API (SPEC X10): an `HTTPRoute` per dependency with `timeouts.request` (the deadline: the
 * whole request, retries included) and `timeouts.backendRequest` (one attempt: `ceil(p99 × slack)`),
 * GEP-1742; in the experimental channel also `retry` (GEP-1731: retries, backoff, status codes) on a
 * rule matching only what prazo may retry, and an `XBackendTrafficPolicy` carrying the retry budget
 * (GEP-3388: a share of the requests over an interval, with a minimum rate — prazo's own model).
 * The standard channel has neither `retry` nor the budget resource: a server would drop the field.
 *
 * Routes attach to the Service itself (GAMMA: east-west, the mesh's sidecars or ambient proxies
 * enforce them) unless the config names a Gateway (`mesh.gateway`).
 */

export type GatewayChannel = 'standard' | 'experimental';
export const GATEWAY_CHANNELS: readonly GatewayChannel[] = ['standard', 'experimental'];

export interface GatewayApiOptions {
  readonly channel: GatewayChannel;
  /** The Gateway to attach to; default the Service (GAMMA). */
  readonly gateway?: { readonly name: string; readonly namespace?: string; readonly sectionName?: string };
}

/** GEP-3388's bounds on `retryConstraint.budget.interval`: [1 s, 1 h]. */
const BUDGET_INTERVAL_MS = { min: 1_000, max: 3_600_000 } as const;

export function renderGatewayApi(policies: readonly MeshPolicy[], options: GatewayApiOptions): MeshRendering {
  const documents: KubernetesObject[] = [];
  const notes: string[] = [
    "timeouts.request is a fixed deadline per route; prazo uses what is left of each caller's deadline",
  ];
  for (const policy of policies) {
    const name = policy.dependency;
    if (policy.placement.protocol === 'grpc') {
      notes.push(
        `${name}: Gateway API's GRPCRoute has no timeouts and no retries; only the retry budget is exported (experimental channel)`,
      );
    } else {
      documents.push(httpRoute(policy, options));
      if (retries(policy) && options.channel === 'standard') {
        notes.push(
          `${name}: the standard channel has no HTTPRoute retry (GEP-1731, experimental): ${policy.retries} retry(ies) not exported, the implementation's default applies; use --channel experimental`,
        );
      }
      if (retries(policy) && options.channel === 'experimental' && policy.retryResponseTimeout === false) {
        notes.push(
          `${name}: Gateway API retries a timed-out attempt (implementations SHOULD retry timeouts); prazo does not (retryResponseTimeout: false)`,
        );
      }
      if (retries(policy)) {
        notes.push(
          `${name}: retry.backoff ${gatewayDuration(policy.backoff.baseMs)} is a minimum wait; prazo waits a random time up to ${policy.backoff.baseMs} ms, doubling per retry up to ${policy.backoff.capMs} ms, and retries a refused connection at once`,
        );
      } else {
        notes.push(
          `${name}: one attempt; Gateway API cannot forbid retries, an implementation may still retry connection errors`,
        );
      }
    }
    if (policy.hedge !== undefined) {
      notes.push(
        `${name}: Gateway API has no hedging; the hedge at the live p${pct(policy.hedge.percentile)} is not exported`,
      );
    }
    if (options.channel === 'experimental' && retries(policy)) {
      documents.push(budgetPolicy(policy, notes));
    }
  }
  return {
    files: [
      {
        name: 'gateway-api.yaml',
        format: 'yaml',
        documents,
        usage: `kubectl apply -f gateway-api.yaml (Gateway API CRDs, ${options.channel} channel)`,
      },
    ],
    notes,
  };
}

const pct = (q: number): string => String(Math.round(q * 10_000) / 100);

function httpRoute(policy: MeshPolicy, options: GatewayApiOptions): KubernetesObject {
  const { placement } = policy;
  const parentRefs =
    options.gateway === undefined
      ? [{ group: '', kind: 'Service', name: placement.service, port: placement.port }]
      : [
          {
            name: options.gateway.name,
            ...(options.gateway.namespace === undefined ? {} : { namespace: options.gateway.namespace }),
            ...(options.gateway.sectionName === undefined
              ? {}
              : { sectionName: options.gateway.sectionName }),
          },
        ];
  const backendRefs = [{ name: placement.service, port: placement.port }];
  const path = { type: 'PathPrefix', value: placement.path };
  const rules: Record<string, unknown>[] = [];
  const attemptMs = Math.min(policy.attemptTimeoutMs, policy.deadlineMs);
  if (retries(policy) && options.channel === 'experimental') {
    rules.push({
      name: 'prazo-retryable',
      matches: retryableHttpMatches(policy),
      timeouts: {
        request: gatewayDuration(policy.deadlineMs),
        backendRequest: gatewayDuration(attemptMs),
      },
      retry: {
        attempts: policy.retries,
        ...(policy.backoff.baseMs > 0 ? { backoff: gatewayDuration(policy.backoff.baseMs) } : {}),
        codes: [...policy.retryStatuses],
      },
      backendRefs,
    });
  }
  // Everything else gets one attempt, and so does a dependency with one attempt: the whole request is
  // the attempt timeout. With retries, the retryable rule above is more specific (a method or a header
  // match) and wins (GEP-1742's precedence); in the standard channel there is no `retry` to split on.
  const split = retries(policy) && options.channel === 'experimental';
  const single = !retries(policy) || split;
  rules.push({
    name: split ? 'prazo-once' : 'prazo',
    matches: [{ path }],
    timeouts: {
      request: gatewayDuration(single ? attemptMs : policy.deadlineMs),
      backendRequest: gatewayDuration(attemptMs),
    },
    backendRefs,
  });
  return {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'HTTPRoute',
    metadata: metadataFor(policy, 'prazo'),
    spec: { parentRefs, rules },
  };
}

/** GEP-3388's `XBackendTrafficPolicy`: the budget as a percent of requests over an interval, plus a floor. */
function budgetPolicy(policy: MeshPolicy, notes: string[]): KubernetesObject {
  const { budget } = policy;
  const name = policy.dependency;
  const percent = Math.min(100, Math.floor(budget.maxRatio * 100 + 1e-9));
  if (percent !== budget.maxRatio * 100) {
    notes.push(
      `${name}: budget percent is a whole number up to 100: maxRatio ${budget.maxRatio} exported as ${percent}%`,
    );
  }
  const intervalMs = Math.min(BUDGET_INTERVAL_MS.max, Math.max(BUDGET_INTERVAL_MS.min, budget.windowMs));
  if (intervalMs !== budget.windowMs) {
    notes.push(
      `${name}: the budget interval must be within [1s, 1h]: windowMs ${budget.windowMs} exported as ${gatewayDuration(intervalMs)}`,
    );
  }
  const floor = Math.floor((budget.minPerSecond * intervalMs) / 1000);
  const retryConstraint: Record<string, unknown> = {
    budget: { percent, interval: gatewayDuration(Math.ceil(intervalMs)) },
    ...(floor >= 1
      ? {
          minRetryRate: {
            count: Math.min(1_000_000, floor),
            interval: gatewayDuration(Math.ceil(intervalMs)),
          },
        }
      : {}),
  };
  return {
    apiVersion: 'gateway.networking.x-k8s.io/v1alpha1',
    kind: 'XBackendTrafficPolicy',
    metadata: metadataFor(policy, 'prazo-budget'),
    spec: {
      targetRefs: [{ group: '', kind: 'Service', name: policy.placement.service }],
      retryConstraint,
    },
  };
}
