import type { ScenarioRaw, StackRaw } from '../run/scenario.js';
import { logHistogram, percent, quantile } from '../stats.js';
import type { ServiceConfig, StackName, UserResult } from '../types.js';
import { byRole, HIST, type StackSeries, stackSeries } from './series.js';

/**
 * The numbers the demo reports (SPEC X1), per scenario and stack, computed from the raw
 * measurements: the same code feeds the terminal table, `--json` and the HTML report.
 */
export interface StackMetrics {
  readonly stack: StackName;
  /** How long lingering downstream work was awaited after the load; `cutOff` when some still ran. */
  readonly drainedMs: number;
  readonly cutOff: boolean;
  /** The route that reaches the supplier. Latencies are what the user waited (errors included). */
  readonly checkout: {
    readonly requests: number;
    readonly ok: number;
    readonly errors: number;
    readonly timeouts: number;
    /** Answers (200) within the user's deadline, % of requests. */
    readonly withinDeadlinePct: number | undefined;
    readonly p50Ms: number | undefined;
    readonly p99Ms: number | undefined;
  };
  /** The independent route (never touches the supplier). */
  readonly catalog: {
    readonly requests: number;
    readonly ok: number;
    readonly successPct: number | undefined;
    readonly p99Ms: number | undefined;
  };
  readonly supplier: {
    /** Requests inventory sent to the supplier: every attempt, retry and hedge (refused ones too). */
    readonly load: number;
    /** Requests that reached a supplier instance (0 when connections are refused). */
    readonly arrivals: number;
    /** `load / checkout.requests`. */
    readonly amplification: number | undefined;
  };
  readonly wasted: {
    /** Work done by gateway, orders, inventory and supplier after the user had given up, in ms. */
    readonly ms: number;
    readonly requests: number;
    /** Requests still running when the scenario ended: `ms` is then a lower bound. */
    readonly stillRunning: number;
    readonly byRole: Readonly<Record<ServiceConfig['role'], number>>;
  };
  readonly pool: {
    readonly connections: number;
    readonly maxBusy: number;
    readonly meanBusy: number;
    readonly maxQueued: number;
    /** Share of the load time the pool had no free connection, %. */
    readonly saturatedPct: number;
  };
}

export interface ScenarioSummary {
  readonly name: string;
  readonly title: string;
  readonly description: string;
  readonly stacks: readonly StackMetrics[];
  readonly series: {
    readonly bucketMs: number;
    /** Edges (ms) of the latency histograms' bins. */
    readonly histogramEdges: number[];
    readonly stacks: readonly StackSeries[];
  };
}

const round = (x: number | undefined): number | undefined =>
  x === undefined ? undefined : Math.round(x * 10) / 10;

/** Summarizes a scenario; time series start at each stack's own load start (stacks run in turn). */
export function summarizeScenario(raw: ScenarioRaw, bucketMs: number, loadMs: number): ScenarioSummary {
  const longest = Math.max(...raw.stacks.map((s) => s.endEpochMs - s.startEpochMs));
  const buckets = Math.max(1, Math.ceil(longest / bucketMs));
  const histogramEdges = logHistogram([], HIST.minMs, HIST.maxMs, HIST.bins).edges.map(
    (e) => Math.round(e * 10) / 10,
  );
  return {
    name: raw.scenario.name,
    title: raw.scenario.title,
    description: raw.scenario.description,
    stacks: raw.stacks.map((s) => stackMetrics(s, loadMs)),
    series: {
      bucketMs,
      histogramEdges,
      stacks: raw.stacks.map((s) => stackSeries(s, bucketMs, buckets)),
    },
  };
}

function stackMetrics(raw: StackRaw, loadMs: number): StackMetrics {
  const startEpochMs = raw.startEpochMs;
  const checkout = raw.users.filter((u) => u.route === 'checkout');
  const catalog = raw.users.filter((u) => u.route === 'catalog');
  const count = (list: readonly UserResult[], outcome: UserResult['outcome']): number =>
    list.filter((u) => u.outcome === outcome).length;
  const load = byRole(raw.services, 'inventory').reduce((t, s) => t + (s.sent?.total ?? 0), 0);
  const arrivals = byRole(raw.services, 'supplier').reduce((t, s) => t + s.ledger.requests, 0);
  const wastedBy = { gateway: 0, orders: 0, inventory: 0, supplier: 0 };
  let wastedRequests = 0;
  let stillRunning = 0;
  for (const s of raw.services) {
    wastedBy[s.role] += s.ledger.wastedMs;
    wastedRequests += s.ledger.wastedRequests;
    stillRunning += s.ledger.stillRunning;
  }
  const pool = byRole(raw.services, 'gateway')[0]?.pool;
  const during = (pool?.samples ?? []).filter(
    (p) => p.epochMs >= startEpochMs && p.epochMs <= startEpochMs + loadMs,
  );
  const busy = during.map((p) => p.running);
  const connections = pool?.connections ?? 0;
  return {
    stack: raw.stack,
    drainedMs: raw.drainedMs,
    cutOff: raw.cutOff,
    checkout: {
      requests: checkout.length,
      ok: count(checkout, 'ok'),
      errors: count(checkout, 'error'),
      timeouts: count(checkout, 'timeout'),
      withinDeadlinePct: round(percent(count(checkout, 'ok'), checkout.length)),
      p50Ms: round(
        quantile(
          checkout.map((u) => u.latencyMs),
          0.5,
        ),
      ),
      p99Ms: round(
        quantile(
          checkout.map((u) => u.latencyMs),
          0.99,
        ),
      ),
    },
    catalog: {
      requests: catalog.length,
      ok: count(catalog, 'ok'),
      successPct: round(percent(count(catalog, 'ok'), catalog.length)),
      p99Ms: round(
        quantile(
          catalog.map((u) => u.latencyMs),
          0.99,
        ),
      ),
    },
    supplier: {
      load,
      arrivals,
      amplification: checkout.length > 0 ? Math.round((100 * load) / checkout.length) / 100 : undefined,
    },
    wasted: {
      ms: Object.values(wastedBy).reduce((a, b) => a + b, 0),
      requests: wastedRequests,
      stillRunning,
      byRole: wastedBy,
    },
    pool: {
      connections,
      maxBusy: busy.length ? Math.max(...busy) : 0,
      meanBusy: busy.length ? Math.round((10 * busy.reduce((a, b) => a + b, 0)) / busy.length) / 10 : 0,
      maxQueued: during.length ? Math.max(...during.map((p) => p.queued)) : 0,
      saturatedPct: busy.length
        ? Math.round((1000 * busy.filter((b) => b >= connections).length) / busy.length) / 10
        : 0,
    },
  };
}
