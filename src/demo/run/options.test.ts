import { describe, expect, it } from 'vitest';
import { isInvalidOptions } from '../../errors/guards.js';
import { resolveDemoOptions } from './options.js';

describe('runDemo options', () => {
  it('defaults: naive vs prazo, every scenario, the seed-sized numbers', () => {
    const s = resolveDemoOptions({});
    expect(s.stacks).toEqual(['naive', 'prazo']);
    expect(s.scenarios.map((x) => x.name)).toEqual([
      'healthy',
      'slow',
      'down',
      'hung',
      'tail',
      'instance-down',
      'instance-503',
    ]);
    expect(s).toMatchObject({
      userDeadlineMs: 2_000,
      checkoutRate: 20,
      catalogRate: 10,
      poolConnections: 15,
    });
    // Little's law of the defaults: 15 connections at 30 req/s tolerate the seed's 500 ms.
    expect((1000 * s.poolConnections) / (s.checkoutRate + s.catalogRate)).toBe(500);
  });

  it('the 5× scenarios load long enough for a catalog p99 that one stall does not set (issue 23)', () => {
    // At 10 catalog requests a second, 3 s gave 30 requests: their p99 was their slowest.
    const s = resolveDemoOptions({
      scenarios: ['overload-healthy', 'overload-hung', 'overload-down', 'overload-slow'],
    });
    for (const scenario of s.scenarios) {
      expect((scenario.loadMs! * s.catalogRate) / 1000, scenario.name).toBeGreaterThanOrEqual(100);
    }
    // The default run keeps its length.
    expect(resolveDemoOptions({}).scenarios.map((x) => x.loadMs)).toEqual([
      10_000, 3_000, 3_000, 3_000, 10_000, 3_000, 6_000,
    ]);
  });

  it('reports every bad option at once', () => {
    let error: unknown;
    try {
      resolveDemoOptions({
        stacks: ['naive', 'magic' as 'naive'],
        scenarios: ['down', 'meteor'],
        loadMs: -1,
        poolConnections: 1.5,
        checkoutRate: Number.NaN,
      });
    } catch (e) {
      error = e;
    }
    expect(isInvalidOptions(error)).toBe(true);
    const problems = (error as { problems: string[] }).problems.join('\n');
    for (const word of ['magic', 'meteor', 'loadMs', 'poolConnections', 'checkoutRate'])
      expect(problems).toContain(word);
  });
});
