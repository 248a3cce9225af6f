import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { renderHtml } from '../../src/demo/report/html.js';
import { renderTable } from '../../src/demo/report/table.js';
import { type DemoResult, metricsOf, runDemo } from '../../src/demo/run/demo.js';
import { demoServices, ensureBuilt, ROOT } from './helpers.js';

/**
 * A short run of the incident demo (SPEC X1) on real processes and sockets, checked against the
 * issue's inequalities, then its HTML report opened in a real headless Chromium. Three scenarios of
 * 2 s per stack: supplier down with connections refused (amplification), supplier down with
 * connections hanging (wasted work, the pool), and one instance of three answering 503 on half its
 * calls (the load per instance, as each instance's server counted it: SPEC X5). The numbers are
 * measured, never asserted tightly: each inequality has a wide margin on a shared 2-core machine.
 * The run is as short as those margins allow: prazo's costs (the failures it takes to learn the
 * supplier is down, the calls to the failing instance before it is ejected) are a fixed few, naive's
 * grow with the load, so the ratios shrink with it. At 1.5 s a loaded machine (load 12 on 2 cores)
 * made prazo's calls to the failing instance more than half of naive's once in six runs; at 2 s
 * naive's are 17, prazo's 2 to 4 (at 3 s, 25).
 */
let result: DemoResult;

beforeAll(async () => {
  ensureBuilt();
  result = await runDemo({
    scenarios: ['down', 'hung', 'instance-503'],
    loadMs: 2_000,
    drainMaxMs: 1_500,
    calibrationMs: 2_000,
  });
}, 120_000);

