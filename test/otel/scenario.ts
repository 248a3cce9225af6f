import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { sleep } from '../../src/clock/clock.js';
import { systemClock } from '../../src/clock/system.js';
import { watchConfig } from '../../src/config/index.js';
import { Deadline } from '../../src/deadline/deadline.js';
import { createHttpClient, type HttpClient, type HttpRequestOptions } from '../../src/http/index.js';
import { instrumentPrazo } from '../../src/otel/index.js';
import type { RulesInput } from '../../src/rules/index.js';
import { createServerEventHub, withIncomingDeadline } from '../../src/server/index.js';
import { createOverrunTracker, parseBudget } from '../../src/slo/index.js';
import { freePort, get, HOST, startExporter, startHttp, startUnacceptingListener } from './loopback.js';

/**
 * Real traffic with faults, on loopback, through prazo's executor and HTTP client, observed by
 * `instrumentPrazo` into the OpenTelemetry SDK and served by its Prometheus exporter:
 * - `supplier`: an outage (connection refused), 3 attempts asked, the default retry budget (SPEC R1, R7),
 *   its adaptive throttle off (the budget is what is measured there);
 * - `down`: the same outage behind the adaptive throttle (on by default): calls refused locally
 *   (docs/throttling.md, #23);
 * - `inventory`: a host that never accepts (connect timeouts, SPEC C2, D6);
 * - `catalog`: healthy, hedged; 1 call in 5 is slow on its original only (SPEC H1–H3);
 * - `stock`: two instances, one refusing connections: per-instance attempts, its ejections and returns
 *   (SPEC X5);
 * - `pricing`: a slow handler that outlives the caller's deadline (deadline and response timeouts,
 *   wasted work on the server, SPEC D4–D7) and a deadline too short for its p99 (fast failure);
 * - the server `orders`, and the latency budget of `POST /orders` (SPEC B3).
 */

export const OUTAGE_CALLS = 400;
/** Calls to `down`, one at a time: the throttle refuses all but its probe share after the first 10. */
export const THROTTLED_CALLS = 60;
export const CONNECT_TIMEOUT_MS = 150;
/** How long the first copy of a slow `catalog` call takes: well past the hedge delay. */
const SLOW_MS = 400;
const BUDGET = {
  endpoint: 'POST /orders',
  total_slo_ms: 800,
  components: [
    { name: 'gateway', kind: 'local', slice_ms: 30 },
    { name: 'inventory', kind: 'remote', slice_ms: 770, dependency: 'inventory' },
  ],
};

/** The `prazo.config.yaml` content of this scenario, as the rule generators read it. */
export const CONFIG: RulesInput = {
  dependencies: [
    { name: 'supplier', maxRatio: 0.1, minPerSecond: 3 },
    { name: 'inventory' },
    { name: 'catalog', hedging: true },
    { name: 'pricing' },
    { name: 'down', attempts: 1 },
  ],
  endpoints: [{ name: BUDGET.endpoint, components: BUDGET.components.map((c) => c.name) }],
};

/** Calls `client.request(path)` and reads the body, resolving with the status. */
const call = (client: HttpClient, path: string, options: HttpRequestOptions = {}) =>
  client.request(path, options).then(async (res) => {
    await res.body.dump();
    return res.statusCode;
  });

async function pool(n: number, calls: number, run: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < calls) await run(next++).catch(() => {});
  };
  await Promise.all(Array.from({ length: n }, worker));
}

/** `workers` loops calling `call(i)` until `ms` have passed. */
async function streamFor(ms: number, workers: number, call: (i: number) => Promise<unknown>): Promise<void> {
  const until = systemClock.now() + ms;
  let next = 0;
  const worker = async () => {
    while (systemClock.now() < until) await call(next++).catch(() => {});
  };
  await Promise.all(Array.from({ length: workers }, worker));
}

export type Scenario = Awaited<ReturnType<typeof traffic>>;

/** Runs the scenario; whatever it started is stopped by `close()`, or at once when it fails midway. */
export async function runScenario(): Promise<Scenario & { close(): Promise<void> }> {
  const cleanups: (() => unknown)[] = [];
  const close = async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await Promise.resolve(cleanup()).catch(() => {});
  };
  try {
    return { ...(await traffic(cleanups)), close };
  } catch (error) {
    await close();
    throw error;
  }
}

