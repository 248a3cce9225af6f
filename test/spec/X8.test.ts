import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { slackedTimeoutMs } from '../../src/calibrate/timeout.js';
import { runCli } from '../../src/cli/cli.test-helpers.js';
import { sleep } from '../../src/clock/clock.js';
import { systemClock } from '../../src/clock/system.js';
import type { DependencyEvent } from '../../src/dependency/types.js';
import { createHttpClient } from '../../src/http/index.js';
import { instrumentPrazo } from '../../src/otel/index.js';
import { startExporter, startHttp } from '../otel/loopback.js';
import { hasPrometheus, type PrometheusServer, startPrometheus } from '../otel/prometheus.js';

/**
 * SPEC X8 (#16, what must be shown), end to end with the real things: a prazo-instrumented service on
 * loopback (prazo's HTTP client → instrumentPrazo → the OpenTelemetry SDK's Prometheus exporter), a
 * real Prometheus (Debian's) scraping it every 100 ms, healthy traffic and then a degraded stretch
 * (40% 503s, 150–300 ms). `prazo calibrate --prometheus` reads the fleet's histogram back through the
 * HTTP API, refuses the degraded sub-windows, recommends ceil(p99 × 1.4) of the healthy ones within
 * the bucket resolution (the true p99 of the healthy calls lies in the bucket the estimate was
 * interpolated in, and each sub-window's p99 equals Prometheus' own `histogram_quantile`), and
 * `--write` changes only the number in a commented config.
 */

// 1 s sub-windows at 240 calls/s: as many calls a sub-window (~240, minSamples 100) and as many
// sub-windows (4 healthy, 2 degraded) as 4 s ones at 60/s, in a quarter of the time. Scraped every
// 100 ms: the calls between a sub-window's start and its first scrape, or its last scrape and its
// end, which Prometheus counts in no sub-window, are a tenth of them (a quarter at 4 s scraped every
// second); a stalled machine delays the ~11 calls in flight at once, and those must not fall there
// unseen by Prometheus in numbers that move the true p99 out of the estimate's bucket.
const STEP_S = 1;
const SCRAPE_MS = 100;
const HEALTHY_MS = 4 * STEP_S * 1000;
const DEGRADED_MS = 2 * STEP_S * 1000;
const RATE_PER_S = 240;

const CONFIG = `# prazo.config.yaml — the shop's dependencies (reviewed in pull requests)
version: 1

calibration:
  maxErrorRate: 0.02 # a window with more errors has degradation built in (SPEC C4)
  minSamples: 100

dependencies:
  # orders → inventory: reads, one attempt in this test
  - name: inventory
    p99Ms: 120 # measured last quarter: stale
    attempts: 1
    defaultDeadlineMs: 2000
    histogram:
      prometheus: {} # prazo's own attempt-duration histogram, by prazo_dependency

  # not measured by the fleet: untouched by --write
  - name: ledger
    p99Ms: 300
`;

let prometheus: PrometheusServer | undefined;
const cleanups: (() => unknown)[] = [];
/** Epoch ms of the calls' starts, and whether each was in the degraded stretch. */
let healthyFrom = 0;
let degradedFrom = 0;
let trafficEnd = 0;
/** Latencies (ms) of the healthy stretch's successful attempts, as the client measured them. */
const healthyLatencies: { at: number; ms: number }[] = [];

