import { ejectionSettings } from '../balance/ejection.js';
import {
  DISCOVERY_OPTIONS,
  INSTANCES_OPTIONS,
  normalizeOrigin,
  PEAK_EWMA_OPTIONS,
  shownOrigin,
} from '../balance/options.js';
import type { Clock } from '../clock/clock.js';
import { systemClock } from '../clock/system.js';
import { HEADER_FORMAT_OPTIONS, type HeaderFormat } from '../deadline/deadline.js';
import type { Dependency } from '../dependency/dependency.js';
import { option } from '../options/declare.js';
import { OptionsValidator } from '../options/validator.js';
import { HTTP_DEFAULTS, HTTP_LIMITS } from './constants.js';
import { EXECUTOR_KEYS, readExecutor } from './executor.js';
import type { InstanceSettings } from './instances.js';
import type { HttpClientOptions, ResolvedHttpClientOptions, ResolvedRoute } from './options.js';
import { defaultConnectMs } from './plan.js';

/** Options of one route (an origin's dependency): the executor's, and how its calls are timed. */
const ROUTE_KEYS = [
  ...EXECUTOR_KEYS,
  'live',
  'name',
  'dependency',
  'responseTimeoutMs',
  'bodyTimeoutMs',
  'defaultDeadlineMs',
  'deadlineHeaders',
  'generateIdempotencyKey',
  ...INSTANCES_OPTIONS.keys,
] as const;

const KNOWN = new Set<string>([
  ...ROUTE_KEYS,
  'origin',
  'connectTimeoutMs',
  'connections',
  'autoSelectFamily',
  'lookup',
  'dispatcher',
  'clock',
]);

const ROUTE_KNOWN = new Set<string>(ROUTE_KEYS);

/** Parses `origin` to `scheme://host:port`, or records why it cannot. */
function readOrigin(v: OptionsValidator, value: unknown): string {
  const invalid = 'http://invalid.invalid';
  if (!(typeof value === 'string' || value instanceof URL)) {
    v.problem('`origin` must be an http(s) URL such as "http://127.0.0.1:8080"');
    return invalid;
  }
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    v.problem(`\`origin\` must be an http(s) URL, got ${JSON.stringify(shownOrigin(String(value)))}`);
    return invalid;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    v.problem(`\`origin\` must use http: or https:, got ${url.protocol}`);
  }
  if (url.pathname !== '/' || url.search !== '' || url.hash !== '') {
    v.problem('`origin` must have no path, query or fragment (pass paths to `request`)');
  }
  // Refused as in `origins` and the interceptor's keys: `url.origin` would drop them without a word,
  // and the requests would go out without them. The message names no part of them.
  if (url.username !== '' || url.password !== '') {
    v.problem(
      '`origin` must have no credentials (user:password@; send them in a header such as `authorization`)',
    );
  }
  return url.origin;
}

/** Reads a `deadlineHeaders` option with the deadline's own declaration (`HEADER_FORMAT_OPTIONS`). */
export function readHeaderFormat(v: OptionsValidator, value: unknown): HeaderFormat {
  const o = v.read(HEADER_FORMAT_OPTIONS, value, ['deadlineHeaders']);
  const epochMs = typeof o.epochMs === 'string' ? o.epochMs.toLowerCase() : o.epochMs;
  return Object.freeze({ ...o, epochMs });
}

interface RouteHooks {
  /** Reads (and checks) the clock, in the place its problem belongs in the list. */
  readonly clock: () => Clock;
  /** Checks what depends on the executor (the client's connect timeout), before the phase timeouts. */
  readonly afterExecutor?: (dependency: Dependency | undefined) => void;
}

