import { dirname, resolve } from 'node:path';
import type { Command } from 'commander';
import { calibrateFromDistribution } from '../../calibrate/from-distribution.js';
import { DEPENDENCY_KINDS, type DependencyKind, implausibleP99 } from '../../calibrate/kinds.js';
import { CALIBRATE_TIMEOUT_OPTIONS } from '../../calibrate/options.js';
import { checkPool } from '../../calibrate/pool.js';
import { readLatencySource } from '../../calibrate/sources/detect.js';
import { type LatencyDistribution, SOURCE_LIMITS, SourceError } from '../../calibrate/sources/types.js';
import { calibrateTimeout } from '../../calibrate/timeout.js';
import { CONFIG_LIMITS } from '../../config/constants.js';
import type { DependencyConfig } from '../../config/dependency.js';
import { checkConfigText, readBoundedText } from '../../config/load.js';
import { formatProblem } from '../../config/problem.js';
import { rewriteNumbers } from '../../config/rewrite.js';
import { DEPENDENCY_IN_FILE } from '../../config/schema.js';
import { isInvalidOptions } from '../../errors/guards.js';
import { NAMING_SCHEMES } from '../../rules/names.js';
import { cliContext, ExitCode, UsageError } from '../context.js';
import { replaceFile } from '../files.js';
import { choiceArg, numberArg } from '../parse-args.js';
import { type FleetFlags, fleetCommand, p99ToWrite } from './calibrate-fleet.js';
import {
  type CalibrateReport,
  type ConfigWrite,
  renderCalibrateTable,
  renderFleetTable,
} from './calibrate-render.js';

/**
 * `prazo calibrate`: a recommendation from a measured p99 (SPEC C1–C4, C6). From `--p99`, or from a
 * latency file: a Prometheus histogram (`*_bucket{le=…}`), a newline list of samples, or a CSV with a
 * latency column, whose unit is read from its name or given (`--unit`), never assumed. The window is
 * judged first; a degraded one is refused (exit 1), and so is a deadline no attempt fits in (exit 1: CI
 * can stop on it). A p99 no call of its kind has (below 1 ms over a network, above 10 minutes) is an
 * error (exit 2) unless `--kind` or `--unusual-p99` says it is real. From a file, the `p99Ms:` line the
 * config needs is printed, and `--write` puts it into `--config` under `--dependency` (only that
 * number changes, or that one line is added). With `--prometheus`, every dependency of a config, from
 * the fleet's Prometheus (`calibrate-fleet.ts`).
 */
interface Flags extends Omit<FleetFlags, 'prometheus'> {
  p99?: number;
  histogram?: string;
  format?: 'prometheus' | 'samples' | 'csv';
  unit?: 's' | 'ms' | 'us';
  metric?: string;
  column?: string;
  deadline?: number;
  attempts?: number;
  slack?: number;
  forceSlack?: boolean;
  connectCap?: number;
  overhead?: number;
  baselineP99?: number;
  poolSize?: number;
  rps?: number;
  json?: boolean;
  strict?: boolean;
  /** The kind of call (SPEC C8): which p99s are plausible. Default: the `--dependency`'s, else a network call. */
  kind?: DependencyKind;
  /** Accept a p99 outside what the kind makes plausible. */
  unusualP99?: boolean;
  /** The config entry the measured p99 is for (its settings are the defaults of the flags). */
  dependency?: string;
  /** --prometheus: fleet calibration, with its own flags (`calibrate-fleet.ts`). */
  prometheus?: string;
}