beforeAll(async () => {
  if (!hasPrometheus) return;
  let degraded = false;
  const service = await startHttp((_req, res) => {
    const bad = degraded && Math.random() < 0.4;
    const delay = degraded ? 150 + Math.random() * 150 : 30 + Math.random() * 30;
    setTimeout(() => {
      res.statusCode = bad ? 503 : 200;
      res.end(bad ? 'overloaded' : 'ok');
    }, delay);
  });
  cleanups.push(() => service.close());
  const { exporter, url } = await startExporter();
  const provider = new MeterProvider({ readers: [exporter] });
  cleanups.push(() => provider.shutdown());
  const client = createHttpClient({ name: 'inventory', origin: service.origin, p99Ms: 400, attempts: 1 });
  cleanups.push(() => client.destroy());
  const otel = instrumentPrazo({ meterProvider: provider, dependencies: [client.dependency] });
  cleanups.push(() => otel.dispose());
  client.on((e: DependencyEvent) => {
    if (e.type === 'attempt-end' && e.outcome === 'success' && !degraded)
      healthyLatencies.push({ at: systemClock.epochNow(), ms: e.latencyMs });
  });
  prometheus = await startPrometheus([new URL(url).host], 'groups: []\n', SCRAPE_MS);
  cleanups.push(() => prometheus?.close());

  const calls: Promise<unknown>[] = [];
  // On schedule: the calls due by now are sent, so a late timer (a loaded machine) costs no calls.
  const runWhile = async (more: () => boolean) => {
    const start = systemClock.now();
    for (let sent = 0; more(); await sleep(systemClock, 1000 / RATE_PER_S)) {
      const due = Math.floor(((systemClock.now() - start) * RATE_PER_S) / 1000) + 1;
      for (; sent < due; sent += 1) {
        calls.push(
          client.request('/stock').then(
            (r) => r.body.dump(),
            () => undefined,
          ),
        );
      }
    }
  };
  const run = (ms: number) => {
    const until = systemClock.now() + ms;
    return runWhile(() => systemClock.now() < until);
  };
  // Prometheus scrapes a target first ~5 s after it says it is ready (its target discovery's first
  // update): calls before that are in no sub-window. The traffic starts at once, healthy, and the
  // healthy stretch is counted from the first scrape on, so that each of its sub-windows has its calls.
  let scraped = false;
  const firstScrape = (async () => {
    for (const until = systemClock.now() + 30_000; systemClock.now() < until; ) {
      if ((await prometheus!.query('up{job="orders"} == 1')).length > 0) return;
      await sleep(systemClock, 100);
    }
    throw new Error('Prometheus did not scrape the exporter within 30 s');
  })().finally(() => {
    scraped = true;
  });
  await runWhile(() => !scraped);
  await firstScrape;
  healthyFrom = systemClock.epochNow();
  await run(HEALTHY_MS);
  // The degraded stretch starts on a step boundary (healthy traffic until then), so that a whole
  // sub-window lies inside it however the run's start fell against the step: started anywhere else,
  // two steps of it could hold no whole sub-window starting a scrape in (a quarter of the runs did not).
  const boundary = Math.ceil((systemClock.epochNow() + 1) / (STEP_S * 1000)) * STEP_S * 1000;
  await run(boundary - systemClock.epochNow());
  degradedFrom = systemClock.epochNow();
  degraded = true;
  await run(DEGRADED_MS);
  await Promise.all(calls);
  trafficEnd = systemClock.epochNow();
  await sleep(systemClock, 2.5 * SCRAPE_MS); // the last scrapes
}, 90_000);

