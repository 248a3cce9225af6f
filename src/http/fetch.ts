import { pipeline, Readable, type Transform } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import zlib from 'node:zlib';
import { Headers, type RequestInit, Response } from 'undici';
import type { Clock } from '../clock/clock.js';
import { isPrazoError } from '../errors/base.js';
import { ConnectFailedError } from '../errors/timeout.js';
import { defineOptions, isAbortSignal, type OptionsOf, option } from '../options/declare.js';
import { checkCallOptions } from '../options/validator.js';
import { classifyFailure } from '../retry/classify.js';
import {
  type CallOptions,
  HTTP_CALL_OPTIONS,
  type HttpRequestOptions,
  type HttpResponse,
} from './request.js';

/**
 * A `fetch()`-compatible face on the client's `request()`, for code written against fetch. Same
 * deadline, timeouts, recording and retries as `request()` (it is `request()` underneath), with the
 * differences a fetch user must know:
 * - it rejects with prazo's typed errors (CONNECT_TIMEOUT, CONNECT_FAILED, DEADLINE_EXCEEDED, ...), not
 *   with `TypeError: fetch failed`; a connect that failed (refused, unreachable, unknown name) is a
 *   CONNECT_FAILED whose `cause` is the socket error; other socket errors (a reset) pass as they are;
 * - redirects are returned, not followed (`redirect: 'manual'` semantics): a dependency is one origin;
 * - a compressed body is decoded (gzip, deflate, br) as fetch does, but `accept-encoding` is sent
 *   only when the caller sets it;
 * - the URL must be on the client's origin (or a path), and `response.url` is empty.
 */

type HeadersLikeInit = Iterable<readonly [string, string]> | Readonly<Record<string, string>>;
type FetchBody =
  | string
  | Uint8Array
  | ArrayBuffer
  | URLSearchParams
  | FormData
  | Blob
  | WebReadableStream
  | null;

/** One of `RequestInit`'s own keys, typed as undici's: accepted, and without effect on a dependency's fetch. */
const fetchOwn = <K extends keyof RequestInit>() =>
  option.value<RequestInit[K]>("fetch's own value", () => true);

/**
 * What `fetch`'s init may hold, declared once: prazo's per-call options (beside fetch's keys, or in a
 * `prazo` member as the interceptor takes them: `{ prazo: { deadline: 800 } }`, which wins where both
 * give one), the keys it reads (`method`, `headers`, `body`, `signal`) and the rest of `RequestInit`
 * (WHATWG's, and undici's `dispatcher`), accepted and ignored as a fetch on one origin does: redirects
 * are returned, there is no cache, CORS or credentials mode, the dispatcher is the client's. Anything
 * else is refused with a "did you mean" (`{ deadlnie: 100 }` is a typo, not a RequestInit key).
 */
const HTTP_FETCH_OPTIONS = defineOptions({
  ...HTTP_CALL_OPTIONS.specs,
  /** prazo's per-call options, as the interceptor reads them from dispatch options. */
  prazo: option.nested(HTTP_CALL_OPTIONS),
  /** Default `GET`; DELETE, GET, HEAD, OPTIONS, POST and PUT are upper-cased, as fetch does. */
  method: option.value<string>('an HTTP method', (v) => typeof v === 'string'),
  headers: option.value<HeadersLikeInit>('headers', () => true),
  /** A stream is sent once (it cannot be replayed by a retry or a hedge). */
  body: option.value<FetchBody>('a body', () => true),
  /** The caller's own cancellation. */
  signal: option.value<AbortSignal | null>('an AbortSignal', (v) => v === null || isAbortSignal(v)),
  cache: fetchOwn<'cache'>(),
  credentials: fetchOwn<'credentials'>(),
  integrity: fetchOwn<'integrity'>(),
  keepalive: fetchOwn<'keepalive'>(),
  mode: fetchOwn<'mode'>(),
  redirect: fetchOwn<'redirect'>(),
  referrer: fetchOwn<'referrer'>(),
  referrerPolicy: fetchOwn<'referrerPolicy'>(),
  window: fetchOwn<'window'>(),
  duplex: fetchOwn<'duplex'>(),
  dispatcher: fetchOwn<'dispatcher'>(),
  priority: option.value<string>("fetch's own value", () => true),
});

