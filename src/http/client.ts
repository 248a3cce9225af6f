import { type Dispatcher, Pool } from 'undici';
import { DeadlineInsufficientError } from '../errors/deadline.js';
import { generateIdempotencyKey, isIdempotentMethod } from '../retry/idempotency.js';
import { Attempt, type AttemptScope } from './attempt.js';
import { checkCallOptions, type HttpRequestOptions, normalizeCall, resolveDeadline } from './call.js';
import { createConnector } from './connector.js';
import { createFetch, type HttpFetch } from './fetch.js';
import { appendCallerHeaders, appendRecord, ownedDeadlineNames } from './headers.js';
import type { HttpClientOptions, ResolvedHttpClientOptions } from './options.js';
import { createSend, type DispatchRequest } from './transport.js';
import { resolveHttpClientOptions } from './validate.js';

/**
 * `createHttpClient`: one dependency reached over HTTP, with deadlines in and out (SPEC D4, D5),
 * phase-split timeouts (C2, D6) and latency recorded by outcome. Options are validated once here;
 * the per-call path only reads them.
 */

/** What `request()` resolves with: undici's own response (status, headers, body stream). */
export type HttpResponse = Dispatcher.ResponseData;

export interface HttpClient {
  /** The dependency's name. */
  readonly name: string;
  /** The origin every request goes to. */
  readonly origin: string;
  /** The validated options, defaults applied. */
  readonly options: ResolvedHttpClientOptions;
  /** undici.request-shaped: resolves at the response head; read or dump `body`. */
  request(path: string, options?: HttpRequestOptions): Promise<HttpResponse>;
  request(options: HttpRequestOptions): Promise<HttpResponse>;
  /** fetch()-compatible, on top of `request()`; see `fetch.ts` for the differences. */
  readonly fetch: HttpFetch;
  /** Closes the pool gracefully (in-flight requests finish). A no-op with your own `dispatcher`. */
  close(): Promise<void>;
  /** Destroys the pool's connections now. A no-op with your own `dispatcher`. */
  destroy(): Promise<void>;
}

/**
 * undici's own header and body timeouts stay armed as backstops only: they run on 500 ms "fast
 * timers" that can fire up to a tick early or late, so they are set a safe margin past prazo's.
 */
const BACKSTOP_MS = 1_000;

export function createHttpClient(options: HttpClientOptions): HttpClient {
  const o = resolveHttpClientOptions(options);
  const owned = o.dispatcher === undefined;
  const dispatcher: Dispatcher =
    o.dispatcher ??
    new Pool(o.origin, {
      connect: createConnector({
        clock: o.clock,
        timeoutMs: o.connectTimeoutMs,
        autoSelectFamily: o.autoSelectFamily,
        lookup: o.lookup,
      }),
      connections: o.connections ?? null,
      headersTimeout: o.responseTimeoutMs + BACKSTOP_MS,
      bodyTimeout: o.bodyTimeoutMs + BACKSTOP_MS,
    });
  const send = createSend(dispatcher);
  const scope: AttemptScope = {
    name: o.name,
    clock: o.clock,
    connectTimeoutMs: o.connectTimeoutMs,
    recorder: o.recorder,
  };
  const dropped = ownedDeadlineNames(o.deadlineHeaders);

  function request(input: string | HttpRequestOptions, more?: HttpRequestOptions): Promise<HttpResponse> {
    try {
      const { path, options: call } = normalizeCall(input, more, o.origin);
      checkCallOptions(call);
      const signal = call.signal;
      if (signal?.aborted) return Promise.reject(signal.reason);
      const deadline = resolveDeadline(call.deadline, o);
      const remaining = deadline.remainingMs();
      const needed = o.p99Ms ?? o.recorder?.quantile(0.99) ?? 0;
      if (remaining <= 0 || remaining < needed) {
        return Promise.reject(
          new DeadlineInsufficientError({ dependency: o.name, remainingMs: remaining, neededMs: needed }),
        );
      }
      const method = call.method ?? 'GET';
      const headers: string[] = [];
      const sentKey = appendCallerHeaders(headers, call.headers, dropped, o.idempotencyKeyHeader);
      const wantsKey =
        call.idempotencyKey !== undefined || (o.generateIdempotencyKey && !isIdempotentMethod(method));
      if (sentKey === undefined && wantsKey) {
        const key = typeof call.idempotencyKey === 'string' ? call.idempotencyKey : generateIdempotencyKey();
        headers.push(o.idempotencyKeyHeader, key);
      }
      appendRecord(headers, deadline.toHeaders(o.deadlineHeaders));
      const responseMs = call.responseTimeoutMs ?? o.responseTimeoutMs;
      const bodyMs = call.bodyTimeoutMs ?? o.bodyTimeoutMs;
      const dispatch: DispatchRequest = {
        origin: o.origin,
        path,
        method,
        headers,
        body: call.body ?? null,
        query: call.query,
        highWaterMark: call.highWaterMark,
      };
      if (call.responseTimeoutMs !== undefined) dispatch.headersTimeout = responseMs + BACKSTOP_MS;
      if (call.bodyTimeoutMs !== undefined) dispatch.bodyTimeout = bodyMs + BACKSTOP_MS;
      return send(dispatch, new Attempt(scope, deadline, responseMs, bodyMs, signal));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  return Object.freeze({
    name: o.name,
    origin: o.origin,
    options: o,
    request: request as HttpClient['request'],
    fetch: createFetch(request),
    close: async () => {
      if (owned) await dispatcher.close();
    },
    destroy: async () => {
      if (owned) await dispatcher.destroy();
    },
  });
}