/** Flags that describe one dependency: with --prometheus each dependency's own config says them. */
const SINGLE_FLAGS = {
  p99: '--p99',
  histogram: '--histogram',
  format: '--format',
  unit: '--unit',
  metric: '--metric',
  column: '--column',
  deadline: '--deadline',
  attempts: '--attempts',
  slack: '--slack',
  forceSlack: '--force-slack',
  connectCap: '--connect-cap',
  overhead: '--overhead',
  baselineP99: '--baseline-p99',
  poolSize: '--pool-size',
  rps: '--rps',
  kind: '--kind',
  unusualP99: '--unusual-p99',
  dependency: '--dependency',
} as const;
/** Flags of fleet calibration only (`--config` and `--write` serve both). */
const FLEET_FLAGS = {
  window: '--window',
  step: '--step',
  end: '--end',
  naming: '--naming',
  bearerTokenFile: '--bearer-token-file',
  basicAuthFile: '--basic-auth-file',
  timeout: '--timeout',
  concurrency: '--concurrency',
} as const;

const given = (flags: Flags, table: Record<string, string>): string[] =>
  Object.entries(table)
    .filter(([key]) => flags[key as keyof Flags] !== undefined)
    .map(([, flag]) => flag);

export function register(program: Command): void {
  program
    .command('calibrate')
    .description('recommend connect/response timeouts and attempts from a measured p99')
    .option('--p99 <ms>', 'healthy p99 of the dependency, in ms', numberArg('--p99', 'ms'))
    .option('--histogram <file>', 'latency file: Prometheus histogram, sample list, or CSV')
    .option(
      '--format <format>',
      'file format (default: detected)',
      choiceArg('--format', ['prometheus', 'samples', 'csv']),
    )
    .option(
      '--unit <unit>',
      'unit of the file values: s, ms, us (needed when a column or metric name does not say it, and for a sample list)',
      choiceArg('--unit', ['s', 'ms', 'us']),
    )
    .option('--metric <name>', 'Prometheus histogram to read, when the file holds several')
    .option('--column <name>', 'CSV latency column')
    .option('--deadline <ms>', "the caller's deadline, in ms", numberArg('--deadline', 'ms'))
    .option('--attempts <n>', 'attempts wanted (default 2)', numberArg('--attempts'))
    .option('--slack <x>', 'multiplier over p99, 1.3 to 1.5 (default 1.4)', numberArg('--slack'))
    .option('--force-slack', 'accept a slack outside 1.3–1.5 (within 1–3)')
    .option(
      '--connect-cap <ms>',
      'cap of the connect timeout (default 400)',
      numberArg('--connect-cap', 'ms'),
    )
    .option('--overhead <ms>', 'overhead per attempt (default 30)', numberArg('--overhead', 'ms'))
    .option('--baseline-p99 <ms>', 'healthy p99 to detect a jump against', numberArg('--baseline-p99', 'ms'))
    .option(
      '--max-error-rate <r>',
      'refuse a window above this error rate (default 0.02)',
      numberArg('--max-error-rate'),
    )
    .option(
      '--max-timeout-rate <r>',
      'refuse a window above this timeout rate (default 0.01)',
      numberArg('--max-timeout-rate'),
    )
    .option(
      '--min-samples <n>',
      'calls a window needs to be judged (default 100)',
      numberArg('--min-samples'),
    )
    .option(
      '--pool-size <n>',
      "connections in the caller's pool (Little's law check)",
      numberArg('--pool-size'),
    )
    .option('--rps <r>', 'arrival rate into that pool, req/s', numberArg('--rps'))
    .option(
      '--kind <kind>',
      `kind of call, for which p99s are plausible: ${DEPENDENCY_KINDS.join(', ')} (default: the --dependency's, else a network call: 1 ms to 10 min)`,
      choiceArg('--kind', DEPENDENCY_KINDS),
    )
    .option(
      '--unusual-p99',
      'accept a p99 outside what its kind makes plausible (it is real, not a unit read wrong)',
    )
    .option(
      '--dependency <name>',
      'the --config entry the measured p99 is for: its settings (attempts, slack, deadline, kind) are the defaults, and --write writes its p99Ms',
    )
    .option('--prometheus <url>', "calibrate every dependency of --config from the fleet's Prometheus")
    .option('--config <file>', 'the central config (default prazo.config.yaml)')
    .option('--window <duration>', 'with --prometheus: how far back to read (default 7d)')
    .option('--step <duration>', 'with --prometheus: one sub-window, judged on its own (default 1h)')
    .option('--end <time>', 'with --prometheus: end of the window, RFC 3339 or Unix seconds (default now)')
    .option(
      '--write',
      'write the measured p99 into --config (with --histogram: under --dependency; with --prometheus: every one); only the numbers change, a missing p99Ms is added',
    )
    .option(
      '--naming <scheme>',
      "with --prometheus: how prazo's own metric names look in it: exporter or otlp (default exporter)",
      choiceArg('--naming', NAMING_SCHEMES),
    )
    .option('--bearer-token-file <file>', 'with --prometheus: send the token in this file as a bearer token')
    .option(
      '--basic-auth-file <file>',
      'with --prometheus: basic auth from this file (one line user:password)',
    )
    .option(
      '--timeout <ms>',
      'with --prometheus: limit of each query (default 10000)',
      numberArg('--timeout', 'ms'),
    )
    .option(
      '--concurrency <n>',
      'with --prometheus: queries in flight at once (default 8)',
      numberArg('--concurrency'),
    )
    .option('--json', 'print JSON instead of a table')
    .option(
      '--strict',
      'exit 1 on warnings (with --prometheus: on drift, a refused dependency or a refused sub-window)',
    )
    .action(async (flags: Flags, command: Command) => {
      const context = cliContext(command);
      if (flags.prometheus !== undefined) {
        const single = given(flags, SINGLE_FLAGS);
        if (single.length > 0) {
          throw new UsageError(
            `${single.join(', ')}: not with --prometheus (each dependency's config gives its own)`,
          );
        }
        const report = await fleetCommand({ ...flags, prometheus: flags.prometheus }, context.io.cwd);
        context.io.stdout(flags.json ? `${JSON.stringify(report, null, 2)}\n` : renderFleetTable(report));
        for (const line of report.failures) context.io.stderr(`prazo calibrate: ${line}\n`);
        // --strict: any dependency refused, drifting, or with a sub-window the guard refused.
        const flagged = report.dependencies.some(
          (d) =>
            d.refused !== null ||
            d.drift?.status === 'too-tight' ||
            d.drift?.status === 'idle-margin' ||
            d.windows.some((w) => w.verdict.health === 'degraded'),
        );
        context.exitCode =
          report.failures.length > 0
            ? ExitCode.badInput
            : flags.strict && flagged
              ? ExitCode.warnings
              : ExitCode.ok;
        return;
      }
      const fleetOnly = given(flags, FLEET_FLAGS);
      if (fleetOnly.length > 0) throw new UsageError(`${fleetOnly.join(', ')}: only with --prometheus <url>`);
      const report = calibrateCommand(flags, context.io.cwd);
      context.io.stdout(flags.json ? `${JSON.stringify(report, null, 2)}\n` : renderCalibrateTable(report));
      const warned = report.warnings.length > 0;
      // Infeasible is a verdict CI must be able to stop on: no attempt fits the deadline (issue 27).
      const infeasible = report.recommendation !== null && !report.recommendation.feasible;
      context.exitCode =
        report.refused !== null || infeasible || (flags.strict && warned) ? ExitCode.warnings : ExitCode.ok;
    });
}

