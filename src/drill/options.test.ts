import { describe, expect, it } from 'vitest';
import { isInvalidOptions } from '../errors/guards.js';
import { resolveDrillOptions } from './options.js';

const problemsOf = (fn: () => unknown): string => {
  try {
    fn();
  } catch (error) {
    if (isInvalidOptions(error)) return error.problems.join('\n');
    throw error;
  }
  throw new Error('no problem reported');
};

const CONFIG = `version: 1
dependencies:
  - name: payments
    p99Ms: 180
    attempts: 2
    pool: { size: 50, rps: 100 }
`;

describe('prazo drill options (SPEC V2, C7)', () => {
  it('demo target: the supplier answers at its configured timeout, ceil(p99 × 1.4)', () => {
    const plan = resolveDrillOptions({});
    expect(plan.target).toEqual({ kind: 'demo', stack: 'prazo' });
    expect(plan.dependency).toBe('supplier');
    expect(plan.doubleLatencyMs).toBe(350);
    expect(plan.poolSize).toBe(15);
    expect(plan.routes).toEqual(['/checkout']);
    expect(plan.independent).toEqual(['/catalog']);
  });

  it('demo target, naive stack: the double holds every call for the naive timeout (30 s)', () => {
    const plan = resolveDrillOptions({ demoStack: 'naive' });
    expect(plan.doubleLatencyMs).toBe(30_000);
    expect(plan.connections).toBe(200); // capped: enough to fill any pool of the demo
  });

  it("--load multiplies the dependent routes' rate, not the independent ones'; a healthy phase of 3 s by default", () => {
    const plan = resolveDrillOptions({ load: 5 });
    expect(plan).toMatchObject({ baseRate: 20, load: 5, rate: 100, independentRate: 10, healthyS: 3 });
    expect(plan.maxP99Ms).toBeUndefined(); // the bound is relative to the healthy phase (issue 23)
    expect(plan.connections).toBe(58); // enough for 100 req/s each held 350 ms, × 1.5, + 5
    expect(resolveDrillOptions({})).toMatchObject({ load: 1, rate: 20 });
    expect(resolveDrillOptions({ rate: 30, load: 0.5, healthyS: 0 })).toMatchObject({
      rate: 15,
      healthyS: 0,
    });
    const bad = problemsOf(() => resolveDrillOptions({ load: 0, healthyS: -1 }));
    expect(bad).toContain('`load`');
    expect(bad).toContain('`healthyS`');
    expect(problemsOf(() => resolveDrillOptions({ load: 101 }))).toContain('`load`');
    expect(problemsOf(() => resolveDrillOptions({ rate: 5_000, load: 3 }))).toContain(
      '`rate` × `load` must be at most 10000 req/s, got 5000 × 3 = 15000',
    );
  });

  it('your service: the config names the dependency and its timeout', () => {
    const plan = resolveDrillOptions({
      configText: CONFIG,
      target: 'http://127.0.0.1:3000/',
      independent: ['/health'],
      routes: ['/pay'],
    });
    expect(plan.target).toEqual({ kind: 'url', origin: 'http://127.0.0.1:3000' });
    expect(plan).toMatchObject({ dependency: 'payments', doubleLatencyMs: 252, poolSize: 50 });
    expect(
      resolveDrillOptions({
        configText: CONFIG,
        target: 'http://localhost:1',
        independent: ['/h'],
        timeoutMs: 900,
      }).doubleLatencyMs,
    ).toBe(900);
  });

  it('every bad option is listed at once; a bad config with its line', () => {
    const all = problemsOf(() =>
      resolveDrillOptions({
        target: 'ftp://x',
        routes: ['nope'],
        durationS: 0,
        rate: -1,
        minSuccessPct: 101,
      }),
    );
    for (const word of [
      'http(s) URL',
      '`independent` routes are required',
      'routes[0]',
      'durationS',
      'rate',
      'minSuccessPct',
    ]) {
      expect(all).toContain(word);
    }
    expect(
      problemsOf(() => resolveDrillOptions({ configText: 'version: 1\ndependencies:\n  - name: x\n' })),
    ).toMatch(/:3:/);
    expect(problemsOf(() => resolveDrillOptions({ dependency: 'nope' }))).toContain('"nope" is not in');
    expect(
      problemsOf(() =>
        resolveDrillOptions({
          configText: CONFIG,
          target: 'http://127.0.0.1:1',
          independent: ['/h'],
          demoStack: 'naive',
        }),
      ),
    ).toContain('demo target only');
    expect(
      problemsOf(() =>
        resolveDrillOptions({ target: 'http://127.0.0.1:1', independent: ['/h'], cwd: '/nonexistent' }),
      ),
    ).toContain('no config');
  });
});
