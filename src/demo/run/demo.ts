import type { Clock } from '../../clock/clock.js';
import { DEMO_DEFAULTS, PRAZO_STACK_DEFAULTS } from '../constants.js';
import { runLoad } from '../load/generator.js';
import { ProcessGroup } from '../process/children.js';
import { serviceEntry } from '../process/entry.js';
import { type ScenarioSummary, summarizeScenario } from '../report/summary.js';
import { SCENARIOS } from '../scenarios.js';
import type { StackName } from '../types.js';
import { type Calibration, type HopName, hopCalibration, infeasibleHops } from './calibration.js';
import { type DemoOptions, type DemoSettings, resolveDemoOptions } from './options.js';
import type { ProgressEvent } from './progress-events.js';
import { runScenario, userLoad } from './scenario.js';
import { type RunningStack, resetStack, spawnStack, startStack } from './topology.js';

/** Everything a demo run measured: what `--json` prints and what the HTML report draws. */
export interface DemoResult {
  readonly version: 1;
  readonly settings: Omit<DemoSettings, 'scenarios'> & { readonly scenarios: readonly string[] };
  /** Per hop: the measured healthy p99 and the timeouts derived from it (absent without prazo). */
  readonly calibration: Calibration | undefined;
  readonly scenarios: readonly ScenarioSummary[];
  readonly startedAtEpochMs: number;
  readonly durationMs: number;
}

interface Run {
  readonly group: ProcessGroup;
  readonly settings: DemoSettings;
  readonly clock: Clock;
  readonly signal: AbortSignal | undefined;
  readonly onProgress: (event: ProgressEvent) => void;
}

/**
 * Runs the incident demo (SPEC X1): every stack's chain of processes is started and warmed up, the
 * hops are calibrated on a healthy chain, then each scenario runs on each stack in turn, on loopback.
 * Whatever happens (success, an error, an abort through `signal`), every process is stopped before
 * this returns or throws. Options are validated first, every problem reported together
 * (`InvalidOptionsError`).
 */
export async function runDemo(options: DemoOptions = {}): Promise<DemoResult> {
  const { clock, ...settings } = resolveDemoOptions(options);
  const signal = options.signal;
  const onProgress = options.onProgress ?? (() => {});
  const group = new ProcessGroup({
    entry: serviceEntry(),
    clock,
    timeoutMs: DEMO_DEFAULTS.startTimeoutMs,
    killGraceMs: DEMO_DEFAULTS.killGraceMs,
  });
  const run: Run = { group, settings, clock, signal, onProgress };
  const started = clock.now();
  const startedAtEpochMs = clock.epochNow();
  try {
    const { stacks, calibration } = await prepare(run);
    const scenarios: ScenarioSummary[] = [];
    for (const [index, scenario] of settings.scenarios.entries()) {
      if (signal?.aborted) throw signal.reason;
      onProgress({ type: 'scenario', index, total: settings.scenarios.length, ...scenario });
      const raw = await runScenario({ group, settings, clock, stacks, signal, onProgress }, scenario);
      scenarios.push(summarizeScenario(raw, settings.bucketMs, scenario.loadMs ?? settings.loadMs));
    }
    return {
      version: 1,
      settings: { ...settings, scenarios: settings.scenarios.map((s) => s.name) },
      calibration,
      scenarios,
      startedAtEpochMs,
      durationMs: Math.round(clock.now() - started),
    };
  } finally {
    await group.close();
  }
}

/**
 * Forks every process at once, starts the stacks that need no calibration, calibrates on the naive
 * chain (an extra one when naive is not compared), starts prazo with the measured p99s, and warms up
 * every stack that the calibration did not.
 */
async function prepare(run: Run): Promise<{ stacks: RunningStack[]; calibration: Calibration | undefined }> {
  const { group, settings, clock, signal, onProgress } = run;
  const wanted = settings.stacks;
  const needsCalibration = wanted.includes('prazo');
  const spawnList: StackName[] =
    needsCalibration && !wanted.includes('naive') ? ['naive', ...wanted] : [...wanted];
  const spawned = await Promise.all(spawnList.map((stack) => spawnStack(group, stack, settings)));
  const byName = new Map<StackName, RunningStack>();
  await Promise.all(
    spawned
      .filter((s) => s.stack !== 'prazo')
      .map(async (s) => byName.set(s.stack, await startStack(group, s, settings, undefined))),
  );
  let calibration: Calibration | undefined;
  if (needsCalibration) {
    onProgress({ type: 'warming', stack: 'naive', loadMs: DEMO_DEFAULTS.warmUpMs });
    await userLoad(run, byName.get('naive')!, DEMO_DEFAULTS.warmUpMs);
    onProgress({ type: 'calibrating', loadMs: settings.calibrationMs });
    calibration = await calibrate(group, byName.get('naive')!, settings, clock, signal);
    onProgress({ type: 'calibrated', calibration });
    byName.set(
      'prazo',
      await startStack(group, spawned.find((s) => s.stack === 'prazo')!, settings, calibration),
    );
    if (!wanted.includes('naive')) {
      await group.stop(byName.get('naive')!.children.map((c) => c.child));
      byName.delete('naive');
    }
  }
  const cold = wanted.filter((s) => !(s === 'naive' && needsCalibration));
  for (const stack of cold) {
    if (signal?.aborted) throw signal.reason;
    onProgress({ type: 'warming', stack, loadMs: DEMO_DEFAULTS.warmUpMs });
    await userLoad(run, byName.get(stack)!, DEMO_DEFAULTS.warmUpMs);
  }
  return { stacks: wanted.map((s) => byName.get(s)!), calibration };
}

/** Calibration attempts before the demo gives up on a machine too loaded to measure healthy latency. */
const CALIBRATION_TRIES = 2;

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
async function calibrate(
  group: ProcessGroup,
  running: RunningStack,
  settings: DemoSettings,
  clock: Clock,
  signal: AbortSignal | undefined,
): Promise<Calibration> {
  // A calibration that cannot fit one attempt in the deadline measured the machine's queues, not the
  // hops: measure again once, then refuse to run scenarios that would only show it.
  let problems: string[] = [];
  for (let tries = 0; tries < CALIBRATION_TRIES; tries += 1) {
    const calibration = await calibrateOnce(group, running, settings, clock, signal);
    problems = infeasibleHops(calibration);
    if (problems.length === 0) return calibration;
  }
  throw new Error(
    `calibration: ${problems.join(', ')} cannot fit one attempt in the gateway's deadline of ` +
      `${Math.min(PRAZO_STACK_DEFAULTS.gatewayDeadlineMs, settings.userDeadlineMs)} ms in ${CALIBRATION_TRIES} tries; ` +
      'the healthy chain was that slow, so the machine is too loaded to run the demo now',
  );
}

async function calibrateOnce(
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
  const supplier = hopCalibration(samplesOf('supplier'), settings, undefined);
  const inventory = hopCalibration(samplesOf('inventory'), settings, supplier);
  return { orders: hopCalibration(orders, settings, inventory), inventory, supplier };
}

/** The metrics of one stack in one scenario of a result (convenience for tests and tools). */
export function metricsOf(result: DemoResult, scenario: string, stack: StackName) {
  return result.scenarios.find((s) => s.name === scenario)?.stacks.find((m) => m.stack === stack);
}
