import type { Dispatcher } from 'undici';
import { currentDeadline } from '../deadline/ambient.js';
import { Deadline } from '../deadline/deadline.js';
import { InvalidOptionsError } from '../errors/options.js';
import { isValidIdempotencyKey } from '../retry/idempotency.js';
import { HTTP_LIMITS } from './constants.js';
import type { RequestHeaders } from './headers.js';
import type { ResolvedHttpClientOptions } from './options.js';

/** Per-call options of `request()` (undici.request's, plus prazo's). All optional. */
export interface HttpRequestOptions {
  /** Path (and query) on the origin, e.g. `/users/7?full=1`. Default `/`. */
  readonly path?: string;
  /** Default `GET`. */
  readonly method?: Dispatcher.HttpMethod;
  readonly headers?: RequestHeaders;
  /** A stream body is sent once (it cannot be replayed by a retry or a hedge). */
  readonly body?: Dispatcher.DispatchOptions['body'];
  /** Query parameters appended to the path (undici's `query`). */
  readonly query?: Record<string, unknown>;
  /**
   * This call's deadline: a {@link Deadline}, or ms from now. Never later than the ambient deadline
   * (a callee cannot extend its caller). Default: the ambient one, else `defaultDeadlineMs`.
   */
  readonly deadline?: Deadline | number;
  /** The caller's own cancellation: the call rejects with the signal's reason. */
  readonly signal?: AbortSignal;
  /**
   * The idempotency key this request carries end to end (SPEC R5), or `true` to generate one. Every
   * retry and hedge of the call carries the same key.
   */
  readonly idempotencyKey?: string | true;
  /**
   * Tightens the client's `responseTimeoutMs` for this call (the attempt timeout stays the ceiling).
   * Range (0, 2^31-1].
   */
  readonly responseTimeoutMs?: number;
  /** Overrides the client's `bodyTimeoutMs` for this call. Range (0, 2^31-1]. */
  readonly bodyTimeoutMs?: number;
  /** Retry this call's response timeouts (idempotent calls only; SPEC R4). Default: the client's. */
  readonly retryResponseTimeout?: boolean;
  /** undici's `highWaterMark` of the response body stream. */
  readonly highWaterMark?: number;
}

const msProblem = (name: string, value: unknown): string | undefined =>
  value === undefined ||
  (typeof value === 'number' && value > 0 && value <= HTTP_LIMITS.maxMs && Number.isFinite(value))
    ? undefined
    : `\`${name}\` must be a finite number in (0, ${HTTP_LIMITS.maxMs}], got ${String(value)}`;

/** Checks the per-call numbers (cheap: only what was given). Throws one InvalidOptionsError. */
export function checkCallOptions(options: HttpRequestOptions): void {
  const { deadline, responseTimeoutMs, bodyTimeoutMs, idempotencyKey } = options;
  if (
    deadline === undefined &&
    responseTimeoutMs === undefined &&
    bodyTimeoutMs === undefined &&
    idempotencyKey === undefined
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
  if (idempotencyKey !== undefined && idempotencyKey !== true && !isValidIdempotencyKey(idempotencyKey)) {
    problems.push('`idempotencyKey` must be true or 1 to 255 visible ASCII characters');
  }
  if (problems.length > 0) throw new InvalidOptionsError('request', problems);
}

/** The deadline a call runs under: its own (capped by the ambient one), the ambient, or the default. */
export function resolveDeadline(
  given: Deadline | number | undefined,
  client: ResolvedHttpClientOptions,
): Deadline {
  const ambient = currentDeadline();
  if (given === undefined)
    return ambient ?? Deadline.after(client.defaultDeadlineMs, { clock: client.clock });
  const own = typeof given === 'number' ? Deadline.after(given, { clock: client.clock }) : given;
  return ambient === undefined ? own : own.min(ambient);
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
