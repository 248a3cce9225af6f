import type { StackRaw } from '../run/scenario.js';
import { logHistogram, mergeCounts, ratesPerSecond } from '../stats.js';
import type { ServiceConfig, ServiceReport, StackName, UserResult } from '../types.js';

/** Time series and latency distributions of one stack in one scenario, for the HTML charts. */
export interface StackSeries {
  readonly stack: StackName;
  /** Checkout requests sent, per second, per bucket. */
  readonly offered: number[];
  /** Requests reaching (or refused by) the supplier, per second, per bucket. */
  readonly supplier: number[];
  /** Busy connections of the gateway pool (mean per bucket), and waiting requests. */
  readonly poolBusy: number[];
  readonly poolQueued: number[];
  /** Log-binned histograms of user latencies. */
  readonly checkoutHistogram: number[];
  readonly catalogHistogram: number[];
  /**
   * Requests each supplier instance received, per second, per bucket, counted by the instance's own
   * server (not what the client believes it sent: a refused connection never arrives). By instance.
   */
  readonly instances: readonly { readonly instance: number; readonly perSecond: number[] }[];
  /**
   * A stack whose client throttles (prazo: inventory's adaptive throttle, issue 23), per bucket, as
   * % of the checkouts that reached inventory in that bucket: the calls its client refused locally,
   * and the requests it sent to the supplier (every attempt and hedge). Counted where they happen, on
   * inventory's clock: the checkouts the users sent in a bucket may reach inventory in a later one
   * (queued at the gateway), and a share of the users' checkouts went past 100% at the end of a
   * load. 0 in a bucket without checkouts. Absent for a stack that does not throttle.
   */
  readonly throttle?: { readonly refusedPct: number[]; readonly supplierPct: number[] };
}

/** Bins of the latency histograms: log-spaced from 2 ms to 4 s. */
export const HIST = { minMs: 2, maxMs: 4_000, bins: 36 } as const;

export function stackSeries(raw: StackRaw, bucketMs: number, buckets: number): StackSeries {
  const startEpochMs = raw.startEpochMs;
  const offeredCounts: Record<string, number> = {};
  const first = Math.floor(startEpochMs / bucketMs);
  for (const u of raw.users) {
    if (u.route !== 'checkout') continue;
    const key = String(Math.floor((startEpochMs + u.sentMs) / bucketMs));
    offeredCounts[key] = (offeredCounts[key] ?? 0) + 1;
  }
  const supplierCounts: Record<string, number> = {};
  const refusedCounts: Record<string, number> = {};
  const reachedCounts: Record<string, number> = {};
  const inventory = byRole(raw.services, 'inventory');
  for (const s of inventory) {
    mergeCounts(supplierCounts, s.sent?.perBucket ?? {});
    mergeCounts(refusedCounts, s.throttled?.perBucket ?? {});
    mergeCounts(reachedCounts, s.arrivals);
  }
  const offered = ratesPerSecond(offeredCounts, startEpochMs, bucketMs, buckets);
  const supplier = ratesPerSecond(supplierCounts, startEpochMs, bucketMs, buckets);
  const throttles = inventory.some((s) => s.throttled !== undefined);
  const reached = ratesPerSecond(reachedCounts, startEpochMs, bucketMs, buckets);
  const busy = new Array<number>(buckets).fill(0);
  const queued = new Array<number>(buckets).fill(0);
  const n = new Array<number>(buckets).fill(0);
  for (const p of byRole(raw.services, 'gateway')[0]?.pool?.samples ?? []) {
    const i = Math.floor(p.epochMs / bucketMs) - first;
    if (i < 0 || i >= buckets) continue;
    busy[i]! += p.running;
    queued[i]! += p.queued;
    n[i]! += 1;
  }
  const mean = (values: number[]): number[] =>
    values.map((v, i) => (n[i]! > 0 ? Math.round((10 * v) / n[i]!) / 10 : 0));
  const hist = (route: UserResult['route']): number[] =>
    logHistogram(
      raw.users.filter((u) => u.route === route).map((u) => u.latencyMs),
      HIST.minMs,
      HIST.maxMs,
      HIST.bins,
    ).counts;
  return {
    stack: raw.stack,
    offered,
    supplier,
    poolBusy: mean(busy),
    poolQueued: mean(queued),
    checkoutHistogram: hist('checkout'),
    catalogHistogram: hist('catalog'),
    instances: supplierInstances(raw.services).map((s) => ({
      instance: s.instance ?? 0,
      perSecond: ratesPerSecond(s.arrivals, startEpochMs, bucketMs, buckets),
    })),
    ...(throttles
      ? {
          throttle: {
            refusedPct: shareOf(ratesPerSecond(refusedCounts, startEpochMs, bucketMs, buckets), reached),
            supplierPct: shareOf(supplier, reached),
          },
        }
      : {}),
  };
}

/** `part / whole` per bucket, in %, one decimal; 0 where the whole is 0. */
function shareOf(part: readonly number[], whole: readonly number[]): number[] {
  return part.map((p, i) => {
    const w = whole[i] ?? 0;
    return w > 0 ? Math.round((1000 * p) / w) / 10 : 0;
  });
}

/** The supplier instances' own reports, by instance number. */
export function supplierInstances(services: readonly ServiceReport[]): ServiceReport[] {
  return byRole(services, 'supplier').sort((a, b) => (a.instance ?? 0) - (b.instance ?? 0));
}

export function byRole(services: readonly ServiceReport[], role: ServiceConfig['role']): ServiceReport[] {
  return services.filter((s) => s.role === role);
}
