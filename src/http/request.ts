import type { Dispatcher } from 'undici';
import { EXECUTE_OPTIONS } from '../dependency/options.js';
import { InvalidOptionsError } from '../errors/options.js';
import { defineOptions, isAbortSignal, type OptionsOf, option } from '../options/declare.js';
import { HTTP_LIMITS } from './constants.js';
import type { RequestHeaders } from './headers.js';

/** What `request()` resolves with: undici's own response (status, headers, body stream). */
export type HttpResponse = Dispatcher.ResponseData;

/** A per-call timeout: (0, 2^31-1] ms. */
const callMs = () => option.number({ unit: 'ms', min: 0, exclusiveMin: true, max: HTTP_LIMITS.maxMs });

/**
 * prazo's per-call options, the one declaration every HTTP entry reads them with:
 * `client.request(path, { ... })`, `client.fetch(url, { prazo: { ... } })` and the interceptor's
 * `{ prazo: { ... } }` in the dispatch options. A misspelt key is refused with a "did you mean" on
 * each of them, before any socket; the values are checked against the same specs.
 */
export const HTTP_CALL_OPTIONS = defineOptions({
  /**
   * This call's deadline: a {@link Deadline}, or ms from now ([0, 2^31-1]). Never later than the
   * ambient deadline (a callee cannot extend its caller). Default: the ambient one, else the route's
   * default.
   */
  deadline: EXECUTE_OPTIONS.specs.deadline,
  /**
   * Whether the request may be sent more than once (SPEC R5). Default: its method is idempotent
   * (GET, HEAD, OPTIONS, PUT, DELETE, TRACE) or it carries an idempotency key. A body that is a
   * stream is sent once whatever this says.
   */
  idempotent: option.optional(EXECUTE_OPTIONS.specs.idempotent),
  /**
   * The idempotency key this request carries end to end (SPEC R5), or `true` to generate one. Every
   * retry and hedge of the call carries the same key. 1 to 255 visible ASCII characters.
   */
  idempotencyKey: EXECUTE_OPTIONS.specs.idempotencyKey,
  /** Tightens the response timeout for this call (the attempt timeout stays the ceiling), in ms. */
  responseTimeoutMs: callMs(),
  /** Overrides the body timeout for this call, in ms. */
  bodyTimeoutMs: callMs(),
  /** Retry this call's response timeouts (idempotent calls only; SPEC R4). Default: the route's. */
  retryResponseTimeout: EXECUTE_OPTIONS.specs.retryResponseTimeout,
});

/** Per-call choices a caller passes along (`{ prazo: { ... } }` in dispatch options, or `request()`'s). */
export type CallOptions = OptionsOf<typeof HTTP_CALL_OPTIONS>;

/** A value undici checks itself: prazo passes it on as given. */
const undici = <T>() => option.value<T>("undici's own value", () => true);

/**
 * undici's request options that `client.request()` hands to undici as given: undici reads and checks
 * them (its `request()` above the call, or the pool below it). Its `origin` (the client's own),
 * `upgrade`, `throwOnError` and `maxRedirections` (which undici 7's `request()` refuses) are not
 * among them.
 */
export const UNDICI_REQUEST_OPTIONS = defineOptions({
  /** undici's `opaque`: handed back on the response. */
  opaque: undici<unknown>(),
  /** undici's `onInfo`: each informational (1xx) response. */
  onInfo: undici<Dispatcher.RequestOptions['onInfo']>(),
  /** undici's `responseHeaders`: `'raw'` for the headers as a flat list. */
  responseHeaders: undici<Dispatcher.RequestOptions['responseHeaders']>(),
  /**
   * undici's own head timer, in ms, beside prazo's (`responseTimeoutMs`, bounded by the attempt and
   * the deadline). Default: none on the client's own pool; on your `dispatcher`, its own, or a
   * per-call `responseTimeoutMs` plus a second when one is given.
   */
  headersTimeout: undici<number | null>(),
  /** undici's own body timer, in ms, beside prazo's (`bodyTimeoutMs`). Default: as `headersTimeout`. */
  bodyTimeout: undici<number | null>(),
  /** undici's `reset`: close the connection after this request. */
  reset: undici<boolean>(),
  /** undici's `blocking`: no other request on the connection until this one's head arrives. */
  blocking: undici<boolean>(),
  /** undici's `expectContinue`: send `expect: 100-continue` and wait for it. */
  expectContinue: undici<boolean>(),
  /** undici's `typeOfService` (the socket's IP TOS byte), where undici supports it. */
  typeOfService: undici<number | null>(),
});

/**
 * The options of `client.request()`, declared once: prazo's per-call ones ({@link HTTP_CALL_OPTIONS}),
 * the undici request options the client reads itself, and the rest of undici's
 * ({@link UNDICI_REQUEST_OPTIONS}), handed on as given. Anything else is refused with a "did you mean".
 */
export const HTTP_REQUEST_OPTIONS = defineOptions({
  ...HTTP_CALL_OPTIONS.specs,
  /** Path (and query) on the origin, e.g. `/users/7?full=1`, or a URL on it. Default `/`. */
  path: option.value<string>("a path or a URL on the client's origin", (v) => typeof v === 'string'),
  /** Default `GET`. */
  method: undici<Dispatcher.HttpMethod>(),
  /** The request's headers (a record, flat pairs or an iterable of pairs). */
  headers: undici<RequestHeaders>(),
  /** A stream body is sent once (it cannot be replayed by a retry or a hedge). */
  body: undici<Dispatcher.DispatchOptions['body']>(),
  /** Query parameters appended to the path (undici's `query`). */
  query: undici<Record<string, unknown>>(),
  /** The caller's own cancellation: the call rejects with the signal's reason. `null`: none. */
  signal: option.value<AbortSignal | null>('an AbortSignal', (v) => v === null || isAbortSignal(v)),
  /** undici's `highWaterMark` of the response body stream. */
  highWaterMark: undici<number>(),
  ...UNDICI_REQUEST_OPTIONS.specs,
});

/** Per-call options of `request()` (undici.request's, plus prazo's {@link CallOptions}). All optional. */
export type HttpRequestOptions = OptionsOf<typeof HTTP_REQUEST_OPTIONS>;

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
