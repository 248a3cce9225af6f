import { accessSync, constants, type Stats, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { Command } from 'commander';
import { systemClock } from '../../clock/system.js';
import { renderHtml } from '../../demo/report/html.js';
import { createProgressPrinter } from '../../demo/report/progress.js';
import { renderTable } from '../../demo/report/table.js';
import { type DemoOptions, resolveDemoOptions } from '../../demo/run/options.js';
import { DEFAULT_SCENARIOS, SCENARIOS } from '../../demo/scenarios.js';
import type { StackName } from '../../demo/types.js';
import { isInvalidOptions } from '../../errors/guards.js';
import { cliContext, loadWithUndici, UsageError } from '../context.js';
import { replaceFile } from '../files.js';
import { runInterruptible } from '../interruptible.js';

/** "10 for healthy, tail, ...; 6 for instance-503": the scenarios that load longer, from their declarations. */
function longerRuns(): string {
  const bySeconds = new Map<number, string[]>();
  for (const s of SCENARIOS) {
    if (s.loadMs === undefined) continue;
    const seconds = s.loadMs / 1000;
    bySeconds.set(seconds, [...(bySeconds.get(seconds) ?? []), s.name]);
  }
  return [...bySeconds]
    .sort(([a], [b]) => b - a)
    .map(([seconds, names]) => `${seconds} for ${names.join(', ')}`)
    .join('; ');
}

import { numberArg } from '../parse-args.js';

/**
 * `prazo demo`: the incident demo on loopback (SPEC X1), the README's first command. Starts the seed's
 * chain as separate processes for each stack, plays the scenarios, prints a progress display (stderr),
 * the table (or `--json`) and writes `prazo-report.html`. Ctrl-C stops every process and exits 130.
 */
interface DemoFlags {
  quick?: boolean;
  duration?: number;
  scenarios?: string;
  stacks?: string;
  rate?: number;
  catalogRate?: number;
  pool?: number;
  seed?: number;
  json?: boolean;
  report: string | false;
}

/** `--quick`: seconds instead of a minute, for a first look and for tests. */
const QUICK = { loadMs: 2_000, drainMaxMs: 1_000, calibrationMs: 2_000 } as const;

export function register(program: Command): void {
  program
    .command('demo')
    .description(
      'the incident demo on loopback: naive clients vs prazo, side by side (writes prazo-report.html)',
    )
    .option('--quick', 'short run (2 s per scenario and stack)')
    .option(
      '--duration <seconds>',
      `load time per scenario and stack, in seconds, for every scenario (default 3; ${longerRuns()})`,
      numberArg('--duration', 'seconds'),
    )
    .option(
      '--scenarios <list>',
      `comma-separated: ${SCENARIOS.map((s) => s.name).join(',')} (default: all but ${SCENARIOS.filter(
        (s) => !DEFAULT_SCENARIOS.includes(s),
      )
        .map((s) => s.name)
        .join(', ')}, run when named)`,
    )
    .option('--stacks <list>', 'comma-separated: naive,cockatiel,prazo (default naive,prazo)')
    .option('--rate <rps>', 'checkout requests per second', numberArg('--rate', 'requests per second'))
    .option(
      '--catalog-rate <rps>',
      'catalog requests per second',
      numberArg('--catalog-rate', 'requests per second'),
    )
    .option('--pool <n>', 'connections of the gateway → orders pool', numberArg('--pool', 'connections'))
    .option('--seed <n>', 'seed of the supplier latencies', numberArg('--seed'))
    .option('--json', 'print the results as JSON on stdout instead of the table')
    .option('--report <file>', 'HTML report to write', 'prazo-report.html')
    .option('--no-report', 'do not write the HTML report')
    .action(async (flags: DemoFlags, command: Command) => {
      const context = cliContext(command);
      const { io } = context;
      checkBeforeRun(flags, io.cwd);
      const tty = Boolean(process.stderr.isTTY);
      const progress = createProgressPrinter({
        // on a terminal the line is redrawn in place: the one control sequence the CLI lets through
        write: tty ? (context.redraw ?? io.stderr) : io.stderr,
        tty,
        clock: systemClock,
      });
      await runInterruptible(
        context,
        'prazo demo: interrupted; every demo process was stopped',
        async (signal) => {
          const { runDemo } = await loadWithUndici('demo', () => import('../../demo/run/demo.js'));
          const result = await runDemo({ ...options(flags), signal, onProgress: progress.onProgress });
          progress.finish();
          if (flags.json) io.stdout(`${JSON.stringify(result, null, 2)}\n`);
          else io.stdout(`\n${renderTable(result)}`);
          if (flags.report !== false) {
            const path = resolve(io.cwd, flags.report);
            replaceFile(path, renderHtml(result));
            io.stderr(`report: ${path}\n`);
          }
        },
        () => progress.finish(),
      );
    });
}

/**
 * Everything the run would refuse, said before it starts: the options, and a `--report` that cannot
 * be written (a directory, a missing or read-only directory), which the run would only find after
 * minutes of load, losing the results. Every problem at once, one line (exit 2).
 */
function checkBeforeRun(flags: DemoFlags, cwd: string): void {
  const problems: string[] = [];
  try {
    resolveDemoOptions(options(flags));
  } catch (error) {
    if (!isInvalidOptions(error)) throw error;
    problems.push(...error.problems);
  }
  if (flags.report !== false) {
    const why = unwritable(resolve(cwd, flags.report));
    if (why !== undefined) problems.push(`--report ${flags.report}: ${why}`);
  }
  if (problems.length > 0) throw new UsageError(problems.join('; '));
}

/** `path`'s file status, or undefined when there is none to read (missing, or below a file). */
function statOf(path: string): Stats | undefined {
  try {
    return statSync(path);
  } catch {
    return undefined;
  }
}

/** Why a file cannot be written at `path`, or undefined when it can (as far as can be told before). */
function unwritable(path: string): string | undefined {
  const stat = statOf(path);
  if (stat?.isDirectory()) return 'is a directory';
  const dir = dirname(path);
  const parent = statOf(dir);
  if (parent === undefined) return `no such directory: ${dir}`;
  if (!parent.isDirectory()) return `not a directory: ${dir}`;
  try {
    accessSync(stat === undefined ? dir : path, constants.W_OK);
  } catch {
    return stat === undefined ? `cannot create a file in ${dir}` : 'not writable';
  }
  return undefined;
}

function list(raw: string | undefined): string[] | undefined {
  return raw === undefined
    ? undefined
    : raw
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s.length > 0);
}

function options(flags: DemoFlags): DemoOptions {
  const o: { -readonly [K in keyof DemoOptions]: DemoOptions[K] } = flags.quick ? { ...QUICK } : {};
  if (flags.duration !== undefined) o.loadMs = flags.duration * 1000;
  const scenarios = list(flags.scenarios);
  if (scenarios) o.scenarios = scenarios;
  const stacks = list(flags.stacks);
  if (stacks) o.stacks = stacks as StackName[];
  if (flags.rate !== undefined) o.checkoutRate = flags.rate;
  if (flags.catalogRate !== undefined) o.catalogRate = flags.catalogRate;
  if (flags.pool !== undefined) o.poolConnections = flags.pool;
  if (flags.seed !== undefined) o.seed = flags.seed;
  return o;
}
