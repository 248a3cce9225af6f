import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock/system.js';
import { DemoHeaders, PRAZO_STACK_DEFAULTS } from '../../src/demo/constants.js';
import type { RunningService } from '../../src/demo/process/child.js';
import { waterfallPanels } from '../../src/demo/report/waterfall.js';
import { type HopLatencies, hopSettings } from '../../src/demo/run/topology.js';
import { startRole } from '../../src/demo/services/roles.js';
import { startSupplier } from '../../src/demo/services/supplier.js';
import { naiveStack } from '../../src/demo/stacks/naive.js';
import { prazoStack } from '../../src/demo/stacks/prazo.js';
import type { Stack } from '../../src/demo/stacks/types.js';
import { chooseTrace, type TraceChoice } from '../../src/demo/trace/stitch.js';
import type { HopSettings, StackName, SupplierBehaviour } from '../../src/demo/types.js';
import { ROOT, waitFor } from './helpers.js';

/**
 * The report's trace waterfall (issue #26 item 2) from real spans: the demo's four services, their
 * real code (roles.ts, supplier.ts, the stacks), on loopback in this process, one checkout sent as
 * the demo's users send it; the spans each service kept are stitched by trace id, drawn, and the
 * drawing is opened in headless Chromium as the report's other charts are (test/demo/demo.test.ts).
 * - prazo, both supplier instances hung: the deadline runs out in inventory's call to the supplier
 *   (its attempt is patient: it holds a slot up to the deadline), whose hedge went to the other one;
 * - naive (2 attempts of 400 ms per hop), every supplier answer a 503: retries at each hop.
 */
const origin = (port: number): string => `http://127.0.0.1:${port}`;
const CALIBRATION: HopLatencies = {
  orders: { p99Ms: 700, p95Ms: 500, p50Ms: 90 },
  inventory: { p99Ms: 600, p95Ms: 450, p50Ms: 85 },
  supplier: { p99Ms: 250, p95Ms: 180, p50Ms: 80, hedgeMs: 120 },
};

async function chain(
  stack: StackName,
  impl: Stack,
  behaviour: SupplierBehaviour,
  hop: (next: 'orders' | 'inventory' | 'supplier') => HopSettings,
): Promise<RunningService[]> {
  const suppliers = await Promise.all(
    [0, 1].map((instance) =>
      startSupplier({ role: 'supplier', stack, instance, behaviour, seed: instance + 1 }, systemClock),
    ),
  );
  const P = PRAZO_STACK_DEFAULTS;
  const inner = stack === 'prazo' ? { deadline: { defaultMs: P.serviceMaxMs, maxMs: P.serviceMaxMs } } : {};
  const common = { stack, bucketMs: 250 };
  const inventory = await startRole(
    {
      role: 'inventory',
      ...common,
      ...inner,
      downstream: suppliers.map((s) => origin(s.port)),
      hop: hop('supplier'),
    },
    impl,
    systemClock,
  );
  const orders = await startRole(
    { role: 'orders', ...common, ...inner, downstream: [origin(inventory.port)], hop: hop('inventory') },
    impl,
    systemClock,
  );
  const gateway = await startRole(
    {
      role: 'gateway',
      ...common,
      ...(stack === 'prazo'
        ? { deadline: { defaultMs: P.gatewayDeadlineMs, maxMs: P.gatewayDeadlineMs } }
        : {}),
      downstream: [origin(orders.port)],
      hop: hop('orders'),
      poolConnections: 15,
    },
    impl,
    systemClock,
  );
  return [gateway, orders, inventory, ...suppliers];
}

/** One checkout as the demo's users send it (the give-up header), then every service's spans. */
async function checkout(services: RunningService[]): Promise<TraceChoice> {
  const giveUp = systemClock.epochNow() + 2_000;
  const res = await request(`${origin(services[0]!.port)}/checkout`, {
    headers: { [DemoHeaders.giveUp]: String(giveUp) },
    headersTimeout: 5_000,
  });
  await res.body.dump();
  expect(res.statusCode).toBeGreaterThanOrEqual(500);
  // The services' work ends a little after the answer (the supplier's hung request when it is cut).
  await waitFor(() => services.every((s) => s.report(false).ledger.inFlight === 0), 3_000);
  return chooseTrace(
    services === prazo ? 'prazo' : 'naive',
    services.flatMap((s) => s.traces?.() ?? []),
  );
}

let prazo: RunningService[] = [];
let naive: RunningService[] = [];
let choices: TraceChoice[] = [];

beforeAll(async () => {
  prazo = await chain('prazo', prazoStack, { kind: 'hang' }, (next) =>
    hopSettings('prazo', next, CALIBRATION),
  );
  naive = await chain('naive', naiveStack, { kind: 'fail', probability: 1 }, () => ({
    stack: 'naive',
    timeoutMs: 400,
    attempts: 2,
  }));
  choices = [await checkout(prazo), await checkout(naive)];
}, 30_000);

afterAll(async () => {
  await Promise.all([...prazo, ...naive].map((s) => s.close()));
});

