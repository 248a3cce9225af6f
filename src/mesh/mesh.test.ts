import { GRPCRoute } from '@kubernetes-models/gateway-api/gateway.networking.k8s.io/v1/GRPCRoute';
import { HTTPRoute } from '@kubernetes-models/gateway-api/gateway.networking.k8s.io/v1/HTTPRoute';
import { XBackendTrafficPolicy } from '@kubernetes-models/gateway-api/gateway.networking.x-k8s.io/v1alpha1/XBackendTrafficPolicy';
import { DestinationRule } from '@kubernetes-models/istio/networking.istio.io/v1/DestinationRule';
import { VirtualService } from '@kubernetes-models/istio/networking.istio.io/v1/VirtualService';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { FakeClock } from '../clock/fake.js';
import { checkConfigFile, checkConfigText, type PrazoConfig } from '../config/index.js';
import { createDependency } from '../dependency/dependency.js';
import { classifyFailure } from '../retry/classify.js';
import { AdaptiveThrottle } from '../throttle/throttle.js';
import { gatewayDuration, grpcDuration, linkerdDuration, protoDuration } from './duration.js';
import { admissionFilterName, renderEnvoy } from './envoy.js';
import { exportMesh, MESH_TARGETS, type MeshExport, type MeshTarget } from './export.js';
import {
  admissionControlProblems,
  ENVOY_RETRY_ON,
  envoyProblems,
  envoyRejectionProbability,
  gatewayDurationMs,
  HTTP_ROUTE_LIMITS,
  httpRoutePathCelProblems,
  LINKERD_GRPC_CONDITIONS,
  linkerdDurationMs,
  linkerdHttpConditions,
} from './mesh.test-helpers.js';
import { EJECTION_DEFAULTS, type MeshPolicy, meshPolicies } from './policy.js';

/**
 * `prazo export` (SPEC X10): every resource of every target, from the shipped example, checked by the
 * system's own definitions — the Kubernetes objects by their published models (`.validate()`, plus
 * a probe that every field we write is one the model declares: the models ignore unknown keys), Envoy
 * by the v3 protos' fields and units, Linkerd by its policy controller's parsers — and carrying the
 * numbers prazo's own client computes from the same file.
 */

const EXAMPLE = new URL('../../examples/prazo.config.yaml', import.meta.url).pathname;
const example = (): PrazoConfig => {
  const { config, problems } = checkConfigFile(EXAMPLE);
  expect(problems).toEqual([]);
  return config!;
};
const fromText = (text: string): PrazoConfig => {
  const { config, problems } = checkConfigText(text, { readText: () => '' });
  expect(problems.filter((p) => p.severity === 'error')).toEqual([]);
  return config!;
};

/** Documents of a file, as the YAML (or JSON) a user applies: parsed back from the written text. */
const documentsOf = (result: MeshExport, name: string): Record<string, unknown>[] => {
  const file = result.files.find((f) => f.name === name);
  expect(file, name).toBeDefined();
  if (name.endsWith('.json')) return [JSON.parse(file!.text)];
  const docs = parseAllDocuments(file!.text);
  for (const d of docs) expect(d.errors).toEqual([]);
  return docs.map((d) => d.toJS() as Record<string, unknown>);
};

/** A parsed YAML/JSON document, read field by field in the assertions. */
// biome-ignore lint/suspicious/noExplicitAny: parsed documents, every field read is asserted
type Doc = any;

type Model = new (data: never) => { validate(): void };
const MODELS: Record<string, Model> = {
  'gateway.networking.k8s.io/v1/HTTPRoute': HTTPRoute as unknown as Model,
  'gateway.networking.k8s.io/v1/GRPCRoute': GRPCRoute as unknown as Model,
  'gateway.networking.x-k8s.io/v1alpha1/XBackendTrafficPolicy': XBackendTrafficPolicy as unknown as Model,
  'networking.istio.io/v1/VirtualService': VirtualService as unknown as Model,
  'networking.istio.io/v1/DestinationRule': DestinationRule as unknown as Model,
};
const modelOf = (doc: Record<string, unknown>): Model => {
  const model = MODELS[`${doc.apiVersion}/${doc.kind}`];
  expect(model, `${doc.apiVersion}/${doc.kind}`).toBeDefined();
  return model!;
};

const validationErrors = (Model: Model, data: unknown): Array<{ instancePath: string }> => {
  try {
    new Model(data as never).validate();
    return [];
  } catch (error) {
    return (error as { errors?: Array<{ instancePath: string }> }).errors ?? [{ instancePath: '?' }];
  }
};

/**
 * The published models accept unknown keys (their schemas do not close objects), so a misspelt field
 * would pass `.validate()` and be pruned by the API server. Probe each field instead: replaced by a
 * value of an impossible type, the model must complain *at that field* — it only does for fields it
 * declares.
 */
function undeclaredFields(Model: Model, doc: Record<string, unknown>): string[] {
  const out: string[] = [];
  const visit = (node: unknown, path: (string | number)[]) => {
    if (path.length > 0) {
      const probe = structuredClone(doc) as Record<string, unknown>;
      let parent: Record<string | number, unknown> = probe;
      for (const seg of path.slice(0, -1)) parent = parent[seg] as Record<string | number, unknown>;
      const last = path[path.length - 1]!;
      parent[last] = typeof node === 'object' && node !== null ? 7 : { impossible: true };
      const pointer = path
        .map((seg) => `/${String(seg).replaceAll('~', '~0').replaceAll('/', '~1')}`)
        .join('');
      if (!validationErrors(Model, probe).some((e) => e.instancePath === pointer)) out.push(pointer);
    }
    if (Array.isArray(node)) for (const [i, v] of node.entries()) visit(v, [...path, i]);
    else if (node !== null && typeof node === 'object')
      for (const [k, v] of Object.entries(node))
        if (path.length > 0 || k !== 'apiVersion') visit(v, [...path, k]);
  };
  visit(doc, []);
  // apiVersion/kind are fixed by the model class itself.
  return out.filter((p) => p !== '/kind');
}

function expectValidKubernetes(docs: Record<string, unknown>[]): void {
  for (const doc of docs) {
    const Model = modelOf(doc);
    expect(validationErrors(Model, doc), `${doc.kind}`).toEqual([]);
    expect(undeclaredFields(Model, doc), `${doc.kind} fields unknown to its model`).toEqual([]);
  }
}

const byName = (docs: Record<string, unknown>[], kind: string, name: string) =>
  docs.find((d) => d.kind === kind && (d.metadata as { name: string }).name === name) as Doc | undefined;