/** Runs a library call; its INVALID_OPTIONS becomes a one-line usage error (exit 2). */
function guarded<R>(fn: () => R): R {
  try {
    return fn();
  } catch (error) {
    if (isInvalidOptions(error)) throw new UsageError(error.problems.join('; '));
    throw error;
  }
}

function readSource(flags: Flags, cwd: string): LatencyDistribution {
  const file = flags.histogram!;
  let text: string;
  try {
    text = readBoundedText(resolve(cwd, file), SOURCE_LIMITS.maxBytes);
  } catch (error) {
    throw new UsageError(`cannot read ${file}: ${(error as Error).message}`);
  }
  try {
    return readLatencySource(text, {
      format: flags.format,
      unit: flags.unit,
      metric: flags.metric,
      column: flags.column,
    });
  } catch (error) {
    if (error instanceof SourceError) throw new UsageError(`${file}: ${error.message}`);
    throw error;
  }
}

/** The config entry `--dependency` names, with the file's text (for `--write`). */
interface Target {
  readonly file: string;
  readonly path: string;
  readonly text: string;
  readonly index: number;
  readonly entry: DependencyConfig;
  readonly readText: (f: string) => string;
}

function readTarget(flags: Flags, cwd: string): Target | undefined {
  if (flags.dependency === undefined) {
    if (flags.write) {
      throw new UsageError(
        '--write needs --dependency <name>: the entry of --config (default prazo.config.yaml) the p99 is for',
      );
    }
    return undefined;
  }
  const file = flags.config ?? 'prazo.config.yaml';
  const path = resolve(cwd, file);
  let text: string;
  try {
    text = readBoundedText(path, CONFIG_LIMITS.maxBytes);
  } catch (error) {
    throw new UsageError(`cannot read ${file}: ${(error as Error).message}`);
  }
  const readText = (f: string): string => readBoundedText(resolve(dirname(path), f), 16 * 1024 * 1024);
  const check = checkConfigText(text, { file, readText });
  if (check.config === undefined) {
    const errors = check.problems.filter((p) => p.severity === 'error');
    throw new UsageError(`${file} has problems:\n${errors.map(formatProblem).join('\n')}`);
  }
  const entry = guarded(() => check.config!.dependency(flags.dependency!));
  const index = [...check.config.dependencies.keys()].indexOf(entry.options.name);
  return { file, path, text, index, entry, readText };
}