/** `RequestInit` plus prazo's per-call options (`{ deadline }`, or `{ prazo: { deadline } }`). */
export type HttpFetchInit = OptionsOf<typeof HTTP_FETCH_OPTIONS>;

/** What `fetch` accepts as input: a path, a URL, or a Request-like object (`url`, `method`, ...). */
export type HttpFetchInput =
  | string
  | URL
  | {
      readonly url: string;
      readonly method?: string;
      readonly headers?: HeadersLikeInit;
      readonly body?: WebReadableStream | null;
      readonly signal?: AbortSignal | null;
    };

export type HttpFetch = (input: HttpFetchInput, init?: HttpFetchInit) => Promise<Response>;

type Request = (path: string, options?: HttpRequestOptions) => Promise<HttpResponse>;

/** Statuses that never carry a body (Response's constructor refuses one). */
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

async function toBody(body: FetchBody | undefined, headers: Headers): Promise<HttpRequestOptions['body']> {
  if (body == null || typeof body === 'string' || body instanceof Uint8Array) return body;
  if (body instanceof ArrayBuffer) return new Uint8Array(body);
  if (body instanceof URLSearchParams) {
    if (!headers.has('content-type'))
      headers.set('content-type', 'application/x-www-form-urlencoded;charset=UTF-8');
    return body.toString();
  }
  if (body instanceof Blob) {
    if (body.type && !headers.has('content-type')) headers.set('content-type', body.type);
    return new Uint8Array(await body.arrayBuffer());
  }
  if (typeof (body as WebReadableStream).getReader === 'function') {
    return Readable.fromWeb(body as WebReadableStream);
  }
  return body as HttpRequestOptions['body']; // FormData: undici encodes it
}

/** At most this many stacked content codings are decoded (as undici's fetch: a bomb guard). */
const MAX_CODINGS = 5;

/**
 * The decoders for `Content-Encoding`, last applied first, as fetch does (gzip, deflate, br); none
 * when a coding is unknown (the body is then handed over as sent, like undici's fetch).
 */
function decoders(contentEncoding: unknown): Transform[] {
  if (typeof contentEncoding !== 'string') return [];
  const codings = contentEncoding.toLowerCase().split(',');
  if (codings.length > MAX_CODINGS) return [];
  const sync = { flush: zlib.constants.Z_SYNC_FLUSH, finishFlush: zlib.constants.Z_SYNC_FLUSH };
  const out: Transform[] = [];
  for (let i = codings.length - 1; i >= 0; i -= 1) {
    const coding = codings[i]!.trim();
    if (coding === 'gzip' || coding === 'x-gzip') out.push(zlib.createGunzip(sync));
    else if (coding === 'deflate') out.push(zlib.createInflate(sync));
    else if (coding === 'br') {
      const flush = zlib.constants.BROTLI_OPERATION_FLUSH;
      out.push(zlib.createBrotliDecompress({ flush, finishFlush: flush }));
    } else if (coding !== 'identity') return [];
  }
  return out;
}

function toResponse(res: HttpResponse, method: string): Response {
  const headers = new Headers();
  for (const [name, value] of Object.entries(res.headers)) {
    if (Array.isArray(value)) for (const v of value) headers.append(name, v);
    else if (value !== undefined) headers.append(name, String(value));
  }
  const empty = method === 'HEAD' || NULL_BODY.has(res.statusCode);
  if (empty) res.body.resume(); // nothing to read; let the connection go back to the pool
  let body: Readable | null = empty ? null : res.body;
  const decode = body === null ? [] : decoders(res.headers['content-encoding']);
  // A compressed body is decoded, as fetch does; an error or abort on either side tears both down.
  if (body !== null && decode.length > 0) {
    const streams: NodeJS.ReadWriteStream[] = decode;
    body = pipeline([body, ...streams], ignore) as unknown as Readable;
  }
  const web = body === null ? null : (Readable.toWeb(body) as unknown as ReadableStream);
  const status = res.statusCode;
  const statusText = res.statusText ?? '';
  const takes = status >= 200 && status <= 599;
  const readable = REASON_PHRASE.test(statusText);
  if (takes && readable) return new Response(web, { status, statusText, headers });
  const stand = new Response(web, {
    status: takes ? status : 200,
    statusText: readable ? statusText : '',
    headers,
  });
  return withStatusLine(stand, status, statusText);
}

