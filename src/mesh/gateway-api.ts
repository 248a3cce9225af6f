import { gatewayDuration } from './duration.js';
import { byService, groupLabels, labelled } from './group.js';
import { type KubernetesObject, metadataFor, retries, retryableHttpMatches } from './kubernetes.js';
import { type MeshPolicy, type MeshProblem, type MeshRendering, percentileName } from './policy.js';

/**
 * Gateway API (SPEC X10): an `HTTPRoute` per Service with, for each dependency on it, rules with
 * `timeouts.request` (the deadline: the whole request, retries included) and `timeouts.backendRequest`
 * (one attempt: `ceil(p99 × slack)`), GEP-1742; in the experimental channel also `retry` (GEP-1731:
 * retries, backoff, status codes) on a rule matching only what prazo may retry, and an
 * `XBackendTrafficPolicy` carrying the retry budget (GEP-3388: a share of the requests over an
 * interval, with a minimum rate — prazo's own model). The standard channel has neither `retry` nor
 * the budget resource: a server would drop the field.
 *
 * Routes attach to the Service itself (GAMMA: east-west, the mesh's sidecars or ambient proxies
 * enforce them) unless the config names a Gateway (`mesh.gateway`). The dependencies of one Service
 * share its route (their rules side by side, told apart by path) and its budget policy: two objects
 * of one name would leave only the last after `kubectl apply` (#24).
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

/**
 * The HTTPRoute CRD's bounds on `spec.rules`: at most 16 rules, and 128 matches over all of them (a
 * CEL rule). A Service with more dependencies than fit is refused, not cut.
 */
const ROUTE_LIMITS = { rules: 16, matches: 128 } as const;

export function renderGatewayApi(policies: readonly MeshPolicy[], options: GatewayApiOptions): MeshRendering {
  const documents: KubernetesObject[] = [];
  const problems: MeshProblem[] = [];
  const notes: string[] = [
    "timeouts.request is a fixed deadline per route; prazo uses what is left of each caller's deadline",
  ];
  for (const group of byService(policies)) {
    const http = group.filter((p) => p.placement.protocol !== 'grpc');
    if (http.length > 0) {
      const route = httpRoute(http, options);
      documents.push(route);
      const limit = routeLimitProblem(http, route);
      if (limit !== undefined) problems.push(limit);
    }
    for (const policy of group) notesOf(policy, options, notes);
    const retrying = group.filter(retries);
    if (options.channel === 'experimental' && retrying.length > 0) {
      documents.push(budgetPolicy(retrying, notes));
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
    problems,
  };
}

function notesOf(policy: MeshPolicy, options: GatewayApiOptions, notes: string[]): void {
  const name = policy.dependency;
  if (policy.placement.protocol === 'grpc') {
    notes.push(
      `${name}: Gateway API's GRPCRoute has no timeouts and no retries; only the retry budget is exported (experimental channel)`,
    );
  } else {
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
      `${name}: Gateway API has no hedging; the hedge at the live ${percentileName(policy.hedge.percentile)} is not exported`,
    );
  }
}

function routeLimitProblem(group: readonly MeshPolicy[], route: KubernetesObject): MeshProblem | undefined {
  const rules = (route.spec as { rules: Array<{ matches: unknown[] }> }).rules;
  const matches = rules.reduce((n, r) => n + r.matches.length, 0);
  if (rules.length <= ROUTE_LIMITS.rules && matches <= ROUTE_LIMITS.matches) return undefined;
  const last = group[group.length - 1]!;
  return {
    dependency: last.dependency,
    path: ['dependencies', last.index, 'mesh'],
    message: `Service \`${last.placement.service}\`: its ${group.length} dependencies make ${rules.length} rules with ${matches} matches in one HTTPRoute, and the Gateway API CRD allows at most ${ROUTE_LIMITS.rules} rules and ${ROUTE_LIMITS.matches} matches; export them in parts (--dependency)`,
  };
}

