import { status } from '@grpc/grpc-js';
import { GRPCRoute } from '@kubernetes-models/gateway-api/gateway.networking.k8s.io/v1/GRPCRoute';
import { HTTPRoute } from '@kubernetes-models/gateway-api/gateway.networking.k8s.io/v1/HTTPRoute';
import { XBackendTrafficPolicy } from '@kubernetes-models/gateway-api/gateway.networking.x-k8s.io/v1alpha1/XBackendTrafficPolicy';
import { DestinationRule } from '@kubernetes-models/istio/networking.istio.io/v1/DestinationRule';
import { VirtualService } from '@kubernetes-models/istio/networking.istio.io/v1/VirtualService';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { checkConfigText, type PrazoConfig } from '../../../src/config/load.js';
import { InvalidOptionsError } from '../../../src/errors/options.js';
import { echoClient, startEcho } from '../../../src/grpc/grpc.test-helpers.js';
import { exportMesh, MESH_TARGETS, type MeshExport, type MeshTarget } from '../../../src/mesh/export.js';
import { envoyProblems, gatewayDurationMs, linkerdDurationMs } from '../../../src/mesh/mesh.test-helpers.js';

/**
 * Attacks on `prazo export` (SPEC X10): the mesh resources written from a config, fed names,
 * namespaces, paths and numbers at the edges of what the loader accepts. What must hold: every file
 * reads back, with the YAML parsers its consumers use, as exactly the documents prazo meant; every
 * Kubernetes object passes its published model; every Envoy message the v3 protos' fields and units;
 * no two objects (or domains, or files) a consumer keys by one name; or the export is refused, with
 * the reason at the config key.
 *
 * The consumers read YAML 1.1 (kubectl's go-yaml, Envoy's yaml-cpp: `no` is a boolean there), the
 * repo's tests YAML 1.2: a file is read both ways with the `yaml` package, and the two must agree.
 */

const fromText = (text: string): PrazoConfig => {
  const { config, problems } = checkConfigText(text, { readText: () => '' });
  expect(problems.filter((p) => p.severity === 'error')).toEqual([]);
  return config!;
};

/** A config of these dependency entries (JSON is YAML: any name survives the trip). */
const configOf = (...dependencies: Record<string, unknown>[]): PrazoConfig =>
  fromText(JSON.stringify({ dependencies }));

type Doc = Record<string, unknown>;
// biome-ignore lint/suspicious/noExplicitAny: parsed documents, read field by field in assertions
type Any = any;

/** Every document of a YAML file, read as YAML 1.2 and as YAML 1.1; both readings must agree. */
function readBoth(text: string): Doc[] {
  const read = (version: '1.1' | '1.2') =>
    parseAllDocuments(text, { version }).map((d) => {
      expect(d.errors, `YAML ${version}`).toEqual([]);
      return d.toJS() as Doc;
    });
  const modern = read('1.2');
  expect(read('1.1'), 'YAML 1.1 (kubectl, Envoy) reads what YAML 1.2 reads').toEqual(modern);
  return modern;
}

const documentsOf = (result: MeshExport): Doc[] => {
  expect(result.problems).toEqual([]);
  return result.files.flatMap((f) => (f.name.endsWith('.json') ? [JSON.parse(f.text)] : readBoth(f.text)));
};

type Model = new (data: never) => { validate(): void };
const MODELS: Record<string, Model> = {
  'gateway.networking.k8s.io/v1/HTTPRoute': HTTPRoute as unknown as Model,
  'gateway.networking.k8s.io/v1/GRPCRoute': GRPCRoute as unknown as Model,
  'gateway.networking.x-k8s.io/v1alpha1/XBackendTrafficPolicy': XBackendTrafficPolicy as unknown as Model,
  'networking.istio.io/v1/VirtualService': VirtualService as unknown as Model,
  'networking.istio.io/v1/DestinationRule': DestinationRule as unknown as Model,
};

/** The published model's verdict (a partial `v1/Service` of Linkerd's: its metadata only). */
function kubernetesProblems(doc: Doc): unknown[] {
  const meta = doc.metadata as { name: unknown; namespace: unknown; annotations?: Record<string, unknown> };
  const out: unknown[] = [];
  const label = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
  if (typeof meta.name !== 'string' || meta.name.length > 253 || !label.test(meta.name.replaceAll('.', '-')))
    out.push(`metadata.name ${JSON.stringify(meta.name)}`);
  if (typeof meta.namespace !== 'string' || !label.test(meta.namespace))
    out.push(`metadata.namespace ${JSON.stringify(meta.namespace)}`);
  for (const [k, v] of Object.entries(meta.annotations ?? {}))
    if (typeof v !== 'string') out.push(`annotation ${k}: ${JSON.stringify(v)} is not a string`);
  if (doc.kind === 'Service') return out;
  const Model = MODELS[`${doc.apiVersion}/${doc.kind}`];
  if (Model === undefined) return [...out, `no model for ${doc.apiVersion}/${doc.kind}`];
  try {
    new Model(doc as never).validate();
  } catch (error) {
    out.push(...((error as { errors?: unknown[] }).errors ?? [String(error)]));
  }
  return out;
}

