import { describe, expect, it } from 'vitest';
import type { DemoResult } from '../run/demo.js';
import type { StackRaw } from '../run/scenario.js';
import { SCENARIOS } from '../scenarios.js';
import type { ServiceReport, StackName, UserResult } from '../types.js';
import { renderHtml } from './html.js';
import { summarizeScenario } from './summary.js';
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
    expect(naive.supplier).toEqual({ load: 540, arrivals: 10, amplification: 27 });
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

  it('says which of the seed’s claims held, and which did not', () => {
    const result = {
      version: 1,
      settings: {},
      calibration: undefined,
      scenarios: [summary],
      startedAtEpochMs: 0,
      durationMs: 1,
    } as unknown as DemoResult;
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
    const result = {
      version: 1,
      settings,
      calibration: undefined,
      scenarios: [summary],
      startedAtEpochMs: 0,
      durationMs: 1,
    } as unknown as DemoResult;
    const table = renderTable(result);
    expect(table).toContain('Supplier down (refused)');
    expect(table).toMatch(/naive\s+27\.00×\s+9\.0 s/);
    expect(table).toContain("Little's law: 500 ms");
    const html = renderHtml(result);
    expect(html.match(/<svg class="chart"/g)).toHaveLength(4);
    expect(html).not.toMatch(/<script|https?:\/\//);
  });
});
