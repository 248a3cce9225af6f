import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Clock } from '../clock/clock.js';
import { systemClock } from '../clock/system.js';
import { checkConfigFile, checkConfigText, type PrazoConfig } from '../config/load.js';
import { formatProblem } from '../config/problem.js';
import { InvalidOptionsError } from '../errors/options.js';
import { OptionsValidator } from '../options/validator.js';
import { DRILL_DEFAULTS as D, DRILL_LIMITS as L } from './constants.js';
import { DEMO_CONFIG_YAML } from './demo-config.js';

/** Options of {@link runDrill}. Durations in ms unless the name says seconds. */
export interface DrillOptions {
  /** Config file (SPEC C7). Default: the built-in demo config for the demo target, else ./prazo.config.yaml. */
  readonly config?: string;
  /** Config as text instead of a file (YAML or JSON). */
  readonly configText?: string;
  /** The dependency to replace. Default `supplier` for the demo; for a URL target, the config's only one. */
  readonly dependency?: string;
  /** Your service's origin (`http://127.0.0.1:3000`). Default: the demo's services. */
  readonly target?: string;
  /** Routes of the target that use the dependency (they get the load). */
  readonly routes?: readonly string[];
  /** Routes that do not use it (the probe: the verdict is about them). Required with `target`. */
  readonly independent?: readonly string[];
  /** Port of the double on 127.0.0.1 (your service must call the dependency there). Default ephemeral. */
  readonly doublePort?: number;
  /** The double's answer time. Default: the dependency's configured timeout (`ceil(p99 × slack)`). */
  readonly timeoutMs?: number;
  /** Demo target only: its clients. Default prazo (calibrated from the config). */
  readonly demoStack?: 'prazo' | 'naive';
  /** Demo target, naive stack: its per-attempt timeout. Default 30000 (the seed's library default). */
  readonly naiveTimeoutMs?: number;
  /** Load time, seconds. Default 10; (0, 3600]. */
  readonly durationS?: number;
  /** req/s on `routes`. Default 20. req/s on `independent`: default 10. */
  readonly rate?: number;
  readonly independentRate?: number;
  /**
   * Load multiple (×): `routes` run at `rate × load`, `independent` at `independentRate`, unchanged.
   * Default 1; (0, 100].
   */
  readonly load?: number;
  /**
   * Seconds of the healthy phase run first (the same loads, the double answering at once): the
   * independent routes' p99 is then bounded by 2× their healthy p99 (at least 60 ms). Default 3;
   * [0, 600], 0 skips it.
   */
  readonly healthyS?: number;
  /** Connections of the load on `routes`. Default: enough to keep `rate` with every call held. */
  readonly connections?: number;
  /** Pass threshold on the independent routes: success %, default 99.9. */
  readonly minSuccessPct?: number;
  /**
   * An absolute ceiling on the independent routes' p99, in ms, on top of the relative bound (2× the
   * healthy phase's p99). Default none.
   */
  readonly maxP99Ms?: number;
  /** A probe request that takes longer is a failure. Default 2000 (the user's deadline). */
  readonly probeTimeoutMs?: number;
  /** Pool the independent routes share with the dependency path: size. Default from the config. */
  readonly poolSize?: number;
  /** Directory relative paths start from. Default `process.cwd()`. */
  readonly cwd?: string;
  readonly clock?: Clock;
  readonly signal?: AbortSignal;
  /** One line per step. */
  readonly onProgress?: (line: string) => void;
}

export interface DrillPlan {
  readonly target:
    | { readonly kind: 'demo'; readonly stack: 'prazo' | 'naive' }
    | { readonly kind: 'url'; readonly origin: string };
  readonly routes: readonly string[];
  readonly independent: readonly string[];
  readonly configFile: string;
  readonly config: PrazoConfig;
  readonly dependency: string;
  readonly doubleLatencyMs: number;
  readonly doublePort: number;
  readonly naiveTimeoutMs: number;
  readonly durationS: number;
  /** req/s on `routes`, the load multiple applied (`rate × load`). */
  readonly rate: number;
  /** The rate asked for, before the multiple, and the multiple. */
  readonly baseRate: number;
  readonly load: number;
  readonly independentRate: number;
  readonly healthyS: number;
  readonly connections: number;
  readonly minSuccessPct: number;
  readonly maxP99Ms: number | undefined;
  readonly probeTimeoutMs: number;
  readonly poolSize: number | undefined;
  readonly clock: Clock;
}