describe('prazo export: the numbers are prazo’s own (SPEC X10, C1–C3)', () => {
  it('carries the client’s calibration: the timeout and attempts createDependency computes from the same file', () => {
    const config = example();
    const result = exportMesh(config, { target: 'envoy' });
    for (const policy of result.policies) {
      const dep = config.dependencies.get(policy.dependency)!;
      const client = createDependency({ ...dep.options });
      expect(policy.attemptTimeoutMs).toBe(client.timeouts.responseMs);
      expect(policy.attempts).toBe(client.timeouts.attempts);
      expect(policy.connectTimeoutMs).toBe(Math.ceil(client.timeouts.connectMs));
    }
    const inventory = result.policies.find((p) => p.dependency === 'inventory')!;
    // ceil(85 × 1.4) = 119 ms per attempt; 2 × (119 + 30) = 298 <= 300: both attempts fit.
    expect(inventory).toMatchObject({ attemptTimeoutMs: 119, attempts: 2, retries: 1, deadlineMs: 300 });
    expect(inventory.placement).toMatchObject({ service: 'inventory', namespace: 'shop', port: 8080 });
    // orders-db is `mesh: false` (PostgreSQL): not exported.
    expect(result.policies.map((p) => p.dependency)).toEqual(['orders', 'inventory', 'supplier']);
  });

  it('hedges at the histogram’s p95 when the p99 came from one, else at the p99, else mesh.hedgeDelayMs', () => {
    const config = example();
    const { policies } = exportMesh(config, { target: 'grpc' });
    const supplier = policies.find((p) => p.dependency === 'supplier')!;
    const distribution = (config.dependencies.get('supplier')!.p99Source as { distribution: { p95: number } })
      .distribution;
    expect(supplier.hedge?.delayMs).toBe(Math.ceil(distribution.p95));
    expect(policies.find((p) => p.dependency === 'inventory')!.hedge).toMatchObject({ delayMs: 85 });
    const given = fromText(
      'dependencies:\n  - { name: a, p99Ms: 100, hedge: true, mesh: { hedgeDelayMs: 60 } }\n',
    );
    expect(exportMesh(given, { target: 'grpc' }).policies[0]!.hedge).toMatchObject({ delayMs: 60 });
    // Below minDelayMs it is raised to it; above the ceiling prazo sends no hedge, nor does the export.
    const floor = fromText(
      'dependencies:\n  - { name: a, p99Ms: 100, hedge: { minDelayMs: 70 }, mesh: { hedgeDelayMs: 60 } }\n',
    );
    expect(exportMesh(floor, { target: 'grpc' }).policies[0]!.hedge?.delayMs).toBe(70);
    const high = fromText(
      'dependencies:\n  - { name: a, p99Ms: 100, hedge: { maxDelayMs: 50 }, mesh: { hedgeDelayMs: 60 } }\n',
    );
    expect(exportMesh(high, { target: 'grpc' }).policies[0]!.hedge).toBeUndefined();
  });

  it('refuses a dependency whose name is no Service name, at its line, unless mesh.service names one', () => {
    const config = fromText('dependencies:\n  - { name: Orders_DB, p99Ms: 10 }\n');
    const result = exportMesh(config, { target: 'istio' });
    expect(result.files).toEqual([]);
    expect(result.problems).toEqual([
      expect.objectContaining({
        path: ['dependencies', 0, 'name'],
        message: expect.stringContaining('mesh.service'),
      }),
    ]);
    const named = fromText(
      'dependencies:\n  - { name: Orders_DB, p99Ms: 10, mesh: { service: orders-db } }\n',
    );
    expect(exportMesh(named, { target: 'istio' }).problems).toEqual([]);
  });

  it('validates the mesh keys like every other key: with their line, unknown ones with a did-you-mean', () => {
    const text = [
      'mesh: { namespce: shop }', // 1
      'dependencies:', // 2
      '  - name: a', // 3
      '    p99Ms: 10', // 4
      '    mesh: { port: 70000, service: Bad_Name, protocol: tcp, path: nope }', // 5
    ].join('\n');
    const lines = checkConfigText(text, { readText: () => '' }).problems.map(
      (p) => `${p.line}: ${p.key}: ${p.message}`,
    );
    expect(lines).toEqual([
      expect.stringMatching(/^1: mesh\.namespce: unknown key; did you mean `namespace`\?/),
      expect.stringMatching(/^5: dependencies\[0\]\.mesh\.port: must be an integer in \[1, 65535\]/),
      expect.stringMatching(
        /^5: dependencies\[0\]\.mesh\.service: must be a Service name: an RFC 1123 DNS label/,
      ),
      expect.stringMatching(/^5: dependencies\[0\]\.mesh\.protocol: must be one of/),
      expect.stringMatching(/^5: dependencies\[0\]\.mesh\.path: must be a path starting with `\/`/),
    ]);
  });
});

