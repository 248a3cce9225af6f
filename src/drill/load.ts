import type { Clock } from '../clock/clock.js';
import { type LoadResult, type RouteLoad, runLoad } from '../demo/load/generator.js';
import { quantile } from '../demo/stats.js';

/**
 * The drill's load (SPEC V2), with the demo's own open-loop generator: a bounded load at a fixed
 * offered rate on the routes that use the replaced dependency (that is what fills the pool), and at
 * the same time a probe on the routes that do not (that is what the verdict is about).
 *
 * Open loop on purpose: requests leave on schedule whatever happened to the ones before, as users'
 * requests do, so a service that holds its pool hostage cannot slow its own load down and look
 * healthy. Arrivals are even (one every 1/rate s, the paths of a group interleaved), never a burst per
 * second, which no pool sized by Little's law (an average) would absorb. Each request is abandoned at
 * `probeTimeoutMs`, which counts as a timeout.
 */

export interface RouteLoadResult {
  readonly paths: readonly string[];
  /** Requests that ended: answered (any status), failed or timed out. */
  readonly ended: number;
  /** Answered 2xx. */
  readonly ok: number;
  /** Answered with any other status. */
  readonly non2xx: number;
  /** Requests that got no answer: connection errors and timeouts. */
  readonly errors: number;
  /** Of `errors`, those abandoned at the probe timeout. */
  readonly timeouts: number;
  /** `ok / ended`, %; undefined when nothing ended. */
  readonly successPct: number | undefined;
  /** Latency of answered requests, in ms (timeouts are not in it: see `timeouts`). */
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
}

export interface DrillLoadOptions {
  readonly origin: string;
  readonly dependent: readonly string[];
  readonly independent: readonly string[];
  readonly durationS: number;
  /** Requests per second on the dependent routes, all paths together. */
  readonly rate: number;
  /** Requests per second on the independent routes, all paths together. */
  readonly independentRate: number;
  /** Connections of the dependent load (enough to keep the rate when each call is held long). */
  readonly connections: number;
  /** Each request is abandoned after this long, in ms. */
  readonly probeTimeoutMs: number;
  readonly clock: Clock;
  readonly signal?: AbortSignal;
}

interface Group {
  readonly paths: readonly string[];
  readonly rate: number;
  readonly connections: number;
}

/** The paths of a group share its rate, interleaved: together they send one request every 1/rate s. */
function routesOf(group: Group): RouteLoad<string>[] {
  const n = group.paths.length;
  if (n === 0 || !(group.rate > 0)) return [];
  return group.paths.map((path, i) => ({
    route: path,
    path,
    rate: group.rate / n,
    offsetMs: (1000 * i) / group.rate,
  }));
}

/** Counts one group's results the way the report reads them. */
export function summarize(paths: readonly string[], results: readonly LoadResult<string>[]): RouteLoadResult {
  let ok = 0;
  let non2xx = 0;
  let errors = 0;
  let timeouts = 0;
  const latencies: number[] = [];
  for (const r of results) {
    if (r.outcome === 'timeout') {
      errors += 1;
      timeouts += 1;
    } else if (r.status === 0) {
      errors += 1;
    } else {
      latencies.push(r.latencyMs);
      if (r.status >= 200 && r.status < 300) ok += 1;
      else non2xx += 1;
    }
  }
  const ended = ok + non2xx + errors;
  let maxMs = 0;
  for (const ms of latencies) if (ms > maxMs) maxMs = ms;
  return {
    paths,
    ended,
    ok,
    non2xx,
    errors,
    timeouts,
    successPct: ended > 0 ? Math.round((1e4 * ok) / ended) / 100 : undefined,
    p50Ms: Math.round(quantile(latencies, 0.5) ?? 0),
    p99Ms: Math.round(quantile(latencies, 0.99) ?? 0),
    maxMs: Math.round(maxMs),
  };
}

async function runGroup(o: DrillLoadOptions, group: Group): Promise<RouteLoadResult> {
  const results = await runLoad<string>({
    origin: o.origin,
    routes: routesOf(group),
    durationMs: o.durationS * 1000,
    deadlineMs: o.probeTimeoutMs,
    connections: Math.max(1, group.connections),
    markGiveUp: false,
    clock: o.clock,
    ...(o.signal ? { signal: o.signal } : {}),
  });
  return summarize(group.paths, results);
}

export async function runDrillLoad(
  o: DrillLoadOptions,
): Promise<{ dependent: RouteLoadResult | undefined; independent: RouteLoadResult }> {
  // The probe needs enough connections to keep its rate with every probe held to the timeout.
  const probeConnections = Math.max(2, Math.ceil((o.independentRate * o.probeTimeoutMs) / 1000));
  const [dependent, independent] = await Promise.all([
    o.dependent.length > 0
      ? runGroup(o, { paths: o.dependent, rate: o.rate, connections: o.connections })
      : Promise.resolve(undefined),
    runGroup(o, { paths: o.independent, rate: o.independentRate, connections: probeConnections }),
  ]);
  return { dependent, independent };
}