/** Reads the options every route has: the executor's (or a given executor), timeouts, headers. */
function readRoute(v: OptionsValidator, raw: Record<string, unknown>, hooks: RouteHooks): ResolvedRoute {
  const ms = { min: 0, exclusiveMin: true, max: HTTP_LIMITS.maxMs } as const;
  const defaultDeadlineMs = v.number('defaultDeadlineMs', raw.defaultDeadlineMs, {
    default: HTTP_DEFAULTS.defaultDeadlineMs,
    ...ms,
  });
  const deadlineHeaders = readHeaderFormat(v, raw.deadlineHeaders);
  const clock = hooks.clock();
  const { dependency, live } = readExecutor(v, raw, {
    defaultDeadlineMs,
    headerFormat: deadlineHeaders,
    clock,
  });
  if (dependency !== undefined && raw.name !== undefined && raw.name !== dependency.name) {
    v.problem(`\`name\` (${String(raw.name)}) differs from the dependency's (${dependency.name})`);
  }
  hooks.afterExecutor?.(dependency);
  const ceiling = dependency?.timeouts.responseMs ?? HTTP_LIMITS.maxMs;
  const responseTimeoutMs = v.number('responseTimeoutMs', raw.responseTimeoutMs, { default: ceiling, ...ms });
  if (responseTimeoutMs > ceiling) {
    v.problem(
      `\`responseTimeoutMs\` (${responseTimeoutMs}) exceeds the attempt timeout ceil(p99 × slack) = ${ceiling} ms; ` +
        'raise `p99Ms` or `slack` instead',
    );
  }
  const bodyTimeoutMs = v.number('bodyTimeoutMs', raw.bodyTimeoutMs, { default: responseTimeoutMs, ...ms });
  const generateIdempotencyKey = v.boolean('generateIdempotencyKey', raw.generateIdempotencyKey, false);
  const instances = readInstances(v, raw);
  const dep = dependency as Dependency;
  return {
    name: dep?.name,
    dependency: dep,
    live,
    explicit: Object.freeze({
      connectMs: raw.connectTimeoutMs as number | undefined,
      responseMs: raw.responseTimeoutMs as number | undefined,
      bodyMs: raw.bodyTimeoutMs as number | undefined,
    }),
    responseTimeoutMs,
    bodyTimeoutMs,
    defaultDeadlineMs,
    deadlineHeaders,
    generateIdempotencyKey,
    instances,
    clock,
  };
}

/** Reads `origins`, `discovery`, `balance` and `ejection` with their declaration (`INSTANCES_OPTIONS`). */
function readInstances(v: OptionsValidator, raw: Record<string, unknown>): InstanceSettings | undefined {
  const given: Record<string, unknown> = {};
  for (const key of INSTANCES_OPTIONS.keys) if (raw[key] !== undefined) given[key] = raw[key];
  const o = v.read(INSTANCES_OPTIONS, given);
  const discovery = o.discovery === undefined || o.discovery === false ? undefined : o.discovery;
  if (o.origins === undefined && discovery === undefined) {
    for (const key of ['balance', 'ejection'] as const) {
      if (o[key] !== undefined)
        v.problem(`\`${key}\` needs several instances: give \`origins\` or \`discovery\``);
    }
    return undefined;
  }
  const balance = o.balance ?? {};
  const d = discovery === true ? {} : (discovery ?? undefined);
  return Object.freeze({
    origins: o.origins?.map((origin) => normalizeOrigin(origin) ?? String(origin)),
    discovery:
      d === undefined
        ? undefined
        : Object.freeze({
            intervalMs: d.intervalMs ?? DISCOVERY_OPTIONS.defaults.intervalMs,
            timeoutMs: d.timeoutMs ?? DISCOVERY_OPTIONS.defaults.timeoutMs,
            lookup: d.lookup ?? (raw.lookup as never),
          }),
    decayMs: balance.decayMs ?? PEAK_EWMA_OPTIONS.defaults.decayMs,
    initialEstimateMs: balance.initialEstimateMs ?? PEAK_EWMA_OPTIONS.defaults.initialEstimateMs,
    ejection: ejectionSettings(o.ejection),
  });
}

