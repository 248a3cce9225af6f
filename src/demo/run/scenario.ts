import { type Clock, sleep } from '../../clock/index.js';
import { runLoad } from '../load/generator.js';
import type { ProcessGroup } from '../process/children.js';
import type { TracePiece } from '../trace/types.js';
import type { Scenario, ServiceReport, StackName, UserResult } from '../types.js';
import type { DemoSettings } from './options.js';
import type { ProgressEvent } from './progress-events.js';
import { type RunningStack, resetServices, resetSuppliers } from './topology.js';

/** Everything measured for one stack in one scenario, before any summary. */
export interface StackRaw {
  readonly stack: StackName;
  /** Epoch ms just before the suppliers were reset for the scenario (an outage's clock starts after it). */
  readonly resetEpochMs: number;
  /** Epoch ms at which the load started, and at which the measurements were taken. */
  readonly startEpochMs: number;
  readonly endEpochMs: number;
  /** How long lingering downstream work was awaited after the load; `cutOff` when some still ran. */
  readonly drainedMs: number;
  readonly cutOff: boolean;
  readonly users: readonly UserResult[];
  readonly services: readonly ServiceReport[];
  /** The spans every service of the stack kept (issue #26: the report's trace waterfall). */
  readonly traces?: readonly TracePiece[];
}

export interface ScenarioRaw {
  readonly scenario: Scenario;
  readonly stacks: readonly StackRaw[];
}

export interface ScenarioContext {
  readonly group: ProcessGroup;
  readonly settings: DemoSettings;
  readonly clock: Clock;
  readonly stacks: readonly RunningStack[];
  readonly signal: AbortSignal | undefined;
  readonly onProgress: (event: ProgressEvent) => void;
}

const DRAIN_POLL_MS = 200;

/** The user load of a scenario (or a warm-up) on one stack's gateway. */
export function userLoad(
  ctx: Pick<ScenarioContext, 'settings' | 'clock' | 'signal'>,
  running: RunningStack,
  durationMs: number,
  onResult?: (result: UserResult) => void,
  checkoutRateMultiple = 1,
): Promise<UserResult[]> {
  const { settings, clock, signal } = ctx;
  return runLoad({
    origin: running.gatewayOrigin,
    routes: [
      { route: 'checkout', path: '/checkout', rate: settings.checkoutRate * checkoutRateMultiple },
      { route: 'catalog', path: '/catalog', rate: settings.catalogRate },
    ],
    durationMs,
    deadlineMs: settings.userDeadlineMs,
    clock,
    ...(signal ? { signal } : {}),
    ...(onResult ? { onResult } : {}),
  });
}

/**
 * One scenario: each stack in turn is reset (nothing carries over from the previous scenario:
 * budgets, latency windows, pools, lingering work), takes the same open-loop load, gets time for
 * the work still running downstream to end, and is measured. Stacks run one after the other, not at
 * once, so that one stack's retry storm cannot steal the CPU of another's services on a small
 * machine. Work still running at the cut-off is reported as such (its wasted time is then a lower
 * bound) and is cut by the next reset.
 */
export async function runScenario(ctx: ScenarioContext, scenario: Scenario): Promise<ScenarioRaw> {
  const stacks: StackRaw[] = [];
  for (const running of ctx.stacks) {
    if (ctx.signal?.aborted) throw ctx.signal.reason;
    stacks.push(await runStack(ctx, scenario, running));
  }
  return { scenario, stacks };
}

async function runStack(ctx: ScenarioContext, scenario: Scenario, running: RunningStack): Promise<StackRaw> {
  const { group, settings, clock, signal } = ctx;
  const { stack } = running;
  const loadMs = scenario.loadMs ?? settings.loadMs;
  ctx.onProgress({ type: 'phase', phase: 'starting', stack, loadMs });
  await resetServices(group, running);
  throwIfAborted(signal);
  await warmPool(ctx, running);
  throwIfAborted(signal);
  // The suppliers last, just before the load: an outage's clock starts here, and nothing reaches them
  // before the load does.
  const resetEpochMs = clock.epochNow();
  await resetSuppliers(group, running, scenario);
  throwIfAborted(signal);
  ctx.onProgress({ type: 'phase', phase: 'load', stack, loadMs });
  const startEpochMs = clock.epochNow();
  const users = await userLoad(
    ctx,
    running,
    loadMs,
    (result) => ctx.onProgress({ type: 'user', stack, result }),
    scenario.checkoutRateMultiple,
  );
  throwIfAborted(signal);
  ctx.onProgress({ type: 'phase', phase: 'draining', stack, loadMs });
  const drainStart = clock.now();
  let reports = await reportAll(group, running);
  while (inFlight(reports) > 0 && clock.now() - drainStart < settings.drainMaxMs) {
    await sleep(clock, DRAIN_POLL_MS, signal);
    reports = await reportAll(group, running);
  }
  const drainedMs = Math.round(clock.now() - drainStart);
  const cutOff = inFlight(reports) > 0;
  ctx.onProgress({ type: 'drained', stack, waitedMs: drainedMs, cutOff });
  const traces = (await Promise.all(running.children.map(({ child }) => group.traces(child)))).flat();
  return {
    stack,
    resetEpochMs,
    startEpochMs,
    endEpochMs: clock.epochNow(),
    drainedMs,
    cutOff,
    users,
    services: reports,
    traces,
  };
}

/** How long the services get to settle after the reset and the warm-up, before the load. */
const SETTLE_MS = 250;

/**
 * Between the services' reset and the suppliers': the reset gives the gateway a fresh, empty pool (the previous scenario's lingering calls are cut
 * with the old one), where a long-running service's pool is warm. Cold, the first checkouts of a 5×
 * load took the connections as they opened and the catalog's first requests waited for connects to a
 * busy orders: the five slowest catalog answers of an `overload-hung` run (77–171 ms, the p99 of its
 * 100) were its first five, sent in the first 0.42 s. So the pool is opened before the load, by as
 * many concurrent catalog requests as it has connections (the catalog's own client, which no
 * limit holds back; they end before the load starts, outside every measured bucket), and the
 * services get `SETTLE_MS` to finish the reset's work (closing the old pools) first.
 */
async function warmPool(
  ctx: Pick<ScenarioContext, 'settings' | 'clock' | 'signal'>,
  running: RunningStack,
): Promise<void> {
  const { settings, clock, signal } = ctx;
  await sleep(clock, SETTLE_MS, signal);
  const n = settings.poolConnections;
  await runLoad({
    origin: running.gatewayOrigin,
    // n requests within the first ms: concurrent, so the pool opens n connections.
    routes: [{ route: 'catalog', path: '/catalog', rate: n * 1_000 }],
    durationMs: 1,
    deadlineMs: settings.userDeadlineMs,
    clock,
    ...(signal ? { signal } : {}),
  });
}

function reportAll(group: ProcessGroup, running: RunningStack): Promise<ServiceReport[]> {
  return Promise.all(running.children.map(({ child }) => group.report(child)));
}

function inFlight(reports: readonly ServiceReport[]): number {
  let total = 0;
  for (const report of reports) total += report.ledger.inFlight;
  return total;
}

function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw signal.reason;
}
