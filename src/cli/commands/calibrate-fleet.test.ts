import { once } from 'node:events';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../cli.test-helpers.js';
import { formatEpoch } from './calibrate-render.js';

/**
 * `prazo calibrate --prometheus` through the CLI (SPEC X8, C4, C5, #16 item 1) against a Prometheus
 * stand-in on loopback that answers `/api/v1/query_range` from a table of sub-windows: the exit codes
 * (0, 1 with --strict, 2), every Prometheus failure as one clear line, the credentials sent, and
 * `--write` changing only the numbers. The real Prometheus end to end is test/spec/X8.test.ts.
 */

/** One sub-window of one dependency: successes' cumulative buckets (le in s) and calls by outcome. */
interface Slot {
  buckets: [number, number][];
  success: number;
  error?: number;
  timeout?: number;
}

/** 1000 successes, 900 within 50 ms, all within 100 ms: p99 = 50 + 0.9 × 50 = 95 ms. */
const healthy: Slot = {
  buckets: [
    [0.025, 300],
    [0.05, 900],
    [0.1, 1000],
    [0.25, 1000],
  ],
  success: 1000,
  error: 2,
};
/** A stretch of errors and slow calls (p99 in the 250 ms+ range): the guard must refuse it. */
const degraded: Slot = {
  buckets: [
    [0.025, 10],
    [0.05, 100],
    [0.1, 300],
    [0.25, 700],
  ],
  success: 700,
  error: 200,
  timeout: 100,
};

interface Fake {
  url: string;
  requests: { authorization: string | undefined; query: string }[];
  close(): Promise<void>;
}

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    s.close();
  }
});

/**
 * A stand-in answering each query with `slots(dependency)[k]` at the k-th evaluation instant,
 * or with `answer` verbatim.
 */
async function fakePrometheus(
  slots: (dependency: string) => Slot[] | undefined,
  answer?: (res: ServerResponse, query: string) => boolean,
): Promise<Fake> {
  const requests: Fake['requests'] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = '';
    req.on('data', (c: Buffer) => {
      body += c.toString();
    });
    req.on('end', () => {
      const form = new URLSearchParams(body);
      const query = form.get('query') ?? '';
      requests.push({ authorization: req.headers.authorization, query });
      if (answer?.(res, query)) return;
      const start = Number(form.get('start'));
      const end = Number(form.get('end'));
      const step = Number(form.get('step'));
      const times: number[] = [];
      for (let t = start; t <= end; t += step) times.push(t);
      const dep = /prazo_dependency="([^"]+)"/.exec(query)?.[1] ?? '';
      const table = slots(dep) ?? [];
      const at = (k: number): Slot | undefined => table[k - (times.length - table.length)];
      const result: unknown[] = [];
      if (query.includes('_bucket')) {
        const les = [...new Set(table.flatMap((s) => s.buckets.map(([le]) => le)))];
        for (const le of [...les, Number.POSITIVE_INFINITY]) {
          const values = times.flatMap((t, k) => {
            const s = at(k);
            if (s === undefined) return [];
            const count =
              le === Number.POSITIVE_INFINITY ? s.success : (s.buckets.find(([l]) => l === le)?.[1] ?? 0);
            return [[t, String(count)]];
          });
          if (values.length > 0)
            result.push({ metric: { le: le === Number.POSITIVE_INFINITY ? '+Inf' : String(le) }, values });
        }
      } else {
        for (const outcome of ['success', 'error', 'timeout'] as const) {
          const values = times.flatMap((t, k) => {
            const s = at(k);
            return s === undefined ? [] : [[t, String(s[outcome] ?? 0)]];
          });
          if (values.length > 0) result.push({ metric: { prazo_outcome: outcome }, values });
        }
      }
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ status: 'success', data: { resultType: 'matrix', result } }));
    });
  });
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: async () => {
      server.close();
      await once(server, 'close');
    },
  };
}