async function traffic(cleanups: (() => unknown)[]) {
  const { exporter, url } = await startExporter();
  const provider = new MeterProvider({ readers: [exporter] });
  cleanups.push(() => provider.shutdown());
  // `orders`: a prazo server (its events are instrumented), slow on purpose, ignoring its signal.
  const events = createServerEventHub();
  const orders = await startHttp(
    withIncomingDeadline(
      async (_req, res) => {
        await sleep(systemClock, 300);
        res.end('late');
      },
      { events, defaultMs: 2_000, maxMs: 5_000 },
    ),
  );
  cleanups.push(() => orders.close());
  // The services prazo's clients call: `/late` is slow; the first copy of a call marked slow is slow.
  const seen = new Set<string>();
  const firstCopy = (id: string) => !seen.has(id) && seen.add(id) !== undefined;
  const app = await startHttp(async (req, res) => {
    if (req.url?.startsWith('/late')) await sleep(systemClock, 400);
    else if (req.headers['x-slow'] === 'true' && firstCopy(String(req.headers['x-call']))) {
      await sleep(systemClock, SLOW_MS);
    }
    res.end('ok');
  });
  cleanups.push(() => app.close());
  const dead = await startUnacceptingListener();
  cleanups.push(() => dead.close());
  const closed = `http://${HOST}:${await freePort()}`;
  const supplier = createHttpClient({
    name: 'supplier',
    origin: closed,
    p99Ms: 20,
    attempts: 3,
    throttle: false,
  });
  const down = createHttpClient({ name: 'down', origin: closed, p99Ms: 20, attempts: 1 });
  const inventory = createHttpClient({
    name: 'inventory',
    origin: dead.origin,
    p99Ms: 200,
    attempts: 2,
    connectTimeoutMs: CONNECT_TIMEOUT_MS,
  });
  const catalog = createHttpClient({
    name: 'catalog',
    origin: app.origin,
    p99Ms: 200,
    hedge: { minDelayMs: 50 },
    recorder: { windowMs: 500, minSamples: 10 },
  });
  const pricing = createHttpClient({ name: 'pricing', origin: app.origin, p99Ms: 100 });
  // Two instances, the second one refused: ejected at its first failure, back after 100 ms, again.
  const stock = createHttpClient({
    name: 'stock',
    origins: [app.origin, closed],
    p99Ms: 100,
    ejection: { consecutiveFailures: 1, baseEjectionMs: 100, maxEjectionMs: 100, latency: false },
    balance: { decayMs: 100 },
  });
  // `pricing` follows a watched config file (SPEC X9): the config-generation gauge reports its version.
  const configDir = mkdtempSync(join(tmpdir(), 'prazo-e2e-config-'));
  const configFile = join(configDir, 'prazo.config.yaml');
  writeFileSync(configFile, 'dependencies:\n  - name: pricing\n    p99Ms: 100\n');
  const watcher = watchConfig(configFile, { pollMs: 0 });
  cleanups.push(() => {
    watcher.close();
    rmSync(configDir, { recursive: true, force: true });
  });
  watcher.bind(pricing);
  const firstVersion = watcher.version;
  const clients = [supplier, down, inventory, catalog, pricing, stock];
  cleanups.push(() => Promise.all(clients.map((c) => c.destroy())));
  const otel = instrumentPrazo({
    meterProvider: provider,
    // The clients themselves: their executors (gauges, events) and their instances (the instances gauge).
    dependencies: clients,
    servers: [{ name: 'orders', events }],
  });
  cleanups.push(() => otel.dispose());
  const tracker = otel.trackSlices(
    createOverrunTracker({ budget: parseBudget(BUDGET).budget! }),
    BUDGET.endpoint,
  );

  // An outage: every attempt is refused. The budget, not the 3 attempts asked, decides the extras.
  await pool(20, OUTAGE_CALLS, () => call(supplier, '/'));
  // The same outage behind the adaptive throttle: most calls are refused without an attempt.
  await pool(1, THROTTLED_CALLS, () => call(down, '/'));
  // A host that never accepts: every attempt ends in a connect timeout.
  await pool(4, 4, () => call(inventory, '/'));
  // 120 ms left, attempt timeout 140 ms: the caller's deadline ends the attempt (deadline phase).
  await call(pricing, '/late', { deadline: Deadline.after(120) }).catch(() => {});
  // A generous deadline, a slow answer: the calibrated 140 ms response timeout cuts it (response phase).
  await call(pricing, '/late', { deadline: Deadline.after(2_000) }).catch(() => {});
  // Too little time for the 100 ms p99: failed fast, nothing sent.
  await call(pricing, '/late', { deadline: Deadline.after(10) }).catch(() => {});
  // At `orders`: one request arrives already expired (504, no handler run); a naive caller that keeps
  // waiting past its 100 ms deadline gets its answer at 300 ms: wasted work.
  const expired = await get(orders.origin, { 'x-deadline-epoch-ms': String(systemClock.epochNow() - 1_000) });
  const wasted = get(orders.origin, { 'x-deadline-epoch-ms': String(systemClock.epochNow() + 100) });
  for (const [component, ms] of [
    ['gateway', 10],
    ['gateway', 45],
    ['inventory', 900],
    ['inventory', 100],
  ] as const) {
    tracker.observe(component, ms);
  }
  // Two instances, one refused: attempts per instance, ejections and returns (SPEC X5). Before
  // `catalog`'s stream, whose latency window must be the last one closed when the scrape comes.
  await streamFor(600, 2, () => call(stock, '/stock'));
  // Healthy and hedged: a stream long enough to fill latency windows; 1 call in 20 has a slow first copy.
  await streamFor(2_500, 4, (i) =>
    call(catalog, '/catalog', { headers: { 'x-call': String(i), 'x-slow': String(i % 20 === 19) } }),
  );
  await wasted;
  // A second version of the file (a comment more: the same settings, a new hash and generation).
  writeFileSync(configFile, '# reviewed\ndependencies:\n  - name: pricing\n    p99Ms: 100\n');
  watcher.check();

  const scrape = await get(url);
  return {
    scrape,
    /** The exporter's scrape target, `127.0.0.1:port`. */
    target: new URL(url).host,
    expiredStatus: expired.status,
    configVersions: [firstVersion, watcher.version] as const,
    dependencies: {
      supplier: supplier.dependency,
      down: down.dependency,
      inventory: inventory.dependency,
      catalog: catalog.dependency,
      pricing: pricing.dependency,
      stock: stock.dependency,
    },
    stock,
  };
}