/**
 * A route is requested as `${origin}${route}`, which the URL parser rewrites: it drops tabs and line
 * breaks, cuts a `#fragment`, resolves `/a/../b`, turns `\\` into `/` and percent-encodes spaces, control
 * characters and non-ASCII. A route it would rewrite is refused, so the drill never loads a different
 * path than the one asked for (and reports on it as if it were).
 */
const sentAs = (route: string): string => {
  const url = new URL(`http://drill.invalid${route}`);
  return `${url.pathname}${url.search}`;
};
const ROUTE = {
  test: (s: string) =>
    s.startsWith('/') && s.length <= 2_000 && URL.canParse(`http://drill.invalid${s}`) && sentAs(s) === s,
  describe:
    'a path starting with /, sent as given (percent-encoded: no spaces, control characters, `#`, `..` or non-ASCII)',
};

function readConfig(o: DrillOptions, demo: boolean): { file: string; config: PrazoConfig } {
  const cwd = o.cwd ?? process.cwd();
  const local = resolve(cwd, D.configFile);
  const file =
    o.configText !== undefined ? '(text)' : (o.config ?? (demo ? '(built-in demo config)' : D.configFile));
  const checked =
    o.configText !== undefined
      ? checkConfigText(o.configText, { file })
      : o.config !== undefined
        ? checkConfigFile(resolve(cwd, o.config))
        : demo
          ? checkConfigText(DEMO_CONFIG_YAML, { file })
          : existsSync(local)
            ? checkConfigFile(local)
            : undefined;
  if (checked === undefined)
    throw new InvalidOptionsError('prazo drill', [`no config: give --config (no ${D.configFile} in ${cwd})`]);
  if (checked.config === undefined) {
    throw new InvalidOptionsError(
      file,
      checked.problems.filter((p) => p.severity === 'error').map(formatProblem),
    );
  }
  return { file, config: checked.config };
}