const CONFIG = `# the shop's dependencies (reviewed in pull requests)
version: 1

dependencies:
  # orders → inventory: reads, retried
  - name: inventory
    p99Ms: 85 # measured 2026-11
    attempts: 2
    defaultDeadlineMs: 300
    histogram:
      prometheus: { selector: '{job="orders"}' }

  - name: supplier
    p99Ms: 95
    attempts: 2
    defaultDeadlineMs: 300
    histogram: { prometheus: {} }
`;

const dirWith = (files: Record<string, string>): string => {
  const dir = mkdtempSync(join(tmpdir(), 'prazo-fleet-'));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
};

const END = '1767225600'; // 2026-01-01T00:00:00Z, a multiple of every step used here
const fleet = (url: string, ...more: string[]) => [
  'calibrate',
  '--prometheus',
  url,
  '--config',
  'prazo.config.yaml',
  '--window',
  '6h',
  '--step',
  '1h',
  '--end',
  END,
  ...more,
];

describe('prazo calibrate --prometheus', () => {
  it('refuses the degraded sub-windows, recommends ceil(p99 × 1.4) of the healthy ones, exit 0', async () => {
    const p = await fakePrometheus((d) =>
      d === 'inventory' ? [healthy, healthy, degraded, degraded, healthy, healthy] : Array(6).fill(healthy),
    );
    const dir = dirWith({ 'prazo.config.yaml': CONFIG });
    const r = await runCli(fleet(p.url, '--json'), dir);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    const report = JSON.parse(r.out);
    const inv = report.dependencies.find((d: { name: string }) => d.name === 'inventory');
    expect(inv.windows.map((w: { verdict: { health: string } }) => w.verdict.health)).toEqual([
      'healthy',
      'healthy',
      'degraded',
      'degraded',
      'healthy',
      'healthy',
    ]);
    expect(inv.healthyWindows).toBe(4);
    expect(inv.measured.p99).toBeCloseTo(95, 6);
    expect(inv.recommendation.responseMs).toBe(133); // ceil(95 × 1.4)
    expect(inv.current.responseMs).toBe(119); // ceil(85 × 1.4)
    // 119 ms is above the measured 95 ms and nothing was abandoned: no drift, yet a change to review
    expect(inv.drift.status).toBe('ok');
    const sup = report.dependencies.find((d: { name: string }) => d.name === 'supplier');
    expect(sup.recommendation.responseMs).toBe(133);
    // supplier's 95 ms is already right: one change only, and nothing written without --write
    expect(report.changes).toEqual([{ dependency: 'inventory', fromMs: 85, toMs: 95 }]);
    expect(report.written).toBe(false);
    expect(readFileSync(join(dir, 'prazo.config.yaml'), 'utf8')).toBe(CONFIG);
    // the selector given is kept, prazo's dependency label added
    expect(p.requests.some((q) => q.query.includes('job="orders"') && q.query.includes('inventory'))).toBe(
      true,
    );

    const table = await runCli(fleet(p.url), dir);
    expect(table.out).toMatch(/inventory[\s\S]*4 of 6 healthy, 2 refused/);
    expect(table.out).toMatch(/refused 2025-12-31T20:00Z–2025-12-31T21:00Z: error rate/);
    expect(table.out).toContain('--write applies them');
    // --strict: a refused sub-window is exit 1; the same fleet all healthy is exit 0
    expect((await runCli(fleet(p.url, '--strict'), dir)).code).toBe(1);
    const calm = await fakePrometheus(() => Array(6).fill(healthy));
    expect((await runCli(fleet(calm.url, '--strict'), dir)).code).toBe(0);
  });

  it('--write changes only the number, comments and layout kept; the file then loads to the recommendation', async () => {
    const p = await fakePrometheus(() => Array(6).fill(healthy));
    const dir = dirWith({ 'prazo.config.yaml': CONFIG });
    const r = await runCli(fleet(p.url, '--write'), dir);
    expect(r.code).toBe(0);
    const after = readFileSync(join(dir, 'prazo.config.yaml'), 'utf8');
    expect(after).toBe(CONFIG.replace('p99Ms: 85 # measured', 'p99Ms: 95 # measured'));
    // a second run finds nothing to change
    const again = await runCli(fleet(p.url, '--write', '--json'), dir);
    expect(JSON.parse(again.out).changes).toEqual([]);
    expect((await runCli(['check', 'prazo.config.yaml'], dir)).code).toBe(0);
  });

  it('--write fills in a missing p99Ms: an entry declared with kind only gets its measured p99 (#27)', async () => {
    const p = await fakePrometheus(() => Array(6).fill(healthy));
    const config = [
      'dependencies:',
      '  - name: inventory # new: not measured yet',
      '    kind: same-zone-service',
      '    histogram: { prometheus: {} }',
      '',
    ].join('\n');
    // Before: `needs p99Ms: histogram.prometheus says where the fleet measures it ...`, exit 2,
    // refused before anything was measured. Without a kind it still cannot load (nothing to plan
    // with until measured), and says how to get one.
    const dir = dirWith({ 'prazo.config.yaml': config.replace('    kind: same-zone-service\n', '') });
    const bare = await runCli(fleet(p.url, '--write'), dir);
    expect(bare.code).toBe(2);
    expect(bare.err).toContain('(until then, `kind` gives a starting value)');
    writeFileSync(join(dir, 'prazo.config.yaml'), config);
    const r = await runCli(fleet(p.url, '--write'), dir);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(r.out).toContain('p99Ms 95 ms (measured; was assumed from kind same-zone-service)');
    expect(readFileSync(join(dir, 'prazo.config.yaml'), 'utf8')).toBe(
      config.replace('    kind:', '    p99Ms: 95\n    kind:'),
    );
    const check = await runCli(['check', 'prazo.config.yaml'], dir);
    expect([check.code, check.err]).toEqual([0, '']);
  });

  it('--write refuses a measured p99 no network call has (a unit read wrong), and writes nothing', async () => {
    // le in ms read as seconds by a wrong `unit`: the fleet p99 comes out 0.095 ms.
    const p = await fakePrometheus(() => Array(6).fill(healthy));
    const dir = dirWith({
      'prazo.config.yaml': CONFIG.replace('{ prometheus: {} }', '{ prometheus: { unit: ms } }'),
    });
    const r = await runCli(fleet(p.url, '--write'), dir);
    expect(r.code).toBe(2);
    expect(r.err).toContain('prazo calibrate: supplier: p99 0.095 ms is below 1 ms');
    expect(readFileSync(join(dir, 'prazo.config.yaml'), 'utf8')).toContain('p99Ms: 95\n');
  });

  it('sends the bearer token or basic auth from their files', async () => {
    const p = await fakePrometheus(() => Array(6).fill(healthy));
    const dir = dirWith({ 'prazo.config.yaml': CONFIG, token: 's3cret\n', basic: 'ops:pa:ss\n' });
    await runCli(fleet(p.url, '--bearer-token-file', 'token'), dir);
    expect(new Set(p.requests.map((q) => q.authorization))).toEqual(new Set(['Bearer s3cret']));
    p.requests.length = 0;
    await runCli(fleet(p.url, '--basic-auth-file', 'basic'), dir);
    const basic = `Basic ${Buffer.from('ops:pa:ss').toString('base64')}`;
    expect(new Set(p.requests.map((q) => q.authorization))).toEqual(new Set([basic]));
    const both = await runCli(
      fleet(p.url, '--basic-auth-file', 'basic', '--bearer-token-file', 'token'),
      dir,
    );
    expect(both.code).toBe(2);
    expect(both.err).toMatch(/one of --bearer-token-file and --basic-auth-file/);
  });

  it('Was a defect: a --prometheus URL that is no URL is refused without its credentials (it printed them)', async () => {
    const dir = dirWith({ 'prazo.config.yaml': CONFIG });
    const r = await runCli(
      ['calibrate', '--prometheus', 'http://ops:s3cret@[bad', '--config', 'prazo.config.yaml'],
      dir,
    );
    expect(r.code).toBe(2);
    expect(r.err).toContain('--prometheus must be an http:// or https:// URL');
    expect(r.err).not.toContain('s3cret');
  });

  it('every Prometheus failure is one clear line on stderr, exit 2, never a stack trace', async () => {
    const dir = dirWith({ 'prazo.config.yaml': CONFIG });
    const reply =
      (status: number, body: string) =>
      (res: ServerResponse): boolean => {
        res.statusCode = status;
        res.end(body);
        return true;
      };
    const cases: Array<[(res: ServerResponse, q: string) => boolean, RegExp]> = [
      [reply(503, 'upstream down'), /HTTP 503 with "upstream down"/],
      [reply(401, ''), /HTTP 401/],
      [
        reply(
          400,
          JSON.stringify({ status: 'error', errorType: 'bad_data', error: 'parse error at char 3' }),
        ),
        /HTTP 400 bad_data: parse error at char 3/,
      ],
      [
        reply(422, JSON.stringify({ status: 'error', errorType: 'execution', error: 'too many samples' })),
        /execution: too many samples/,
      ],
      [reply(200, '<html>login</html>'), /not Prometheus API JSON/],
    ];
    for (const [answer, line] of cases) {
      const p = await fakePrometheus(() => undefined, answer);
      const r = await runCli(fleet(p.url), dir);
      expect(r.code, String(line)).toBe(2);
      expect(r.err, String(line)).toMatch(line);
      expect(r.err).not.toMatch(/\n\s+at /);
      expect(r.err.trim().split('\n').length, r.err).toBeLessThanOrEqual(2); // one per dependency at most
    }
    // a server that never answers: the request timeout, said once
    const hang = await fakePrometheus(
      () => undefined,
      () => true,
    );
    const slow = await runCli(fleet(hang.url, '--timeout', '300'), dir);
    expect(slow.code).toBe(2);
    expect(slow.err.trim()).toBe(`prazo calibrate: Prometheus at ${hang.url} did not answer within 300 ms`);
    // nothing listening
    const gone = await fakePrometheus(() => undefined);
    await gone.close();
    const refused = await runCli(fleet(gone.url), dir);
    expect(refused.code).toBe(2);
    expect(refused.err.trim()).toMatch(/^prazo calibrate: cannot reach Prometheus at .*ECONNREFUSED/);
    expect(refused.err.trim().split('\n')).toHaveLength(1);
  });

  it('no series and too few samples are refusals with their reason, not failures', async () => {
    const few: Slot = { buckets: [[0.1, 10]], success: 10 };
    const p = await fakePrometheus((d) => (d === 'inventory' ? [] : Array(6).fill(few)));
    const dir = dirWith({ 'prazo.config.yaml': CONFIG });
    const r = await runCli(fleet(p.url), dir);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/REFUSED\s+no series: prazo_dependency_attempt_duration_count\{.*has no data/);
    expect(r.out).toMatch(/REFUSED\s+too few samples: at most 10 call\(s\) in a sub-window, 100 needed/);
    expect((await runCli(fleet(p.url, '--strict'), dir)).code).toBe(1);
  });

  it('counts that add up past every float are not a count (was: "at most Infinity call(s)")', async () => {
    const huge: Slot = { buckets: [[0.1, 10]], success: 1.7e308, error: 1.7e308 };
    const p = await fakePrometheus(() => Array(6).fill(huge));
    const dir = dirWith({ 'prazo.config.yaml': CONFIG });
    const r = await runCli(fleet(p.url), dir);
    expect(r.out + r.err).not.toMatch(/Infinity/);
    expect(r.out + r.err).toMatch(/add up past the largest number: not a count/);
  });

  it('bad input is exit 2 with one line', async () => {
    const dir = dirWith({ 'prazo.config.yaml': CONFIG, 'bad.yaml': 'version: 1\ndependencies: [{}]\n' });
    const cases: Array<[string[], RegExp]> = [
      [['calibrate', '--prometheus', 'ftp://x'], /--prometheus must be an http:\/\/ or https:\/\/ URL/],
      [fleet('http://127.0.0.1:9', '--p99', '5'), /--p99: not with --prometheus/],
      [['calibrate', '--p99', '5', '--window', '7d'], /--window: only with --prometheus/],
      [fleet('http://127.0.0.1:9', '--window', '7 days'), /--window must be a Prometheus duration/],
      [fleet('http://127.0.0.1:9', '--end', 'yesterday'), /--end must be RFC 3339/],
      [
        fleet('http://127.0.0.1:9', '--step', '1s', '--window', '7d'),
        /`stepMs` makes 604800 sub-windows; at most 10000/,
      ],
      [['calibrate', '--prometheus', 'http://127.0.0.1:9', '--config', 'nope.yaml'], /cannot read nope.yaml/],
      [fleet('http://127.0.0.1:9', '--bearer-token-file', 'nope'), /cannot read the bearer token file nope/],
    ];
    for (const [argv, reason] of cases) {
      const r = await runCli(argv, dir);
      expect(r.code, argv.join(' ')).toBe(2);
      expect(r.err, argv.join(' ')).toMatch(reason);
      expect(r.err.trim().split('\n'), argv.join(' ')).toHaveLength(1);
    }
    const bad = await runCli(
      ['calibrate', '--prometheus', 'http://127.0.0.1:9', '--config', 'bad.yaml'],
      dir,
    );
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/bad.yaml has problems/);
  });
});