afterAll(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const stepMs = STEP_S * 1000;
/** The CLI's window: whole sub-windows from the first step of the healthy stretch to the traffic's end. */
function windowArgs(): string[] {
  const first = Math.ceil(healthyFrom / stepMs) * stepMs;
  const end = Math.floor(trafficEnd / stepMs) * stepMs;
  return ['--window', `${(end - first) / 1000}s`, '--step', `${STEP_S}s`, '--end', String(end / 1000)];
}

interface Window {
  startEpochMs: number;
  endEpochMs: number;
  count: number;
  p99?: number;
  verdict: { health: string; reasons: string[] };
}

// Never a silent pass: without the binary the end-to-end test below cannot run, and this one says so.
it('a real Prometheus is installed (Debian `prometheus`; .ci/run installs it)', () => {
  expect(hasPrometheus, 'apt-get install prometheus: the X8 end-to-end test needs the real server').toBe(
    true,
  );
});

describe.skipIf(!hasPrometheus)('SPEC X8: prazo calibrate --prometheus against a real Prometheus', () => {
  it('refuses the degraded sub-windows and recommends ceil(p99 × 1.4) of the healthy ones, within the bucket', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'prazo-x8-'));
    writeFileSync(join(dir, 'prazo.config.yaml'), CONFIG);
    const argv = [
      'calibrate',
      '--prometheus',
      prometheus!.url,
      '--config',
      'prazo.config.yaml',
      ...windowArgs(),
    ];
    const r = await runCli([...argv, '--json'], dir);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    const report = JSON.parse(r.out);
    expect(report.skipped).toEqual([]);
    const inv = report.dependencies.find((d: { name: string }) => d.name === 'inventory');
    expect(inv.failure).toBeUndefined();
    const windows = inv.windows as Window[];
    // Every sub-window wholly inside the degraded stretch (from a scrape after it started) is refused,
    // with its error rate as reason.
    const inDegraded = windows.filter((w) => w.startEpochMs >= degradedFrom + SCRAPE_MS);
    expect(inDegraded.length).toBeGreaterThanOrEqual(1);
    for (const w of inDegraded) {
      expect(w.verdict.health).toBe('degraded');
      expect(w.verdict.reasons.join(' ')).toMatch(/error rate/);
    }
    // The sub-windows wholly inside the healthy stretch: judged healthy once they have the calls to
    // be judged (scrapes lost to a stalled machine can leave one too few calls). A shared machine
    // can stall the loop long enough to make one of them slow for real: the guard may refuse that one
    // for its p99 jump, never for errors (there were none), and at least two stay healthy.
    const inHealthy = windows.filter((w) => w.endEpochMs <= degradedFrom - SCRAPE_MS);
    expect(inHealthy.filter((w) => w.verdict.health === 'healthy').length).toBeGreaterThanOrEqual(2);
    for (const w of inHealthy) {
      if (w.count < 100) expect(w.verdict.health, JSON.stringify(w)).toBe('insufficient');
      else if (w.verdict.health !== 'healthy')
        expect(w.verdict.reasons.join(' '), JSON.stringify(w)).toMatch(
          /^p99 [\d.]+ ms is [\d.]+x the healthy baseline/,
        );
    }
    expect(
      windows
        .filter((w) => w.verdict.health === 'healthy')
        .every((w) => w.endEpochMs <= degradedFrom + SCRAPE_MS),
    ).toBe(true);

    // The recommendation: ceil(p99 × 1.4) of the healthy sub-windows' merged histogram...
    const m = inv.measured;
    expect(inv.recommendation.responseMs).toBe(slackedTimeoutMs(m.p99, 1.4));
    // ...within the bucket resolution: the true p99 of the healthy calls lies in the bucket it was
    // interpolated in (the server's 30–60 ms plus the client's overhead: (50, 75] on a quiet machine).
    const healthy = windows.filter((w) => w.verdict.health === 'healthy');
    expect(inv.healthyWindows).toBe(healthy.length);
    const seen = healthyLatencies
      .filter((l) => healthy.some((w) => l.at > w.startEpochMs && l.at <= w.endEpochMs))
      .map((l) => l.ms)
      .sort((a, b) => a - b);
    const trueP99 = seen[Math.ceil(seen.length * 0.99) - 1]!;
    const { lowerMs, upperMs } = m.p99Bucket;
    expect(lowerMs).toBeGreaterThanOrEqual(50); // the server's 60 ms at most, never below
    expect([75, 100, 250]).toContain(upperMs); // a bucket of prazo's histogram
    expect(trueP99).toBeGreaterThan(lowerMs);
    expect(trueP99).toBeLessThanOrEqual(upperMs);
    expect(m.p99).toBeGreaterThan(lowerMs);
    expect(m.p99).toBeLessThanOrEqual(upperMs);
    expect(inv.recommendation.responseMs).toBeGreaterThanOrEqual(slackedTimeoutMs(lowerMs, 1.4));
    expect(inv.recommendation.responseMs).toBeLessThanOrEqual(slackedTimeoutMs(upperMs, 1.4));
    // The current 120 ms gives ceil(120 × 1.4) = 168: a change to p99Ms is proposed.
    expect(inv.current.responseMs).toBe(168);
    expect(report.changes).toHaveLength(1);
    expect(report.changes[0]).toMatchObject({ dependency: 'inventory', fromMs: 120 });

    // Each sub-window's p99 is Prometheus' own histogram_quantile over the same buckets.
    const w = healthy.at(-1)!;
    const [sample] = (await prometheus!.query(
      `histogram_quantile(0.99, sum by (le) (increase(prazo_dependency_attempt_duration_bucket{prazo_dependency="inventory",prazo_outcome="success"}[${STEP_S}s] @ ${w.endEpochMs / 1000})))`,
    )) as { value: [number, string] }[];
    expect(Number(sample!.value[1]) * 1000).toBeCloseTo(w.p99!, 6);

    // The table says it; --strict makes a refused sub-window exit 1.
    const table = await runCli(argv, dir);
    expect(table.out).toMatch(/inventory[\s\S]*sub-windows\s+\d+ of \d+ healthy, \d+ refused/);
    expect(table.out).toMatch(/· refused .*error rate/);
    expect((await runCli([...argv, '--strict'], dir)).code).toBe(1);

    // --write: only the number changes, every comment and line kept.
    const write = await runCli([...argv, '--write'], dir);
    expect(write.code).toBe(0);
    const after = readFileSync(join(dir, 'prazo.config.yaml'), 'utf8');
    const before = CONFIG.split('\n');
    const lines = after.split('\n');
    expect(lines).toHaveLength(before.length);
    const changed = lines.flatMap((l, i) => (l === before[i] ? [] : [[before[i], l]]));
    expect(changed).toHaveLength(1);
    const [was, now] = changed[0]!;
    expect(was).toBe('    p99Ms: 120 # measured last quarter: stale');
    const written = Number(/^ {4}p99Ms: ([\d.]+) # measured last quarter: stale$/.exec(now!)?.[1]);
    expect(written).toBe(report.changes[0].toMs);
    expect(slackedTimeoutMs(written, 1.4)).toBe(inv.recommendation.responseMs);
    expect((await runCli(['check', 'prazo.config.yaml'], dir)).code).toBe(0);
  }, 60_000);
});
