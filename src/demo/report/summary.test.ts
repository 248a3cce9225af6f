import { describe, expect, it } from 'vitest';
import type { DemoResult } from '../run/demo.js';
import type { StackRaw } from '../run/scenario.js';
import { SCENARIOS } from '../scenarios.js';
import type { ServiceReport, StackName, UserResult } from '../types.js';
import { renderHtml } from './html.js';
import { isInstanceIncident, recoveryOf, type ScenarioSummary, summarizeScenario } from './summary.js';
import { renderTable } from './table.js';
import { verdicts } from './verdicts.js';

const T0 = 1_000_000;
const ledger = (wastedMs = 0, stillRunning = 0) => ({
  requests: 10,
  inFlight: stillRunning,
  wastedMs,
  wastedRequests: wastedMs > 0 ? 1 : 0,
  stillRunning,
});

function users(
  n: number,
  route: UserResult['route'],
  outcome: UserResult['outcome'],
  latencyMs: number,
): UserResult[] {
  return Array.from({ length: n }, (_, i) => ({
    route,
    sentMs: i * 50,
    latencyMs,
    outcome,
    status: outcome === 'ok' ? 200 : 0,
  }));
}

function stack(
  stack: StackName,
  o: { sent: number; wasted: number; catalogOk: number; busy: number },
): StackRaw {
  const services: ServiceReport[] = [
    { role: 'supplier', stack, instance: 0, ledger: ledger(o.wasted / 2), arrivals: {} },
    {
      role: 'inventory',
      stack,
      ledger: ledger(o.wasted / 2),
      arrivals: {},
      sent: { total: o.sent, perBucket: { [String(T0 / 250)]: o.sent } },
    },
    {
      role: 'gateway',
      stack,
      ledger: ledger(),
      arrivals: {},
      pool: {
        connections: 15,
        samples: [0, 1, 2].map((i) => ({ epochMs: T0 + i * 100, running: o.busy, queued: 0 })),
      },
    },
  ];
  return {
    stack,
    resetEpochMs: T0 - 20,
    startEpochMs: T0,
    endEpochMs: T0 + 1_000,
    drainedMs: 0,
    cutOff: false,
    users: [
      ...users(18, 'checkout', 'ok', 100),
      ...users(2, 'checkout', 'timeout', 2_000),
      ...users(o.catalogOk, 'catalog', 'ok', 5),
      ...users(10 - o.catalogOk, 'catalog', 'timeout', 2_000),
    ],
    services,
  };
}

/** A run of one scenario, as the renderers read it (settings: only what they use). */
const demoResult = (summary: ScenarioSummary, settings: object): DemoResult =>
  ({
    version: 1,
    settings,
    calibration: undefined,
    scenarios: [summary],
    startedAtEpochMs: 0,
    durationMs: 1,
  }) as unknown as DemoResult;

const down = SCENARIOS.find((s) => s.name === 'down')!;
const raw = {
  scenario: down,
  stacks: [
    stack('naive', { sent: 540, wasted: 9_000, catalogOk: 3, busy: 15 }),
    stack('prazo', { sent: 22, wasted: 0, catalogOk: 10, busy: 2 }),
  ],
};