export function calibrateCommand(flags: Flags, cwd: string): CalibrateReport {
  if ((flags.p99 === undefined) === (flags.histogram === undefined)) {
    throw new UsageError('give exactly one of --p99 <ms>, --histogram <file> or --prometheus <url>');
  }
  if ((flags.poolSize === undefined) !== (flags.rps === undefined)) {
    throw new UsageError('--pool-size and --rps go together');
  }
  if (flags.write && flags.histogram === undefined) {
    throw new UsageError('--write writes a measurement: give --histogram <file> (or --prometheus <url>)');
  }
  const target = readTarget(flags, cwd);
  const o = target?.entry.options;
  // The flags win; the entry's own settings (what createDependency uses) fill the rest.
  const timeout = {
    userDeadlineMs:
      flags.deadline ??
      (target === undefined
        ? undefined
        : (o!.defaultDeadlineMs ?? DEPENDENCY_IN_FILE.defaults.defaultDeadlineMs)),
    attempts: flags.attempts ?? o?.attempts,
    slack: flags.slack ?? o?.slack,
    forceSlack: flags.forceSlack ?? o?.forceSlack,
    connectCapMs: flags.connectCap ?? o?.connectCapMs,
    overheadMs: flags.overhead ?? o?.overheadMs,
  };
  const kind = flags.kind ?? target?.entry.kind;
  const distribution = flags.histogram === undefined ? undefined : readSource(flags, cwd);
  // A p99 no call of its kind has is a unit read wrong far more often than a real dependency. 0 too
  // (`--p99 0`, `--p99 1e-400`, a file of zeros): below every network call's floor, it would yield
  // 1 ms timeouts.
  const p99 = flags.p99 ?? (distribution?.p99Bounded ? distribution.p99 : undefined);
  if (p99 !== undefined && !(flags.unusualP99 ?? target?.entry.unusualP99 === true)) {
    const why = implausibleP99(p99, kind, 'flags');
    if (why !== undefined) throw new UsageError(`${flags.histogram ?? '--p99'}: ${why}`);
  }
  const result = guarded(() => {
    if (distribution === undefined) {
      const calibration = calibrateTimeout({ ...timeout, p99Ms: flags.p99! });
      return {
        verdict: null,
        refused: null,
        calibration,
        warnings: calibration.warning ? [calibration.warning] : [],
      };
    }
    return calibrateFromDistribution(distribution, {
      ...timeout,
      baselineP99Ms: flags.baselineP99,
      maxErrorRate: flags.maxErrorRate,
      maxTimeoutRate: flags.maxTimeoutRate,
      minSamples: flags.minSamples,
    });
  });
  const warnings = [...result.warnings];
  if (result.calibration !== undefined && flags.poolSize !== undefined && flags.rps !== undefined) {
    const { poolSize, rps } = flags;
    const pool = guarded(() => checkPool({ poolSize, rps, timeoutMs: result.calibration!.responseMs }));
    if (pool.warning !== null) warnings.push(pool.warning);
  }
  // The config line a measurement yields: the p99 that loads back into exactly this response timeout.
  const slack = timeout.slack ?? CALIBRATE_TIMEOUT_OPTIONS.defaults.slack;
  const configLine =
    distribution?.p99 !== undefined && result.calibration !== undefined
      ? { p99Ms: p99ToWrite(distribution.p99, slack, result.calibration.responseMs) }
      : null;
  const write = target === undefined ? null : writeTarget(flags, target, configLine, result.verdict?.health);
  return {
    source:
      distribution === undefined
        ? { kind: 'p99', p99Ms: flags.p99! }
        : { kind: 'file', file: flags.histogram!, ...distribution },
    health: result.verdict,
    refused: result.refused,
    recommendation: result.calibration ?? null,
    deadlineMs: timeout.userDeadlineMs ?? null,
    warnings,
    configLine,
    config: write,
  };
}

