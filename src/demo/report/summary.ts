import { DEMO_DEFAULTS } from '../constants.js';
import type { ScenarioRaw, StackRaw } from '../run/scenario.js';
import { behaviourOf } from '../scenarios.js';
import { logHistogram, percent, quantile } from '../stats.js';
import { chooseTrace, type TraceChoice } from '../trace/stitch.js';
import type { ServiceConfig, StackName, SupplierBehaviour, UserResult } from '../types.js';
import { ms } from './format.js';
import { byRole, HIST, type StackSeries, stackSeries, supplierInstances } from './series.js';

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
    /**
     * The median wait of the checkouts that failed (an error or the user's timeout; undefined when
     * none did): how fast a failure fails, which the p50 over all checkouts hides when most succeed
     * (issue 23's bar: ≤ 20 ms with the supplier hung).
     */
    readonly failedP50Ms: number | undefined;
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
    /** Requests each instance's server received, by instance (the load per instance). */
    readonly perInstance: readonly number[];
  };
  readonly wasted: {
    /** Work done by gateway, orders, inventory and supplier after the user had given up, in ms. */
    readonly ms: number;
    readonly requests: number;
    /** Requests still running when the scenario ended: `ms` is then a lower bound. */
    readonly stillRunning: number;
    readonly byRole: Readonly<Record<ServiceConfig['role'], number>>;
  };
  /** prazo: calls inventory's client refused locally (the adaptive throttle), and their share of its calls. */
  readonly throttled: { readonly refused: number; readonly sharePct: number | undefined };
  /**
   * `recover` only: from the supplier's return (`returnMs` after the load started) until checkouts
   * are ≥ 99% within the deadline over every 1 s window from then on (`recoveryMs`; undefined: not
   * before the load ended), and the supplier load over that span and the next second, per checkout.
   */
  readonly recovery?: {
    readonly returnMs: number;
    readonly recoveryMs: number | undefined;
    readonly load: number | undefined;
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
  /** The load time per stack, in ms. */
  readonly loadMs: number;
  readonly stacks: readonly StackMetrics[];
  /**
   * What each supplier instance did, by instance (`answers 503 on half its calls`, `healthy`); an
   * instance incident is a scenario whose instances do not all behave alike.
   */
  readonly instances: readonly string[];
  readonly series: {
    readonly bucketMs: number;
    /** Edges (ms) of the latency histograms' bins. */
    readonly histogramEdges: number[];
    readonly stacks: readonly StackSeries[];
  };
  /**
   * Per stack, one checkout's trace across the chain (issue #26), stitched from the spans the
   * services kept: the report's waterfall. Absent in results made before it.
   */
  readonly traces?: readonly TraceChoice[];
}

const round = (x: number | undefined): number | undefined =>
  x === undefined ? undefined : Math.round(x * 10) / 10;

/** Summarizes a scenario; time series start at each stack's own load start (stacks run in turn). */
export function summarizeScenario(raw: ScenarioRaw, bucketMs: number, loadMs: number): ScenarioSummary {
  // Every bucket from the one the load started in to the one the measurement ended in: a start
  // between bucket edges must not cut the last partial bucket (its requests would be lost).
  const spanned = (s: StackRaw): number =>
    Math.floor(s.endEpochMs / bucketMs) - Math.floor(s.startEpochMs / bucketMs) + 1;
  const buckets = Math.max(1, ...raw.stacks.map(spanned));
  const histogramEdges = logHistogram([], HIST.minMs, HIST.maxMs, HIST.bins).edges.map(
    (e) => Math.round(e * 10) / 10,
  );
  return {
    name: raw.scenario.name,
    title: raw.scenario.title,
    description: raw.scenario.description,
    loadMs,
    instances: instanceBehaviours(raw),
    stacks: raw.stacks.map((s) => stackMetrics(s, loadMs, raw.scenario)),
    series: {
      bucketMs,
      histogramEdges,
      stacks: raw.stacks.map((s) => stackSeries(s, bucketMs, buckets)),
    },
    traces: raw.stacks.map((s) => chooseTrace(s.stack, s.traces)),
  };
}

/** Each instance's behaviour in words, for as many instances as the stacks' suppliers reported. */
function instanceBehaviours(raw: ScenarioRaw): string[] {
  const count = Math.max(0, ...raw.stacks.map((s) => byRole(s.services, 'supplier').length));
  return Array.from({ length: count }, (_, i) => describeBehaviour(behaviourOf(raw.scenario, i)));
}