/** What Envoy would refuse in the export's Envoy files: field types and units, a domain given twice. */
function envoyFileProblems(result: MeshExport): string[] {
  const [route, clusters, filters] = [
    'envoy-route.yaml',
    'envoy-clusters.yaml',
    'envoy-http-filters.yaml',
  ].map((name) => result.files.find((f) => f.name === name));
  const routeDoc = readBoth(route!.text)[0] as Any;
  const out = [
    ...envoyProblems('RouteConfiguration', routeDoc),
    ...envoyProblems('Bootstrap', readBoth(clusters!.text)[0]),
    ...(filters === undefined ? [] : envoyProblems('HttpConnectionManager', readBoth(filters.text)[0])),
  ];
  // route_config_impl: "Only unique values for domains are permitted. Duplicate entry of domain …"
  const domains = (routeDoc.virtual_hosts as Any[]).flatMap((h) => h.domains as string[]);
  for (const d of new Set(domains))
    if (domains.filter((x) => x === d).length > 1) out.push(`duplicate domain ${d}`);
  // A virtual host's name keys its stats and VHDS updates: Envoy takes one name once per route table.
  const names = (routeDoc.virtual_hosts as Any[]).map((h) => h.name as string);
  for (const n of new Set(names))
    if (names.filter((x) => x === n).length > 1) out.push(`duplicate virtual host name ${n}`);
  return out;
}

/** The names of Envoy's clusters, read back (both YAML versions) from a Bootstrap fragment Envoy takes. */
function envoyClusterNames(config: PrazoConfig): string[] {
  const clusters = exportMesh(config, { target: 'envoy' }).files[1]!;
  const doc = readBoth(clusters.text)[0] as Any;
  expect(envoyProblems('Bootstrap', doc)).toEqual([]);
  return doc.static_resources.clusters.map((c: Any) => c.name);
}

/** Every target's export of `config`, checked by its consumer's rules; the documents, by target. */
function exportEverywhere(
  config: PrazoConfig,
  targets: readonly MeshTarget[] = MESH_TARGETS,
): Record<MeshTarget, Doc[]> {
  const out = {} as Record<MeshTarget, Doc[]>;
  for (const target of targets) {
    const result = exportMesh(config, { target, channel: 'experimental' });
    const docs = documentsOf(result);
    out[target] = docs;
    if (target === 'envoy') expect(envoyFileProblems(result)).toEqual([]);
    else if (target !== 'grpc') {
      for (const doc of docs) expect(kubernetesProblems(doc), `${target} ${doc.kind}`).toEqual([]);
      const keys = docs.map((d) => {
        const m = d.metadata as { name: string; namespace: string };
        return `${d.kind}/${m.namespace}/${m.name}`;
      });
      expect(keys.length, `${target}: two objects of one kind, namespace and name`).toBe(new Set(keys).size);
    }
  }
  return out;
}

