import type { Clock } from '../../clock/clock.js';
import { DEMO_DEFAULTS } from '../constants.js';
import { ProcessGroup } from '../process/children.js';
import { serviceEntry } from '../process/entry.js';
import { type ScenarioSummary, summarizeScenario } from '../report/summary.js';
import type { StackName } from '../types.js';
import { type Calibration, calibrate } from './calibration.js';
import { type DemoOptions, type DemoSettings, resolveDemoOptions } from './options.js';
import type { ProgressEvent } from './progress-events.js';
import { runScenario, userLoad } from './scenario.js';
import { type RunningStack, spawnStack, startStack } from './topology.js';

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

/** The metrics of one stack in one scenario of a result (convenience for tests and tools). */
export function metricsOf(result: DemoResult, scenario: string, stack: StackName) {
  return result.scenarios.find((s) => s.name === scenario)?.stacks.find((m) => m.stack === stack);
}
