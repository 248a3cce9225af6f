import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * The benchmark suite in quick mode, inside `npm test`, so it cannot rot: every suite runs, every
 * variant and case produces numbers (none skipped: a prazo API the bench uses that moved or vanished
 * fails here), and the output is well-formed. No timing is asserted: this machine is shared and the
 * numbers are only meaningful from a full run (`npm run bench`), as ratios.
 */
const run = promisify(execFile);
const root = fileURLToPath(new URL('../..', import.meta.url));
const dir = mkdtempSync(path.join(os.tmpdir(), 'prazo-bench-test-'));
const out = path.join(dir, 'results.json');
/** The variants that need prazo/http's interceptor(), and whether this build (dist/) has one. */
const INTERCEPTOR_VARIANTS = ['undici-interceptor', 'fetch-interceptor'];
const hasInterceptor =
  typeof (
    (await import(pathToFileURL(path.join(root, 'dist/http/index.js')).href)) as Record<string, unknown>
  ).interceptor === 'function';

afterAll(() => rmSync(dir, { recursive: true, force: true }));

type Range = { median: number | null; min: number | null; max: number | null };
type Skippable = { skipped?: string };
interface HttpVariant extends Skippable {
  errors: number;
  stats?: { requests: number; recording?: boolean; hedges?: number; retries?: number };
  firstError?: string;
  reqPerSec: Range;
  p50Ms: Range;
  p99Ms: Range;
  cpuUsPerReq: Range;
  ratio: Record<'reqPerSec' | 'p50Ms' | 'p99Ms' | 'cpuUsPerReq', Range>;
}
interface HedgeSide {
  requests: number;
  failed: number;
  p50Ms: number;
  p99Ms: number;
  p999Ms: number;
  sentToDependency: number;
}
interface AmplificationSide extends Skippable {
  originals: number;
  attempts: number;
}
interface Goal {
  what: string;
  met: boolean;
  achieved: number | null;
  shortBy: number | null;
  unavailable?: string;
}
interface Pair {
  variant: string;
  against: string;
  unavailable?: string;
  ratio: Record<'reqPerSec' | 'cpuUsPerReq' | 'p50Ms', Range>;
}
/** The shape of results.json (schema prazo-bench/1), as far as this test reads it. */
interface Results {
  schema: string;
  mode: string;
  machine: { cpuModel: string; cores: number; node: string };
  http: { variants: Record<string, HttpVariant>; pairs: Pair[] };
  micro: { cases: Array<Skippable & { name: string; nsPerOp: Range }> };
  memory: { rows: Array<Skippable & { design: string; retainedBytes: Range; steadyNsPerEvent: Range }> };
  effect: {
    amplification: { naive: AmplificationSide; prazo: AmplificationSide };
    hedging: Array<Skippable & { without: HedgeSide; with: HedgeSide }>;
    sections: Array<Skippable & { title: string }>;
  };
  calibrate: {
    parallel: FleetRun[];
    sequential: FleetRun[];
    sections: Array<Skippable & { title: string }>;
  };
  goals: Goal[];
}
interface InstanceSide {
  skipped?: string;
  failed: number;
  p50Ms: number;
  p99Ms: number;
  extraRequestsShare: number;
  slowInstanceShare: number;
}

interface FleetRun {
  dependencies: number;
  concurrency: number;
  wallMs: number;
  queries: number;
  maxInFlight: number;
  calibrated: number;
}
const isRange = (r: Range): boolean =>
  typeof r.median === 'number' &&
  typeof r.min === 'number' &&
  typeof r.max === 'number' &&
  r.min <= r.median &&
  r.median <= r.max;
const positive = (r: Range): boolean => isRange(r) && (r.min as number) > 0;

