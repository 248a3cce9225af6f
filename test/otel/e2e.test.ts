import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sleep } from '../../src/clock/clock.js';
import { systemClock } from '../../src/clock/system.js';
import { dashboardProblems, dashboardQueries } from '../../src/rules/dashboard.test-helpers.js';
import { generateAlertRules, generateDashboard, renderAlertRules } from '../../src/rules/index.js';
import { exportedSeriesNames } from '../../src/rules/names.js';
import { parsePromQL, substituteGrafana } from '../../src/rules/promql.test-helpers.js';
import { type Exposition, find, parseExposition, sampleValue } from './exposition.js';
import { hasPrometheus, type PrometheusServer, startPrometheus } from './prometheus.js';
import { CONFIG, OUTAGE_CALLS, runScenario, THROTTLED_CALLS } from './scenario.js';

/**
 * End to end (SPEC R7, V1, V3, B3, C5, D6, H3, X3): traffic with faults through prazo's executor and
 * HTTP client on loopback → instrumentPrazo → OpenTelemetry SDK 2.x → its Prometheus exporter → an
 * HTTP scrape on 127.0.0.1 → the text exposition, parsed. Then the generated rules and dashboard are
 * checked against the series actually scraped, so rules and metrics cannot drift apart.
 */

let run: Awaited<ReturnType<typeof runScenario>>;
let x: Exposition;
const dep = (name: string, more: Record<string, string> = {}) => ({ prazo_dependency: name, ...more });

beforeAll(async () => {
  run = await runScenario();
  x = parseExposition(run.scrape.body);
}, 60_000);
afterAll(() => run?.close());

