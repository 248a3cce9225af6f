import { dirname, resolve } from 'node:path';
import { shownOrigin } from '../../balance/options.js';
import {
  calibrateFleet,
  type FleetCalibration,
  type FleetDependency,
  type FleetDependencyResult,
  type FleetWindow,
} from '../../calibrate/fleet.js';
import { resolveHealthThresholds } from '../../calibrate/health.js';
import { implausibleP99 } from '../../calibrate/kinds.js';
import { CALIBRATE_TIMEOUT_OPTIONS } from '../../calibrate/options.js';
import { parseDuration } from '../../calibrate/promql.js';
import {
  type BasicAuth,
  createPrometheusClient,
  parseBaseUrl,
} from '../../calibrate/sources/prometheus-api.js';
import { slackedTimeoutMs } from '../../calibrate/timeout.js';
import { systemClock } from '../../clock/system.js';
import { CONFIG_LIMITS } from '../../config/constants.js';
import { checkConfigText, readBoundedText } from '../../config/load.js';
import { formatProblem } from '../../config/problem.js';
import { formatNumber, type NumberEdit, rewriteNumbers } from '../../config/rewrite.js';
import { DEPENDENCY_IN_FILE } from '../../config/schema.js';
import { isInvalidOptions } from '../../errors/guards.js';
import { latencySeries, type NamingScheme } from '../../rules/names.js';
import { UsageError } from '../context.js';
import { replaceFile } from '../files.js';

/**
 * `prazo calibrate --prometheus URL --config prazo.config.yaml`: every dependency of the config
 * calibrated from the fleet's Prometheus (SPEC X8, C1, C3–C5; the work is `calibrate/fleet.ts`), its
 * timeout in force compared with the measured p99 (drift), and with `--write` the measured p99s written
 * back into the file, only the numbers changing.
 */

export interface FleetFlags {
  prometheus: string;
  config?: string;
  window?: string;
  step?: string;
  end?: string;
  write?: boolean;
  naming?: NamingScheme;
  bearerTokenFile?: string;
  basicAuthFile?: string;
  timeout?: number;
  concurrency?: number;
  maxErrorRate?: number;
  maxTimeoutRate?: number;
  minSamples?: number;
}

/** A dependency the config measures another way (a histogram file read at load). */
export interface SkippedDependency {
  readonly name: string;
  readonly reason: string;
}

/** One change `--write` made (or would make): a dependency's p99Ms. */
export interface P99Change {
  readonly dependency: string;
  readonly fromMs: number;
  readonly toMs: number;
  /** Set when `fromMs` was never measured: the kind whose starting value it was (the key is added). */
  readonly assumed?: string;
}

/** What `prazo calibrate --prometheus` found, as printed with `--json`. */
export interface FleetReport {
  readonly prometheus: string;
  readonly config: string;
  readonly window: FleetWindow;
  readonly dependencies: readonly FleetDependencyResult[];
  readonly skipped: readonly SkippedDependency[];
  /** The p99Ms changes a `--write` applies: recommended timeout ≠ the one in force. */
  readonly changes: readonly P99Change[];
  /** Whether the file was rewritten. */
  readonly written: boolean;
  /** One line per distinct Prometheus failure (exit 2). */
  readonly failures: readonly string[];
  /** Milliseconds the queries took, end to end. */
  readonly elapsedMs: number;
}

/**
 * A secret file's text without the line end an editor adds, nor the byte-order mark Windows editors
 * put first: kept, it became part of the user name (`\uFEFFuser`) and Prometheus said only 401.
 */
const readSecret = (file: string, cwd: string, what: string): string => {
  try {
    return readBoundedText(resolve(cwd, file), 64 * 1024)
      .replace(/^\uFEFF/, '')
      .replace(/\r?\n$/, '');
  } catch (error) {
    throw new UsageError(`cannot read the ${what} file ${file}: ${(error as Error).message}`);
  }
};

function basicAuthOf(text: string, file: string): BasicAuth {
  const line = text.split(/\r?\n/)[0] ?? '';
  const colon = line.indexOf(':');
  if (colon <= 0) throw new UsageError(`${file} must hold one line user:password`);
  return { username: line.slice(0, colon), password: line.slice(colon + 1) };
}

const RFC3339 = /^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d)(?::(\d\d)(?:\.\d+)?)?(?:Z|[+-](\d\d):(\d\d))$/;

/**
 * True when every field of an RFC 3339 time is in its range. `Date.parse` rolls an impossible one
 * over (`2025-02-30` is 2 March, `T24:00` the next day), which would move the window without a word.
 */