/**
 * `--dependency` (and `--write`): what the entry has now, and with `--write` the file rewritten with
 * the measured p99 — only that number, or one added line. Nothing is written from a refused window,
 * a window too small to judge, or an entry whose p99 a histogram file gives at load.
 */
function writeTarget(
  flags: Flags,
  target: Target,
  line: { readonly p99Ms: number } | null,
  health: string | undefined,
): ConfigWrite {
  const { entry, file } = target;
  const name = entry.options.name;
  const current = {
    file,
    dependency: name,
    fromMs: entry.options.p99Ms,
    assumed: entry.assumed === undefined ? null : entry.assumed.kind,
  };
  if (!flags.write) return { ...current, toMs: null, written: false };
  if (entry.p99Source !== 'config') {
    throw new UsageError(
      `not written: ${name}'s p99 is read from ${entry.p99Source.file} at load; replace that file, or remove \`histogram.file\` to keep a p99Ms`,
    );
  }
  if (line === null) return { ...current, toMs: null, written: false }; // refused: the table says why
  if (health !== 'healthy') {
    throw new UsageError(
      `not written: the window has too few calls to judge (minSamples); a p99 from it is unreliable. Measure longer, or lower --min-samples`,
    );
  }
  let updated: string;
  try {
    updated = rewriteNumbers(target.text, [
      { path: ['dependencies', target.index, 'p99Ms'], value: line.p99Ms, add: true },
    ]);
  } catch (error) {
    throw new UsageError(`${file}: ${(error as Error).message}`);
  }
  const recheck = checkConfigText(updated, { file, readText: target.readText });
  const errors = recheck.problems.filter((p) => p.severity === 'error');
  if (errors.length > 0) {
    throw new UsageError(
      `not written: the new ${file} would not load:\n${errors.map(formatProblem).join('\n')}`,
    );
  }
  try {
    replaceFile(target.path, updated);
  } catch (error) {
    throw new UsageError(`cannot write ${file}: ${(error as Error).message}`);
  }
  return { ...current, toMs: line.p99Ms, written: true };
}
