import type { Clock } from '../clock/clock.js';
import { systemClock } from '../clock/system.js';
import type { HeaderFormat } from '../deadline/deadline.js';
import { OptionsValidator } from '../options/validator.js';
import { IDEMPOTENCY_KEY_HEADER } from '../retry/constants.js';
import { HTTP_DEFAULTS, HTTP_LIMITS } from './constants.js';
import type { HttpClientOptions, ResolvedHttpClientOptions } from './options.js';

/** RFC 9110 token: what a header name may contain. */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const HEADER_NAME = { test: (s: string) => TOKEN.test(s), describe: 'a valid header name' };

const KNOWN = new Set<string>([
  'name',
  'origin',
  'p99Ms',
  'recorder',
  'attempts',
  'connectTimeoutMs',
  'responseTimeoutMs',
  'bodyTimeoutMs',
  'defaultDeadlineMs',
  'deadlineHeaders',
  'idempotencyKeyHeader',
  'generateIdempotencyKey',
  'connections',
  'autoSelectFamily',
  'lookup',
  'dispatcher',
  'clock',
]);

const hasMethods = (value: unknown, names: readonly string[]): boolean =>
  value !== null &&
  typeof value === 'object' &&
  names.every((n) => typeof (value as Record<string, unknown>)[n] === 'function');

/** Parses `origin` to `scheme://host:port`, or records why it cannot. */
function readOrigin(v: OptionsValidator, value: unknown): string {
  if (!(typeof value === 'string' || value instanceof URL)) {
    v.problem('`origin` must be an http(s) URL such as "http://127.0.0.1:8080"');
    return 'http://invalid.invalid';
  }
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    v.problem(`\`origin\` must be an http(s) URL, got ${JSON.stringify(String(value).slice(0, 60))}`);
    return 'http://invalid.invalid';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    v.problem(`\`origin\` must use http: or https:, got ${url.protocol}`);
  }
  if (url.pathname !== '/' || url.search !== '' || url.hash !== '') {
    v.problem('`origin` must have no path, query or fragment (pass paths to `request`)');
  }
  return url.origin;
}

function readHeaderFormat(v: OptionsValidator, value: unknown): HeaderFormat {
  if (value === undefined) return {};
  if (value === null || typeof value !== 'object') {
    v.problem('`deadlineHeaders` must be an object such as { epochMs: "x-deadline-epoch-ms" }');
    return {};
  }
  const raw = value as Record<string, unknown>;
  const epochMs =
    raw.epochMs === false ? false : v.string('deadlineHeaders.epochMs', raw.epochMs, undefined, HEADER_NAME);
  return {
    epochMs: typeof epochMs === 'string' ? epochMs.toLowerCase() : epochMs,
    grpcTimeout: v.boolean('deadlineHeaders.grpcTimeout', raw.grpcTimeout, false),
    envoy: v.boolean('deadlineHeaders.envoy', raw.envoy, false),
  };
}

/** Validates every option, lists all problems in one InvalidOptionsError, and applies defaults. */
export function resolveHttpClientOptions(options: HttpClientOptions): ResolvedHttpClientOptions {
  const v = new OptionsValidator('createHttpClient');
  const raw = (options !== null && typeof options === 'object' ? options : {}) as Record<string, unknown>;
  if (raw !== (options as unknown)) v.problem('options must be an object with at least `name` and `origin`');
  for (const key of Object.keys(raw)) if (!KNOWN.has(key)) v.problem(`unknown option \`${key}\``);

  const name = v.string('name', raw.name, '');
  if (raw.name === undefined) v.problem('`name` is required (the dependency name, for errors and metrics)');
  const origin = readOrigin(v, raw.origin);
  const ms = { min: 0, exclusiveMin: true, max: HTTP_LIMITS.maxMs } as const;
  const p99Ms = v.number('p99Ms', raw.p99Ms, { default: undefined, ...ms });
  const recorder = raw.recorder;
  if (recorder !== undefined && !hasMethods(recorder, ['record', 'quantile'])) {
    v.problem('`recorder` must be a latency recorder (with `record` and `quantile`)');
  }
  const attempts = v.number('attempts', raw.attempts, {
    default: undefined,
    min: 1,
    max: HTTP_LIMITS.maxAttempts,
    integer: true,
  });
  const connectTimeoutMs = v.number('connectTimeoutMs', raw.connectTimeoutMs, {
    default: HTTP_DEFAULTS.connectTimeoutMs,
    min: 0,
    exclusiveMin: true,
    max: HTTP_LIMITS.maxConnectTimeoutMs,
  });
  const derived =
    p99Ms === undefined
      ? HTTP_DEFAULTS.responseTimeoutMs
      : Math.min(HTTP_LIMITS.maxMs, Math.ceil(p99Ms * HTTP_DEFAULTS.slack));
  const responseTimeoutMs = v.number('responseTimeoutMs', raw.responseTimeoutMs, { default: derived, ...ms });
  const bodyTimeoutMs = v.number('bodyTimeoutMs', raw.bodyTimeoutMs, { default: responseTimeoutMs, ...ms });
  const defaultDeadlineMs = v.number('defaultDeadlineMs', raw.defaultDeadlineMs, {
    default: HTTP_DEFAULTS.defaultDeadlineMs,
    ...ms,
  });
  const deadlineHeaders = readHeaderFormat(v, raw.deadlineHeaders);
  const keyHeader = v.string(
    'idempotencyKeyHeader',
    raw.idempotencyKeyHeader,
    IDEMPOTENCY_KEY_HEADER,
    HEADER_NAME,
  );
  const generateIdempotencyKey = v.boolean('generateIdempotencyKey', raw.generateIdempotencyKey, false);
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
  if (raw.lookup !== undefined && typeof raw.lookup !== 'function')
    v.problem('`lookup` must be a function like dns.lookup');
  if (raw.dispatcher !== undefined && !hasMethods(raw.dispatcher, ['dispatch'])) {
    v.problem('`dispatcher` must be an undici Dispatcher (with `dispatch`)');
  }
  if (raw.clock !== undefined && !hasMethods(raw.clock, ['now', 'epochNow', 'setTimer', 'clearTimer'])) {
    v.problem('`clock` must implement Clock (now, epochNow, setTimer, clearTimer)');
  }
  v.done();
  return Object.freeze({
    name,
    origin,
    p99Ms,
    recorder: options.recorder,
    attempts,
    connectTimeoutMs,
    responseTimeoutMs,
    bodyTimeoutMs,
    defaultDeadlineMs,
    deadlineHeaders: Object.freeze(deadlineHeaders),
    idempotencyKeyHeader: keyHeader.toLowerCase(),
    generateIdempotencyKey,
    connections,
    autoSelectFamily,
    lookup: options.lookup,
    dispatcher: options.dispatcher,
    clock: (raw.clock as Clock | undefined) ?? systemClock,
  });
}