/** RFC 9110's reason-phrase (`*( HTAB / SP / VCHAR / obs-text )`): what Response's constructor takes. */
const REASON_PHRASE = /^[\t\x20-\x7e\x80-\xff]*$/;

/**
 * Gives a Response the status line received when its constructor refuses it. A server may answer a
 * status outside 200-599 (a 699) or a reason phrase with control characters, undici's `request()`
 * hands both over, and Node's fetch answers them (it builds its Response inside, without the
 * constructor's checks). So does this one: `status`, `statusText`, `ok` and `clone()` give the
 * received line. The Response is built with a line its constructor takes (200, or the
 * status with an empty text) and these four are defined on it; what reads undici's inner response
 * directly (its `Cache` API) sees that stand-in line.
 */
function withStatusLine(response: Response, status: number, statusText: string): Response {
  const clone = response.clone;
  return Object.defineProperties(response, {
    status: { value: status },
    statusText: { value: statusText },
    ok: { value: status >= 200 && status <= 299 },
    clone: { value: () => withStatusLine(clone.call(response), status, statusText) },
  });
}

const ignore = (): void => {};

const EMPTY: CallOptions = Object.freeze({});

/** fetch upper-cases these six methods only (Fetch standard, "normalize a method"). */
const NORMALIZED = new Set(['DELETE', 'GET', 'HEAD', 'OPTIONS', 'POST', 'PUT']);
const normalizeMethod = (method: string): string => {
  const upper = method.toUpperCase();
  return NORMALIZED.has(upper) ? upper : method;
};

/** A connect that failed before any byte was sent, as prazo's typed error (the socket error its cause). */
function typedConnectFailure(error: unknown, dependency: string, elapsedMs: number): unknown {
  if (isPrazoError(error)) return error;
  const failedConnect =
    classifyFailure(error).kind === 'connect' || (error as { code?: unknown } | null)?.code === 'ENOTFOUND';
  return failedConnect ? new ConnectFailedError({ dependency, elapsedMs, cause: error }) : error;
}

/** Builds the client's `fetch` on top of its `request`. */
export function createFetch(request: Request, dependency: string, clock: Clock): HttpFetch {
  const context = `${dependency}.fetch`;
  return async (input, given) => {
    const started = clock.now();
    // A null init is none, as in WHATWG's fetch (WebIDL reads a null dictionary as an empty one).
    const init: HttpFetchInit = given ?? EMPTY;
    checkCallOptions(context, HTTP_FETCH_OPTIONS, init);
    const isObject = typeof input === 'object' && !(input instanceof URL);
    const url = isObject ? input.url : String(input);
    const method = normalizeMethod(init.method ?? (isObject ? input.method : undefined) ?? 'GET');
    const headers = new Headers(
      (init.headers ?? (isObject ? input.headers : undefined)) as ConstructorParameters<typeof Headers>[0],
    );
    const body = await toBody(init.body ?? (isObject ? input.body : undefined), headers);
    const signal = init.signal ?? (isObject ? input.signal : undefined) ?? undefined;
    const own = init.prazo ?? EMPTY;
    let res: HttpResponse;
    try {
      res = await request(url, {
        method,
        headers,
        body,
        signal,
        deadline: own.deadline ?? init.deadline,
        idempotent: own.idempotent ?? init.idempotent,
        idempotencyKey: own.idempotencyKey ?? init.idempotencyKey,
        responseTimeoutMs: own.responseTimeoutMs ?? init.responseTimeoutMs,
        bodyTimeoutMs: own.bodyTimeoutMs ?? init.bodyTimeoutMs,
        retryResponseTimeout: own.retryResponseTimeout ?? init.retryResponseTimeout,
      });
    } catch (error) {
      throw typedConnectFailure(error, dependency, clock.now() - started);
    }
    return toResponse(res, method);
  };
}