export function resolveDrillOptions(options: DrillOptions): DrillPlan {
  const o = options ?? {};
  const v = new OptionsValidator('prazo drill');
  const demo = o.target === undefined;
  let origin = '';
  if (!demo) {
    const url = URL.canParse(o.target!) ? new URL(o.target!) : undefined;
    if (url === undefined || !/^https?:$/.test(url.protocol))
      v.problem(`\`target\` must be an http(s) URL, got ${JSON.stringify(o.target)}`);
    // Only the origin is requested: a path, query, fragment or credentials in it would be dropped
    // without a word, and the drill would load other URLs than the user's.
    else if (
      url.pathname !== '/' ||
      url.search !== '' ||
      url.hash !== '' ||
      url.username !== '' ||
      url.password !== ''
    )
      v.problem(
        `\`target\` must be an origin (scheme, host, port), got ${JSON.stringify(o.target)}: put a path in the routes`,
      );
    else origin = url.origin;
    if (!o.independent?.length)
      v.problem('`independent` routes are required with a target (the routes that must keep answering)');
  }
  const paths = (name: string, list: readonly string[] | undefined): string[] =>
    (list ?? []).flatMap((p, i) => v.string(`${name}[${i}]`, p, undefined, ROUTE) ?? []);
  const routes = demo ? ['/checkout'] : paths('routes', o.routes);
  const independent = demo ? ['/catalog'] : paths('independent', o.independent);
  const num = (name: string, value: unknown, def: number, max: number, integer = false) =>
    v.number(name, value, { default: def, min: 0, exclusiveMin: true, max, integer });
  const durationS = num('durationS', o.durationS, D.durationS, L.maxDurationS);
  const baseRate = num('rate', o.rate, D.rate, L.maxRate);
  const load = num('load', o.load, D.load, L.maxLoad);
  const healthyS = v.number('healthyS', o.healthyS, { default: D.healthyS, min: 0, max: L.maxHealthyS });
  const independentRate = num('independentRate', o.independentRate, D.independentRate, L.maxRate);
  const minSuccessPct = v.number('minSuccessPct', o.minSuccessPct, {
    default: D.minSuccessPct,
    min: 0,
    max: 100,
  });
  const maxP99Ms = v.number('maxP99Ms', o.maxP99Ms, {
    default: undefined,
    min: 0,
    exclusiveMin: true,
    max: L.maxTimeoutMs,
  });
  const probeTimeoutMs = v.number('probeTimeoutMs', o.probeTimeoutMs, {
    default: D.probeTimeoutMs,
    min: 1_000,
    max: L.maxTimeoutMs,
  });
  const naiveTimeoutMs = num('naiveTimeoutMs', o.naiveTimeoutMs, D.naiveTimeoutMs, L.maxTimeoutMs);
  const timeoutMs = v.number('timeoutMs', o.timeoutMs, {
    default: undefined,
    min: 0,
    exclusiveMin: true,
    max: L.maxTimeoutMs,
  });
  const doublePort = v.number('doublePort', o.doublePort, { default: 0, min: 0, max: 65_535, integer: true });
  const poolSize = v.number('poolSize', o.poolSize, { default: undefined, min: 1, max: 1e6, integer: true });
  const connections = v.number('connections', o.connections, {
    default: undefined,
    min: 1,
    max: L.maxConnections,
    integer: true,
  });
  const stack = v.oneOf('demoStack', o.demoStack, ['prazo', 'naive'], 'prazo');
  if (!demo && o.demoStack !== undefined) v.problem('`demoStack` applies to the demo target only');
  // Options the chosen target has no use for would be dropped without a word: the drill would run
  // on other routes, or another timeout, than the ones asked for.
  if (demo && (o.routes?.length || o.independent?.length))
    v.problem(
      '`routes` and `independent` apply to a `target` only (the demo target drills /checkout and /catalog)',
    );
  if (o.naiveTimeoutMs !== undefined && (!demo || stack !== 'naive'))
    v.problem("`naiveTimeoutMs` applies to the demo target's naive stack only (`demoStack: naive`)");
  const both = routes.filter((r) => independent.includes(r));
  if (!demo && both.length > 0)
    v.problem(
      `a route cannot both use the dependency and not: ${both.map((r) => JSON.stringify(r)).join(', ')}`,
    );
  const rate = baseRate * load;
  if (rate > L.maxRate)
    v.problem(`\`rate\` × \`load\` must be at most ${L.maxRate} req/s, got ${baseRate} × ${load} = ${rate}`);
  v.done();

  const { file, config } = readConfig(o, demo);
  const names = [...config.dependencies.keys()];
  const dependency = o.dependency ?? (demo ? D.demoDependency : names.length === 1 ? names[0]! : '');
  const dep = config.dependencies.get(dependency);
  const problems: string[] = [];
  if (dep === undefined)
    problems.push(
      `\`dependency\`: ${dependency ? `${JSON.stringify(dependency)} is not in ${file}` : 'which one? the config has several'} (${names.join(', ')})`,
    );
  if (demo && stack === 'prazo') {
    for (const hop of ['orders', 'inventory', 'supplier'])
      if (!config.dependencies.has(hop)) problems.push(`the demo target needs dependency ${hop} in ${file}`);
  }
  if (problems.length > 0) throw new InvalidOptionsError('prazo drill', problems);
  const doubleLatencyMs =
    timeoutMs ?? (demo && stack === 'naive' ? naiveTimeoutMs : dep!.calibration.responseMs);
  const pool = poolSize ?? [...config.dependencies.values()].find((d) => d.pool !== undefined)?.pool?.size;
  const held = Math.ceil((rate * doubleLatencyMs * 1.5) / 1000) + 5;
  const loadConnections = connections ?? Math.min(200, Math.max(10, held));
  return {
    target: demo ? { kind: 'demo', stack } : { kind: 'url', origin },
    routes,
    independent,
    configFile: file,
    config,
    dependency,
    doubleLatencyMs,
    doublePort,
    naiveTimeoutMs,
    durationS,
    rate,
    baseRate,
    load,
    independentRate,
    healthyS,
    connections: loadConnections,
    minSuccessPct,
    maxP99Ms,
    probeTimeoutMs,
    poolSize: pool,
    clock: o.clock ?? systemClock,
  };
}