describe('the trace waterfall from real spans (issue #26 item 2)', () => {
  it('stitches one checkout across the four hops, by trace id, from what each service kept', () => {
    const [p, n] = choices;
    expect(p!.waterfall?.hops).toEqual(['gateway', 'orders', 'inventory', 'supplier']);
    expect(n!.waterfall?.hops).toEqual(['gateway', 'orders', 'inventory', 'supplier']);
    const spans = p!.waterfall!.spans;
    // prazo: a call span per client hop, the hedge to the other instance, the deadline the gateway set.
    expect(spans.filter((s) => s.kind === 'call').map((s) => s.service)).toEqual([
      'gateway',
      'orders',
      'inventory',
    ]);
    const toSupplier = spans.filter((s) => s.kind === 'attempt' && s.name === 'supplier');
    expect(toSupplier.map((s) => s.attemptKind)).toEqual(['original', 'hedge']);
    expect(new Set(toSupplier.map((s) => s.instance)).size).toBe(2);
    expect(spans.filter((s) => s.kind === 'server' && s.service.startsWith('supplier')).length).toBe(2);
    expect(p!.waterfall!.deadlineMs).toBeGreaterThan(1_850);
    expect(p!.waterfall!.deadlineMs).toBeLessThan(1_950);
    const marked = spans.find((s) => s.spanId === p!.waterfall!.ranOut?.spanId);
    expect(p!.waterfall!.ranOut?.how).toBe('deadline');
    // The deadline ran out in inventory's call to the supplier (prazo's DEADLINE_EXCEEDED), deepest
    // of the calls that timed out; its two attempts were cancelled by it, the supplier never answered.
    expect(marked).toMatchObject({
      service: 'inventory',
      kind: 'call',
      name: 'supplier',
      outcome: 'timeout',
      error: 'DEADLINE_EXCEEDED',
    });
    expect(toSupplier.map((s) => [s.outcome, s.error])).toEqual([
      ['cancelled', undefined],
      ['cancelled', undefined],
    ]);
    // naive: no call span (no executor), two attempts per hop, the second a retry, every one failed.
    const attempts = n!.waterfall!.spans.filter((s) => s.kind === 'attempt');
    expect(n!.waterfall!.spans.filter((s) => s.kind === 'call')).toEqual([]);
    expect(attempts.filter((s) => s.service === 'gateway').map((s) => s.attemptKind)).toEqual([
      'original',
      'retry',
    ]);
    expect(attempts.filter((s) => s.name === 'supplier').length).toBe(8); // 2 × 2 × 2
    expect(attempts.every((s) => s.outcome !== 'ok')).toBe(true);
  });

  it('draws it in headless Chromium: four hops, bars ordered by start, the deadline line, titles', async () => {
    const dir = join(ROOT, '.tmp');
    mkdirSync(dir, { recursive: true });
    const file = join(dir, 'prazo-waterfall.test.html');
    const broken = [{ stack: 'cockatiel', waterfall: undefined, sampled: 0, failed: 0 }];
    writeFileSync(
      file,
      `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>waterfall</title>` +
        `<style>body{font:14px system-ui;margin:16px}svg.waterfall{max-width:100%;height:auto;font-size:11px;fill:#333}</style></head><body>` +
        `${waterfallPanels('hung', [...choices, ...broken], ['naive', 'prazo', 'cockatiel'])}</body></html>`,
    );
    const browser = await chromium.launch({
      executablePath: '/usr/bin/chromium',
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--no-first-run',
        '--disable-background-networking',
      ],
    });
    try {
      const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
      const problems: string[] = [];
      page.on('pageerror', (e) => problems.push(e.message));
      page.on('console', (m) => {
        if (m.type() === 'error') problems.push(m.text());
      });
      await page.goto(`file://${file}`);
      for (const stack of ['prazo', 'naive']) {
        const svg = page.getByRole('img', { name: `Trace of one checkout: ${stack}` });
        expect(await svg.count()).toBe(1);
        const rows = await svg.locator('g.span').evaluateAll((gs) =>
          gs.map((g) => {
            const bar = g.querySelector('rect.bar')!.getBoundingClientRect();
            return {
              service: g.getAttribute('data-service')!,
              start: Number(g.getAttribute('data-start')),
              x: bar.x,
              y: bar.y,
              width: bar.width,
              title: g.querySelector('title')?.textContent ?? '',
            };
          }),
        );
        const hops = new Set(rows.map((r) => r.service.split(' ')[0]));
        expect([...hops], stack).toEqual(['gateway', 'orders', 'inventory', 'supplier']);
        for (let i = 1; i < rows.length; i += 1) {
          expect(rows[i]!.start, `${stack} row ${i}`).toBeGreaterThanOrEqual(rows[i - 1]!.start);
          expect(rows[i]!.x + 0.5, `${stack} row ${i}`).toBeGreaterThanOrEqual(rows[i - 1]!.x);
          expect(rows[i]!.y, `${stack} row ${i}`).toBeGreaterThan(rows[i - 1]!.y);
        }
        for (const r of rows) {
          expect(r.width).toBeGreaterThan(0);
          expect(r.title).toMatch(/ · .* · [\d.]+ (ms|s)/); // service, operation, outcome, duration
        }
        // The time the user (naive) or the deadline (prazo) allowed, drawn across the rows.
        const line = svg.locator(stack === 'prazo' ? 'g.deadline line' : 'g.give-up line');
        expect(await line.count()).toBe(1);
        const box = (await line.boundingBox())!;
        expect(box.height).toBeGreaterThan(rows.length * 10);
        expect(await svg.locator('desc').textContent()).toContain('gateway → orders → inventory → supplier');
      }
      // prazo's marked span: the deadline ran out in inventory's attempt to the supplier.
      const marked = page.locator('svg[data-chart="waterfall-hung-prazo"] g.span.ran-out');
      expect(await marked.count()).toBe(1);
      expect(await marked.getAttribute('data-service')).toBe('inventory');
      expect(await marked.locator('text.ran-out-label').textContent()).toContain('the deadline ran out here');
      // A stack whose trace could not be stitched: the panel says so, the page still renders.
      expect(await page.locator('figure[data-stack="cockatiel"] p.no-trace').textContent()).toContain(
        'no trace captured',
      );
      await page.screenshot({ path: join(dir, 'prazo-waterfall.test.png'), fullPage: true });
      expect(problems).toEqual([]);
    } finally {
      await browser.close();
    }
  }, 30_000);
});