describe('Gateway API: HTTPRoute timeouts and retry (GEP-1742, GEP-1731), XBackendTrafficPolicy budget (GEP-3388)', () => {
  for (const channel of ['standard', 'experimental'] as const) {
    it(`every resource of the ${channel} channel passes its published model, with no field the model lacks`, () => {
      const result = exportMesh(example(), { target: 'gateway-api', channel });
      const docs = documentsOf(result, 'gateway-api.yaml');
      expectValidKubernetes(docs);
      for (const route of docs.filter((d) => d.kind === 'HTTPRoute') as Doc[]) {
        for (const rule of route.spec.rules) {
          // The CRD's CEL rule: backendRequest timeout cannot be longer than request timeout.
          const { request, backendRequest } = rule.timeouts;
          expect(gatewayDurationMs(backendRequest)).toBeLessThanOrEqual(gatewayDurationMs(request));
          if (channel === 'standard') expect(rule.retry).toBeUndefined();
        }
      }
      for (const policy of docs.filter((d) => d.kind === 'XBackendTrafficPolicy') as Doc[]) {
        // CEL: the budget interval within [1s, 1h]; minRetryRate's interval within (0, 1h].
        const { budget, minRetryRate } = policy.spec.retryConstraint;
        expect(gatewayDurationMs(budget.interval)).toBeGreaterThanOrEqual(1000);
        expect(gatewayDurationMs(budget.interval)).toBeLessThanOrEqual(3_600_000);
        expect(gatewayDurationMs(minRetryRate.interval)).toBeGreaterThan(0);
        expect(gatewayDurationMs(minRetryRate.interval)).toBeLessThanOrEqual(3_600_000);
      }
      if (channel === 'standard') expect(docs.some((d) => d.kind === 'XBackendTrafficPolicy')).toBe(false);
    });
  }

  it('retries only idempotent requests, with the calibrated numbers; the rest once, cut at the attempt timeout', () => {
    const docs = documentsOf(
      exportMesh(example(), { target: 'gateway-api', channel: 'experimental' }),
      'gateway-api.yaml',
    );
    const inventory = byName(docs, 'HTTPRoute', 'inventory-prazo')!;
    expect(inventory.metadata.namespace).toBe('shop');
    expect(inventory.spec.parentRefs).toEqual([
      { group: '', kind: 'Service', name: 'inventory', port: 8080 },
    ]);
    const [retryable, once] = inventory.spec.rules;
    expect(retryable.timeouts).toEqual({ request: '300ms', backendRequest: '119ms' });
    expect(retryable.retry).toEqual({ attempts: 1, backoff: '25ms', codes: [408, 429, 500, 502, 503, 504] });
    expect(retryable.matches.map((m: { method?: string }) => m.method).filter(Boolean)).toEqual([
      'GET',
      'HEAD',
      'OPTIONS',
      'PUT',
      'DELETE',
      'TRACE',
    ]);
    expect(retryable.matches.at(-1).headers).toEqual([
      { type: 'RegularExpression', name: 'idempotency-key', value: '.+' },
    ]);
    expect(once).toMatchObject({ timeouts: { request: '119ms', backendRequest: '119ms' } });
    expect(once.retry).toBeUndefined();
    // orders: one attempt (p99 400 × 1.4 = 560 ms, inside its 770 ms deadline).
    expect(byName(docs, 'HTTPRoute', 'orders-prazo')!.spec.rules[0].timeouts).toEqual({
      request: '560ms',
      backendRequest: '560ms',
    });
    const budget = byName(docs, 'XBackendTrafficPolicy', 'inventory-prazo-budget')!;
    // 10% of requests over 10 s, at least 3/s = 30 per window.
    expect(budget.spec.retryConstraint).toEqual({
      budget: { percent: 10, interval: '10s' },
      minRetryRate: { count: 30, interval: '10s' },
    });
  });

  it('the field probe catches a misspelt field the model would let through', () => {
    const route = {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'HTTPRoute',
      metadata: { name: 'a' },
      spec: { rules: [{ timeouts: { request: '1s', backendRequst: '1s' }, retry: { attemps: 1 } }] },
    };
    expect(validationErrors(HTTPRoute as unknown as Model, route)).toEqual([]); // the model alone: silent
    expect(undeclaredFields(HTTPRoute as unknown as Model, route)).toEqual([
      '/spec/rules/0/timeouts/backendRequst',
      '/spec/rules/0/retry/attemps',
    ]);
  });

  it('attaches to a named Gateway when the config gives one', () => {
    const config = fromText(
      'mesh: { gateway: { name: edge, namespace: infra, sectionName: http } }\ndependencies:\n  - { name: a, p99Ms: 10 }\n',
    );
    const docs = documentsOf(exportMesh(config, { target: 'gateway-api' }), 'gateway-api.yaml');
    expectValidKubernetes(docs);
    expect((docs[0] as Doc).spec.parentRefs).toEqual([
      { name: 'edge', namespace: 'infra', sectionName: 'http' },
    ]);
  });
});

describe('Istio: VirtualService and DestinationRule', () => {
  it('every resource passes its published model, with no field the model lacks', () => {
    const docs = documentsOf(exportMesh(example(), { target: 'istio' }), 'istio.yaml');
    expect(docs.map((d) => d.kind)).toEqual([
      'VirtualService',
      'DestinationRule',
      'VirtualService',
      'DestinationRule',
      'VirtualService',
      'DestinationRule',
    ]);
    expectValidKubernetes(docs);
    for (const vs of docs.filter((d) => d.kind === 'VirtualService') as Doc[]) {
      for (const route of vs.spec.http) {
        // Istio: durations 1h/1m/1s/1ms, at least 1 ms; retryOn Envoy's conditions or status codes.
        expect(gatewayDurationMs(route.timeout)).toBeGreaterThanOrEqual(1);
        if (route.retries.attempts > 0) {
          expect(gatewayDurationMs(route.retries.perTryTimeout)).toBeGreaterThanOrEqual(1);
          for (const on of route.retries.retryOn.split(','))
            expect(ENVOY_RETRY_ON.has(on) || /^[1-5]\d\d$/.test(on), on).toBe(true);
        }
      }
    }
  });

  it('retries idempotent requests with the calibrated per-try timeout; sends the rest once (Istio defaults to 2 retries)', () => {
    const docs = documentsOf(exportMesh(example(), { target: 'istio' }), 'istio.yaml');
    const vs = byName(docs, 'VirtualService', 'inventory-prazo')!;
    expect(vs.spec.hosts).toEqual(['inventory.shop.svc.cluster.local']);
    const [retryable, once] = vs.spec.http;
    expect(retryable.timeout).toBe('300ms');
    expect(retryable.retries).toEqual({
      attempts: 1,
      perTryTimeout: '119ms',
      retryOn: 'connect-failure,refused-stream,408,429,500,502,503,504',
      backoff: '25ms',
      retryIgnorePreviousHosts: true,
    });
    expect(retryable.match).toContainEqual({ uri: { prefix: '/' }, method: { exact: 'GET' } });
    expect(retryable.match).not.toContainEqual({ uri: { prefix: '/' }, method: { exact: 'POST' } });
    expect(once).toMatchObject({ timeout: '119ms', retries: { attempts: 0 } });
    const dr = byName(docs, 'DestinationRule', 'inventory-prazo')!;
    expect(dr.spec.trafficPolicy).toEqual({
      // the client's connect timeout: min(cap 400, ceil(119 / 2)) = 60 ms (SPEC C2)
      connectionPool: { tcp: { connectTimeout: '60ms' } },
      outlierDetection: {
        consecutive5xxErrors: EJECTION_DEFAULTS.consecutiveFailures,
        baseEjectionTime: '30s',
      },
      // 3 retries/s × 0.119 s in flight ≈ 1 (Little's law).
      retryBudget: { percent: 10, minRetryConcurrency: 1 },
    });
    // gRPC: UNAVAILABLE retried on every method.
    const supplier = byName(docs, 'VirtualService', 'supplier-prazo')!;
    expect(supplier.spec.http).toHaveLength(1);
    expect(supplier.spec.http[0].retries.retryOn).toBe('connect-failure,refused-stream,unavailable');
  });
});