describe('prazo export: names YAML readers take for something else (SPEC X10)', () => {
  it('Was a defect: a Service, namespace or dependency named `no`, `on`, `y` stays a string for kubectl and Envoy', () => {
    // All three are RFC 1035 labels: valid Service and namespace names. Written plain, YAML 1.1
    // (kubectl's go-yaml, Envoy's yaml-cpp) reads `name: no` as `false`: the API server refuses the
    // HTTPRoute, Envoy the RouteConfiguration (a domain `false`).
    const config = configOf(
      { name: 'no', p99Ms: 10, mesh: { namespace: 'on' } },
      { name: 'y', p99Ms: 10, hedge: true, mesh: { namespace: 'off', protocol: 'grpc' } },
    );
    const docs = exportEverywhere(config);
    const route = docs['gateway-api'].find((d) => d.kind === 'HTTPRoute') as Any;
    expect(route.metadata).toMatchObject({ namespace: 'on', annotations: { 'prazo/dependency': 'no' } });
    expect(route.spec.parentRefs[0].name).toBe('no');
    const envoy = docs.envoy[0] as Any;
    expect(envoy.virtual_hosts[0]).toMatchObject({ name: 'no', domains: expect.arrayContaining(['no']) });
    expect((docs.envoy[1] as Any).static_resources.clusters.map((c: Any) => c.name)).toEqual(['no', 'y']);
    const linkerdService = docs.linkerd.find((d) => d.kind === 'Service') as Any;
    expect(linkerdService.metadata).toEqual(expect.objectContaining({ name: 'no', namespace: 'on' }));
  });

  it('Was a defect: dependency names like YAML 1.1 numbers, timestamps, nulls and merge keys stay strings', () => {
    const names = [
      '1_000',
      '2001-12-14',
      '0X1F',
      '0o17',
      '017',
      '1:20',
      '1e3',
      '.inf',
      '~',
      '<<',
      'YES',
      '-0b1',
    ];
    const config = configOf(
      ...names.map((name, i) => ({ name, p99Ms: 10, attempts: 1, mesh: { service: `s${i}` } })),
    );
    // Every target writes the name through one writer: Istio's annotation and Envoy's cluster show it.
    const annotated = documentsOf(exportMesh(config, { target: 'istio' }))
      .filter((d) => d.kind === 'VirtualService')
      .map((d) => (d.metadata as Any).annotations['prazo/dependency']);
    expect(annotated).toEqual(names);
    expect(envoyClusterNames(config)).toEqual(names);
  });

  it('Was a defect: control characters, line separators and a BOM in a name are escaped, never raw', () => {
    const names = [
      'a\u2028b',
      'a\u0085b',
      'a\u2029b',
      '\ufeffa',
      'a\u007fb',
      'a\u0080b',
      'a\tb',
      'a\nb',
      'a\r\nb',
      'é-ü',
      'a #b',
      'a: b',
      '- a',
      '"a\'',
      '%YAML',
    ];
    const config = configOf(
      ...names.map((name, i) => ({ name, p99Ms: 10, attempts: 1, mesh: { service: `s${i}` } })),
    );
    const loaded = [...config.dependencies.keys()];
    for (const target of ['istio', 'envoy', 'linkerd', 'gateway-api'] as const) {
      const result = exportMesh(config, { target });
      for (const file of result.files) {
        // YAML 1.1 takes NEL, LS and PS for line breaks (folded to a space even inside quotes); no
        // reader may see a C1 control, DEL or a BOM raw.
        expect(file.text, file.name).not.toMatch(/[\u0085\u2028\u2029\ufeff\u007f-\u009f]/);
      }
      if (target === 'linkerd') {
        const annotated = documentsOf(result)
          .filter((d) => d.kind === 'HTTPRoute')
          .map((d) => (d.metadata as Any).annotations['prazo/dependency']);
        expect(annotated).toEqual(loaded);
      }
    }
    expect(envoyClusterNames(config)).toEqual(loaded);
  });

  it('Was a defect: a config path with a line break cannot end the header comment and inject a document', () => {
    const config = configOf({ name: 'a', p99Ms: 10 });
    // One writer makes every YAML file's header (exportMesh's): two targets show it.
    for (const target of ['istio', 'linkerd'] as const) {
      const clean = exportMesh(config, { target, source: 'prazo.config.yaml' }).files.map((f) =>
        parseAllDocuments(f.text).map((d) => d.toJS()),
      );
      for (const source of [
        'x\n---\nkind: Secret',
        'x\rkind: Secret',
        'x\u2028kind: Secret',
        'x\u0085---',
        '',
      ]) {
        const result = exportMesh(config, { target, source });
        for (const [i, file] of result.files.entries()) {
          expect(
            file.text
              .split('\n')
              .slice(0, 2)
              .every((l) => l.startsWith('#')),
          ).toBe(true);
          expect(file.text).not.toMatch(/[\r\u0085\u2028]/);
          expect(readBoth(file.text)).toEqual(clean[i]);
        }
      }
    }
    // A --config the OS resolves, as typed: any length is written (escaped as need be), not refused.
    const long = exportMesh(config, { target: 'istio', source: `./${'./'.repeat(5_000)}x.yaml` });
    expect(long.problems).toEqual([]);
    expect(long.files[0]!.text.split('\n')[0]).toContain(`${'./'.repeat(5_000)}x.yaml;`);
  });

  it('Was a defect: notes and usage lines escape line breaks and ESC in a name (they go to a terminal)', () => {
    const config = configOf(
      { name: 'x\nnote: forged', p99Ms: 10, hedge: true, mesh: { service: 's1' } },
      { name: 'a\u001b[2Jb', p99Ms: 10, mesh: { service: 's2' } },
    );
    for (const target of MESH_TARGETS) {
      const result = exportMesh(config, { target, channel: 'experimental' });
      for (const line of [...result.notes, ...result.files.map((f) => f.usage)])
        expect(
          [...line].filter((c) => c < ' ' || /[\u007f-\u009f\u2028\u2029]/.test(c)),
          target,
        ).toEqual([]);
      expect(
        result.notes.some((n) => n.includes('x\\u000anote: forged')),
        target,
      ).toBe(true);
    }
  });

  it('Was a defect: a refusal quoting a name with a line break or ESC is one line too', () => {
    const config = configOf(
      { name: 'x\nerror: forged', p99Ms: 10, mesh: { service: 's', path: '/a' } },
      { name: 'y\u001b[2J', p99Ms: 10, mesh: { service: 's', path: '/a' } },
    );
    for (const target of ['gateway-api', 'istio', 'linkerd', 'envoy'] as const) {
      const { problems } = exportMesh(config, { target });
      expect(problems).toHaveLength(1);
      expect(
        [...problems[0]!.message].filter((c) => c < ' '),
        target,
      ).toEqual([]);
      expect(problems[0]!.message).toContain('x\\u000aerror: forged');
    }
  });

  it('property: any name the loader accepts reads back as itself from the Envoy clusters, both YAML versions', () => {
    // Pieces YAML readers take for something else, joined with arbitrary text.
    const piece = fc.oneof(
      fc.constantFrom('no', 'on', 'Y', '1_000', '0x1F', '0o7', '1e3', '~', '<<', '2001-12-14', '1:20'),
      fc.constantFrom('\u2028', '\u0085', '\ufeff', '\u007f', '\n', ': ', ' #', '- ', '"', "'", '\\'),
      fc.string({ unit: 'binary', maxLength: 6 }),
    );
    const name = fc
      .array(piece, { minLength: 1, maxLength: 3 })
      .map((parts) => parts.join(''))
      .filter((s) => s.trim() === s && s.length > 0 && !/[\ud800-\udfff]/.test(s));
    fc.assert(
      fc.property(fc.uniqueArray(name, { minLength: 1, maxLength: 3 }), (names) => {
        const { config, problems } = checkConfigText(
          JSON.stringify({
            dependencies: names.map((n, i) => ({ name: n, p99Ms: 10, mesh: { service: `s${i}` } })),
          }),
          { readText: () => '' },
        );
        if (config === undefined || problems.some((p) => p.severity === 'error')) return; // refused: fine
        expect(envoyClusterNames(config)).toEqual([...config.dependencies.keys()]);
      }),
      { numRuns: 20 },
    );
  });
});

