import { checkPool } from '../calibrate/pool.js';
import type { PoolSample } from '../demo/types.js';
import type { RouteLoadResult } from './load.js';
import type { DrillPlan } from './options.js';

/** What `prazo drill` found (SPEC V2): the verdict, why, and the pool against Little's law (C6). */
export interface DrillReport {
  readonly pass: boolean;
  /** Each threshold that failed (empty when the drill passed). */
  readonly reasons: readonly string[];
  readonly target: string;
  readonly dependency: string;
  /** How long the double held every call, in ms (the dependency's configured timeout). */
  readonly doubleLatencyMs: number;
  readonly doubleArrivals: number;
  readonly durationS: number;
  readonly dependent: RouteLoadResult | undefined;
  readonly independent: RouteLoadResult;
  readonly thresholds: { readonly minSuccessPct: number; readonly maxP99Ms: number };
  /** Little's law: N connections at λ req/s tolerate N / λ; the double holds each call `doubleLatencyMs`. */
  readonly little:
    | {
        readonly poolSize: number;
        readonly rps: number;
        readonly maxLatencyMs: number;
        /** λ(routes) × hold: connections the dependent calls keep busy. */
        readonly expectedBusy: number;
        readonly ok: boolean;
      }
    | undefined;
  /** Measured occupancy of the pool during the load (demo target). */
  readonly pool:
    | {
        readonly connections: number;
        readonly meanBusy: number;
        readonly maxBusy: number;
        readonly maxQueued: number;
      }
    | undefined;
}

export function buildReport(
  plan: DrillPlan,
  load: { dependent: RouteLoadResult | undefined; independent: RouteLoadResult },
  doubleArrivals: number,
  samples: readonly PoolSample[] | undefined,
  connections: number | undefined,
): DrillReport {
  const { independent } = load;
  const reasons: string[] = [];
  if (independent.ended === 0) reasons.push('the independent routes did not answer a single request');
  else if ((independent.successPct ?? 0) < plan.minSuccessPct) {
    reasons.push(`independent routes: ${independent.successPct}% succeeded, below ${plan.minSuccessPct}%`);
  }
  if (independent.ok > 0 && independent.p99Ms > plan.maxP99Ms) {
    reasons.push(`independent routes: p99 ${independent.p99Ms} ms, above ${plan.maxP99Ms} ms`);
  }
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
  const busy = (samples ?? []).map((s) => s.running);
  const pool =
    samples === undefined || connections === undefined || busy.length === 0
      ? undefined
      : {
          connections,
          meanBusy: Math.round((10 * busy.reduce((a, b) => a + b, 0)) / busy.length) / 10,
          maxBusy: Math.max(...busy),
          maxQueued: Math.max(...samples.map((s) => s.queued)),
        };
  return {
    pass: reasons.length === 0,
    reasons,
    target: plan.target.kind === 'demo' ? `demo services (${plan.target.stack} stack)` : plan.target.origin,
    dependency: plan.dependency,
    doubleLatencyMs: plan.doubleLatencyMs,
    doubleArrivals,
    durationS: plan.durationS,
    dependent: load.dependent,
    independent,
    thresholds: { minSuccessPct: plan.minSuccessPct, maxP99Ms: plan.maxP99Ms },
    little,
    pool,
  };
}

export function renderReport(r: DrillReport): string {
  const lines = [
    `prazo drill: ${r.dependency} replaced by a double answering at ${r.doubleLatencyMs} ms (its configured timeout), ${r.durationS} s of load on ${r.target}`,
  ];
  const route = (name: string, x: RouteLoadResult): string =>
    `  ${name} ${x.paths.join(', ')}: ${x.ok}/${x.ended} ok (${x.successPct ?? '—'}%), ${x.timeouts} timed out, p50 ${x.p50Ms} ms, p99 ${x.p99Ms} ms`;
  if (r.dependent) lines.push(route('loaded     ', r.dependent));
  lines.push(route('independent', r.independent), `  the double received ${r.doubleArrivals} request(s)`);
  if (r.little) {
    const l = r.little;
    lines.push(
      `  Little's law: ${l.poolSize} connections at ${l.rps} req/s tolerate ${l.maxLatencyMs} ms per call; ` +
        `the double holds each call ${r.doubleLatencyMs} ms → ~${l.expectedBusy} connections busy: ${l.ok ? 'fits' : 'the pool runs dry'}`,
    );
  }
  if (r.pool)
    lines.push(
      `  measured pool: ${r.pool.meanBusy} busy on average, ${r.pool.maxBusy} at most, of ${r.pool.connections}; up to ${r.pool.maxQueued} waiting`,
    );
  lines.push(
    r.pass
      ? `PASS: the independent routes kept answering (≥ ${r.thresholds.minSuccessPct}%, p99 ≤ ${r.thresholds.maxP99Ms} ms)`
      : `FAIL: ${r.reasons.join('; ')}`,
  );
  return `${lines.join('\n')}\n`;
}
