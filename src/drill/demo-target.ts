import type { Clock } from '../clock/clock.js';
import { DEMO_DEFAULTS } from '../demo/constants.js';
import { runLoad } from '../demo/load/generator.js';
import { ProcessGroup } from '../demo/process/children.js';
import { serviceEntry } from '../demo/process/entry.js';
import type { HopName } from '../demo/run/calibration.js';
import { type HopLatencies, type RunningStack, spawnStack, startStack } from '../demo/run/topology.js';
import type { PoolSample } from '../demo/types.js';

/**
 * The demo's own services as the drill's target: gateway → orders → inventory, one process each, with
 * inventory's supplier replaced by the double. `prazo` runs them calibrated from the config's p99s;
 * `naive` runs them with naive clients and a long timeout (the seed's 30 s), the drill's failing case.
 */
export interface DrillTarget {
  readonly origin: string;
  /** Routes that reach the replaced dependency, and routes that do not. */
  readonly dependentRoutes: readonly string[];
  readonly independentRoutes: readonly string[];
  /**
   * The gateway pool's samples (busy, queued) taken from `sinceEpochMs` on (default: since the
   * target started), when the target can tell.
   */
  poolSamples(sinceEpochMs?: number): Promise<readonly PoolSample[] | undefined>;
  readonly poolConnections: number | undefined;
  readonly pids: () => number[];
  close(): Promise<void>;
}

export interface DemoTargetOptions {
  readonly stack: 'prazo' | 'naive';
  /** Per hop (orders, inventory, supplier): the configured p99 (prazo only). */
  readonly latencies: Readonly<Record<HopName, number>>;
  readonly doubleOrigin: string;
  readonly naiveTimeoutMs: number;
  readonly poolConnections: number;
  /** req/s on the dependent route while warming up (the drill's rate): the double answers at once then. */
  readonly warmUpRate: number;
  readonly clock: Clock;
}

/**
 * A warm service, as the one a drill is run against in production: connections open, code compiled,
 * at the drill's own rate. Cold, the demo's chain at 100 checkouts/s answered half of them and half
 * the catalog in its first seconds, with a double answering at once.
 */
const WARM_UP_MS = 1_000;

export async function startDemoTarget(options: DemoTargetOptions): Promise<DrillTarget> {
  const { clock, stack } = options;
  const group = new ProcessGroup({
    entry: serviceEntry(),
    clock,
    timeoutMs: DEMO_DEFAULTS.startTimeoutMs,
    killGraceMs: DEMO_DEFAULTS.killGraceMs,
  });
  try {
    const hop = (name: HopName) => ({ p99Ms: options.latencies[name], p95Ms: options.latencies[name] });
    const latencies: HopLatencies = {
      orders: hop('orders'),
      inventory: hop('inventory'),
      supplier: hop('supplier'),
    };
    const spawned = await spawnStack(group, stack, { supplierInstances: 0 });
    const running: RunningStack = await startStack(
      group,
      spawned,
      { seed: 1, bucketMs: DEMO_DEFAULTS.bucketMs, poolConnections: options.poolConnections },
      latencies,
      { supplierOrigins: [options.doubleOrigin], naiveTimeoutMs: options.naiveTimeoutMs },
    );
    // A warm service: both routes, the double answering at once (the drill counts its arrivals from
    // the incident on).
    await runLoad({
      origin: running.gatewayOrigin,
      routes: [
        { route: 'checkout', path: '/checkout', rate: options.warmUpRate },
        { route: 'catalog', path: '/catalog', rate: 20 },
      ],
      durationMs: WARM_UP_MS,
      deadlineMs: 2_000,
      clock,
    });
    const gateway = running.children.find((c) => c.role === 'gateway')!.child;
    await group.reset(gateway, {});
    return {
      origin: running.gatewayOrigin,
      dependentRoutes: ['/checkout'],
      independentRoutes: ['/catalog'],
      poolConnections: options.poolConnections,
      poolSamples: async (sinceEpochMs = Number.NEGATIVE_INFINITY) =>
        (await group.report(gateway)).pool?.samples.filter((p) => p.epochMs >= sinceEpochMs),
      pids: () => group.pids(),
      close: () => group.close(),
    };
  } catch (error) {
    await group.close();
    throw error;
  }
}