describe('prazo demo, short run (SPEC X1, R1, D2, D4, C6)', () => {
  it('supplier down: naive retries at every hop multiply the load, prazo stays within its budget (R1)', () => {
    const naive = metricsOf(result, 'down', 'naive')!;
    const prazo = metricsOf(result, 'down', 'prazo')!;
    expect(naive.checkout.requests).toBeGreaterThanOrEqual(33); // of the 40 sent: 20/s for 2 s
    expect(prazo.supplier.amplification!).toBeLessThanOrEqual(1.1);
    // It did call the supplier, but since issue 23 its throttle refuses most calls locally once the
    // supplier is seen failing (0.2× in one run): the probes it lets through never stop.
    expect(prazo.supplier.amplification!).toBeGreaterThan(0);
    expect(prazo.throttled.refused).toBeGreaterThan(0);
    expect(naive.supplier.amplification!).toBeGreaterThanOrEqual(3 * prazo.supplier.amplification!);
  });

  it('supplier hung: prazo wastes a small fraction of the work naive does after the user gave up (D2, D4)', () => {
    const naive = metricsOf(result, 'hung', 'naive')!;
    const prazo = metricsOf(result, 'hung', 'prazo')!;
    expect(naive.wasted.ms).toBeGreaterThan(10_000);
    expect(prazo.wasted.ms).toBeLessThanOrEqual(0.1 * naive.wasted.ms);
    expect(prazo.checkout.p99Ms!).toBeLessThan(result.settings.userDeadlineMs); // it failed fast
  });

  it('the independent route keeps answering under prazo, not under naive with a hung supplier (C6)', () => {
    for (const scenario of ['down', 'hung']) {
      expect(metricsOf(result, scenario, 'prazo')!.catalog.successPct).toBeGreaterThanOrEqual(99.9);
    }
    const naive = metricsOf(result, 'hung', 'naive')!;
    expect(naive.pool.maxBusy).toBe(naive.pool.connections);
    expect(naive.catalog.successPct!).toBeLessThan(90);
  });

  it('prints a table and JSON with the measured numbers', () => {
    const table = renderTable(result);
    expect(table).toContain('Supplier down (refused)');
    expect(table).toContain('Supplier down (hanging)');
    expect(table).toMatch(/prazo calibration \(healthy p99 → timeout\): orders p99 \d+ → \d+ ms/);
    const json = JSON.parse(JSON.stringify(result)) as DemoResult;
    expect(json.scenarios.map((s) => s.name)).toEqual(['down', 'hung', 'instance-503']);
    expect(table).toMatch(/requests each supplier instance received \(#1 answers 503 on half of its calls/);
    expect(json.calibration?.supplier.responseMs).toBe(Math.ceil(json.calibration!.supplier.p99Ms * 1.4));
    // The hops above the hedged supplier wait for its hedge (sent at the p97.5, answering by the p99).
    const c = json.calibration!;
    expect(c.inventory.responseMs).toBeGreaterThanOrEqual(c.supplier.hedgeMs + c.supplier.measuredP99Ms);
    expect(c.orders.responseMs).toBeGreaterThanOrEqual(c.inventory.responseMs);
    expect(table).toContain(
      `wait for the supplier's hedge: ${c.supplier.hedgeMs} + ${c.supplier.measuredP99Ms} ms`,
    );
  });

  it('leaves no service process behind', () => {
    expect(demoServices(process.pid)).toEqual([]);
  });

  it('writes a self-contained HTML report whose charts render in headless Chromium', async () => {
    const dir = join(ROOT, '.tmp');
    mkdirSync(dir, { recursive: true });
    const file = join(dir, 'prazo-report.test.html');
    writeFileSync(file, renderHtml(result));
    const browser = await chromium.launch({
      executablePath: '/usr/bin/chromium',
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
    try {
      const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
      const problems: string[] = [];
      page.on('console', (m) => {
        if (m.type() === 'error') problems.push(`console: ${m.text()}`);
      });
      page.on('pageerror', (e) => problems.push(`page: ${e.message}`));
      page.on('request', (r) => {
        if (!r.url().startsWith('file:') && !r.url().startsWith('data:')) problems.push(`fetched ${r.url()}`);
      });
      await page.goto(`file://${file}`);
      const charts = await page.$$eval('svg.chart', (svgs) =>
        svgs.map((svg) => {
          const box = svg.getBoundingClientRect();
          type Path = { getAttribute(name: string): string | null; getTotalLength(): number };
          const series = [...svg.querySelectorAll('path.series')] as unknown as Path[];
          return {
            id: svg.getAttribute('data-chart'),
            width: box.width,
            height: box.height,
            series: series.map((p) => ({ name: p.getAttribute('data-series'), length: p.getTotalLength() })),
          };
        }),
      );
      // Five per scenario (the throttle's beside the supplier's load: prazo throttles), and the load
      // per instance for the instance incident.
      expect(charts).toHaveLength(5 * result.scenarios.length + 1);
      for (const chart of charts) {
        expect(chart.width, chart.id ?? '').toBeGreaterThan(100);
        expect(chart.height, chart.id ?? '').toBeGreaterThan(100);
        expect(chart.series.length, chart.id ?? '').toBeGreaterThanOrEqual(2);
        for (const s of chart.series) expect(s.length, `${chart.id} ${s.name}`).toBeGreaterThan(0);
      }
      expect(await page.locator('ul.verdicts li').count()).toBeGreaterThanOrEqual(2);
      // The load per instance (SPEC X5): only for the instance incident, one line per stack and
      // instance, named for assistive technology; the failing instance's prazo line well under naive's.
      expect(charts.filter((c) => c.id?.startsWith('instances-')).map((c) => c.id)).toEqual([
        'instances-instance-503',
      ]);
      const chart = page.getByRole('img', { name: 'Load per supplier instance over time' });
      expect(await chart.count()).toBe(1);
      const lines = await chart.locator('path.series').evaluateAll((paths) =>
        paths.map((p) => ({
          stack: p.getAttribute('data-stack'),
          instance: p.getAttribute('data-instance'),
          values: (p.getAttribute('data-values') ?? '').split(' ').map(Number) as number[],
        })),
      );
      const instances = result.settings.supplierInstances;
      expect(lines).toHaveLength(2 * instances);
      const mean = (stack: string, instance: number): number => {
        const line = lines.find((l) => l.stack === stack && l.instance === String(instance))!;
        return line.values.reduce((a: number, b: number) => a + b, 0) / line.values.length;
      };
      for (const line of lines) {
        expect(line.values.length, `${line.stack} #${line.instance}`).toBeGreaterThan(4);
        expect(line.values.every((v) => Number.isFinite(v) && v >= 0)).toBe(true);
      }
      // The lines are the servers' own counts: each adds up to what its instance received.
      const step = result.settings.bucketMs / 1000;
      for (const stack of ['naive', 'prazo'] as const) {
        const m = metricsOf(result, 'instance-503', stack)!;
        for (let i = 1; i <= instances; i += 1) {
          const line = lines.find((l) => l.stack === stack && l.instance === String(i))!;
          const total = line.values.reduce((a: number, b: number) => a + b, 0) * step;
          expect(Math.round(total), `${stack} #${i}`).toBe(m.supplier.perInstance[i - 1]);
        }
      }
      const prazo = metricsOf(result, 'instance-503', 'prazo')!;
      const naive = metricsOf(result, 'instance-503', 'naive')!;
      expect(mean('prazo', 1)).toBeLessThan(0.5 * mean('naive', 1));
      expect(prazo.supplier.perInstance[0]!).toBeLessThan(0.5 * naive.supplier.perInstance[0]!);

      // The throttle (issue 23): prazo's refused share and the load it let reach the supplier, per
      // bucket, in % of checkouts; with the supplier refusing connections it refuses most calls.
      expect(charts.filter((c) => c.id?.startsWith('throttle-')).map((c) => c.id)).toEqual(
        result.scenarios.map((sc) => `throttle-${sc.name}`),
      );
      const throttle = page.locator('svg[data-chart="throttle-down"]');
      expect(await throttle.getAttribute('aria-label')).toBe(
        'Throttle: calls refused and load reaching the supplier, % of checkouts',
      );
      const shares = await throttle.locator('path.series').evaluateAll((paths) =>
        paths.map((p) => ({
          stack: p.getAttribute('data-stack'),
          kind: p.getAttribute('data-kind'),
          values: (p.getAttribute('data-values') ?? '').split(' ').map(Number) as number[],
        })),
      );
      expect(shares.map((l) => `${l.stack} ${l.kind}`)).toEqual(['prazo refused', 'prazo supplier']);
      for (const line of shares) {
        expect(line.values.length).toBeGreaterThan(4);
        expect(line.values.every((v) => Number.isFinite(v) && v >= 0)).toBe(true);
      }
      const down = metricsOf(result, 'down', 'prazo')!;
      expect(down.throttled.refused).toBeGreaterThan(0);
      expect(Math.max(...shares[0]!.values)).toBeGreaterThan(50);
      // Beside the supplier's load: the figure right after it in the page.
      const order = charts.map((c) => c.id);
      expect(order.indexOf('throttle-down')).toBe(order.indexOf('supplier-load-down') + 1);
      const box = async (id: string) => (await page.locator(`svg[data-chart="${id}"]`).boundingBox())!;
      const [beside, load] = [await box('throttle-down'), await box('supplier-load-down')];
      expect(beside.x).toBeGreaterThan(load.x + load.width / 2); // the next column of the same row
      expect(Math.abs(beside.y - load.y)).toBeLessThan(40); // (a caption may wrap)

      // The trace waterfall (issue #26 item 2): per scenario, one checkout per stack from the spans the
      // services kept, rows in the order they started, the gateway's server span first; the user's
      // give-up drawn across it, and prazo's deadline (test/demo/waterfall.test.ts checks the hops).
      for (const sc of result.scenarios) {
        for (const stack of result.settings.stacks) {
          const svg = page.locator(`svg[data-chart="waterfall-${sc.name}-${stack}"]`);
          expect(await svg.count(), `${sc.name} ${stack}`).toBe(1);
          const rows = await svg.locator('g.span').evaluateAll((gs) =>
            gs.map((g) => ({
              service: g.getAttribute('data-service'),
              start: Number(g.getAttribute('data-start')),
            })),
          );
          expect(rows[0]?.service, `${sc.name} ${stack}`).toBe('gateway');
          for (let i = 1; i < rows.length; i += 1)
            expect(rows[i]!.start).toBeGreaterThanOrEqual(rows[i - 1]!.start);
          expect(await svg.locator('g.give-up').count(), `${sc.name} ${stack}`).toBe(1);
          expect(await svg.locator('g.deadline').count(), `${sc.name} ${stack}`).toBe(
            stack === 'prazo' ? 1 : 0,
          );
        }
      }

      await page.screenshot({ path: join(dir, 'prazo-report.test.png'), fullPage: true });
      expect(problems).toEqual([]);
    } finally {
      await browser.close();
    }
  }, 30_000);
});
