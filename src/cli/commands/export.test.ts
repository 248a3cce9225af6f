import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { runCli } from '../cli.test-helpers.js';
import { ExitCode } from '../context.js';

/** `prazo export` through the whole CLI, in-process, on the shipped example (SPEC X10). */

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const tmp = () => {
  const d = mkdtempSync(join(tmpdir(), 'prazo-export-'));
  dirs.push(d);
  return d;
};

describe('prazo export', () => {
  it('prints the resources to stdout (pipe them to kubectl) and the approximations to stderr', async () => {
    const r = await runCli(['export', '--config', 'prazo.config.yaml', '--to', 'istio']);
    expect(r.code).toBe(ExitCode.ok);
    const docs = parseAllDocuments(r.out);
    expect(docs.every((d) => d.errors.length === 0)).toBe(true);
    expect(docs.map((d) => (d.toJS() as { kind: string }).kind)).toContain('VirtualService');
    expect(r.err).toMatch(/^note: /m);
    expect(r.err).not.toMatch(/error/);
  });

  it('--out writes the files and says how to apply each; --json reports files, numbers and notes', async () => {
    const out = tmp();
    const r = await runCli(['export', '--config', 'prazo.config.yaml', '--to', 'envoy', '--out', out]);
    expect(r.code).toBe(ExitCode.ok);
    expect(readdirSync(out).sort()).toEqual([
      'envoy-clusters.yaml',
      'envoy-http-filters.yaml',
      'envoy-route.yaml',
    ]);
    expect(r.out).toMatch(/wrote 1 resource\(s\) to .*envoy-route\.yaml: a RouteConfiguration/);
    const json = await runCli(['export', '--config', 'prazo.config.yaml', '--to', 'grpc', '--json']);
    expect(json.code).toBe(ExitCode.ok);
    const report = JSON.parse(json.out);
    expect(report.target).toBe('grpc');
    expect(report.files.map((f: { name: string }) => f.name)).toContain('grpc-service-config.supplier.json');
    expect(report.policies.find((p: { dependency: string }) => p.dependency === 'inventory')).toMatchObject({
      attemptTimeoutMs: 119,
      attempts: 2,
    });
    expect(report.notes.length).toBeGreaterThan(0);
  });

  it('--dependency picks dependencies; --channel experimental adds retries and the budget', async () => {
    const r = await runCli([
      'export',
      '--to',
      'gateway-api',
      '--channel',
      'experimental',
      '--dependency',
      'inventory',
    ]);
    expect(r.code).toBe(ExitCode.ok);
    const kinds = parseAllDocuments(r.out).map((d) => (d.toJS() as { kind: string }).kind);
    expect(kinds).toEqual(['HTTPRoute', 'XBackendTrafficPolicy']);
    expect(r.out).toContain('attempts: 1');
  });

  it('bad input exits 2 with one reason on stderr: no --to, an unknown target, a config with problems, a name that is no Service', async () => {
    const none = await runCli(['export']);
    expect(none).toMatchObject({ code: ExitCode.badInput, out: '' });
    expect(none.err).toMatch(/^prazo export: --to is required/);
    const bogus = await runCli(['export', '--to', 'nginx']);
    expect(bogus.code).toBe(ExitCode.badInput);
    expect(bogus.err).toMatch(/--to must be one of gateway-api, istio, linkerd, envoy, grpc/);
    const dir = tmp();
    writeFileSync(join(dir, 'bad.yaml'), 'dependencies:\n  - name: a\n    p99Ms: -1\n');
    const bad = await runCli(['export', '--config', 'bad.yaml', '--to', 'envoy'], dir);
    expect(bad.code).toBe(ExitCode.badInput);
    expect(bad.err).toContain('bad.yaml:3:5: error: dependencies[0].p99Ms');
    writeFileSync(
      join(dir, 'name.yaml'),
      'dependencies:\n  - { name: ok, p99Ms: 10 }\n  - name: Orders DB\n    p99Ms: 10\n',
    );
    const name = await runCli(['export', '--config', 'name.yaml', '--to', 'linkerd', '--out', 'x'], dir);
    expect(name.code).toBe(ExitCode.badInput);
    expect(name.err).toContain(
      'name.yaml:3:5: error: dependencies[1].name: `Orders DB` is not a Kubernetes Service name',
    );
    expect(() => readdirSync(join(dir, 'x'))).toThrow(); // nothing written
    const unknown = await runCli(['export', '--to', 'istio', '--dependency', 'nope']);
    expect(unknown.code).toBe(ExitCode.badInput);
    expect(unknown.err).toContain('no dependency named `nope`');
  });

  it('#24: a Service name starting with a digit, or a path the HTTPRoute CRD refuses, is exit 2 at its line; nothing written', async () => {
    const dir = tmp();
    writeFileSync(
      join(dir, 'digit.yaml'),
      'dependencies:\n  - { name: ok, p99Ms: 10 }\n  - name: a\n    p99Ms: 10\n    mesh: { service: 1inventory }\n',
    );
    for (const target of ['gateway-api', 'istio', 'linkerd', 'envoy', 'grpc']) {
      const r = await runCli(['export', '--config', 'digit.yaml', '--to', target, '--out', 'x'], dir);
      expect(r.code, target).toBe(ExitCode.badInput);
      expect(r.err, target).toContain(
        'digit.yaml:5:13: error: dependencies[1].mesh.service: `1inventory` is not a Kubernetes Service name (an RFC 1035 label',
      );
    }
    writeFileSync(
      join(dir, 'path.yaml'),
      'dependencies:\n  - name: a\n    p99Ms: 10\n    mesh: { path: /a|b }\n',
    );
    for (const target of ['gateway-api', 'linkerd']) {
      const r = await runCli(['export', '--config', 'path.yaml', '--to', target, '--out', 'x'], dir);
      expect(r.code, target).toBe(ExitCode.badInput);
      expect(r.err, target).toMatch(
        /path\.yaml:4:13: error: dependencies\[0\]\.mesh\.path: `\/a\|b` is not a path an HTTPRoute accepts/,
      );
    }
    expect(() => readdirSync(join(dir, 'x'))).toThrow(); // nothing written
  });

  it('#24: two dependencies on one Service print one HTTPRoute holding both paths, exit 0', async () => {
    const dir = tmp();
    writeFileSync(
      join(dir, 'rw.yaml'),
      'dependencies:\n  - { name: read, p99Ms: 50, mesh: { service: inventory, path: /read } }\n  - { name: write, p99Ms: 80, attempts: 1, mesh: { service: inventory, path: /write } }\n',
    );
    const r = await runCli(['export', '--config', 'rw.yaml', '--to', 'gateway-api'], dir);
    expect(r.code).toBe(ExitCode.ok);
    const docs = parseAllDocuments(r.out).map(
      (d) => d.toJS() as { kind: string; metadata: { name: string } },
    );
    expect(docs.map((d) => `${d.kind}/${d.metadata.name}`)).toEqual(['HTTPRoute/inventory-prazo']);
    expect(r.out).toContain('value: /read');
    expect(r.out).toContain('value: /write');
  });

  it('--strict exits 1 on the config’s warnings, which go to stderr', async () => {
    const dir = tmp();
    writeFileSync(
      join(dir, 'warn.yaml'),
      'dependencies:\n  - { name: a, p99Ms: 100, attempts: 3, defaultDeadlineMs: 400 }\n',
    );
    const loose = await runCli(['export', '--config', 'warn.yaml', '--to', 'envoy'], dir);
    expect(loose.code).toBe(ExitCode.ok);
    expect(loose.err).toContain(
      'warning: dependencies[0].defaultDeadlineMs: deadline of 400 ms fits 2 attempt(s), not 3',
    );
    const strict = await runCli(['export', '--config', 'warn.yaml', '--to', 'envoy', '--strict'], dir);
    expect(strict.code).toBe(ExitCode.warnings);
    expect(readFileSync(join(dir, 'warn.yaml'), 'utf8')).toContain('attempts: 3');
  });
});
