import { resolve } from 'node:path';
import type { Command } from 'commander';
import { calibrateFromDistribution } from '../../calibrate/from-distribution.js';
import { checkPool } from '../../calibrate/pool.js';
import { readLatencySource } from '../../calibrate/sources/detect.js';
import { type LatencyDistribution, SOURCE_LIMITS, SourceError } from '../../calibrate/sources/types.js';
import { calibrateTimeout } from '../../calibrate/timeout.js';
import { readBoundedText } from '../../config/load.js';
import { isInvalidOptions } from '../../errors/guards.js';
import { NAMING_SCHEMES } from '../../rules/names.js';
import { cliContext, ExitCode, UsageError } from '../context.js';
import { choiceArg, numberArg } from '../parse-args.js';
import { type FleetFlags, fleetCommand } from './calibrate-fleet.js';
import { type CalibrateReport, renderCalibrateTable, renderFleetTable } from './calibrate-render.js';

/**
 * `prazo calibrate`: a recommendation from a measured p99 (SPEC C1–C4, C6). From `--p99`, or from a
 * latency file: a Prometheus histogram (`*_bucket{le=…}`), a newline list of samples, or a CSV with a
 * latency column. The window is judged first; a degraded one is refused (exit 1). With `--prometheus`,
 * every dependency of a config, from the fleet's Prometheus (`calibrate-fleet.ts`).
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
} as const;
/** Flags of fleet calibration only. */
const FLEET_FLAGS = {
  config: '--config',
  window: '--window',
  step: '--step',
  end: '--end',
  write: '--write',
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
    .option('--unit <unit>', 'unit of the file values: s, ms, us', choiceArg('--unit', ['s', 'ms', 'us']))
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
    .option('--prometheus <url>', "calibrate every dependency of --config from the fleet's Prometheus")
    .option('--config <file>', 'with --prometheus: the central config (default prazo.config.yaml)')
    .option('--window <duration>', 'with --prometheus: how far back to read (default 7d)')
    .option('--step <duration>', 'with --prometheus: one sub-window, judged on its own (default 1h)')
    .option('--end <time>', 'with --prometheus: end of the window, RFC 3339 or Unix seconds (default now)')
    .option('--write', 'with --prometheus: write the measured p99s into --config (only the numbers change)')
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
      context.exitCode =
        report.refused !== null || (flags.strict && warned) ? ExitCode.warnings : ExitCode.ok;
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

export function calibrateCommand(flags: Flags, cwd: string): CalibrateReport {
  if ((flags.p99 === undefined) === (flags.histogram === undefined)) {
    throw new UsageError('give exactly one of --p99 <ms>, --histogram <file> or --prometheus <url>');
  }
  if ((flags.poolSize === undefined) !== (flags.rps === undefined)) {
    throw new UsageError('--pool-size and --rps go together');
  }
  const timeout = {
    userDeadlineMs: flags.deadline,
    attempts: flags.attempts,
    slack: flags.slack,
    forceSlack: flags.forceSlack,
    connectCapMs: flags.connectCap,
    overheadMs: flags.overhead,
  };
  const distribution = flags.histogram === undefined ? undefined : readSource(flags, cwd);
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
  return {
    source:
      distribution === undefined
        ? { kind: 'p99', p99Ms: flags.p99! }
        : { kind: 'file', file: flags.histogram!, ...distribution },
    health: result.verdict,
    refused: result.refused,
    recommendation: result.calibration ?? null,
    deadlineMs: flags.deadline ?? null,
    warnings,
  };
}