describe('Linkerd: timeout.linkerd.io and retry.linkerd.io annotations', () => {
  it('routes pass the Gateway API model; every annotation parses as Linkerd’s policy controller parses it', () => {
    const docs = documentsOf(exportMesh(example(), { target: 'linkerd' }), 'linkerd.yaml');
    const routes = docs.filter((d) => d.kind !== 'Service');
    expectValidKubernetes(routes);
    for (const doc of docs as Doc[]) {
      const a = doc.metadata.annotations as Record<string, string>;
      for (const [key, value] of Object.entries(a)) {
        if (key.startsWith('timeout.linkerd.io/')) {
          expect([
            'timeout.linkerd.io/request',
            'timeout.linkerd.io/response',
            'timeout.linkerd.io/idle',
          ]).toContain(key);
          expect(linkerdDurationMs(value)).toBeGreaterThan(0);
        } else if (key === 'retry.linkerd.io/limit') {
          expect(Number(value)).toBeGreaterThan(0);
          expect(Number(value)).toBeLessThanOrEqual(65_535);
          expect(String(Number.parseInt(value, 10))).toBe(value);
        } else if (key === 'retry.linkerd.io/timeout') expect(linkerdDurationMs(value)).toBeGreaterThan(0);
        else if (key === 'retry.linkerd.io/http') {
          expect(doc.kind).toBe('HTTPRoute'); // "not valid on a GRPCRoute"
          expect(linkerdHttpConditions(value).length).toBeGreaterThan(0);
        } else if (key === 'retry.linkerd.io/grpc') {
          for (const c of value.split(',')) expect(LINKERD_GRPC_CONDITIONS.has(c)).toBe(true);
        } else if (key.startsWith('balancer.linkerd.io/')) {
          expect(doc.kind).toBe('Service');
        } else expect(['prazo/dependency']).toContain(key);
      }
    }
  });

  it('the numbers: deadline, per-attempt response timeout (not retried), limit, codes; ejection on the Service', () => {
    const docs = documentsOf(exportMesh(example(), { target: 'linkerd' }), 'linkerd.yaml');
    const retryable = byName(docs, 'HTTPRoute', 'inventory-prazo-retryable')!.metadata.annotations;
    expect(retryable).toMatchObject({
      'timeout.linkerd.io/request': '300ms',
      'timeout.linkerd.io/response': '119ms',
      'retry.linkerd.io/limit': '1',
      'retry.linkerd.io/http': '408,429,500,502,503,504',
    });
    expect(retryable['retry.linkerd.io/timeout']).toBeUndefined(); // a timed-out attempt is not retried (R4)
    expect(
      byName(docs, 'HTTPRoute', 'inventory-prazo')!.metadata.annotations['retry.linkerd.io/limit'],
    ).toBeUndefined();
    expect(byName(docs, 'GRPCRoute', 'supplier-prazo')!.metadata.annotations['retry.linkerd.io/grpc']).toBe(
      'unavailable',
    );
    const service = byName(docs, 'Service', 'inventory')!;
    expect(service.metadata.annotations).toEqual({
      'balancer.linkerd.io/failure-accrual': 'consecutive',
      'balancer.linkerd.io/failure-accrual-consecutive-max-failures': '5',
      'balancer.linkerd.io/failure-accrual-consecutive-min-penalty': '30000ms',
      'balancer.linkerd.io/failure-accrual-consecutive-max-penalty': '300000ms',
    });
    expect(service.spec).toBeUndefined(); // only annotations: applied server-side, it changes nothing else
  });

  it('retryResponseTimeout: true makes the attempt timeout a retryable one', () => {
    const config = fromText('dependencies:\n  - { name: a, p99Ms: 50, retryResponseTimeout: true }\n');
    const docs = documentsOf(exportMesh(config, { target: 'linkerd' }), 'linkerd.yaml');
    const a = byName(docs, 'HTTPRoute', 'a-prazo-retryable')!.metadata.annotations;
    expect(a['retry.linkerd.io/timeout']).toBe('70ms');
    expect(a['timeout.linkerd.io/response']).toBeUndefined();
  });
});

describe('Envoy v3: route and cluster, in the protos’ field names and units', () => {
  it('every field is one the v3 protos declare, with its type and unit', () => {
    const result = exportMesh(example(), { target: 'envoy' });
    const [route] = documentsOf(result, 'envoy-route.yaml');
    const [bootstrap] = documentsOf(result, 'envoy-clusters.yaml');
    expect(envoyProblems('RouteConfiguration', route)).toEqual([]);
    expect(envoyProblems('Bootstrap', bootstrap)).toEqual([]);
    for (const vh of (route as Doc).virtual_hosts) {
      const policy = vh.routes[0].route.retry_policy;
      if (policy === undefined) continue;
      for (const on of policy.retry_on.split(',')) expect(ENVOY_RETRY_ON.has(on), on).toBe(true);
      if (vh.routes[0].route.hedge_policy !== undefined) expect(policy.num_retries).toBeGreaterThan(0);
    }
  });

  it('the field check catches a wrong name, a wrong unit and a wrong enum', () => {
    expect(envoyProblems('RetryPolicy', { per_try_timeout_ms: 119 })).toEqual([
      'RetryPolicy.per_try_timeout_ms: RetryPolicy has no field `per_try_timeout_ms`',
    ]);
    expect(envoyProblems('RetryPolicy', { per_try_timeout: '119ms' })[0]).toMatch(/protobuf JSON Duration/);
    expect(envoyProblems('Cluster', { type: 'DNS' })[0]).toMatch(/enum/);
  });

  it('the numbers: deadline, retries, per-try timeout, backoff, hedge, budget, ejection', () => {
    const result = exportMesh(example(), { target: 'envoy' });
    const [route] = documentsOf(result, 'envoy-route.yaml') as Doc[];
    const inventory = route.virtual_hosts.find((v: { name: string }) => v.name === 'inventory');
    expect(inventory.domains).toContain('inventory.shop.svc.cluster.local:8080');
    const action = inventory.routes[0].route;
    expect(action).toMatchObject({
      cluster: 'inventory',
      timeout: '0.3s',
      retry_policy: {
        retry_on: 'connect-failure,refused-stream,reset-before-request,retriable-status-codes',
        num_retries: 1,
        per_try_timeout: '0.119s',
        retriable_status_codes: [408, 429, 500, 502, 503, 504],
        retry_back_off: { base_interval: '0.025s', max_interval: '1s' },
      },
      hedge_policy: { hedge_on_per_try_timeout: true },
    });
    expect(action.retry_policy.retriable_request_headers).toContainEqual({
      name: 'idempotency-key',
      present_match: true,
    });
    const orders = route.virtual_hosts.find((v: { name: string }) => v.name === 'orders').routes[0].route;
    expect(orders).toEqual({ cluster: 'orders', timeout: '0.56s' }); // one attempt
    const [bootstrap] = documentsOf(result, 'envoy-clusters.yaml') as Doc[];
    const cluster = bootstrap.static_resources.clusters.find((c: { name: string }) => c.name === 'inventory');
    expect(cluster).toMatchObject({
      connect_timeout: '0.06s', // min(cap 400, ceil(119 / 2)) ms, as the client arms it
      circuit_breakers: {
        thresholds: [
          { priority: 'DEFAULT', retry_budget: { budget_percent: { value: 10 }, min_retry_concurrency: 1 } },
        ],
      },
      outlier_detection: { consecutive_5xx: 5, base_ejection_time: '30s', max_ejection_time: '300s' },
    });
    const supplier = bootstrap.static_resources.clusters.find((c: { name: string }) => c.name === 'supplier');
    expect(Object.keys(supplier.typed_extension_protocol_options)).toEqual([
      'envoy.extensions.upstreams.http.v3.HttpProtocolOptions',
    ]);
  });
});