describe('prazo export: objects, domains and files one name apart (SPEC X10, #24)', () => {
  it('Was a defect: one Service name in two namespaces gives Envoy no domain twice', () => {
    // Both virtual hosts claimed `inventory` and `inventory:80`: Envoy refuses the RouteConfiguration.
    const config = configOf(
      { name: 'a', p99Ms: 10, mesh: { service: 'inventory', namespace: 'shop' } },
      { name: 'b', p99Ms: 10, mesh: { service: 'inventory', namespace: 'stock' } },
      { name: 'c', p99Ms: 10, mesh: { service: 'orders', namespace: 'shop' } },
    );
    const result = exportMesh(config, { target: 'envoy' });
    expect(envoyFileProblems(result)).toEqual([]);
    const hosts = (readBoth(result.files[0]!.text)[0] as Any).virtual_hosts;
    expect(hosts.map((h: Any) => h.domains)).toEqual([
      [
        'inventory.shop.svc.cluster.local',
        'inventory.shop.svc.cluster.local:80',
        'inventory.shop',
        'inventory.shop:80',
      ],
      [
        'inventory.stock.svc.cluster.local',
        'inventory.stock.svc.cluster.local:80',
        'inventory.stock',
        'inventory.stock:80',
      ],
      expect.arrayContaining(['orders', 'orders:80']), // a name in one namespace keeps its short forms
    ]);
    expect(result.notes.some((n) => n.includes('inventory') && n.includes('shop, stock'))).toBe(true);
  });

  it('Was a defect: a merged Envoy virtual host (`a+b`) and a dependency named `a+b` never share a name', () => {
    // `a` and `b` share Service `inventory`: one virtual host, named `a+b`; the dependency literally
    // named `a+b` (Service `orders`) had its own virtual host `a+b`: two virtual hosts of one name.
    const config = configOf(
      { name: 'a+b', p99Ms: 10, mesh: { service: 'orders' } },
      { name: 'a', p99Ms: 10, mesh: { service: 'inventory', path: '/a' } },
      { name: 'b', p99Ms: 10, mesh: { service: 'inventory', path: '/b' } },
      { name: 'a+b#2', p99Ms: 10, mesh: { service: 'stock' } },
    );
    const result = exportMesh(config, { target: 'envoy' });
    expect(envoyFileProblems(result)).toEqual([]);
    const hosts = (readBoth(result.files[0]!.text)[0] as Any).virtual_hosts as Any[];
    // A dependency alone keeps its own name; the merged host, prazo's invention, gives way.
    expect(hosts.map((h) => h.name)).toEqual(['a+b', 'a+b#3', 'a+b#2']);
    expect(hosts[1].domains).toContain('inventory');
  });

  it('Was a defect: two merged Envoy virtual hosts never share a name (`a+b` + `c` vs `a` + `b+c`)', () => {
    const config = configOf(
      { name: 'a+b', p99Ms: 10, mesh: { service: 's1', path: '/x' } },
      { name: 'c', p99Ms: 10, mesh: { service: 's1', path: '/y' } },
      { name: 'a', p99Ms: 10, mesh: { service: 's2', path: '/x' } },
      { name: 'b+c', p99Ms: 10, mesh: { service: 's2', path: '/y' } },
      { name: 'a+b+c#2', p99Ms: 10, mesh: { service: 's3' } },
    );
    const result = exportMesh(config, { target: 'envoy' });
    expect(envoyFileProblems(result)).toEqual([]);
    const hosts = (readBoth(result.files[0]!.text)[0] as Any).virtual_hosts as Any[];
    expect(hosts.map((h) => h.name)).toEqual(['a+b+c', 'a+b+c#3', 'a+b+c#2']);
  });

  it('Was a defect: Linkerd routes of two Services never share a name (`a` + `x-prazo` vs `a-prazo-x`)', () => {
    // Service `a`'s dependency `x-prazo` and Service `a-prazo-x`'s only one both made HTTPRoutes
    // `a-prazo-x-prazo` and `a-prazo-x-prazo-retryable`: kubectl apply kept the last.
    const config = configOf(
      { name: 'x-prazo', p99Ms: 10, mesh: { service: 'a', path: '/x' } },
      { name: 'w', p99Ms: 10, mesh: { service: 'a', path: '/w' } },
      { name: 'z', p99Ms: 10, mesh: { service: 'a-prazo-x' } },
    );
    const docs = exportEverywhere(config).linkerd;
    const routes = docs.filter((d) => d.kind === 'HTTPRoute') as Any[];
    expect(routes).toHaveLength(6); // each dependency: a retryable route and a once route
    expect(new Set(routes.map((r) => r.metadata.name)).size).toBe(6);
    // Each dependency still has its own pair, on its own Service and path.
    const byDependency = (dep: string) =>
      routes
        .filter((r) => r.metadata.annotations['prazo/dependency'] === dep)
        .map((r) => r.spec.parentRefs[0].name);
    expect(byDependency('x-prazo')).toEqual(['a', 'a']);
    expect(byDependency('z')).toEqual(['a-prazo-x', 'a-prazo-x']);
  });

  it('property: Linkerd routes never share a name, whatever the Services and dependency names', () => {
    // Names built of the words prazo's own names are built of, on a few Services, so that they meet.
    const word = fc.constantFrom('a', 'prazo', 'retryable');
    const label = fc.array(word, { minLength: 1, maxLength: 3 }).map((ws) => ws.join('-'));
    const service = fc.constantFrom('a', 'a-prazo', 'a-prazo-a', 'a-prazo-prazo', 'prazo-a');
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.tuple(label, service), { minLength: 2, maxLength: 5, selector: ([d]) => d }),
        (entries) => {
          const config = configOf(
            ...entries.map(([dependency, service], i) => ({
              name: dependency,
              p99Ms: 10,
              mesh: { service, path: `/p${i}` },
            })),
          );
          const result = exportMesh(config, { target: 'linkerd' });
          const keys = parseAllDocuments(result.files[0]!.text).map((d) => {
            const doc = d.toJS() as Doc;
            return `${doc.kind}/${(doc.metadata as Any).name}`;
          });
          expect(keys.length).toBe(new Set(keys).size);
        },
      ),
      { numRuns: 25 },
    );
  });

  it('Was a defect: Gateway API and Linkerd refuse `/read` and `/read/` on one Service (one PathPrefix)', () => {
    // A PathPrefix ignores a trailing `/`: the two rules match the same calls and the first wins, so
    // the second dependency's timeouts never applied. Istio and Envoy match plain prefixes: both fine.
    const config = configOf(
      { name: 'a', p99Ms: 10, mesh: { service: 's', path: '/read' } },
      { name: 'b', p99Ms: 50, mesh: { service: 's', path: '/read/' } },
    );
    for (const target of ['gateway-api', 'linkerd'] as const) {
      const result = exportMesh(config, { target });
      expect(result.files).toEqual([]);
      expect(result.problems).toEqual([
        expect.objectContaining({
          dependency: 'b',
          path: ['dependencies', 1, 'mesh'],
          message: expect.stringContaining('trailing `/`'),
        }),
      ]);
    }
    for (const target of ['istio', 'envoy'] as const)
      expect(exportMesh(config, { target }).problems).toEqual([]);
    // `/` stays `/`; `/read` and `/reading` are different elements.
    const distinct = configOf(
      { name: 'a', p99Ms: 10, mesh: { service: 's', path: '/' } },
      { name: 'b', p99Ms: 10, mesh: { service: 's', path: '/read' } },
      { name: 'c', p99Ms: 10, mesh: { service: 's', path: '/reading/' } },
    );
    exportEverywhere(distinct);
  });

  it('Was a defect: through one Gateway (mesh.gateway), two Services on one path are refused, not misrouted', () => {
    // The HTTPRoutes carry no hostnames: both matched `/api` for every host of the Gateway, and the
    // older route's Service took the other's calls.
    const config = fromText(
      JSON.stringify({
        mesh: { gateway: { name: 'edge', namespace: 'infra' } },
        dependencies: [
          { name: 'a', p99Ms: 10, mesh: { service: 'orders', path: '/api' } },
          { name: 'b', p99Ms: 10, mesh: { service: 'stock', path: '/api/' } },
          { name: 'c', p99Ms: 10, mesh: { service: 'users', path: '/users' } },
        ],
      }),
    );
    const result = exportMesh(config, { target: 'gateway-api' });
    expect(result.files).toEqual([]);
    expect(result.problems).toEqual([
      expect.objectContaining({
        dependency: 'b',
        path: ['dependencies', 1, 'mesh'],
        message: expect.stringContaining('through Gateway `infra/edge`'),
      }),
    ]);
    // Attached to their Services (GAMMA), or for the other targets, the same paths are fine.
    const gamma = configOf(
      { name: 'a', p99Ms: 10, mesh: { service: 'orders', path: '/api' } },
      { name: 'b', p99Ms: 10, mesh: { service: 'stock', path: '/api' } },
    );
    expect(exportMesh(gamma, { target: 'gateway-api' }).problems).toEqual([]);
    for (const target of ['istio', 'linkerd', 'envoy'] as const)
      expect(exportMesh(config, { target }).problems).toEqual([]);
    // A Gateway named without a namespace is each route's own: two namespaces, two Gateways.
    const twoGateways = fromText(
      JSON.stringify({
        mesh: { gateway: { name: 'edge' } },
        dependencies: [
          { name: 'a', p99Ms: 10, mesh: { service: 'orders', namespace: 'shop', path: '/api' } },
          { name: 'b', p99Ms: 10, mesh: { service: 'stock', namespace: 'depot', path: '/api' } },
        ],
      }),
    );
    expect(exportMesh(twoGateways, { target: 'gateway-api' }).problems).toEqual([]);
    // Distinct paths through the Gateway: written, and each route parented to it.
    const distinct = fromText(
      JSON.stringify({
        mesh: { gateway: { name: 'edge' } },
        dependencies: [
          { name: 'a', p99Ms: 10, mesh: { service: 'orders', path: '/orders' } },
          { name: 'b', p99Ms: 10, mesh: { service: 'stock', path: '/stock' } },
        ],
      }),
    );
    const routes = exportEverywhere(distinct, ['gateway-api'])['gateway-api'].filter(
      (d) => d.kind === 'HTTPRoute',
    ) as Any[];
    expect(routes.map((r) => r.spec.parentRefs)).toEqual([[{ name: 'edge' }], [{ name: 'edge' }]]);
  });

  it('Was a defect: Linkerd refuses an HTTP and a gRPC dependency on one Service (it serves one route kind)', () => {
    // linkerd2#12761: a Service with both GRPCRoutes and HTTPRoutes gets only the older kind's.
    const config = configOf(
      { name: 'rest', p99Ms: 10, mesh: { service: 's', path: '/v1' } },
      { name: 'rpc', p99Ms: 10, mesh: { service: 's', protocol: 'grpc' } },
    );
    const result = exportMesh(config, { target: 'linkerd' });
    expect(result.files).toEqual([]);
    expect(result.problems).toEqual([
      expect.objectContaining({ dependency: 'rpc', path: ['dependencies', 1, 'mesh', 'protocol'] }),
    ]);
    // The other targets route both by path (or write no GRPCRoute): both written.
    for (const target of ['gateway-api', 'istio', 'envoy'] as const)
      expect(exportMesh(config, { target }).problems).toEqual([]);
  });

  it('Was a defect: gRPC service configs of `A` and `a` are two files on a case-insensitive file system', () => {
    const config = configOf(
      { name: 'A', p99Ms: 10, mesh: { service: 'x' } },
      { name: 'a', p99Ms: 10 },
      { name: 'a b', p99Ms: 10, mesh: { service: 'y' } },
      { name: 'a_b', p99Ms: 10, mesh: { service: 'z' } },
    );
    const names = exportMesh(config, { target: 'grpc' }).files.map((f) => f.name);
    expect(names).toHaveLength(4);
    expect(new Set(names.map((n) => n.toLowerCase())).size).toBe(4);
    expect(names[0]).toBe('grpc-service-config.A.json');
  });
});