function realDate(m: RegExpExecArray): boolean {
  const [year, month, day, hour, minute, second = 0, offsetH = 0, offsetM = 0] = m
    .slice(1)
    .map((f) => (f === undefined ? undefined : Number(f)));
  const leap = year! % 4 === 0 && (year! % 100 !== 0 || year! % 400 === 0);
  const days = month === 2 ? (leap ? 29 : 28) : [4, 6, 9, 11].includes(month!) ? 30 : 31;
  return (
    month! >= 1 &&
    month! <= 12 &&
    day! >= 1 &&
    day! <= days &&
    hour! <= 23 &&
    minute! <= 59 &&
    second <= 59 &&
    offsetH <= 23 &&
    offsetM <= 59
  );
}

/** `--end`: RFC 3339 (`2025-01-31T00:00:00Z`) or Unix seconds, as Prometheus' own `end` reads. */
function parseEnd(raw: string): number {
  const s = raw.trim();
  if (/^\d+(\.\d+)?$/.test(s)) return Number(s) * 1000;
  const m = RFC3339.exec(s);
  const ms = m !== null && realDate(m) ? Date.parse(s) : Number.NaN;
  if (!Number.isFinite(ms)) {
    throw new UsageError(
      `--end must be RFC 3339 (2025-01-31T00:00:00Z) or Unix seconds, got ${JSON.stringify(raw)}`,
    );
  }
  return ms;
}

const duration = (flag: string, raw: string | undefined): number | undefined => {
  if (raw === undefined) return undefined;
  const ms = parseDuration(raw);
  if (ms === undefined) {
    throw new UsageError(
      `${flag} must be a Prometheus duration (7d, 1h, 30m, 90s), got ${JSON.stringify(raw)}`,
    );
  }
  return ms;
};

/**
 * The p99 to write for a measured one: the shortest decimal (0 to 3 places) that gives the same
 * response timeout through `ceil(p99 × slack)`, so the file reads `78.4`, not `78.41269841`, and
 * loading it yields exactly the recommended timeout.
 */
export function p99ToWrite(p99Ms: number, slack: number, responseMs: number): number {
  for (const places of [0, 1, 2, 3]) {
    const f = 10 ** places;
    const v = Math.round(p99Ms * f) / f;
    if (v > 0 && slackedTimeoutMs(v, slack) === responseMs) return v;
  }
  return Number(formatNumber(p99Ms));
}

