import { checkPool } from '../calibrate/pool.js';
import type { PoolSample } from '../demo/types.js';
import { DRILL_DEFAULTS } from './constants.js';
import type { RouteLoadResult } from './load.js';
import type { DrillPlan } from './options.js';

/**
 * What `prazo drill` found (SPEC V2): the verdict, why, and the pool against Little's law (C6).
 *
 * The verdict is the seed's criterion, "if the pool runs dry and independent routes start failing,
 * the calibration is wrong", read from what the run measured (issue 23):
 * - the independent routes succeed ≥ `minSuccessPct` (99.9%);
 * - their p99 stays within 2× what the same routes measured in the healthy phase of the same run
 *   (the same loads, the double answering at once), never below 60 ms: a flat bound (it was 1 s)
 *   passed a service whose catalog p50 went from ~5 ms to 138 ms behind a full pool;
 * - the pool they share never ran dry, when the drill can see it (the demo target): a sample with
 *   every connection busy, or a request waiting for one while none was free (`isDry`), fails the
 *   drill whatever the latencies say.
 * A healthy phase that already misses these bars fails the drill too: the service does not carry
 * the load even with its dependency healthy, and no incident verdict can be read from it.
 * Little's law is reported, not judged: it predicts what calls held for the whole timeout would do;
 * a service that fails calls fast (a concurrency limit, a throttle) holds fewer, and the measured pool
 * says which happened.
 */

/** The pool as measured: busy connections and requests waiting for one. */
export interface PoolOccupancy {
  readonly connections: number;
  readonly meanBusy: number;
  readonly maxBusy: number;
  readonly maxQueued: number;
  /** Samples in which the pool was dry: every connection taken, or more requests than connections. */
  readonly drySamples: number;
  readonly samples: number;
  /** `drySamples > 0`. */
  readonly ranDry: boolean;
}

/** The healthy phase run before the incident: its loads, and the pool during it. */
export interface HealthyPhase {
  readonly durationS: number;
  readonly dependent: RouteLoadResult | undefined;
  readonly independent: RouteLoadResult;
  readonly pool: PoolOccupancy | undefined;
}

/** The bound on the independent routes' p99 and how it was set. */
export interface P99Bound {
  /** The bound in ms; undefined when there is none (no healthy phase and no `maxP99Ms`). */
  readonly ms: number | undefined;
  /** The healthy phase's p99 of the independent routes, in ms (undefined without one). */
  readonly healthyP99Ms: number | undefined;
  readonly factor: number;
  readonly floorMs: number;
  /** `maxP99Ms`, when given: an absolute ceiling on top. */
  readonly ceilingMs: number | undefined;
}

export interface DrillReport {
  readonly pass: boolean;
  /** Each threshold that failed (empty when the drill passed). */
  readonly reasons: readonly string[];
  readonly target: string;
  readonly dependency: string;
  /** How long the double held every call, in ms (the dependency's configured timeout). */
  readonly doubleLatencyMs: number;
  /** Requests the double received during the incident (the healthy phase's not counted). */
  readonly doubleArrivals: number;
  readonly durationS: number;
  /** The load multiple, and the rates applied: `rate` on the dependent routes is the base rate × `load`. */
  readonly load: number;
  readonly rate: number;
  readonly independentRate: number;
  readonly healthy: HealthyPhase | undefined;
  readonly dependent: RouteLoadResult | undefined;
  readonly independent: RouteLoadResult;
  readonly thresholds: {
    readonly minSuccessPct: number;
    /** The p99 bound in force, in ms (`p99.ms`), kept under its old name for readers of the JSON. */
    readonly maxP99Ms: number | undefined;
    readonly p99: P99Bound;
  };
  /** Little's law: N connections at λ req/s tolerate N / λ; the double holds each call `doubleLatencyMs`. */
  readonly little:
    | {
        readonly poolSize: number;
        readonly rps: number;
        readonly maxLatencyMs: number;
        /** λ(routes) × hold: connections the dependent calls keep busy if each waits the hold out. */
        readonly expectedBusy: number;
        readonly ok: boolean;
      }
    | undefined;
  /** Measured occupancy of the pool during the incident (demo target). */
  readonly pool: PoolOccupancy | undefined;
}