export function describeBehaviour(b: SupplierBehaviour): string {
  switch (b.kind) {
    case 'healthy':
      return 'healthy';
    case 'slow':
      return `answers at ${b.factor}× its p99`;
    case 'refuse':
      return 'refuses connections';
    case 'hang':
      return 'never answers';
    case 'stall':
      return `stalls ${ms(b.stallMs)} on ${Math.round(b.probability * 100)}% of its answers`;
    case 'fail':
      return `answers 503 on ${b.probability === 0.5 ? 'half' : `${Math.round(b.probability * 100)}%`} of its calls`;
    case 'outage':
      return `refuses connections for ${ms(b.downMs)}, then is healthy`;
  }
}

/** Whether the instances of a scenario do not all behave alike (one slow, down or failing instance). */
export function isInstanceIncident(scenario: Pick<ScenarioSummary, 'instances'>): boolean {
  return new Set(scenario.instances).size > 1;
}

/** Checkouts within the deadline over a 1 s window, for the return to count as recovered (issue 23). */
export const RECOVERED_PCT = 99;
const RECOVERY_WINDOW_MS = 1_000;
const RECOVERY_STEP_MS = 100;

/**
 * How long checkouts took to flow again after an outage ended (`recover`, issue 23's measure): from
 * the supplier's return until the first 1 s window of checkouts (sliding by 100 ms) with ≥ 99%
 * answered within the deadline. The return is taken at the reset's instant plus the outage (an upper
 * bound of when the supplier listened again), so the time measured is never shorter than the real one.
 */
export function recoveryOf(
  raw: Pick<StackRaw, 'resetEpochMs' | 'startEpochMs' | 'users' | 'services'>,
  downMs: number,
  loadMs: number,
  bucketMs: number,
): NonNullable<StackMetrics['recovery']> {
  const returnMs = Math.max(0, raw.resetEpochMs + downMs - raw.startEpochMs);
  const checkouts = raw.users.filter((u) => u.route === 'checkout');
  const okShare = (from: number): number | undefined => {
    const w = checkouts.filter((u) => u.sentMs >= from && u.sentMs < from + RECOVERY_WINDOW_MS);
    return w.length === 0 ? undefined : (100 * w.filter((u) => u.outcome === 'ok').length) / w.length;
  };
  let recoveredAt: number | undefined;
  for (let t = returnMs; t + RECOVERY_WINDOW_MS <= loadMs; t += RECOVERY_STEP_MS) {
    const share = okShare(t);
    if (share !== undefined && share >= RECOVERED_PCT) {
      recoveredAt = t;
      break;
    }
  }
  if (recoveredAt === undefined) return { returnMs, recoveryMs: undefined, load: undefined };
  const endMs = recoveredAt + RECOVERY_WINDOW_MS;
  const fromBucket = Math.floor((raw.startEpochMs + returnMs) / bucketMs);
  const toBucket = Math.floor((raw.startEpochMs + endMs) / bucketMs);
  let sent = 0;
  for (const s of byRole(raw.services, 'inventory'))
    for (const [key, n] of Object.entries(s.sent?.perBucket ?? {}))
      if (Number(key) >= fromBucket && Number(key) < toBucket) sent += n;
  const offered = checkouts.filter((u) => u.sentMs >= returnMs && u.sentMs < endMs).length;
  return {
    returnMs: Math.round(returnMs),
    recoveryMs: Math.round(recoveredAt - returnMs),
    load: offered > 0 ? Math.round((100 * sent) / offered) / 100 : undefined,
  };
}

function stackMetrics(raw: StackRaw, loadMs: number, scenario?: ScenarioRaw['scenario']): StackMetrics {
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
  const refused = byRole(raw.services, 'inventory').reduce((t, s) => t + (s.throttled?.total ?? 0), 0);
  const outage = scenario?.supplier.find((b) => b.kind === 'outage');
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
      failedP50Ms: round(
        quantile(
          checkout.filter((u) => u.outcome !== 'ok').map((u) => u.latencyMs),
          0.5,
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
      perInstance: supplierInstances(raw.services).map((s) => s.ledger.requests),
    },
    throttled: {
      refused,
      sharePct: checkout.length > 0 ? round((100 * refused) / checkout.length) : undefined,
    },
    ...(outage?.kind === 'outage'
      ? { recovery: recoveryOf(raw, outage.downMs, loadMs, DEMO_DEFAULTS.bucketMs) }
      : {}),
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