describe('end to end: prazo → OpenTelemetry SDK → Prometheus exporter → scrape', () => {
  it('the exporter serves the text exposition with prazo’s families and types', () => {
    expect(run.scrape.status).toBe(200);
    expect(x.types.get('prazo_dependency_attempts_total')).toBe('counter');
    expect(x.types.get('prazo_dependency_retry_ratio')).toBe('gauge');
    expect(x.types.get('prazo_dependency_attempt_duration')).toBe('histogram');
    expect(
      find(x, 'prazo_dependency_attempts_total').every((s) => s.labels.otel_scope_name === 'prazo'),
    ).toBe(true);
  });

  it('during an outage the retry ratio stays ≤ 0.1: the budget, not the 3 attempts, decides (SPEC R1, R7)', () => {
    const originals = sampleValue(
      x,
      'prazo_dependency_attempts_total',
      dep('supplier', { prazo_attempt_kind: 'original' }),
    );
    const retries = sampleValue(
      x,
      'prazo_dependency_attempts_total',
      dep('supplier', { prazo_attempt_kind: 'retry' }),
    );
    const ratio = sampleValue(x, 'prazo_dependency_retry_ratio', dep('supplier'));
    expect(originals).toBe(OUTAGE_CALLS);
    expect(retries).toBeGreaterThan(0);
    expect(retries / originals).toBeLessThanOrEqual(0.1);
    expect(ratio).toBeGreaterThan(0);
    expect(ratio).toBeLessThanOrEqual(0.1);
    expect(ratio).toBeCloseTo(run.dependencies.supplier.budget.state().ratio, 9);
    // Naive clients would have sent 3 × 400. Each call ends refused or after its 2 retries, so at
    // least `originals - retries` calls were refused, and no call twice.
    const refused = sampleValue(
      x,
      'prazo_dependency_budget_refusals_total',
      dep('supplier', { prazo_attempt_kind: 'retry' }),
    );
    expect(refused).toBeGreaterThanOrEqual(originals - retries);
    expect(refused).toBeLessThanOrEqual(originals);
  });

  it('the adaptive throttle: refused calls counted apart from attempts, its probability a gauge (#23)', () => {
    const refused = sampleValue(x, 'prazo_dependency_throttled_total', dep('down'));
    const sent = sampleValue(
      x,
      'prazo_dependency_attempts_total',
      dep('down', { prazo_attempt_kind: 'original' }),
    );
    // Every call is either sent or refused, never both: a refusal starts no attempt.
    expect(refused + sent).toBe(THROTTLED_CALLS);
    expect(refused).toBeGreaterThan(THROTTLED_CALLS / 2);
    expect(x.types.get('prazo_dependency_throttled_total')).toBe('counter');
    expect(x.types.get('prazo_dependency_throttle_probability')).toBe('gauge');
    // Read at the scrape, seconds after the outage's calls: the 1 s window has forgotten them.
    expect(sampleValue(x, 'prazo_dependency_throttle_probability', dep('down'))).toBe(
      run.dependencies.down.throttling()!.probability,
    );
    // Switched off: no point at all (not a 0).
    expect(find(x, 'prazo_dependency_throttle_probability', dep('supplier'))).toEqual([]);
    expect(find(x, 'prazo_dependency_throttled_total', dep('supplier'))).toEqual([]);
  });

  it('connect timeouts are counted under the connect phase (SPEC C2, D6)', () => {
    const attempts = find(x, 'prazo_dependency_attempts_total', dep('inventory')).reduce(
      (a, s) => a + s.value,
      0,
    );
    const connect = sampleValue(
      x,
      'prazo_dependency_timeouts_total',
      dep('inventory', { prazo_timeout_phase: 'connect' }),
    );
    expect(attempts).toBeGreaterThanOrEqual(4);
    expect(connect).toBe(attempts);
    expect(
      find(x, 'prazo_dependency_timeouts_total', dep('inventory')).map((s) => s.labels.prazo_timeout_phase),
    ).toEqual(['connect']);
  });

  it('deadline and response timeouts are told apart, and a hopeless deadline fails fast (SPEC D4, D6)', () => {
    expect(
      sampleValue(x, 'prazo_dependency_timeouts_total', dep('pricing', { prazo_timeout_phase: 'deadline' })),
    ).toBe(1);
    expect(
      sampleValue(x, 'prazo_dependency_timeouts_total', dep('pricing', { prazo_timeout_phase: 'response' })),
    ).toBe(1);
    expect(sampleValue(x, 'prazo_dependency_deadline_insufficient_total', dep('pricing'))).toBe(1);
    // Two attempts were made; the fast failure touched nothing.
    expect(
      sampleValue(x, 'prazo_dependency_attempts_total', dep('pricing', { prazo_attempt_kind: 'original' })),
    ).toBe(2);
  });

  it('the latency histogram is in seconds, by outcome, and counts every attempt', () => {
    const count = (name: string, outcome: string) =>
      find(x, 'prazo_dependency_attempt_duration_count', dep(name, { prazo_outcome: outcome }))[0]?.value ??
      0;
    const successes = count('catalog', 'success');
    expect(successes).toBeGreaterThan(50);
    const inf = sampleValue(
      x,
      'prazo_dependency_attempt_duration_bucket',
      dep('catalog', { prazo_outcome: 'success', le: '+Inf' }),
    );
    expect(inf).toBe(successes);
    const under100ms = sampleValue(
      x,
      'prazo_dependency_attempt_duration_bucket',
      dep('catalog', { prazo_outcome: 'success', le: '0.1' }),
    );
    expect(under100ms / successes).toBeGreaterThan(0.5);
    const ended = ['success', 'error', 'timeout', 'cancelled'].reduce((a, o) => a + count('supplier', o), 0);
    const started = find(x, 'prazo_dependency_attempts_total', dep('supplier')).reduce(
      (a, s) => a + s.value,
      0,
    );
    expect(ended).toBe(started);
  });

  it('configured timeout and live p99 side by side, in seconds (SPEC C5, V1)', () => {
    const { catalog } = run.dependencies;
    const timeout = sampleValue(
      x,
      'prazo_dependency_timeout_configured',
      dep('catalog', { prazo_timeout_phase: 'response' }),
    );
    expect(timeout).toBe(catalog.timeouts.responseMs / 1000);
    const p99 = sampleValue(x, 'prazo_dependency_latency_p99', dep('catalog'));
    expect(p99).toBeGreaterThan(0);
    expect(p99).toBeLessThan(5);
  });

  it('hedges: sent for the slow originals, won, and paid from the budget (SPEC H1, H3)', () => {
    const sent = sampleValue(
      x,
      'prazo_dependency_attempts_total',
      dep('catalog', { prazo_attempt_kind: 'hedge' }),
    );
    const won = sampleValue(x, 'prazo_dependency_hedges_won_total', dep('catalog'));
    expect(won).toBeGreaterThan(0);
    expect(won).toBeLessThanOrEqual(sent);
    expect(run.dependencies.catalog.budget.state().extras).toBeGreaterThanOrEqual(sent > 0 ? 1 : 0);
  });

  it('server: wasted work and requests rejected as expired (SPEC D2, D7)', () => {
    expect(run.expiredStatus).toBe(504);
    expect(sampleValue(x, 'prazo_server_rejected_expired_total', { prazo_server: 'orders' })).toBe(1);
    expect(
      sampleValue(x, 'prazo_server_wasted_work_total', { prazo_server: 'orders' }),
    ).toBeGreaterThanOrEqual(1);
    expect(sampleValue(x, 'prazo_server_wasted_work_time_total', { prazo_server: 'orders' })).toBeGreaterThan(
      0.1,
    );
  });

  it('latency budget slices: observations and overruns per component (SPEC B3)', () => {
    const at = (c: string) => ({ prazo_endpoint: 'POST /orders', prazo_component: c });
    expect(sampleValue(x, 'prazo_endpoint_slice_observations_total', at('gateway'))).toBe(2);
    expect(sampleValue(x, 'prazo_endpoint_slice_overruns_total', at('gateway'))).toBe(1);
    expect(sampleValue(x, 'prazo_endpoint_slice_overruns_total', at('inventory'))).toBe(1);
  });

  it('the config version in force, by generation and content hash: only the current one (SPEC X9)', () => {
    const [first, second] = run.configVersions;
    expect(second.generation).toBe(2);
    expect(second.hash).not.toBe(first.hash);
    const points = find(x, 'prazo_dependency_config_generation');
    expect(points.map((p) => [p.labels.prazo_dependency, p.labels.prazo_config_hash, p.value])).toEqual([
      ['pricing', second.hash, 2],
    ]);
    expect(x.types.get('prazo_dependency_config_generation')).toBe('gauge');
  });

  it('the series prazo exports are exactly the ones its constants name: every metric was exercised', () => {
    const scraped = new Set(x.samples.map((s) => s.name).filter((n) => n.startsWith('prazo_')));
    expect([...scraped].sort()).toEqual([...exportedSeriesNames('exporter')].sort());
  });

  it('a dependency of several instances: attempts per instance, ejections by reason, returns (SPEC X5)', () => {
    const stock = (more: Record<string, string> = {}) => dep('stock', more);
    const [good, refused] = run.stock.instances().map((s) => s.instance);
    const attempts = (instance: string) =>
      sampleValue(x, 'prazo_instance_attempts_total', stock({ prazo_instance: instance }));
    const states = run.stock.instances();
    // The counters say what the client's own instance states say.
    for (const s of states) expect(attempts(s.instance)).toBe(s.picks);
    expect(attempts(good!)).toBeGreaterThan(attempts(refused!));
    const ejections = sampleValue(
      x,
      'prazo_instance_ejections_total',
      stock({ prazo_instance: refused!, prazo_ejection_reason: 'failures' }),
    );
    const returns = sampleValue(x, 'prazo_instance_returns_total', stock({ prazo_instance: refused! }));
    expect(ejections).toBeGreaterThanOrEqual(2);
    expect(returns).toBeGreaterThanOrEqual(1);
    expect(ejections - returns).toBeGreaterThanOrEqual(0);
    expect(ejections - returns).toBeLessThanOrEqual(1);
    expect(find(x, 'prazo_instance_ejections_total').every((s) => s.labels.prazo_instance === refused)).toBe(
      true,
    );
    // Instances by state now: the refused one may be out or back on probation when the scrape comes
    // (100 ms ejections), the other always in rotation; the two add up to the instances the client knows.
    const gauge = (state: string) =>
      sampleValue(x, 'prazo_dependency_instances', stock({ prazo_instance_state: state }));
    const [active, probation, ejected] = [gauge('active'), gauge('probation'), gauge('ejected')];
    expect(x.types.get('prazo_dependency_instances')).toBe('gauge');
    expect(active + probation + ejected).toBe(2);
    expect(active).toBeGreaterThanOrEqual(1);
    expect(ejected).toBeLessThanOrEqual(1);
    // A client of one origin has no instances to count.
    expect(find(x, 'prazo_dependency_instances').every((s) => s.labels.prazo_dependency === 'stock')).toBe(
      true,
    );
  });

  it('every series a generated rule or dashboard panel reads is one the exporter serves', () => {
    const scraped = new Set(x.samples.map((s) => s.name));
    const rules = generateAlertRules(CONFIG).groups.flatMap((g) => g.rules.map((r) => r.expr));
    const dashboard = generateDashboard(CONFIG);
    expect(dashboardProblems(dashboard)).toEqual([]);
    const panels = dashboardQueries(dashboard).map(substituteGrafana);
    expect(rules.length).toBeGreaterThan(15);
    for (const expr of [...rules, ...panels]) {
      const parsed = parsePromQL(expr);
      expect(parsed.errors, expr).toEqual([]);
      for (const metric of parsed.metrics) expect(scraped.has(metric), `${metric} in ${expr}`).toBe(true);
    }
  });
});