describe('prazo export: numbers at the edges of the config (SPEC X10, C1-C3)', () => {
  it('Was a defect: a host longer than a DNS name (or a cluster domain label over 63) is refused, not written', () => {
    const label = (n: number, c: string) => c.repeat(n);
    const long = (clusterDomain: string, dependencies: string[] = []) =>
      exportMesh(
        fromText(
          JSON.stringify({
            mesh: { clusterDomain, namespace: label(63, 'n') },
            dependencies: [{ name: 'a', p99Ms: 10, mesh: { service: label(63, 's') } }],
          }),
        ),
        { target: 'istio', dependencies: dependencies.length === 0 ? undefined : dependencies },
      );
    // 63 + 63 + `svc` + 130 and the dots: a 262-character host, which Istio's validation of `hosts` refuses.
    const domain = `${label(60, 'a')}.${label(60, 'b')}.${label(8, 'c')}`;
    expect(long(domain).problems).toEqual([
      expect.objectContaining({
        dependency: 'a',
        path: ['dependencies', 0, 'mesh'],
        message: expect.stringContaining('262 characters'),
      }),
    ]);
    const tooLongLabel = long(`${label(64, 'x')}.local`, ['a']);
    expect(tooLongLabel.files).toEqual([]);
    expect(tooLongLabel.problems).toEqual([expect.objectContaining({ path: ['mesh', 'clusterDomain'] })]);
    // At the limit: a 253-character host is written.
    const fits = long(`${label(60, 'a')}.${label(60, 'b')}`);
    expect(fits.problems).toEqual([]);
    const vs = documentsOf(fits).find((d) => d.kind === 'VirtualService') as Any;
    expect(vs.spec.hosts[0]).toHaveLength(253);
  });

  it('Was a defect: a retry floor past 2^32 - 1 in flight is written as uint32 max, never a number Envoy refuses', () => {
    // 10^6 retries/s over a 7,000,000 ms attempt: 7 × 10^9 concurrent retries, past uint32.
    const big = {
      p99Ms: 5_000_000,
      unusualP99: true,
      defaultDeadlineMs: 2 ** 31 - 1,
      retryBudget: { minPerSecond: 1_000_000 },
    };
    const config = configOf(
      { name: 'a', ...big, mesh: { service: 's', path: '/a' } },
      { name: 'b', ...big, mesh: { service: 's', path: '/b' } },
    );
    const docs = exportEverywhere(config);
    const clusters = (docs.envoy[1] as Any).static_resources.clusters;
    for (const c of clusters)
      expect(c.circuit_breakers.thresholds[0].retry_budget.min_retry_concurrency).toBe(2 ** 32 - 1);
    const rule = docs.istio.find((d) => d.kind === 'DestinationRule') as Any;
    expect(rule.spec.trafficPolicy.retryBudget.minRetryConcurrency).toBe(2 ** 32 - 1); // not the sum
  });

  it('sub-ms and fractional timeouts round up to whole ms; none is 0 (Istio refuses < 1ms; 0s means none)', () => {
    const config = configOf(
      {
        name: 'tiny',
        p99Ms: 0.001,
        unusualP99: true,
        attempts: 1,
        defaultDeadlineMs: 1.5,
        connectCapMs: 0.001,
        overheadMs: 0,
      },
      { name: 'frac', p99Ms: 33.3333, defaultDeadlineMs: 99.9, backoff: { baseMs: 0.4, capMs: 0.2 } },
      { name: 'far', p99Ms: 100, attempts: 10, defaultDeadlineMs: 2 ** 31 - 1 },
      { name: 'zero-backoff', p99Ms: 10, backoff: { baseMs: 0, capMs: 0 } },
    );
    const docs = exportEverywhere(config);
    const istio = docs.istio.filter((d) => d.kind === 'VirtualService') as Any[];
    for (const vs of istio)
      for (const route of vs.spec.http) {
        expect(gatewayDurationMs(route.timeout)).toBeGreaterThanOrEqual(1);
        if (route.retries.perTryTimeout !== undefined)
          expect(gatewayDurationMs(route.retries.perTryTimeout)).toBeGreaterThanOrEqual(1);
      }
    const far = istio.find((d) => d.metadata.name === 'far-prazo')!;
    expect(gatewayDurationMs(far.spec.http[0].timeout)).toBe(2 ** 31 - 1);
    expect(far.spec.http[0].retries.attempts).toBe(9);
    for (const route of docs['gateway-api'].filter((d) => d.kind === 'HTTPRoute') as Any[])
      for (const rule of route.spec.rules) {
        const { request, backendRequest } = rule.timeouts;
        expect(gatewayDurationMs(backendRequest)).toBeGreaterThanOrEqual(1);
        expect(gatewayDurationMs(backendRequest)).toBeLessThanOrEqual(gatewayDurationMs(request));
      }
    for (const route of docs.linkerd.filter((d) => d.kind === 'HTTPRoute') as Any[])
      for (const [k, v] of Object.entries(route.metadata.annotations as Record<string, string>))
        if (k.startsWith('timeout.') || k === 'retry.linkerd.io/timeout')
          expect(linkerdDurationMs(v)).toBeGreaterThanOrEqual(1);
    const grpcTimeouts = docs.grpc.map((d: Any) => d.methodConfig[0].timeout as string);
    expect(grpcTimeouts).toContain('2147483.647000000s');
    for (const t of grpcTimeouts) expect(Number.parseFloat(t)).toBeGreaterThanOrEqual(0.001);
  });

  it('Was a defect: a hedge at the p99.5 is named p99.5 in every note, not p100', () => {
    const config = configOf({ name: 'h', p99Ms: 10, attempts: 2, hedge: { percentile: 0.995 } });
    for (const target of ['gateway-api', 'istio', 'envoy', 'grpc'] as const) {
      const { notes } = exportMesh(config, { target });
      const hedging = notes.filter((n) => n.startsWith('h: ') && /hedg/.test(n) && / p\d/.test(n));
      expect(hedging.length, target).toBeGreaterThan(0);
      for (const note of hedging) expect(note, target).toContain('p99.5');
    }
  });

  it('property: any numbers the loader accepts give durations every grammar reads, >= 1 ms, attempt <= deadline', () => {
    const entry = fc.record({
      p99Ms: fc.oneof(
        fc.double({ min: 0.001, max: 86_400_000, noNaN: true }),
        fc.constantFrom(0.001, 86_400_000),
      ),
      defaultDeadlineMs: fc.oneof(
        fc.double({ min: 0.5, max: 2 ** 31 - 1, noNaN: true }),
        fc.constant(2 ** 31 - 1),
      ),
      attempts: fc.integer({ min: 1, max: 10 }),
      overheadMs: fc.double({ min: 0, max: 60_000, noNaN: true }),
      connectCapMs: fc.double({ min: 0.001, max: 60_000, noNaN: true }),
      backoff: fc.record({
        baseMs: fc.double({ min: 0, max: 60_000, noNaN: true }),
        capMs: fc.double({ min: 0, max: 60_000, noNaN: true }),
      }),
      hedge: fc.boolean(),
      mesh: fc.record({ protocol: fc.constantFrom('http', 'grpc') }),
    });
    fc.assert(
      fc.property(entry, (e) => {
        const { config, problems } = checkConfigText(
          JSON.stringify({ dependencies: [{ name: 'a', unusualP99: true, forceSlack: true, ...e }] }),
          { readText: () => '' },
        );
        if (config === undefined || problems.some((p) => p.severity === 'error')) return;
        const docs = exportEverywhere(config, ['istio', 'linkerd', 'envoy', 'grpc']);
        for (const vs of docs.istio.filter((d) => d.kind === 'VirtualService') as Any[])
          for (const route of vs.spec.http) {
            const timeout = gatewayDurationMs(route.timeout);
            expect(timeout).toBeGreaterThanOrEqual(1);
            if (route.retries.perTryTimeout !== undefined)
              expect(gatewayDurationMs(route.retries.perTryTimeout)).toBeLessThanOrEqual(timeout);
          }
        for (const r of docs.linkerd.filter((d) => d.kind !== 'Service') as Any[])
          for (const [k, v] of Object.entries(r.metadata.annotations as Record<string, string>))
            if (k.startsWith('timeout.') || k === 'retry.linkerd.io/timeout')
              expect(linkerdDurationMs(v)).toBeGreaterThanOrEqual(1);
        const method = (docs.grpc[0] as Any).methodConfig[0];
        expect(Number.parseFloat(method.timeout)).toBeGreaterThanOrEqual(0.001);
      }),
      { numRuns: 10 },
    );
  });

  it('one attempt (attempts: 1) retries nowhere; ten attempts are nine retries everywhere', () => {
    const config = configOf(
      { name: 'once', p99Ms: 10, attempts: 1 },
      { name: 'ten', p99Ms: 10, attempts: 10, defaultDeadlineMs: 10_000 },
    );
    const docs = exportEverywhere(config);
    const vs = (name: string) =>
      docs.istio.find((d) => d.kind === 'VirtualService' && (d.metadata as Any).name === name) as Any;
    expect(vs('once-prazo').spec.http.map((r: Any) => r.retries)).toEqual([{ attempts: 0 }]);
    expect(vs('ten-prazo').spec.http[0].retries.attempts).toBe(9);
    const vhosts = (docs.envoy[0] as Any).virtual_hosts;
    expect(vhosts[0].routes[0].route.retry_policy).toBeUndefined();
    expect(vhosts[1].routes[0].route.retry_policy.num_retries).toBe(9);
    expect((docs.grpc[0] as Any).methodConfig[0].retryPolicy).toBeUndefined();
    expect((docs.grpc[1] as Any).methodConfig[0].retryPolicy.maxAttempts).toBe(10);
  });

  it('Was a defect: asking for a `mesh: false` dependency by name is refused at its key, not an empty export', () => {
    const config = configOf({ name: 'a', p99Ms: 10 }, { name: 'db', p99Ms: 5, mesh: false });
    for (const target of MESH_TARGETS) {
      const result = exportMesh(config, { target, dependencies: ['db'] });
      expect(result.files).toEqual([]);
      expect(result.problems).toEqual([
        expect.objectContaining({ dependency: 'db', path: ['dependencies', 1, 'mesh'] }),
      ]);
      // Asked for with others, or not asked for: nothing to say.
      expect(exportMesh(config, { target, dependencies: ['a'] }).problems).toEqual([]);
      expect(exportMesh(config, { target }).problems).toEqual([]);
    }
  });

  it('Was a defect: an unknown target or option key is an InvalidOptionsError, not a TypeError mid-render', () => {
    const config = configOf({ name: 'a', p99Ms: 10 });
    const attempt = (options: unknown) => {
      try {
        exportMesh(config, options as never);
        return undefined;
      } catch (error) {
        return error;
      }
    };
    const unknownTarget = attempt({ target: 'nginx' });
    expect(unknownTarget).toBeInstanceOf(InvalidOptionsError);
    expect((unknownTarget as InvalidOptionsError).code).toBe('INVALID_OPTIONS');
    const typo = attempt({
      target: 'istio',
      chanel: 'experimental',
      dependencies: 'a',
    }) as InvalidOptionsError;
    expect(typo).toBeInstanceOf(InvalidOptionsError);
    expect(typo.problems).toEqual([
      'unknown option `chanel`; did you mean `channel`?',
      '`dependencies` must be a list of dependency names',
    ]);
  });

  it('empty inputs: no dependency, or every one `mesh: false`, gives files that parse to nothing to apply', () => {
    for (const config of [fromText('dependencies: []\n'), configOf({ name: 'db', p99Ms: 5, mesh: false })]) {
      for (const target of MESH_TARGETS) {
        const result = exportMesh(config, { target });
        expect(result.problems).toEqual([]);
        expect(result.policies).toEqual([]);
        const docs = documentsOf(result);
        if (target === 'envoy') {
          expect(docs).toEqual([
            { name: 'prazo', virtual_hosts: [] },
            { static_resources: { clusters: [] } },
          ]);
        } else expect(docs).toEqual([]);
      }
    }
  });

  it('Was a defect: ten attempts in a gRPC service config are said to be five to a gRPC client (its cap)', async () => {
    // A real grpc-js client and server on loopback: the first 6 calls answer UNAVAILABLE.
    const config = configOf({
      name: 'ten',
      p99Ms: 10,
      attempts: 10,
      defaultDeadlineMs: 5_000,
      backoff: { baseMs: 1, capMs: 2 },
    });
    const result = exportMesh(config, { target: 'grpc' });
    expect(result.notes).toContainEqual(expect.stringMatching(/^ten: maxAttempts 10 .* cap it at 5/));
    let calls = 0;
    const echo = await startEcho({
      say(_call: unknown, callback: (e: { code: number } | null, v?: unknown) => void) {
        calls += 1;
        if (calls <= 6) callback({ code: status.UNAVAILABLE });
        else callback(null, { text: 'ok', remainingMs: -1, deadlineEpochMs: 0 });
      },
    });
    const call = (options: Record<string, unknown>) => {
      const client = echoClient(echo.address, { 'grpc.service_config': result.files[0]!.text, ...options });
      return new Promise<number | undefined>((resolve) =>
        client.say({ text: 'x' }, (error) => {
          client.close();
          resolve(error?.code);
        }),
      ).finally(() => client.close());
    };
    try {
      expect(await call({})).toBe(status.UNAVAILABLE); // 5 attempts, as the note says
      expect(calls).toBe(5);
      calls = 0;
      expect(await call({ 'grpc-node.retry_max_attempts_limit': 10 })).toBeUndefined(); // the note's remedy
      expect(calls).toBe(7);
    } finally {
      await echo.stop();
    }
  });
});
