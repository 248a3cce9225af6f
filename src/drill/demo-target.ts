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
  /** The gateway pool's samples (busy, queued) since the last reset, when the target can tell. */
  poolSamples(): Promise<readonly PoolSample[] | undefined>;
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
  readonly clock: Clock;
}

const WARM_UP_MS = 500;

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
    // A warm service: the independent route only, so the double sees nothing before the drill.
    await runLoad({
      origin: running.gatewayOrigin,
      routes: [{ route: 'catalog', path: '/catalog', rate: 20 }],
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
      poolSamples: async () => (await group.report(gateway)).pool?.samples,
      pids: () => group.pids(),
      close: () => group.close(),
    };
  } catch (error) {
    await group.close();
    throw error;
  }
}
