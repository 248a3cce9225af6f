import { calibrateTimeout } from '../../calibrate/timeout.js';
import type { Clock } from '../../clock/clock.js';
import { DEMO_DEFAULTS, PRAZO_STACK_DEFAULTS } from '../constants.js';
import { runLoad } from '../load/generator.js';
import type { ProcessGroup } from '../process/children.js';
import { SCENARIOS } from '../scenarios.js';
import { quantile } from '../stats.js';
import type { DemoSettings } from './options.js';
import { type RunningStack, resetStack } from './topology.js';

/** The three hops a client calls: gateway → orders, orders → inventory, inventory → supplier. */
export type HopName = 'orders' | 'inventory' | 'supplier';
export const HOPS: readonly HopName[] = ['orders', 'inventory', 'supplier'];

export interface HopCalibration {
  /** Successful calls measured. */
  readonly samples: number;
  readonly p50Ms: number;
  readonly p95Ms: number;
  /** The quantile the supplier is hedged after (`PRAZO_STACK_DEFAULTS.hedgePercentile`, H1). */
  readonly hedgeMs: number;
  /** Healthy p99 of the hop, measured by its caller (SPEC C1). */
  readonly p99Ms: number;
  /** What `calibrateTimeout` derives from it for the gateway's deadline (SPEC C1–C3). */
  readonly responseMs: number;
  readonly connectMs: number;
  readonly attempts: number;
  readonly warning: string | null;
}

export type Calibration = Readonly<Record<HopName, HopCalibration>>;

const CALLER: Record<Exclude<HopName, 'orders'>, string> = { inventory: 'orders', supplier: 'inventory' };

/**
 * Measures each hop's healthy latency before the scenarios (SPEC C1: timeouts come from a measured
 * distribution, never a guess). A healthy chain takes checkout traffic for a while and every service
 * records how long its successful downstream calls took; the p99 of each hop, as its caller sees it,
 * is what the prazo stack is configured with. The measuring chain is the naive one (no deadline,
 * long timeouts), so nothing it does cuts the tail it is measuring. The traffic enters at orders,
 * not at the gateway: the gateway → orders hop is timed from outside, so that waiting for one of
 * the gateway's few pooled connections (a queue, not the dependency's latency) is not calibrated in.
 */
export async function calibrate(
  group: ProcessGroup,
  running: RunningStack,
  settings: DemoSettings,
  clock: Clock,
  signal: AbortSignal | undefined,
): Promise<Calibration> {
  // Every hop measured over the same window: without this, the warm-up's cold samples would inflate
  // the inner hops' p99 over the outer ones, and prazo would rightly refuse deadlines that cannot fit.
  await resetStack(group, running, SCENARIOS.find((s) => s.name === 'healthy')!);
  const measured = await runLoad({
    origin: running.ordersOrigin,
    routes: [{ route: 'checkout', path: '/orders/checkout', rate: DEMO_DEFAULTS.calibrationRate }],
    durationMs: settings.calibrationMs,
    deadlineMs: settings.userDeadlineMs,
    clock,
    ...(signal ? { signal } : {}),
  });
  if (signal?.aborted) throw signal.reason;
  const reports = await Promise.all(running.children.map(({ child }) => group.report(child, true)));
  const samplesOf = (hop: Exclude<HopName, 'orders'>): readonly number[] =>
    reports.find((r) => r.role === CALLER[hop])?.downstreamLatencies ?? [];
  const orders = measured.filter((u) => u.outcome === 'ok').map((u) => u.latencyMs);
  return {
    orders: fromSamples(orders, settings),
    inventory: fromSamples(samplesOf('inventory'), settings),
    supplier: fromSamples(samplesOf('supplier'), settings),
  };
}

function fromSamples(samples: readonly number[], settings: DemoSettings): HopCalibration {
  if (samples.length < 20) {
    throw new Error(
      `calibration measured only ${samples.length} healthy calls on a hop; the machine may be overloaded`,
    );
  }
  const p99Ms = Math.ceil(quantile(samples, 0.99)!);
  const timeouts = calibrateTimeout({
    p99Ms,
    userDeadlineMs: Math.min(PRAZO_STACK_DEFAULTS.gatewayDeadlineMs, settings.userDeadlineMs),
    attempts: PRAZO_STACK_DEFAULTS.attempts,
  });
  return {
    samples: samples.length,
    p50Ms: Math.round(quantile(samples, 0.5)!),
    p95Ms: Math.ceil(quantile(samples, 0.95)!),
    hedgeMs: Math.ceil(quantile(samples, PRAZO_STACK_DEFAULTS.hedgePercentile)!),
    p99Ms,
    responseMs: timeouts.responseMs,
    connectMs: timeouts.connectMs,
    attempts: timeouts.attempts,
    warning: timeouts.warning,
  };
}
