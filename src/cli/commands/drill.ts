import type { Command } from 'commander';
import { DRILL_DEFAULTS, DRILL_LIMITS, DrillExit } from '../../drill/constants.js';
import type { DrillOptions } from '../../drill/options.js';
import { renderReport } from '../../drill/report.js';
import { cliContext, loadWithUndici } from '../context.js';
import { runInterruptible } from '../interruptible.js';
import { choiceArg, numberArg } from '../parse-args.js';

/**
 * `prazo drill`: the degradation drill (SPEC V2). Replaces one dependency with a double answering at
 * its configured timeout, loads the service (the demo's open-loop generator; `--load` multiplies the
 * dependent routes' rate), and passes only if the routes that do not use the dependency keep
 * answering within 2× their healthy p99 (a healthy phase of the same run) and the pool never ran dry. Exit 0 pass, 1 fail, 2 bad input. Ctrl-C stops the load and
 * everything the drill started.
 */
interface DrillFlags {
  config?: string;
  dependency?: string;
  target?: string;
  route: string[];
  independent: string[];
  doublePort?: number;
  timeout?: number;
  demoStack?: 'prazo' | 'naive';
  naiveTimeout?: number;
  duration?: number;
  rate?: number;
  load?: number;
  healthy?: number;
  independentRate?: number;
  connections?: number;
  minSuccess?: number;
  maxP99?: number;
  probeTimeout?: number;
  pool?: number;
  json?: boolean;
}

const collect = (value: string, previous: string[]): string[] => [...previous, value];

export function register(program: Command): void {
  program
    .command('drill')
    .description(
      'degradation drill: a dependency answers at its configured timeout; pass if independent routes keep answering and the pool never runs dry',
    )
    .option('--config <file>', 'prazo.config.yaml (default: the built-in demo config for the demo target)')
    .option('--dependency <name>', `dependency to replace (demo: ${DRILL_DEFAULTS.demoDependency})`)
    .option('--target <url>', "your service's origin (default: the demo's services)")
    .option('--route <path>', 'a route that uses the dependency (repeatable)', collect, [])
    .option('--independent <path>', 'a route that does not (repeatable; required with --target)', collect, [])
    .option('--double-port <port>', 'port of the double on 127.0.0.1', numberArg('--double-port'))
    .option(
      '--timeout <ms>',
      "the double's answer time (default: the configured timeout)",
      numberArg('--timeout', 'ms'),
    )
    .option(
      '--demo-stack <stack>',
      'demo target: prazo or naive',
      choiceArg('--demo-stack', ['prazo', 'naive'] as const),
    )
    .option(
      '--naive-timeout <ms>',
      `demo target, naive stack: its timeout (default ${DRILL_DEFAULTS.naiveTimeoutMs})`,
      numberArg('--naive-timeout', 'ms'),
    )
    .option(
      '--duration <seconds>',
      `load time (default ${DRILL_DEFAULTS.durationS})`,
      numberArg('--duration', 'seconds'),
    )
    .option(
      '--rate <rps>',
      `req/s on the routes (default ${DRILL_DEFAULTS.rate})`,
      numberArg('--rate', 'requests per second'),
    )
    .option(
      '--load <multiple>',
      `load multiple: the routes run at rate × multiple, the independent routes unchanged (default ${DRILL_DEFAULTS.load}; at most ${DRILL_LIMITS.maxLoad})`,
      numberArg('--load', 'times the rate'),
    )
    .option(
      '--healthy <seconds>',
      `healthy phase first, the double answering at once: the independent routes' p99 bound is ${DRILL_DEFAULTS.p99VsHealthy}× theirs in it, at least ${DRILL_DEFAULTS.p99FloorMs} ms (default ${DRILL_DEFAULTS.healthyS}; 0 skips it)`,
      numberArg('--healthy', 'seconds'),
    )
    .option(
      '--independent-rate <rps>',
      `req/s on the independent routes (default ${DRILL_DEFAULTS.independentRate})`,
      numberArg('--independent-rate', 'requests per second'),
    )
    .option('--connections <n>', 'connections of the load on the routes', numberArg('--connections'))
    .option(
      '--min-success <pct>',
      `pass threshold, % (default ${DRILL_DEFAULTS.minSuccessPct})`,
      numberArg('--min-success', '%'),
    )
    .option(
      '--max-p99 <ms>',
      "an absolute ceiling on the independent routes' p99, on top of the relative bound (default none)",
      numberArg('--max-p99', 'ms'),
    )
    .option(
      '--probe-timeout <ms>',
      `a probe slower than this failed (default ${DRILL_DEFAULTS.probeTimeoutMs})`,
      numberArg('--probe-timeout', 'ms'),
    )
    .option('--pool <n>', 'size of the pool the routes share (default: from the config)', numberArg('--pool'))
    .option('--json', 'print the report as JSON')
    .action(async (flags: DrillFlags, command: Command) => {
      const context = cliContext(command);
      const { io } = context;
      await runInterruptible(
        context,
        'prazo drill: interrupted; the double and every process it started were stopped',
        async (signal) => {
          const { runDrill } = await loadWithUndici('drill', () => import('../../drill/run.js'));
          const report = await runDrill({
            ...options(flags),
            cwd: io.cwd,
            signal,
            onProgress: (line) => io.stderr(`  ${line}\n`),
          });
          io.stdout(flags.json ? `${JSON.stringify(report, null, 2)}\n` : renderReport(report));
          context.exitCode = report.pass ? DrillExit.pass : DrillExit.fail;
        },
      );
    });
}

function options(f: DrillFlags): DrillOptions {
  const o: { -readonly [K in keyof DrillOptions]: DrillOptions[K] } = {};
  if (f.config !== undefined) o.config = f.config;
  if (f.dependency !== undefined) o.dependency = f.dependency;
  if (f.target !== undefined) o.target = f.target;
  if (f.route.length > 0) o.routes = f.route;
  if (f.independent.length > 0) o.independent = f.independent;
  if (f.doublePort !== undefined) o.doublePort = f.doublePort;
  if (f.timeout !== undefined) o.timeoutMs = f.timeout;
  if (f.demoStack !== undefined) o.demoStack = f.demoStack;
  if (f.naiveTimeout !== undefined) o.naiveTimeoutMs = f.naiveTimeout;
  if (f.duration !== undefined) o.durationS = f.duration;
  if (f.rate !== undefined) o.rate = f.rate;
  if (f.load !== undefined) o.load = f.load;
  if (f.healthy !== undefined) o.healthyS = f.healthy;
  if (f.independentRate !== undefined) o.independentRate = f.independentRate;
  if (f.connections !== undefined) o.connections = f.connections;
  if (f.minSuccess !== undefined) o.minSuccessPct = f.minSuccess;
  if (f.maxP99 !== undefined) o.maxP99Ms = f.maxP99;
  if (f.probeTimeout !== undefined) o.probeTimeoutMs = f.probeTimeout;
  if (f.pool !== undefined) o.poolSize = f.pool;
  return o;
}