/**
 * Whether the pool had no connection to give in a sample: every connection busy, or more requests
 * (busy and waiting) than connections, so that one waited for a connection another request held.
 * A request counted as waiting while connections are free is not: undici counts a request handed to
 * a connection that is still connecting (a new one, after the server closed an idle one) as pending;
 * the drill's healthy phase showed 1 waiting with 2 of 15 busy.
 */
export function isDry(sample: PoolSample, connections: number): boolean {
  return sample.running >= connections || sample.running + sample.queued > connections;
}

/** The pool's occupancy from its samples; undefined when the target cannot tell. */
export function poolOccupancy(
  samples: readonly PoolSample[] | undefined,
  connections: number | undefined,
): PoolOccupancy | undefined {
  const busy = (samples ?? []).map((s) => s.running);
  if (samples === undefined || connections === undefined || busy.length === 0) return undefined;
  const maxBusy = Math.max(...busy);
  const maxQueued = Math.max(...samples.map((s) => s.queued));
  const drySamples = samples.filter((s) => isDry(s, connections)).length;
  return {
    connections,
    meanBusy: Math.round((10 * busy.reduce((a, b) => a + b, 0)) / busy.length) / 10,
    maxBusy,
    maxQueued,
    drySamples,
    samples: samples.length,
    ranDry: drySamples > 0,
  };
}

/** The p99 bound: 2× the healthy p99, at least the floor, at most `maxP99Ms` when given. */
export function p99Bound(healthyP99Ms: number | undefined, ceilingMs: number | undefined): P99Bound {
  const factor = DRILL_DEFAULTS.p99VsHealthy;
  const floorMs = DRILL_DEFAULTS.p99FloorMs;
  const relative = healthyP99Ms === undefined ? undefined : Math.max(factor * healthyP99Ms, floorMs);
  const ms =
    relative === undefined ? ceilingMs : ceilingMs === undefined ? relative : Math.min(relative, ceilingMs);
  return { ms, healthyP99Ms, factor, floorMs, ceilingMs };
}

const dryText = (p: PoolOccupancy): string =>
  `${p.maxBusy} of ${p.connections} connections busy at most, up to ${p.maxQueued} request(s) waiting` +
  (p.ranDry ? `; no connection free in ${p.drySamples} of ${p.samples} samples` : '');

/** What failed on the independent routes of one phase (success, p99 against `boundMs`) and its pool. */
function judge(
  name: string,
  independent: RouteLoadResult,
  pool: PoolOccupancy | undefined,
  minSuccessPct: number,
  bound: P99Bound | undefined,
): string[] {
  const reasons: string[] = [];
  if (independent.ended === 0) reasons.push(`${name}the independent routes did not answer a single request`);
  else if ((independent.successPct ?? 0) < minSuccessPct) {
    reasons.push(`${name}independent routes: ${independent.successPct}% succeeded, below ${minSuccessPct}%`);
  }
  if (bound?.ms !== undefined && independent.ok > 0 && independent.p99Ms > bound.ms) {
    const why =
      bound.healthyP99Ms === undefined || bound.ms === bound.ceilingMs
        ? `${bound.ms} ms`
        : `${bound.ms} ms (${bound.factor}× the healthy ${bound.healthyP99Ms} ms${bound.ms === bound.floorMs ? `, floor ${bound.floorMs} ms` : ''})`;
    reasons.push(`${name}independent routes: p99 ${independent.p99Ms} ms, above ${why}`);
  }
  if (pool?.ranDry) reasons.push(`${name}the pool ran dry: ${dryText(pool)}`);
  return reasons;
}