describe('npm run bench -- --quick', () => {
  let markdown = '';
  let results = {} as Results;

  it('runs every suite and writes results.json and a markdown report', async () => {
    const { stdout } = await run(process.execPath, ['bench/run.mjs', '--quick', '--out', out], {
      cwd: root,
      timeout: 55_000,
      maxBuffer: 10 * 1024 * 1024,
    });
    markdown = stdout;
    results = JSON.parse(readFileSync(out, 'utf8')) as Results;
    expect(results.schema).toBe('prazo-bench/1');
    expect(results.mode).toBe('quick');
    for (const suite of ['http', 'micro', 'memory', 'effect', 'calibrate'] as const)
      expect(results[suite]).toBeDefined();
  }, 60_000);

  it('describes the machine', () => {
    const m = results.machine;
    expect(typeof m.cpuModel).toBe('string');
    expect(m.cores).toBeGreaterThan(0);
    expect(m.node).toBe(process.version);
  });

  it('measures every HTTP variant, with ratios to bare undici', () => {
    const variants = results.http.variants;
    expect(Object.keys(variants).sort()).toEqual([
      'cockatiel',
      'fetch',
      'fetch-agent',
      'fetch-interceptor',
      'prazo-execute',
      'prazo-fetch',
      'prazo-request',
      'undici',
      'undici-header',
      'undici-interceptor',
      'undici-pool',
      'undici-pool-header',
      'undici-signal-header',
    ]);
    for (const [name, v] of Object.entries(variants)) {
      // Only the interceptor's variants may be "not available", and only while the build has none.
      if (INTERCEPTOR_VARIANTS.includes(name) && !hasInterceptor) {
        expect(v.skipped, name).toMatch(/interceptor/);
        continue;
      }
      expect(v.skipped, `${name} skipped`).toBeUndefined();
      expect(Number.isInteger(v.errors), name).toBe(true);
      for (const m of ['reqPerSec', 'p50Ms', 'p99Ms', 'cpuUsPerReq'] as const) {
        expect(positive(v[m]), `${name}.${m}`).toBe(true);
        expect(positive(v.ratio[m]), `${name}.ratio.${m}`).toBe(true);
      }
    }
    expect(variants.undici?.ratio.reqPerSec.median).toBe(1);
    // Each like-for-like pair is measured whenever both of its sides were.
    for (const pair of results.http.pairs) {
      const measured = !variants[pair.variant]?.skipped && !variants[pair.against]?.skipped;
      expect(pair.unavailable === undefined, `${pair.variant} ÷ ${pair.against}`).toBe(measured);
      if (measured)
        for (const m of ['reqPerSec', 'cpuUsPerReq', 'p50Ms'] as const)
          expect(positive(pair.ratio[m])).toBe(true);
    }
    expect(results.http.pairs.map((p) => `${p.variant}/${p.against}`)).toEqual(
      expect.arrayContaining([
        'prazo-request/undici-pool',
        'prazo-request/undici-pool-header',
        'undici-interceptor/undici',
        'undici-interceptor/undici-header',
        'fetch-interceptor/fetch-agent',
        'prazo-execute/undici-signal-header',
      ]),
    );
    // Recording is part of what prazo-request is measured with: check it was on, not assumed.
    for (const name of ['prazo-request', 'prazo-fetch', ...(hasInterceptor ? INTERCEPTOR_VARIANTS : [])])
      expect(variants[name]?.stats?.recording, name).toBe(true);
  });

  it('measures every micro case in ns per operation', () => {
    const names = results.micro.cases.map((c) => c.name);
    expect(names).toContain('await (bare)');
    expect(names).toContain('cockatiel wrap(retry, timeout)');
    for (const c of results.micro.cases) {
      expect(c.skipped, `${c.name} skipped`).toBeUndefined();
      expect(positive(c.nsPerOp), c.name).toBe(true);
    }
  });

  it('measures the memory of both budget designs', () => {
    const designs = results.memory.rows.map((r) => r.design);
    expect(designs).toEqual(expect.arrayContaining(['seed', 'prazo']));
    for (const r of results.memory.rows) {
      expect(r.skipped, `${r.design} skipped`).toBeUndefined();
      expect(isRange(r.retainedBytes), r.design).toBe(true);
      expect(positive(r.steadyNsPerEvent), r.design).toBe(true);
    }
  });

  it('simulates the outage and the slow tail on the fake clock', () => {
    const amp = results.effect.amplification;
    // Deterministic counts (fake clock), not timings: naive 3 attempts send exactly 3× the requests.
    expect(amp.naive.attempts).toBe(amp.naive.originals * 3);
    expect(amp.prazo.skipped).toBeUndefined();
    expect(amp.prazo.attempts).toBeGreaterThanOrEqual(amp.prazo.originals);
    // Issue 23: with the adaptive throttle (the default) most calls never reach the dependency.
    const throttled = (
      amp as unknown as { throttled: { amplification: number; throttled: number; originals: number } }
    ).throttled;
    expect(throttled.amplification).toBeLessThan(0.3);
    expect(throttled.throttled).toBeGreaterThan(0.5 * throttled.originals);
    for (const h of results.effect.hedging) {
      expect(h.skipped).toBeUndefined();
      for (const side of [h.without, h.with]) {
        expect(side.p50Ms).toBeLessThanOrEqual(side.p99Ms);
        expect(side.p99Ms).toBeLessThanOrEqual(side.p999Ms);
        expect(side.sentToDependency).toBeGreaterThanOrEqual(side.requests);
        expect(side.failed).toBe(0); // fake clock: 2 s default deadline vs answers of at most 120 ms
      }
    }
    for (const s of results.effect.sections) expect(s.skipped, s.title).toBeUndefined();
  });

  it('simulates three instances, one slow: picking starves it, a hedge goes elsewhere (SPEC X5, #15)', () => {
    const picks = (results.effect as unknown as { instances: Record<string, InstanceSide>[] }).instances;
    expect(picks.length).toBeGreaterThan(0);
    for (const p of picks) {
      expect(p.skipped).toBeUndefined();
      for (const key of ['roundRobin', 'picking', 'hedging', 'both']) {
        expect(p[key]!.failed, key).toBe(0);
        expect(p[key]!.p50Ms, key).toBeLessThanOrEqual(p[key]!.p99Ms);
      }
      // Deterministic on the fake clock: round robin gives the slow one a third, the picker far less.
      expect(p.roundRobin!.slowInstanceShare).toBeCloseTo(1 / 3, 2);
      expect(p.picking!.slowInstanceShare).toBeLessThan(0.1);
      expect(p.roundRobin!.extraRequestsShare).toBe(0);
      expect(p.both!.extraRequestsShare).toBeGreaterThan(0);
    }
    expect(results.micro.cases.map((c) => c.name)).toEqual(
      expect.arrayContaining(['instance pick, 3 instances', 'instance pick, 100 instances']),
    );
  });

  it('calibrates a fleet against a Prometheus stand-in, bounded in flight, both sides measured (SPEC X8)', () => {
    const { parallel, sequential } = results.calibrate;
    for (const r of [...parallel, ...sequential]) {
      expect(r.calibrated).toBe(r.dependencies);
      expect(r.queries).toBe(2 * r.dependencies); // buckets and calls, one range query each
      expect(r.maxInFlight).toBeLessThanOrEqual(r.concurrency);
      expect(r.wallMs).toBeGreaterThan(0);
    }
    expect(parallel[0]!.maxInFlight).toBeGreaterThan(1);
    expect(sequential[0]!.maxInFlight).toBe(1);
  });

  it('states every goal with target, achieved value and verdict', () => {
    expect(results.goals.length).toBeGreaterThanOrEqual(4);
    for (const g of results.goals) {
      expect(typeof g.what).toBe('string');
      expect(typeof g.met).toBe('boolean');
      if (g.unavailable !== undefined) {
        // Only a goal on the interceptor, in a build without one, may go unmeasured.
        expect(hasInterceptor, g.what).toBe(false);
        expect(g.what).toMatch(/interceptor/);
        expect(g.met || g.achieved !== null || g.shortBy !== null).toBe(false);
        continue;
      }
      expect(g.met ? g.shortBy === 0 : (g.shortBy as number) > 0, g.what).toBe(true);
    }
    const said = results.goals.map((g) => g.what).join('\n');
    for (const what of [
      'prazo request()',
      'CPU µs/req ÷ bare undici Pool',
      'interceptor',
      'executor execute()',
    ])
      expect(said).toContain(what);
  });

  it('prints the markdown tables', () => {
    for (const heading of ['## Hot path', '## Micro', '## Memory', '## Effectiveness', '## Goals']) {
      expect(markdown).toContain(heading);
    }
    const tableRows = markdown.split('\n').filter((l) => l.startsWith('|'));
    for (const row of tableRows) expect(row.endsWith('|')).toBe(true);
    expect(markdown).not.toMatch(/NaN|undefined/);
  });
});
