import type { Dispatcher } from 'undici';
import { Deadline } from '../deadline/deadline.js';
import { InvalidOptionsError } from '../errors/options.js';
import { isValidIdempotencyKey } from '../retry/idempotency.js';
import { HTTP_LIMITS } from './constants.js';
import type { RequestHeaders } from './headers.js';
import type { CallOptions } from './route.js';

/** Per-call options of `request()` (undici.request's, plus prazo's {@link CallOptions}). All optional. */
export interface HttpRequestOptions extends CallOptions {
  /** Path (and query) on the origin, e.g. `/users/7?full=1`. Default `/`. */
  readonly path?: string;
  /** Default `GET`. */
  readonly method?: Dispatcher.HttpMethod;
  readonly headers?: RequestHeaders;
  /** A stream body is sent once (it cannot be replayed by a retry or a hedge). */
  readonly body?: Dispatcher.DispatchOptions['body'];
  /** Query parameters appended to the path (undici's `query`). */
  readonly query?: Record<string, unknown>;
  /** The caller's own cancellation: the call rejects with the signal's reason. */
  readonly signal?: AbortSignal;
  /** undici's `highWaterMark` of the response body stream. */
  readonly highWaterMark?: number;
}

const msProblem = (name: string, value: unknown): string | undefined =>
  value === undefined ||
  (typeof value === 'number' && value > 0 && value <= HTTP_LIMITS.maxMs && Number.isFinite(value))
    ? undefined
    : `\`${name}\` must be a finite number in (0, ${HTTP_LIMITS.maxMs}], got ${String(value)}`;

const booleanProblem = (name: string, value: unknown): string | undefined =>
  value === undefined || typeof value === 'boolean' ? undefined : `\`${name}\` must be a boolean`;

/** Checks prazo's per-call options (cheap: only what was given). Throws one InvalidOptionsError. */
export function checkCallOptions(options: CallOptions, where: string): void {
  const { deadline, responseTimeoutMs, bodyTimeoutMs, idempotencyKey, idempotent, retryResponseTimeout } =
    options;
  if (
    deadline === undefined &&
    responseTimeoutMs === undefined &&
    bodyTimeoutMs === undefined &&
    idempotencyKey === undefined &&
    idempotent === undefined &&
    retryResponseTimeout === undefined
  ) {
    return;
  }
  const problems: string[] = [];
  const add = (p: string | undefined): void => {
    if (p !== undefined) problems.push(p);
  };
  if (typeof deadline === 'number') {
    if (!(deadline >= 0 && deadline <= HTTP_LIMITS.maxMs)) {
      problems.push(
        `\`deadline\` in ms must be a finite number in [0, ${HTTP_LIMITS.maxMs}], got ${deadline}`,
      );
    }
  } else if (deadline !== undefined && !(deadline instanceof Deadline)) {
    problems.push('`deadline` must be a Deadline or a number of ms from now');
  }
  add(msProblem('responseTimeoutMs', responseTimeoutMs));
  add(msProblem('bodyTimeoutMs', bodyTimeoutMs));
  add(booleanProblem('idempotent', idempotent));
  add(booleanProblem('retryResponseTimeout', retryResponseTimeout));
  if (idempotencyKey !== undefined && idempotencyKey !== true && !isValidIdempotencyKey(idempotencyKey)) {
    problems.push('`idempotencyKey` must be true or 1 to 255 visible ASCII characters');
  }
  if (problems.length > 0) throw new InvalidOptionsError(where, problems);
}

/** The options of `request(path | options, options?)`. */
export function callOptions(
  input: string | HttpRequestOptions,
  more?: HttpRequestOptions,
): HttpRequestOptions {
  return (typeof input === 'string' ? more : input) ?? EMPTY;
}

const EMPTY: HttpRequestOptions = Object.freeze({});

/** The path of `request(path | options, options?)`: a path as is, a URL on the origin made a path. */
export function callPath(
  input: string | HttpRequestOptions,
  options: HttpRequestOptions,
  origin: string,
): string {
  const raw = typeof input === 'string' ? input : (options.path ?? '/');
  if (typeof raw !== 'string') throw new InvalidOptionsError('request', ['`path` must be a string']);
  if (raw.charCodeAt(0) === 47 /* '/' */) return raw;
  let url: URL;
  try {
    url = new URL(raw, `${origin}/`);
  } catch {
    throw new InvalidOptionsError('request', [`\`path\` is not a valid path or URL: ${JSON.stringify(raw)}`]);
  }
  if (url.origin !== origin) {
    throw new InvalidOptionsError('request', [`URL ${url.origin} is not this client's origin (${origin})`]);
  }
  return `${url.pathname}${url.search}`;
}