export function buildReport(
  plan: DrillPlan,
  load: { dependent: RouteLoadResult | undefined; independent: RouteLoadResult },
  doubleArrivals: number,
  samples: readonly PoolSample[] | undefined,
  connections: number | undefined,
  healthy?: HealthyPhase,
): DrillReport {
  const { independent } = load;
  const pool = poolOccupancy(samples, connections);
  const healthyP99 =
    healthy !== undefined && healthy.independent.ok > 0 ? healthy.independent.p99Ms : undefined;
  const bound = p99Bound(healthyP99, plan.maxP99Ms);
  const reasons = [
    ...(healthy === undefined
      ? []
      : judge('healthy phase: ', healthy.independent, healthy.pool, plan.minSuccessPct, undefined)),
    ...judge('', independent, pool, plan.minSuccessPct, bound),
  ];
  const rps = plan.rate + plan.independentRate;
  const little =
    plan.poolSize === undefined
      ? undefined
      : {
          poolSize: plan.poolSize,
          rps,
          maxLatencyMs: Math.round(
            checkPool({ poolSize: plan.poolSize, rps, timeoutMs: plan.doubleLatencyMs }).maxLatencyMs,
          ),
          expectedBusy: Math.round((plan.rate * plan.doubleLatencyMs) / 100) / 10,
          ok: checkPool({ poolSize: plan.poolSize, rps, timeoutMs: plan.doubleLatencyMs }).ok,
        };
  return {
    pass: reasons.length === 0,
    reasons,
    target: plan.target.kind === 'demo' ? `demo services (${plan.target.stack} stack)` : plan.target.origin,
    dependency: plan.dependency,
    doubleLatencyMs: plan.doubleLatencyMs,
    doubleArrivals,
    durationS: plan.durationS,
    load: plan.load,
    rate: plan.rate,
    independentRate: plan.independentRate,
    healthy,
    dependent: load.dependent,
    independent,
    thresholds: { minSuccessPct: plan.minSuccessPct, maxP99Ms: bound.ms, p99: bound },
    little,
    pool,
  };
}

const route = (name: string, x: RouteLoadResult): string =>
  `${name} ${x.paths.join(', ')}: ${x.ok}/${x.ended} ok (${x.successPct ?? '—'}%), ${x.timeouts} timed out, p50 ${x.p50Ms} ms, p99 ${x.p99Ms} ms`;

const poolLine = (p: PoolOccupancy): string =>
  `${p.meanBusy} busy on average, ${p.maxBusy} at most, of ${p.connections}; up to ${p.maxQueued} waiting`;

function boundText(b: P99Bound): string {
  if (b.ms === undefined) return 'p99 not judged: no healthy phase and no --max-p99';
  if (b.healthyP99Ms === undefined || b.ms === b.ceilingMs) return `p99 ≤ ${b.ms} ms`;
  return `p99 ≤ ${b.ms} ms: ${b.factor}× the healthy ${b.healthyP99Ms} ms${b.ms === b.floorMs ? `, at least ${b.floorMs} ms` : ''}`;
}

export function renderReport(r: DrillReport): string {
  const loaded = r.dependent ? ` (${r.rate} req/s on ${r.dependent.paths.join(', ')})` : '';
  const lines = [
    `prazo drill: ${r.dependency} replaced by a double answering at ${r.doubleLatencyMs} ms (its configured timeout), ${r.durationS} s of load on ${r.target}` +
      (r.load !== 1 ? `, ${r.load}× the load${loaded}` : ''),
  ];
  if (r.healthy) {
    const h = r.healthy;
    lines.push(
      `  healthy phase, ${h.durationS} s with the double answering at once:`,
      ...(h.dependent ? [route('    loaded     ', h.dependent)] : []),
      route('    independent', h.independent),
      ...(h.pool ? [`    measured pool: ${poolLine(h.pool)}`] : []),
      '  incident, the double answering at its configured timeout:',
    );
  }
  if (r.dependent) lines.push(route('  loaded     ', r.dependent));
  lines.push(route('  independent', r.independent), `  the double received ${r.doubleArrivals} request(s)`);
  if (r.little) {
    const l = r.little;
    lines.push(
      `  Little's law: ${l.poolSize} connections at ${l.rps} req/s tolerate ${l.maxLatencyMs} ms per call; ` +
        `the double holds each call ${r.doubleLatencyMs} ms → ~${l.expectedBusy} connections busy: ` +
        (l.ok ? 'fits' : 'the pool runs dry unless the service fails calls fast'),
    );
  }
  if (r.pool) lines.push(`  measured pool: ${poolLine(r.pool)}`);
  const pool = r.pool ? `; the pool never ran dry (${dryText(r.pool)})` : '';
  lines.push(
    r.pass
      ? `PASS: the independent routes kept answering (≥ ${r.thresholds.minSuccessPct}%, ${boundText(r.thresholds.p99)})${pool}`
      : `FAIL: ${r.reasons.join('; ')}`,
  );
  return `${lines.join('\n')}\n`;
}