/** The HTTPRoute of one Service (one port: `conflicts.ts`), with every dependency's rules. */
function httpRoute(group: readonly MeshPolicy[], options: GatewayApiOptions): KubernetesObject {
  const { placement } = group[0]!;
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
  // Gateway API ranks matches across a route's rules by path specificity, so `/read`'s rules and
  // `/write`'s each take their own calls whatever their order (equal paths are refused before).
  const labels = groupLabels(group);
  const rules = group.flatMap((policy) => rulesOf(policy, options, labels.get(policy)));
  return {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'HTTPRoute',
    metadata: metadataFor(group, 'prazo'),
    spec: { parentRefs, rules },
  };
}

/** One dependency's rules; `label` tells their names apart from the other dependencies' of the route. */
function rulesOf(
  policy: MeshPolicy,
  options: GatewayApiOptions,
  label: string | undefined,
): Record<string, unknown>[] {
  const { placement } = policy;
  const backendRefs = [{ name: placement.service, port: placement.port }];
  const path = { type: 'PathPrefix', value: placement.path };
  const rules: Record<string, unknown>[] = [];
  const attemptMs = Math.min(policy.attemptTimeoutMs, policy.deadlineMs);
  if (retries(policy) && options.channel === 'experimental') {
    rules.push({
      name: labelled('prazo', label, 'retryable'),
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
    name: split ? labelled('prazo', label, 'once') : labelled('prazo', label),
    matches: [{ path }],
    timeouts: {
      request: gatewayDuration(single ? attemptMs : policy.deadlineMs),
      backendRequest: gatewayDuration(attemptMs),
    },
    backendRefs,
  });
  return rules;
}

/**
 * GEP-3388's `XBackendTrafficPolicy`: the budget as a percent of requests over an interval, plus a
 * floor. It targets a Service, so the dependencies of one Service share one: the largest percent,
 * the longest interval, and their floors added over it (each may spend its own).
 */
function budgetPolicy(group: readonly MeshPolicy[], notes: string[]): KubernetesObject {
  let percent = 0;
  let intervalMs = 0;
  for (const policy of group) {
    const { budget } = policy;
    const name = policy.dependency;
    const own = Math.min(100, Math.floor(budget.maxRatio * 100 + 1e-9));
    if (own !== budget.maxRatio * 100) {
      notes.push(
        `${name}: budget percent is a whole number up to 100: maxRatio ${budget.maxRatio} exported as ${own}%`,
      );
    }
    const interval = Math.min(BUDGET_INTERVAL_MS.max, Math.max(BUDGET_INTERVAL_MS.min, budget.windowMs));
    if (interval !== budget.windowMs) {
      notes.push(
        `${name}: the budget interval must be within [1s, 1h]: windowMs ${budget.windowMs} exported as ${gatewayDuration(interval)}`,
      );
    }
    percent = Math.max(percent, own);
    intervalMs = Math.max(intervalMs, interval);
  }
  const floor = group.reduce((n, p) => n + Math.floor((p.budget.minPerSecond * intervalMs) / 1000), 0);
  const interval = gatewayDuration(Math.ceil(intervalMs));
  if (group.length > 1) {
    notes.push(
      `${group.map((p) => p.dependency).join(', ')}: one XBackendTrafficPolicy for Service ${group[0]!.placement.service}: ${percent}% over ${interval} (the largest of theirs), a floor of ${floor} (theirs added)`,
    );
  }
  const retryConstraint: Record<string, unknown> = {
    budget: { percent, interval },
    ...(floor >= 1 ? { minRetryRate: { count: Math.min(1_000_000, floor), interval } } : {}),
  };
  return {
    apiVersion: 'gateway.networking.x-k8s.io/v1alpha1',
    kind: 'XBackendTrafficPolicy',
    metadata: metadataFor(group, 'prazo-budget'),
    spec: {
      targetRefs: [{ group: '', kind: 'Service', name: group[0]!.placement.service }],
      retryConstraint,
    },
  };
}
