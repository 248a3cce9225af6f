import type { Clock } from '../../clock/clock.js';
import { systemClock } from '../../clock/system.js';
import { OptionsValidator } from '../../options/validator.js';
import { DEMO_DEFAULTS, DEMO_LIMITS } from '../constants.js';
import { DEFAULT_SCENARIOS, SCENARIOS, scenariosNamed } from '../scenarios.js';
import { type Scenario, STACK_NAMES, type StackName } from '../types.js';
import type { ProgressEvent } from './progress-events.js';

/** Options of {@link runDemo}. Every duration in ms, every rate in requests per second. */
export interface DemoOptions {
  /** Stacks compared side by side. Default naive and prazo (add cockatiel for the third). */
  readonly stacks?: readonly StackName[];
  /**
   * Scenario names, in order. Default: healthy, slow, down, hung, tail, instance-down, instance-503;
   * overload-hung, overload-slow and recover run when named.
   */
  readonly scenarios?: readonly string[];
  /**
   * Load time of each scenario, per stack. Default 3000 (10000 for `healthy`, `tail` and the
   * `overload-*` ones, 6000 for `instance-503`: their bars need more requests); [200, 600000]. Given,
   * it applies to every scenario.
   */
  readonly loadMs?: number;
  /** Longest wait for lingering work after the load. Default 2000; [0, 120000]. */
  readonly drainMaxMs?: number;
  /** Offered rate of `GET /checkout` (reaches the supplier). Default 20; (0, 2000]. */
  readonly checkoutRate?: number;
  /** Offered rate of `GET /catalog` (independent route). Default 10; [0, 2000]. */
  readonly catalogRate?: number;
  /** Connections of the gateway → orders pool. Default 15; integer [1, 10000]. */
  readonly poolConnections?: number;
  /** Supplier instances. Default 3; integer [1, 16]. */
  readonly supplierInstances?: number;
  /** The user's deadline. Default 2000; [100, 600000]. */
  readonly userDeadlineMs?: number;
  /** Healthy calibration phase before the scenarios. Default 3500; [500, 600000]. */
  readonly calibrationMs?: number;
  /** Seed of the supplier doubles' latencies. Default 1; integer. */
  readonly seed?: number;
  readonly clock?: Clock;
  /** Aborting stops the run and every process (Ctrl-C). */
  readonly signal?: AbortSignal;
  /** Progress as it happens. */
  readonly onProgress?: (event: ProgressEvent) => void;
}

export const DEFAULT_STACKS: readonly StackName[] = ['naive', 'prazo'];

export interface DemoSettings {
  readonly stacks: readonly StackName[];
  readonly scenarios: readonly Scenario[];
  readonly loadMs: number;
  readonly drainMaxMs: number;
  readonly checkoutRate: number;
  readonly catalogRate: number;
  readonly poolConnections: number;
  readonly supplierInstances: number;
  readonly userDeadlineMs: number;
  readonly calibrationMs: number;
  readonly seed: number;
  readonly bucketMs: number;
}

export function resolveDemoOptions(options: DemoOptions): DemoSettings & { clock: Clock } {
  const v = new OptionsValidator('runDemo');
  const o = options ?? {};
  const L = DEMO_LIMITS;
  const D = DEMO_DEFAULTS;
  const stacks = o.stacks ?? DEFAULT_STACKS;
  if (!Array.isArray(stacks) || stacks.length === 0) v.problem('`stacks` must list at least one stack');
  for (const s of stacks)
    if (!STACK_NAMES.includes(s))
      v.problem(`\`stacks\`: unknown stack ${JSON.stringify(s)} (${STACK_NAMES.join(', ')})`);
  const { found, unknown } = scenariosNamed(o.scenarios ?? DEFAULT_SCENARIOS.map((s) => s.name));
  if (unknown.length > 0)
    v.problem(`\`scenarios\`: unknown ${unknown.join(', ')} (${SCENARIOS.map((s) => s.name).join(', ')})`);
  if (found.length === 0 && unknown.length === 0) v.problem('`scenarios` must list at least one scenario');
  const rate = (name: string, value: unknown, def: number, min: number) =>
    v.number(name, value, {
      default: def,
      min,
      exclusiveMin: min === 0 && name === 'checkoutRate',
      max: L.maxRate,
    });
  const loadMs = v.number('loadMs', o.loadMs, { default: D.loadMs, min: L.minLoadMs, max: L.maxLoadMs });
  const settings = {
    stacks: [...new Set(stacks)],
    // A load time the run sets applies to every scenario; otherwise a scenario may ask for more.
    scenarios: found.map((s) => ({
      ...s,
      loadMs: o.loadMs !== undefined ? loadMs : Math.max(loadMs, s.loadMs ?? 0),
    })),
    loadMs,
    drainMaxMs: v.number('drainMaxMs', o.drainMaxMs, { default: D.drainMaxMs, min: 0, max: L.maxDrainMs }),
    checkoutRate: rate('checkoutRate', o.checkoutRate, D.checkoutRate, 0),
    catalogRate: rate('catalogRate', o.catalogRate, D.catalogRate, 0),
    poolConnections: v.number('poolConnections', o.poolConnections, {
      default: D.poolConnections,
      min: 1,
      max: L.maxPoolConnections,
      integer: true,
    }),
    supplierInstances: v.number('supplierInstances', o.supplierInstances, {
      default: D.supplierInstances,
      min: 1,
      max: L.maxSupplierInstances,
      integer: true,
    }),
    userDeadlineMs: v.number('userDeadlineMs', o.userDeadlineMs, {
      default: D.userDeadlineMs,
      min: 100,
      max: L.maxLoadMs,
    }),
    calibrationMs: v.number('calibrationMs', o.calibrationMs, {
      default: D.calibrationMs,
      min: 500,
      max: L.maxLoadMs,
    }),
    seed: v.number('seed', o.seed, { default: 1, min: 0, max: 2 ** 31 - 1, integer: true }),
    bucketMs: D.bucketMs,
  };
  v.done();
  return { ...settings, clock: o.clock ?? systemClock };
}