describe('demo summary and verdicts (SPEC X1)', () => {
  const summary = summarizeScenario(raw, 250, 1_000);
  const naive = summary.stacks[0]!;
  const prazo = summary.stacks[1]!;

  it('computes amplification, wasted work, answers within the deadline, the independent route and the pool', () => {
    expect(naive.supplier).toEqual({ load: 540, arrivals: 10, amplification: 27, perInstance: [10] });
    expect(prazo.supplier.amplification).toBe(1.1);
    expect(naive.wasted).toMatchObject({
      ms: 9_000,
      byRole: { supplier: 4_500, inventory: 4_500, orders: 0, gateway: 0 },
    });
    expect(naive.checkout).toMatchObject({
      requests: 20,
      ok: 18,
      timeouts: 2,
      withinDeadlinePct: 90,
      p50Ms: 100,
      p99Ms: 2_000,
    });
    expect(naive.catalog).toMatchObject({ requests: 10, ok: 3, successPct: 30 });
    expect(prazo.catalog.successPct).toBe(100);
    expect(naive.pool).toEqual({
      connections: 15,
      maxBusy: 15,
      meanBusy: 15,
      maxQueued: 0,
      saturatedPct: 100,
    });
    expect(summary.series.stacks[0]!.supplier[0]).toBe(2_160); // 540 in one 250 ms bucket
    expect(summary.series.stacks[0]!.checkoutHistogram.reduce((a, b) => a + b, 0)).toBe(20);
  });

  it("issue 23: the failed checkouts' median alone, and the throttle's refused share beside the supplier load per bucket", () => {
    // 18 ok at 100 ms and 2 timeouts at 2 s: the p50 of all is 100 ms, of the failed ones 2 s.
    expect(naive.checkout).toMatchObject({ p50Ms: 100, failedP50Ms: 2_000 });
    const B = T0 / 250;
    const throttled = (name: StackName): StackRaw => {
      const base = stack(name, { sent: 6, wasted: 0, catalogOk: 10, busy: 2 });
      return {
        ...base,
        users: base.users
          .filter((u) => u.route === 'catalog')
          .concat(
            // 5 checkouts per 250 ms bucket for 1 s, all ok but the 4 of bucket 2, refused fast
            Array.from({ length: 20 }, (_, i) => ({
              route: 'checkout' as const,
              sentMs: i * 50,
              latencyMs: i >= 10 && i < 14 ? 3 : 90,
              outcome: i >= 10 && i < 14 ? ('error' as const) : ('ok' as const),
              status: i >= 10 && i < 14 ? 503 : 200,
            })),
          ),
        services: base.services.map((s) =>
          s.role === 'inventory'
            ? {
                ...s,
                // the checkouts as they reached inventory: 5 per bucket, the third bucket's late
                arrivals: { [B]: 5, [B + 1]: 5, [B + 2]: 4, [B + 3]: 6 },
                sent: { total: 16, perBucket: { [B]: 5, [B + 1]: 5, [B + 2]: 0, [B + 3]: 6 } },
                ...(name === 'prazo' ? { throttled: { total: 4, perBucket: { [B + 2]: 4 } } } : {}),
              }
            : s,
        ),
      };
    };
    const s = summarizeScenario(
      { scenario: down, stacks: [throttled('naive'), throttled('prazo')] },
      250,
      1_000,
    );
    const [n, p] = s.stacks;
    expect(p!.checkout.failedP50Ms).toBe(3);
    expect(p!.throttled).toEqual({ refused: 4, sharePct: 20 });
    expect(s.series.stacks[0]!.throttle).toBeUndefined(); // naive does not throttle
    expect(s.series.stacks[1]!.throttle).toEqual({
      refusedPct: [0, 0, 100, 0, 0], // of the checkouts that reached inventory in the bucket
      supplierPct: [100, 100, 0, 100, 0], // the last bucket: no checkout, 0
    });
    const html = renderHtml(
      demoResult(s, { stacks: ['naive', 'prazo'], userDeadlineMs: 2_000, poolConnections: 15 }),
    );
    expect(html.match(/<svg class="chart"/g)).toHaveLength(5);
    const chart = html.slice(html.indexOf('data-chart="throttle-down"'));
    expect(chart).toMatch(
      /data-series="prazo · refused" data-stack="prazo" data-kind="refused" data-values="0 0 100 0 0"/,
    );
    expect(chart).toMatch(/data-series="prazo · to the supplier"[^>]*data-values="100 100 0 100 0"/);
    expect(chart).not.toContain('naive ·');
    // Beside the load reaching the supplier: the next chart after it.
    expect(html.indexOf('data-chart="throttle-down"')).toBeGreaterThan(
      html.indexOf('data-chart="supplier-load-down"'),
    );
    expect(html.indexOf('data-chart="throttle-down"')).toBeLessThan(html.indexOf('data-chart="pool-down"'));
    expect(html).toContain('prazo: 4 call(s) refused (20.0% of checkouts)');
    const table = renderTable(
      demoResult(s, { stacks: ['naive', 'prazo'], userDeadlineMs: 2_000, poolConnections: 15 }),
    );
    expect(table).toContain('failed checkouts, p50: naive 3 ms, prazo 3 ms');
    expect(table).toContain('refused by the throttle (locally, nothing sent): prazo 4 = 20.0% of checkouts');
    expect(n!.throttled.refused).toBe(0);
    // `recover`: how soon checkouts flowed again, in the table and the HTML (here: not within the load).
    const recover = SCENARIOS.find((x) => x.name === 'recover')!;
    const back = summarizeScenario({ scenario: recover, stacks: [throttled('prazo')] }, 250, 1_000);
    const settings = { stacks: ['prazo'], userDeadlineMs: 2_000, poolConnections: 15 };
    expect(renderTable(demoResult(back, settings))).toContain(
      "checkouts ≥ 99% within the deadline again, after the supplier's return at 4.0 s: prazo not before the load ended",
    );
    expect(renderHtml(demoResult(back, settings))).toContain('<th>recovery</th>');
  });

  it('says which of the seed’s claims held, and which did not', () => {
    const result = demoResult(summary, {});
    const said = verdicts(result);
    expect(said.find((v) => v.id === 'amplification')).toMatchObject({ holds: true });
    expect(said.find((v) => v.id === 'wasted-work')).toMatchObject({ holds: true });
    expect(said.find((v) => v.id === 'independent-route')).toMatchObject({ holds: true });
    const worse = summarizeScenario(
      {
        scenario: down,
        stacks: [raw.stacks[0]!, stack('prazo', { sent: 40, wasted: 5_000, catalogOk: 9, busy: 15 })],
      },
      250,
      1_000,
    );
    const bad = verdicts({ ...result, scenarios: [worse] });
    expect(bad.every((v) => !v.holds)).toBe(true);
  });

  it('renders the table and a self-contained HTML page', () => {
    const settings = {
      stacks: ['naive', 'prazo'],
      scenarios: ['down'],
      loadMs: 1_000,
      drainMaxMs: 0,
      checkoutRate: 20,
      catalogRate: 10,
      poolConnections: 15,
      supplierInstances: 3,
      userDeadlineMs: 2_000,
      calibrationMs: 500,
      seed: 1,
      bucketMs: 250,
    };
    const result = demoResult(summary, settings);
    const table = renderTable(result);
    expect(table).toContain('Supplier down (refused)');
    expect(table).toMatch(/naive\s+27\.00×\s+9\.0 s/);
    expect(table).toContain("Little's law: 500 ms");
    const html = renderHtml(result);
    expect(html.match(/<svg class="chart"/g)).toHaveLength(4);
    expect(html).not.toMatch(/<script|https?:\/\//);
  });

  it('the load per instance, as each instance counted it: a chart and table lines for an instance incident (SPEC X5)', () => {
    const failing = SCENARIOS.find((s) => s.name === 'instance-503')!;
    const B = T0 / 250; // the first 250 ms bucket
    const withInstances = (name: StackName, received: readonly (readonly number[])[]): StackRaw => {
      const base = stack(name, { sent: 60, wasted: 0, catalogOk: 10, busy: 2 });
      const suppliers: ServiceReport[] = received.map((perBucket, instance) => ({
        role: 'supplier',
        stack: name,
        instance,
        ledger: { ...ledger(), requests: perBucket.reduce((a, b) => a + b, 0) },
        arrivals: Object.fromEntries(perBucket.map((n, i) => [String(B + i), n])),
      }));
      // Reported out of order: the series are by instance all the same.
      return {
        ...base,
        services: [...base.services.filter((s) => s.role !== 'supplier'), ...suppliers.reverse()],
      };
    };
    const summary = summarizeScenario(
      {
        scenario: failing,
        stacks: [
          withInstances('naive', [
            [5, 5, 5, 5],
            [4, 4, 4, 4],
            [4, 4, 4, 4],
          ]),
          withInstances('prazo', [
            [3, 1, 0, 0],
            [6, 7, 7, 7],
            [6, 7, 7, 7],
          ]),
        ],
      },
      250,
      1_000,
    );
    expect(summary.instances).toEqual(['answers 503 on half of its calls', 'healthy', 'healthy']);
    expect(isInstanceIncident(summary)).toBe(true);
    expect(isInstanceIncident(summarizeScenario(raw, 250, 1_000))).toBe(false);
    expect(summary.stacks.map((m) => m.supplier.perInstance)).toEqual([
      [20, 16, 16],
      [4, 27, 27],
    ]);
    // 5 in a 250 ms bucket is 20 requests per second.
    expect(summary.series.stacks[0]!.instances[0]).toEqual({ instance: 0, perSecond: [20, 20, 20, 20, 0] });
    expect(summary.series.stacks[1]!.instances[0]).toEqual({ instance: 0, perSecond: [12, 4, 0, 0, 0] });
    const result = demoResult(summary, {
      stacks: ['naive', 'prazo'],
      supplierInstances: 3,
      userDeadlineMs: 2_000,
      poolConnections: 15,
    });
    const table = renderTable(result);
    expect(table).toContain(
      'requests each supplier instance received (#1 answers 503 on half of its calls, #2 healthy, #3 healthy):',
    );
    expect(table).toMatch(/naive\s+#1 20 {2}#2 16 {2}#3 16/);
    expect(table).toMatch(/prazo\s+#1 4 {2}#2 27 {2}#3 27/);
    const html = renderHtml(result);
    expect(html.match(/<svg class="chart"/g)).toHaveLength(5);
    const chart = html.slice(html.indexOf('data-chart="instances-instance-503"'));
    const paths = [
      ...chart.matchAll(
        /<path class="series" data-series="([^"]+)" data-stack="(\w+)" data-instance="(\d)" data-values="([^"]*)"/g,
      ),
    ];
    expect(paths.map((p) => p[1])).toEqual([
      'naive · #1',
      'naive · #2',
      'naive · #3',
      'prazo · #1',
      'prazo · #2',
      'prazo · #3',
    ]);
    expect(paths[3]![4]).toBe('12 4 0 0 0');
    expect(chart).toContain('<title>Load per supplier instance over time</title>');
    expect(chart).toContain('<desc>Requests per second each supplier instance&#39;s own server received');
    expect(chart).toContain('prazo: #1 received 4, #2 received 27, #3 received 27');
  });
});

describe('recoveryOf (issue 23: `recover`)', () => {
  const T = 1_000_000;
  const checkouts = (from: number, to: number, ok: (ms: number) => boolean): UserResult[] =>
    Array.from({ length: (to - from) / 50 }, (_, i) => {
      const sentMs = from + i * 50;
      return {
        route: 'checkout' as const,
        sentMs,
        latencyMs: 10,
        outcome: ok(sentMs) ? ('ok' as const) : ('error' as const),
        status: 0,
      };
    });
  it('is the time from the return to the first 1 s window with ≥ 99% answered, and the load over it', () => {
    // Down until 4 s (the reset 20 ms before the load), every call failing until 5.5 s, then all ok.
    const users = checkouts(0, 10_000, (ms) => ms >= 5_500);
    const inventory = {
      role: 'inventory' as const,
      stack: 'prazo' as const,
      ledger: { requests: 0, inFlight: 0, wastedMs: 0, wastedRequests: 0, stillRunning: 0 },
      arrivals: {},
      sent: { total: 40, perBucket: { [String(Math.floor((T + 4_500) / 250))]: 40 } },
    };
    const r = recoveryOf(
      { resetEpochMs: T - 20, startEpochMs: T, users, services: [inventory] },
      4_000,
      10_000,
      250,
    );
    expect(r.returnMs).toBe(3_980);
    expect(r.recoveryMs).toBe(1_500); // windows slide by 100 ms from the return: [5.48 s, 6.48 s) is all ok
    expect(r.load).toBeCloseTo(40 / 50, 5); // 40 sent for the 50 checkouts of [3.98 s, 6.48 s)
    const never = recoveryOf(
      { resetEpochMs: T, startEpochMs: T, users: checkouts(0, 10_000, () => false), services: [] },
      4_000,
      10_000,
      250,
    );
    expect(never.recoveryMs).toBeUndefined();
  });
});