export async function fleetCommand(flags: FleetFlags, cwd: string): Promise<FleetReport> {
  const configFile = flags.config ?? 'prazo.config.yaml';
  const configPath = resolve(cwd, configFile);
  const base = parseBaseUrl(flags.prometheus);
  if (base === undefined) {
    throw new UsageError(
      `--prometheus must be an http:// or https:// URL, got ${JSON.stringify(shownOrigin(flags.prometheus))}`,
    );
  }
  if (flags.bearerTokenFile !== undefined && flags.basicAuthFile !== undefined) {
    throw new UsageError('give one of --bearer-token-file and --basic-auth-file');
  }
  let text: string;
  try {
    text = readBoundedText(configPath, CONFIG_LIMITS.maxBytes);
  } catch (error) {
    throw new UsageError(`cannot read ${configFile}: ${(error as Error).message}`);
  }
  const readText = (f: string): string => readBoundedText(resolve(dirname(configPath), f), 16 * 1024 * 1024);
  const check = checkConfigText(text, { file: configFile, readText });
  const config = check.config;
  if (config === undefined) {
    throw new UsageError(`${configFile} has problems:\n${check.problems.map(formatProblem).join('\n')}`);
  }
  const windowMs = duration('--window', flags.window);
  const stepMs = duration('--step', flags.step);
  const endEpochMs = flags.end === undefined ? undefined : parseEnd(flags.end);
  const bearerToken =
    flags.bearerTokenFile === undefined ? undefined : readSecret(flags.bearerTokenFile, cwd, 'bearer token');
  const basicAuth =
    flags.basicAuthFile === undefined
      ? undefined
      : basicAuthOf(readSecret(flags.basicAuthFile, cwd, 'basic auth'), flags.basicAuthFile);
  const naming = flags.naming ?? 'exporter';

  const guarded = <R>(fn: () => R): R => {
    try {
      return fn();
    } catch (error) {
      if (isInvalidOptions(error)) throw new UsageError(error.problems.join('; '));
      throw error;
    }
  };
  const thresholds = guarded(() =>
    resolveHealthThresholds(
      {
        ...(config.calibration ?? {}),
        ...(flags.maxErrorRate === undefined ? {} : { maxErrorRate: flags.maxErrorRate }),
        ...(flags.maxTimeoutRate === undefined ? {} : { maxTimeoutRate: flags.maxTimeoutRate }),
        ...(flags.minSamples === undefined ? {} : { minSamples: flags.minSamples }),
      },
      'prazo calibrate',
    ),
  );
  const dependencies: FleetDependency[] = [];
  const skipped: SkippedDependency[] = [];
  const index = new Map<string, number>();
  [...config.dependencies.values()].forEach((d, i) => {
    const name = d.options.name;
    index.set(name, i);
    if (d.p99Source !== 'config') {
      skipped.push({ name, reason: `its p99 comes from the histogram file ${d.p99Source.file}` });
      return;
    }
    const o = d.options;
    const series = guarded(() => latencySeries(name, d.prometheus, naming));
    dependencies.push({
      name,
      series,
      p99Ms: o.p99Ms,
      timeout: {
        userDeadlineMs: o.defaultDeadlineMs ?? DEPENDENCY_IN_FILE.defaults.defaultDeadlineMs,
        attempts: o.attempts,
        slack: o.slack,
        forceSlack: o.forceSlack,
        connectCapMs: o.connectCapMs,
        overheadMs: o.overheadMs,
      },
      ...(d.prometheus?.baselineP99Ms === undefined ? {} : { baselineP99Ms: d.prometheus.baselineP99Ms }),
    });
  });

  const client = guarded(() =>
    createPrometheusClient({
      url: flags.prometheus,
      ...(bearerToken === undefined ? {} : { bearerToken }),
      ...(basicAuth === undefined ? {} : { basicAuth }),
      ...(flags.timeout === undefined ? {} : { timeoutMs: flags.timeout }),
      ...(flags.concurrency === undefined ? {} : { concurrency: flags.concurrency }),
    }),
  );
  const window = {
    ...(windowMs === undefined ? {} : { windowMs }),
    ...(stepMs === undefined ? {} : { stepMs }),
    ...(endEpochMs === undefined ? {} : { endEpochMs }),
  };
  const started = systemClock.now();
  let fleet: FleetCalibration;
  try {
    fleet = await calibrateFleet({ client, dependencies, window, thresholds });
  } catch (error) {
    // the window's options (--window, --step, --end) are checked as the calibration starts
    if (isInvalidOptions(error)) throw new UsageError(error.problems.join('; '));
    throw error;
  } finally {
    client.close();
  }
  const elapsedMs = Math.round(systemClock.now() - started);
  const results = fleet.dependencies;

  // One line per distinct failure: a Prometheus that is down is said once, not once per dependency.
  const failures: string[] = [];
  for (const r of results) {
    const f = r.failure;
    if (f === undefined || f.reason === 'aborted') continue;
    const line = f.reason === 'unreachable' || f.reason === 'timeout' ? f.message : `${r.name}: ${f.message}`;
    if (!failures.includes(line)) failures.push(line);
  }
  const aborted = results.filter((r) => r.failure?.reason === 'aborted').length;
  if (aborted > 0 && failures.length === 0) failures.push(`${aborted} queries were cancelled`);

  const changes: P99Change[] = [];
  for (const r of results) {
    const rec = r.recommendation;
    if (rec === undefined || r.measured?.p99 === undefined) continue;
    const d = config.dependencies.get(r.name)!;
    // An assumed p99 (a `kind` only, SPEC C8) is replaced by the first measurement, even one that
    // gives the same timeout: the file then says it was measured.
    if (d.assumed === undefined && rec.responseMs === r.current.responseMs) continue;
    const implausible = d.unusualP99 === true ? undefined : implausibleP99(r.measured.p99, d.kind);
    if (implausible !== undefined) {
      failures.push(`${r.name}: ${implausible}`); // a unit read wrong: nothing is written
      continue;
    }
    const slack = d.options.slack ?? CALIBRATE_TIMEOUT_OPTIONS.defaults.slack;
    changes.push({
      dependency: r.name,
      fromMs: r.current.p99Ms,
      toMs: p99ToWrite(r.measured.p99, slack, rec.responseMs),
      ...(d.assumed === undefined ? {} : { assumed: d.assumed.kind }),
    });
  }
  let written = false;
  if (flags.write && changes.length > 0 && failures.length === 0) {
    // A dependency declared with `kind:` only has no p99Ms yet: the key is added under its name.
    const edits: NumberEdit[] = changes.map((c) => ({
      path: ['dependencies', index.get(c.dependency)!, 'p99Ms'],
      value: c.toMs,
      add: true,
    }));
    let updated: string;
    try {
      updated = rewriteNumbers(text, edits);
    } catch (error) {
      throw new UsageError(`${configFile}: ${(error as Error).message}`);
    }
    const recheck = checkConfigText(updated, { file: configFile, readText });
    const errors = recheck.problems.filter((p) => p.severity === 'error');
    if (errors.length > 0) {
      throw new UsageError(
        `not written: the new ${configFile} would not load:\n${errors.map(formatProblem).join('\n')}`,
      );
    }
    try {
      replaceFile(configPath, updated);
    } catch (error) {
      throw new UsageError(`cannot write ${configFile}: ${(error as Error).message}`);
    }
    written = true;
  }
  return {
    prometheus: client.origin,
    config: configFile,
    window: fleet.window,
    dependencies: results,
    skipped,
    changes,
    written,
    failures,
    elapsedMs,
  };
}