/** A config of `n` dependencies `d0`..`d<n-1>`, each read from the fleet's Prometheus. */
const manyDependencies = (n: number): string =>
  `version: 1\ndependencies:\n${Array.from(
    { length: n },
    (_, i) =>
      `  - { name: d${i}, p99Ms: 95, attempts: 2, defaultDeadlineMs: 300, histogram: { prometheus: {} } }`,
  ).join('\n')}\n`;

/** The process warnings emitted while `work` runs (Node prints each as 2 lines on the real stderr). */
async function processWarnings<T>(work: () => Promise<T>): Promise<{ result: T; warnings: string[] }> {
  const warnings: string[] = [];
  const onWarning = (w: Error): void => {
    warnings.push(`${w.name}: ${w.message}`);
  };
  process.on('warning', onWarning);
  try {
    const result = await work();
    await new Promise((r) => setImmediate(r)); // emitWarning reports on the next tick
    return { result, warnings };
  } finally {
    process.off('warning', onWarning);
  }
}

describe('prazo calibrate --prometheus with many dependencies (#24 item 6)', () => {
  it('12 dependencies on a healthy Prometheus: no MaxListenersExceededWarning (the queued queries share one abort listener)', async () => {
    const p = await fakePrometheus(() => Array(6).fill(healthy));
    const dir = dirWith({ 'prazo.config.yaml': manyDependencies(12) });
    const { result: r, warnings } = await processWarnings(() => runCli(fleet(p.url, '--json'), dir));
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.out).dependencies).toHaveLength(12);
    expect(warnings).toEqual([]);
  });

  it('a silent Prometheus with 50 dependencies: exactly one stderr line, no process warning', async () => {
    const hang = await fakePrometheus(
      () => undefined,
      () => true,
    );
    const dir = dirWith({ 'prazo.config.yaml': manyDependencies(50) });
    const { result: r, warnings } = await processWarnings(() =>
      runCli(fleet(hang.url, '--timeout', '300'), dir),
    );
    expect(r.code).toBe(2);
    // What the operator sees: our lines, plus two per process warning Node prints itself.
    const lines = r.err.trim().split('\n').length + 2 * warnings.length;
    expect({ lines, warnings }).toEqual({ lines: 1, warnings: [] });
    expect(r.err.trim()).toBe(`prazo calibrate: Prometheus at ${hang.url} did not answer within 300 ms`);
  });
});

describe('formatEpoch', () => {
  it('property: the UTC date and time Date itself gives, to the minute', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 8_000_000_000_000 }), (ms) => {
        const shown = formatEpoch(ms);
        expect(shown.slice(0, 16)).toBe(new Date(ms).toISOString().slice(0, 16));
        expect(shown.length === 17).toBe(ms % 60_000 === 0);
      }),
    );
  });
});
