import { pipeline, Readable, type Transform } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import zlib from 'node:zlib';
import { Headers, Response } from 'undici';
import type { Clock } from '../clock/clock.js';
import { isPrazoError } from '../errors/base.js';
import { ConnectFailedError } from '../errors/timeout.js';
import { classifyFailure } from '../retry/classify.js';
import type { HttpResponse } from './client.js';
import type { HttpRequestOptions } from './request.js';

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

/** `RequestInit` plus prazo's per-call options. */
export interface HttpFetchInit
  extends Pick<
    HttpRequestOptions,
    | 'deadline'
    | 'idempotent'
    | 'idempotencyKey'
    | 'responseTimeoutMs'
    | 'bodyTimeoutMs'
    | 'retryResponseTimeout'
  > {
  readonly method?: string;
  readonly headers?: HeadersLikeInit;
  readonly body?: FetchBody;
  readonly signal?: AbortSignal | null;
}

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
  return new Response(web, { status: res.statusCode, statusText: res.statusText ?? '', headers });
}

const ignore = (): void => {};

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
  return async (input, init = {}) => {
    const started = clock.now();
    const isObject = typeof input === 'object' && !(input instanceof URL);
    const url = isObject ? input.url : String(input);
    const method = normalizeMethod(init.method ?? (isObject ? input.method : undefined) ?? 'GET');
    const headers = new Headers(
      (init.headers ?? (isObject ? input.headers : undefined)) as ConstructorParameters<typeof Headers>[0],
    );
    const body = await toBody(init.body ?? (isObject ? input.body : undefined), headers);
    const signal = init.signal ?? (isObject ? input.signal : undefined) ?? undefined;
    let res: HttpResponse;
    try {
      res = await request(url, {
        method,
        headers,
        body,
        signal,
        deadline: init.deadline,
        idempotent: init.idempotent,
        idempotencyKey: init.idempotencyKey,
        responseTimeoutMs: init.responseTimeoutMs,
        bodyTimeoutMs: init.bodyTimeoutMs,
        retryResponseTimeout: init.retryResponseTimeout,
      });
    } catch (error) {
      throw typedConnectFailure(error, dependency, clock.now() - started);
    }
    return toResponse(res, method);
  };
}