/** Validates every option, lists all problems in one InvalidOptionsError, and applies defaults. */
export function resolveHttpClientOptions(options: HttpClientOptions): ResolvedHttpClientOptions {
  const v = new OptionsValidator('createHttpClient');
  const given = options !== null && typeof options === 'object';
  if (!given) v.problem('options must be an object with at least `name` and `origin`');
  const raw = given ? v.snapshot(options, KNOWN) : {};
  v.unknownKeys(raw, KNOWN);
  let origin: string;
  if (raw.origins !== undefined) {
    if (raw.origin !== undefined)
      v.problem('give `origin` (one, or a name to discover) or `origins` (the instances), not both');
    origin = firstOrigin(raw.origins) ?? 'http://invalid.invalid';
  } else origin = readOrigin(v, raw.origin);
  let connectTimeoutMs = 0;
  const route = readRoute(v, raw, {
    clock: () => readClock(v, raw.clock),
    afterExecutor: (dependency) => {
      const ceiling = dependency?.timeouts.responseMs ?? HTTP_LIMITS.maxMs;
      connectTimeoutMs = v.number('connectTimeoutMs', raw.connectTimeoutMs, {
        default: defaultConnectMs(dependency),
        min: 0,
        exclusiveMin: true,
        max: HTTP_LIMITS.maxConnectTimeoutMs,
      });
      // Only a connect timeout given: the derived one, min(400, ceil(attempt / 2)), is below the
      // attempt from 2 ms on, and equal to it at 1 ms (a p99 under ~0.77 ms), which is no mistake of
      // the caller's (`CurrentPlan.check` applies the same rule to a recalibrated attempt).
      if (dependency !== undefined && raw.connectTimeoutMs !== undefined && connectTimeoutMs >= ceiling) {
        v.problem(
          `\`connectTimeoutMs\` (${connectTimeoutMs}) must be below the attempt timeout (${ceiling} ms): ` +
            'a connect cut by the attempt timer is reported as a response timeout and not retried at once',
        );
      }
    },
  });
  const connections = v.number('connections', raw.connections, {
    default: undefined,
    min: 1,
    max: HTTP_LIMITS.maxConnections,
    integer: true,
  });
  const autoSelectFamily = v.boolean(
    'autoSelectFamily',
    raw.autoSelectFamily,
    HTTP_DEFAULTS.autoSelectFamily,
  );
  if (raw.lookup !== undefined && typeof raw.lookup !== 'function') {
    v.problem('`lookup` must be a function like dns.lookup');
  }
  if (raw.dispatcher !== undefined && !option.hasMethods('dispatch')(raw.dispatcher)) {
    v.problem('`dispatcher` must be an undici Dispatcher (with `dispatch`)');
  }
  v.done();
  return Object.freeze({
    ...route,
    origin,
    connectTimeoutMs,
    connections,
    autoSelectFamily,
    lookup: raw.lookup as HttpClientOptions['lookup'],
    dispatcher: raw.dispatcher as HttpClientOptions['dispatcher'],
  });
}

/** The first of `origins`, normalised, if it can be read (what cannot is `INSTANCES_OPTIONS`' problem). */
function firstOrigin(origins: unknown): string | undefined {
  try {
    return Array.isArray(origins) ? normalizeOrigin(origins[0]) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Validates one origin's entry of an interceptor's `dependencies` (`where` names it in problems):
 * the route options, defaults applied. Throws one InvalidOptionsError listing every problem.
 */
export function resolveRouteOptions(entry: unknown, where: string, clock: Clock): ResolvedRoute {
  const v = new OptionsValidator(where);
  const given = entry !== null && typeof entry === 'object';
  if (!given) v.problem('must be an object with at least `name` and `p99Ms`, or a `dependency`');
  const raw = given ? v.snapshot(entry, ROUTE_KNOWN) : {};
  v.unknownKeys(raw, ROUTE_KNOWN);
  const route = readRoute(v, raw, { clock: () => clock });
  v.done();
  return Object.freeze(route);
}

/** Reads a `clock` option: a Clock, or the system clock (with a problem when it is not one). */
export function readClock(v: OptionsValidator, value: unknown): Clock {
  const ok = value === undefined || option.hasMethods('now', 'epochNow', 'setTimer', 'clearTimer')(value);
  if (!ok) v.problem('`clock` must implement Clock (now, epochNow, setTimer, clearTimer)');
  return ok ? ((value as Clock | undefined) ?? systemClock) : systemClock;
}