/** Prometheus' scrape and rule evaluation interval here: six of them after the first scrape suffice. */
const SCRAPE_MS = 250;

describe.skipIf(!hasPrometheus)(
  'a real Prometheus scraping the exporter (skipped without Debian’s prometheus)',
  () => {
    let prom: PrometheusServer;
    beforeAll(async () => {
      prom = await startPrometheus([run.target], renderAlertRules(generateAlertRules(CONFIG)), SCRAPE_MS);
      // A few scrapes and rule evaluations (every SCRAPE_MS) after the first one before asking anything.
      const until = systemClock.now() + 30_000;
      let seenAt: number | undefined;
      while (systemClock.now() < until) {
        const up = await prom.query('prazo_dependency_attempts_total');
        if (up.length > 0) seenAt ??= systemClock.now();
        if (seenAt !== undefined && systemClock.now() - seenAt > 6 * SCRAPE_MS) break;
        await sleep(systemClock, 250);
      }
    }, 60_000);
    afterAll(() => prom?.close());

    it('loads every generated rule and evaluates it without error', async () => {
      const rules = await prom.rules();
      expect(rules.length).toBe(generateAlertRules(CONFIG).groups.flatMap((g) => g.rules).length);
      for (const rule of rules) {
        expect(rule.lastError ?? '', rule.name).toBe('');
        expect(rule.health, rule.name).toBe('ok');
      }
    });

    it('runs every dashboard query, and every panel shows data', async () => {
      const dashboard = generateDashboard(CONFIG);
      for (const panel of dashboard.panels.filter((p) => p.type !== 'row')) {
        const targets = (panel.targets as { expr: string }[]).map((t) =>
          t.expr.replaceAll('$__rate_interval', '30s').replaceAll('$dependency', '.*'),
        );
        const results = await Promise.all(targets.map((expr) => prom.query(expr)));
        expect(
          results.some((r) => r.length > 0),
          String(panel.title),
        ).toBe(true);
      }
    });
  },
);