describe('Envoy v3: the adaptive throttle as admission_control, one filter per dependency (#23)', () => {
  const filtersOf = (result: MeshExport): Doc[] => {
    const [hcm] = documentsOf(result, 'envoy-http-filters.yaml') as Doc[];
    return hcm.http_filters;
  };
  const admission = (result: MeshExport, dependency: string): Doc =>
    filtersOf(result).find((f: Doc) => f.name === admissionFilterName(dependency))?.typed_config;

  it('every field is one the protos declare, nothing Envoy refuses at load; each filter is off but on its own route', () => {
    const result = exportMesh(example(), { target: 'envoy' });
    const [hcm] = documentsOf(result, 'envoy-http-filters.yaml');
    const [route] = documentsOf(result, 'envoy-route.yaml') as Doc[];
    expect(envoyProblems('HttpConnectionManager', hcm)).toEqual([]);
    expect(envoyProblems('RouteConfiguration', route)).toEqual([]);
    const filters = filtersOf(result);
    // The router last (a terminal filter, never disabled); one filter per exported dependency before it.
    expect(filters.at(-1)).toEqual({
      name: 'envoy.filters.http.router',
      typed_config: { '@type': 'type.googleapis.com/envoy.extensions.filters.http.router.v3.Router' },
    });
    const throttled = filters.slice(0, -1);
    expect(throttled.map((f: Doc) => f.name)).toEqual(
      ['orders', 'inventory', 'supplier'].map(admissionFilterName),
    );
    for (const f of throttled) {
      expect(f.disabled, f.name).toBe(true);
      expect(admissionControlProblems(f.typed_config, f.name)).toEqual([]);
    }
    // Each route enables exactly its own dependency's filter, with an empty FilterConfig.config.
    const enabled = new Map<string, string>();
    for (const vh of route.virtual_hosts)
      for (const r of vh.routes)
        for (const [name, config] of Object.entries(r.typed_per_filter_config ?? {})) {
          expect(config).toEqual({
            '@type': 'type.googleapis.com/envoy.config.route.v3.FilterConfig',
            config: {},
          });
          expect(enabled.has(name), name).toBe(false);
          enabled.set(name, r.name);
        }
    expect([...enabled].sort()).toEqual(
      throttled.map((f: Doc) => [f.name, f.name.slice('prazo.admission_control.'.length)]).sort(),
    );
    expect(result.notes.join('\n')).toContain('does not count the requests it refuses');
  });

  it('the field check catches what Envoy refuses: a 0.5% threshold, an empty or reversed range, a sub-second window', () => {
    const good = admission(exportMesh(example(), { target: 'envoy' }), 'inventory');
    expect(
      admissionControlProblems({
        ...good,
        sr_threshold: { default_value: { value: 0.5 }, runtime_key: 'k' },
      }),
    ).toEqual(['AdmissionControl: Success rate threshold cannot be less than 1.0%.']);
    const ranges = (r: object[]) => ({
      ...good,
      success_criteria: { http_criteria: { http_success_status: r } },
    });
    expect(admissionControlProblems(ranges([]))[0]).toMatch(/at least one range/);
    expect(admissionControlProblems(ranges([{ start: 500, end: 408 }]))[0]).toMatch(/invalid HTTP range/);
    expect(admissionControlProblems({ ...good, sampling_window: '0.5s' })[0]).toMatch(/whole seconds/);
    const { success_criteria: _, ...none } = good;
    expect(admissionControlProblems(none)[0]).toMatch(/required/);
    expect(envoyProblems('RuntimePercent', { default_value: { value: 50 } })).toEqual([]);
    expect(envoyProblems('RuntimePercent', { default_value: { value: 50 }, runtime_key: '' })[0]).toMatch(
      /non-empty/,
    );
  });

  it('the numbers: k, the window, minRequests and maxProbability as Envoy reads them; accepted is what prazo accepts', () => {
    const inventory = admission(exportMesh(example(), { target: 'envoy' }), 'inventory');
    expect(inventory).toMatchObject({
      sampling_window: '1s',
      aggression: { default_value: 1 },
      sr_threshold: { default_value: { value: 50 } },
      rps_threshold: { default_value: 10 },
      max_rejection_probability: { default_value: { value: 90 } },
    });
    expect(inventory.sr_threshold.runtime_key).toBe('prazo.admission_control.inventory.sr_threshold');
    // A status is a success for Envoy exactly when prazo's classifier does not retry it (an answer,
    // accepted by the throttle); every gRPC code but UNAVAILABLE.
    const ranges = inventory.success_criteria.http_criteria.http_success_status as {
      start: number;
      end: number;
    }[];
    for (let status = 100; status < 600; status += 1) {
      const success = ranges.some((r) => r.start <= status && status < r.end);
      expect(success, String(status)).toBe(!classifyFailure({ status }).retryable);
    }
    expect(inventory.success_criteria.grpc_criteria.grpc_success_status).toEqual([
      0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 15, 16,
    ]);

    const result = exportMesh(
      fromText(`version: 1
dependencies:
  - { name: tuned, p99Ms: 50, throttle: { k: 4, windowMs: 2500, minRequests: 25, maxProbability: 0.57 } }
  - { name: off, p99Ms: 50, throttle: false }
`),
      { target: 'envoy' },
    );
    expect(admission(result, 'tuned')).toMatchObject({
      sampling_window: '3s', // 2.5 s rounded up to Envoy's whole seconds: never forgets sooner
      sr_threshold: { default_value: { value: 25 } },
      rps_threshold: { default_value: 9 }, // ceil(25 / 3): never refuses below 25 requests
      max_rejection_probability: { default_value: { value: 57 } },
    });
    expect(admission(result, 'off')).toBeUndefined();
    const [route] = documentsOf(result, 'envoy-route.yaml') as Doc[];
    const off = route.virtual_hosts.find((v: Doc) => v.name === 'off').routes[0];
    expect(off.typed_per_filter_config).toBeUndefined();
    expect(result.notes.join('\n')).toContain('tuned: admission_control with k 4 as sr_threshold 25%');
    expect(result.notes.join('\n')).toContain('(Envoy counts whole seconds)');
    // Every throttle off: no filter file at all.
    const none = exportMesh(
      fromText('version: 1\ndependencies:\n  - { name: a, p99Ms: 50, throttle: false }\n'),
      {
        target: 'envoy',
      },
    );
    expect(none.files.map((f) => f.name)).toEqual(['envoy-route.yaml', 'envoy-clusters.yaml']);
  });

  it('property: the written filter refuses with prazo’s probability on the same counts (Envoy never refuses where prazo would not)', () => {
    const base = meshPolicies(example()).policies.find((p) => p.dependency === 'inventory')!;
    fc.assert(
      fc.property(
        fc.record({
          k: fc.oneof(fc.integer({ min: 1, max: 100 }), fc.double({ min: 1, max: 100, noNaN: true })),
          maxProbability: fc.double({ min: 0, max: 0.999, noNaN: true }),
          minRequests: fc.integer({ min: 0, max: 200 }),
          windowS: fc.integer({ min: 1, max: 10 }),
        }),
        fc.integer({ min: 0, max: 600 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (t, requests, okShare) => {
          const throttle = { ...t, windowMs: t.windowS * 1_000, buckets: 10 };
          const policy: MeshPolicy = { ...base, throttle };
          const file = renderEnvoy([policy]).files.find((f) => f.name === 'envoy-http-filters.yaml')!;
          const config = (file.documents[0]!.http_filters as Doc[])[0].typed_config;
          const successes = Math.floor(requests * okShare);
          const clock = new FakeClock();
          const prazo = new AdaptiveThrottle(
            {
              k: t.k,
              windowMs: throttle.windowMs,
              maxProbability: t.maxProbability,
              minRequests: t.minRequests,
            },
            clock,
            () => 0,
          );
          for (let i = 0; i < requests; i += 1) prazo.count(clock.now(), i < successes);
          const expected = prazo.state().probability;
          const envoy = envoyRejectionProbability(config, requests, successes);
          // Envoy's gate is a whole rate per second: it opens at windowS × ceil(minRequests / windowS).
          if (requests < t.windowS * Math.ceil(t.minRequests / t.windowS) && requests >= t.minRequests)
            expect(envoy).toBe(0);
          else expect(Math.abs(envoy - expected)).toBeLessThan(1e-9);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('every target from the example (CI)', () => {
  it.each(MESH_TARGETS)(
    '%s writes every file, each with its usage line, and notes what it approximates',
    (target: MeshTarget) => {
      const result = exportMesh(example(), { target, channel: 'experimental', source: 'prazo.config.yaml' });
      expect(result.problems).toEqual([]);
      expect(result.files.length).toBeGreaterThan(0);
      for (const f of result.files) {
        expect(f.text.length).toBeGreaterThan(0);
        expect(f.usage.length).toBeGreaterThan(0);
        if (f.name.endsWith('.yaml')) expect(f.text).not.toMatch(/[&*]a\d/); // no YAML aliases
      }
      expect(result.notes.length).toBeGreaterThan(0);
    },
  );
});

describe('durations in each system’s grammar', () => {
  it('GEP-2257, protobuf JSON and Linkerd spellings round-trip every whole ms', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 10 * 86_400_000 }), (ms) => {
        expect(gatewayDurationMs(gatewayDuration(ms))).toBe(ms);
        expect(Math.round(Number.parseFloat(protoDuration(ms)) * 1000)).toBe(ms);
        expect(protoDuration(ms)).toMatch(/^\d+(\.\d{1,9})?s$/);
        expect(linkerdDurationMs(linkerdDuration(ms))).toBe(ms);
        // grpc-js takes the fraction's digits as nanoseconds: nine of them, always.
        const [secs, frac = ''] = grpcDuration(ms).slice(0, -1).split('.');
        expect(Number(secs) * 1000 + Number(frac || 0) / 1e6).toBe(ms);
        expect(frac === '' || frac.length === 9).toBe(true);
      }),
    );
    expect(gatewayDuration(90_061_001)).toBe('25h1m1s1ms');
    expect(protoDuration(119)).toBe('0.119s');
    expect(() => gatewayDuration(1.5)).toThrow(RangeError);
  });
});

// --------------------------------------------------------------------------------------------------
// #24: what the cluster accepts, and nothing that overwrites something else.

/** What `kubectl apply` keys an object by: two documents with one key leave only the last. */
const objectKey = (d: Record<string, unknown>): string => {
  const m = d.metadata as { name: string; namespace?: string };
  return `${d.apiVersion}/${d.kind}/${m.namespace ?? ''}/${m.name}`;
};
const duplicates = (docs: Record<string, unknown>[]): string[] => {
  const keys = docs.map(objectKey);
  return keys.filter((k, i) => keys.indexOf(k) !== i);
};

/** Every file of an export as the user applies it, documents parsed back. */
const allDocuments = (result: MeshExport): Record<string, unknown>[] =>
  result.files.flatMap((f) => documentsOf(result, f.name));

const K8S_TARGETS = [
  { target: 'gateway-api', channel: 'standard' },
  { target: 'gateway-api', channel: 'experimental' },
  { target: 'istio', channel: 'standard' },
  { target: 'linkerd', channel: 'standard' },
] as const;

/** Two dependencies on one Service, told apart by path: reads retried, writes sent once. */
const READ_WRITE = `mesh: { namespace: shop }
dependencies:
  - { name: inventory-read, p99Ms: 50, attempts: 2, defaultDeadlineMs: 300, mesh: { service: inventory, port: 8080, path: /read } }
  - { name: inventory-write, p99Ms: 80, attempts: 1, defaultDeadlineMs: 300, mesh: { service: inventory, port: 8080, path: /write } }
`;

describe('#24 item 8: a Service name is an RFC 1035 label (it starts with a letter)', () => {
  it.each(MESH_TARGETS)('%s refuses `9lives` and `mesh.service: 1inventory`, at their keys', (target) => {
    const config = fromText(
      'dependencies:\n  - { name: 9lives, p99Ms: 10 }\n  - { name: a, p99Ms: 10, mesh: { service: 1inventory } }\n',
    );
    const result = exportMesh(config, { target, channel: 'experimental' });
    expect(result.files).toEqual([]);
    expect(result.problems).toEqual([
      expect.objectContaining({
        dependency: '9lives',
        path: ['dependencies', 0, 'name'],
        message: expect.stringMatching(/`9lives` is not a Kubernetes Service name.*RFC 1035.*mesh\.service/),
      }),
      expect.objectContaining({
        dependency: 'a',
        path: ['dependencies', 1, 'mesh', 'service'],
        message: expect.stringMatching(
          /`1inventory` is not a Kubernetes Service name.*starts? with a letter/,
        ),
      }),
    ]);
  });

  it('still writes names that are RFC 1035 labels (a letter first, digits after)', () => {
    const config = fromText('dependencies:\n  - { name: a9, p99Ms: 10, mesh: { service: v2-api } }\n');
    for (const target of MESH_TARGETS) expect(exportMesh(config, { target }).problems).toEqual([]);
  });
});

describe('#24 item 9: two dependencies on one Service make one resource per name', () => {
  it.each(K8S_TARGETS)(
    '$target ($channel): no two documents share a name; both paths keep their own numbers',
    ({ target, channel }) => {
      const result = exportMesh(fromText(READ_WRITE), { target, channel });
      expect(result.problems).toEqual([]);
      const docs = allDocuments(result);
      expect(duplicates(docs)).toEqual([]);
      expectValidKubernetes(docs.filter((d) => d.kind !== 'Service'));
      const text = result.files.map((f) => f.text).join('\n');
      expect(text).toContain('/read');
      expect(text).toContain('/write');
    },
  );

  it('Gateway API: one HTTPRoute with the rules of both, each path with its own timeouts and retry', () => {
    const docs = documentsOf(
      exportMesh(fromText(READ_WRITE), { target: 'gateway-api', channel: 'experimental' }),
      'gateway-api.yaml',
    ) as Doc[];
    const routes = docs.filter((d) => d.kind === 'HTTPRoute');
    expect(routes.map((r) => r.metadata.name)).toEqual(['inventory-prazo']);
    const rules = routes[0].spec.rules as Doc[];
    const names = rules.map((r) => r.name);
    expect(new Set(names).size).toBe(names.length); // a rule name is unique within its route
    const on = (path: string) => rules.filter((r) => r.matches.every((m: Doc) => m.path.value === path));
    // reads: ceil(50 × 1.4) = 70 ms per attempt, retried within 300 ms; writes: one attempt of 112 ms
    expect(on('/read').map((r) => [r.timeouts, r.retry?.attempts])).toEqual([
      [{ request: '300ms', backendRequest: '70ms' }, 1],
      [{ request: '70ms', backendRequest: '70ms' }, undefined],
    ]);
    expect(on('/write').map((r) => [r.timeouts, r.retry?.attempts])).toEqual([
      [{ request: '112ms', backendRequest: '112ms' }, undefined],
    ]);
    expect(docs.filter((d) => d.kind === 'XBackendTrafficPolicy').map((d) => d.metadata.name)).toEqual([
      'inventory-prazo-budget',
    ]);
  });

  it('Istio: one VirtualService and one DestinationRule for the host, the longer prefix first', () => {
    const docs = documentsOf(exportMesh(fromText(READ_WRITE), { target: 'istio' }), 'istio.yaml') as Doc[];
    expect(docs.map((d) => `${d.kind}/${d.metadata.name}`)).toEqual([
      'VirtualService/inventory-prazo',
      'DestinationRule/inventory-prazo',
    ]);
    const http = docs[0].spec.http as Doc[];
    const prefixes = http.map((r) => r.match[0].uri.prefix);
    expect(prefixes).toEqual(['/write', '/read', '/read']);
    expect(http.find((r) => r.match[0].uri.prefix === '/write')).toMatchObject({
      timeout: '112ms',
      retries: { attempts: 0 },
    });
    expect(http.filter((r) => r.match[0].uri.prefix === '/read').map((r) => r.retries.attempts)).toEqual([
      1, 0,
    ]);
    // One host, one pool: the longer connect timeout, the retry budget of the one that retries.
    expect(docs[1].spec.trafficPolicy.connectionPool.tcp.connectTimeout).toBe('56ms');
    expect(docs[1].spec.trafficPolicy.retryBudget).toEqual({ percent: 10, minRetryConcurrency: 1 });
  });

  it('Linkerd: a route per dependency (its annotations are its policy), the Service annotated once', () => {
    const docs = documentsOf(
      exportMesh(fromText(READ_WRITE), { target: 'linkerd' }),
      'linkerd.yaml',
    ) as Doc[];
    const routes = docs.filter((d) => d.kind === 'HTTPRoute');
    const of = (path: string) =>
      routes.filter((r) => r.spec.rules[0].matches.every((m: Doc) => m.path.value === path));
    expect(of('/read').map((r) => r.metadata.annotations['timeout.linkerd.io/response'])).toEqual([
      '70ms',
      '70ms',
    ]);
    expect(of('/write').map((r) => r.metadata.annotations['timeout.linkerd.io/response'])).toEqual(['112ms']);
    expect(docs.filter((d) => d.kind === 'Service')).toHaveLength(1);
  });

  it('Envoy: one virtual host per host (Envoy refuses a domain in two), the longer prefix first', () => {
    const [route] = documentsOf(
      exportMesh(fromText(READ_WRITE), { target: 'envoy' }),
      'envoy-route.yaml',
    ) as Doc[];
    const domains = route.virtual_hosts.flatMap((v: Doc) => v.domains);
    expect(new Set(domains).size).toBe(domains.length);
    expect(route.virtual_hosts).toHaveLength(1);
    expect(route.virtual_hosts[0].routes.map((r: Doc) => [r.match.prefix, r.route.cluster])).toEqual([
      ['/write', 'inventory-write'],
      ['/read', 'inventory-read'],
    ]);
    expect(envoyProblems('RouteConfiguration', route)).toEqual([]);
  });

  it('refuses what one Service cannot tell apart: the same path twice, or two ports', () => {
    const samePath = fromText(
      'dependencies:\n  - { name: a, p99Ms: 10, mesh: { service: inv } }\n  - { name: b, p99Ms: 20, mesh: { service: inv } }\n',
    );
    const ports = fromText(
      'dependencies:\n  - { name: a, p99Ms: 10, mesh: { service: inv, port: 80, path: /a } }\n  - { name: b, p99Ms: 20, mesh: { service: inv, port: 81, path: /b } }\n',
    );
    for (const target of ['gateway-api', 'istio', 'linkerd', 'envoy'] as const) {
      const same = exportMesh(samePath, { target });
      expect(same.files, target).toEqual([]);
      expect(same.problems, target).toEqual([
        expect.objectContaining({
          dependency: 'b',
          path: ['dependencies', 1, 'mesh'],
          message: expect.stringMatching(/`a` and `b` both route Service `inv` path `\/`/),
        }),
      ]);
      expect(exportMesh(ports, { target }).problems, target).toEqual([
        expect.objectContaining({ dependency: 'b', message: expect.stringMatching(/port 81.*`a`.*port 80/) }),
      ]);
    }
    // gRPC service configs are one file per dependency: nothing to tell apart
    expect(exportMesh(samePath, { target: 'grpc' }).problems).toEqual([]);
    // picking one with --dependency exports it alone
    expect(exportMesh(samePath, { target: 'istio', dependencies: ['a'] }).problems).toEqual([]);
  });

  it('property: dependencies on a few Services with distinct paths never give two documents one name', () => {
    const dependency = fc.record({
      service: fc.constantFrom('inv', 'pay'),
      path: fc.constantFrom('/', '/a', '/b', '/a/b', '/v1'),
      p99Ms: fc.integer({ min: 5, max: 500 }),
      attempts: fc.integer({ min: 1, max: 3 }),
      protocol: fc.constantFrom('http', 'http', 'grpc'),
    });
    fc.assert(
      fc.property(
        fc.uniqueArray(dependency, { maxLength: 6, selector: (d) => `${d.service} ${d.path}` }),
        fc.constantFrom(...K8S_TARGETS, { target: 'envoy', channel: 'standard' } as const),
        (deps, { target, channel }) => {
          const text = `dependencies:\n${deps
            .map(
              (d, i) =>
                `  - { name: d${i}, p99Ms: ${d.p99Ms}, attempts: ${d.attempts}, defaultDeadlineMs: 2000, mesh: { service: ${d.service}, path: '${d.path}', protocol: ${d.protocol} } }`,
            )
            .join('\n')}\n`;
          const result = exportMesh(fromText(deps.length === 0 ? 'dependencies: []\n' : text), {
            target,
            channel,
          });
          if (result.problems.length > 0) {
            // only Linkerd refuses here: two gRPC dependencies on one Service (a GRPCRoute has no path)
            expect(target).toBe('linkerd');
            return;
          }
          const docs = allDocuments(result);
          if (target === 'envoy') {
            const domains = docs[0]!.virtual_hosts as Doc[];
            const all = domains.flatMap((v: Doc) => v.domains);
            expect(new Set(all).size).toBe(all.length);
            return;
          }
          expect(duplicates(docs)).toEqual([]);
          expectValidKubernetes(docs.filter((d) => d.kind !== 'Service'));
        },
      ),
      { numRuns: 60 },
    );
  });
});

describe('#24 item 10: paths the HTTPRoute CRD refuses are refused before writing', () => {
  const REFUSED = ['//x', '/a/../b', '/%zz', '/é', '/a|b', '/a%2Fb', '/a/.', '/x/..', '/a/./b', '/a%2fb'];
  const withPath = (path: string) =>
    fromText(`dependencies:\n  - { name: a, p99Ms: 10, mesh: { path: ${JSON.stringify(path)} } }\n`);

  it.each(['gateway-api', 'linkerd'] as const)(
    '%s: each refused at `mesh.path`, naming the rule',
    (target) => {
      for (const path of REFUSED) {
        expect(httpRoutePathCelProblems(path), path).not.toEqual([]); // the CRD's own rules refuse it
        const result = exportMesh(withPath(path), { target, channel: 'experimental' });
        expect(result.files, path).toEqual([]);
        expect(result.problems, path).toEqual([
          expect.objectContaining({
            dependency: 'a',
            path: ['dependencies', 0, 'mesh', 'path'],
            message: expect.stringContaining('HTTPRoute'),
          }),
        ]);
      }
    },
  );

  it('property: a path is written for gateway-api and linkerd exactly when the CRD would accept it', () => {
    const segment = fc.oneof(
      fc.stringMatching(/^[-a-zA-Z0-9._~!$&'()*+,;=:@]{0,6}$/),
      fc.constantFrom('.', '..', '%2F', '%2f', '%20', '%zz', '%', 'é', '|', '#x', '%41'),
    );
    const path = fc.array(segment, { minLength: 1, maxLength: 5 }).map((s) => `/${s.join('/')}`);
    fc.assert(
      fc.property(
        path,
        fc.constantFrom('gateway-api', 'linkerd') as fc.Arbitrary<MeshTarget>,
        (p, target) => {
          const { config, problems } = checkConfigText(
            `dependencies:\n  - { name: a, p99Ms: 10, mesh: { path: ${JSON.stringify(p)} } }\n`,
            { readText: () => '' },
          );
          if (config === undefined || problems.some((x) => x.severity === 'error')) return; // the loader's own refusal
          const result = exportMesh(config, { target, channel: 'experimental' });
          const accepted = httpRoutePathCelProblems(p).length === 0;
          expect(result.problems.length === 0, `${p}: ${JSON.stringify(result.problems)}`).toBe(accepted);
          if (accepted) {
            for (const doc of allDocuments(result) as Doc[]) {
              if (doc.kind !== 'HTTPRoute') continue;
              for (const rule of doc.spec.rules)
                for (const m of rule.matches) expect(httpRoutePathCelProblems(m.path.value)).toEqual([]);
            }
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('Istio and Envoy match a prefix as a plain string and write such paths as given', () => {
    for (const target of ['istio', 'envoy'] as const)
      expect(exportMesh(withPath('/a|b'), { target }).problems).toEqual([]);
  });

  it('Gateway API: more rules than one HTTPRoute may hold is refused, not cut', () => {
    const many = `dependencies:\n${Array.from(
      { length: 9 },
      (_, i) =>
        `  - { name: d${i}, p99Ms: 10, attempts: 2, defaultDeadlineMs: 300, mesh: { service: inv, path: /p${i} } }`,
    ).join('\n')}\n`;
    const result = exportMesh(fromText(many), { target: 'gateway-api', channel: 'experimental' });
    expect(result.files).toEqual([]);
    expect(result.problems).toEqual([
      expect.objectContaining({
        message: expect.stringMatching(
          new RegExp(`18 rules.*at most ${HTTP_ROUTE_LIMITS.rules}|${HTTP_ROUTE_LIMITS.matches}`),
        ),
      }),
    ]);
    // the standard channel has one rule per dependency: 9 fit
    expect(exportMesh(fromText(many), { target: 'gateway-api' }).problems).toEqual([]);
  });
});
