import { Dispatcher, Pool } from 'undici';
import type { InstanceState } from '../balance/instances.js';
import type { Dependency } from '../dependency/dependency.js';
import type { DependencyListener } from '../dependency/events.js';
import type { Disposable } from '../dependency/types.js';
import { checkCallOptions } from '../options/validator.js';
import { createConnector } from './connector.js';
import { createFetch, type HttpFetch } from './fetch.js';
import { type Dispatch, type DispatchHandler, type DispatchOptions, mayReachCore } from './handler.js';
import type { Target } from './instances.js';
import type { HttpClientOptions, ResolvedHttpClientOptions } from './options.js';
import { type ClientLifecycle, type CurrentPlan, OpenCalls } from './plan.js';
import { createTrackedPool, endedError, type TrackedPool } from './pool.js';
import {
  callOptions,
  callPath,
  HTTP_REQUEST_OPTIONS,
  type HttpRequestOptions,
  type HttpResponse,
  UNDICI_REQUEST_OPTIONS,
} from './request.js';
import { buildRoute, type CallInput, callOn } from './route.js';
import { resolveHttpClientOptions } from './validate.js';

/**
 * `createHttpClient`: one dependency reached over HTTP, a thin face on the same machinery as the
 * interceptor (one route, one kind of call, one kind of attempt): every call runs through the
 * dependency's executor (deadline check, attempt slices, budgeted retries, Retry-After, hedging,
 * latency recording; SPEC R1-R6, H1-H3, D4), each attempt is one undici request whose phases are
 * timed (SPEC C2, D5, D6), on a pool of its own whose connect phase has a precise timer. undici's
 * own `request()` is the handler above the call, so what `request()` resolves with is exactly
 * `undici.request`'s. Options are validated once; the per-call path only reads.
 *
 * Closing: the client keeps its calls not answered yet, because a call between attempts (waiting
 * out a Retry-After, or for a slot) holds no request its pool could end. `close()` is undici's
 * graceful close: what is on the wire finishes, nothing new is sent, so a pending retry (not in
 * flight: nothing of it was written) is not sent and its call ends with the answer it holds.
 * `destroy()` ends them all at once. A call after either is refused before the executor: a closed
 * client's calls are the caller's lifecycle, no original of the budget and no error of the recorder.
 */

export interface HttpClient {
  /** The dependency's name. */
  readonly name: string;
  /**
   * The origin requests go to: the one given (with `discovery`, the name whose addresses are the
   * instances), or the first of `origins`.
   */
  readonly origin: string;
  /**
   * The dependency's instances now (SPEC X5): each one's origin, attempts in flight, picks, latency
   * estimate and standing (in rotation, on probation, ejected). Empty for a client of one origin.
   */
  instances(): readonly InstanceState[];
  /** The executor calls run through now: its p99, timeouts, budget and recorder (`live` replaces it). */
  readonly dependency: Dependency;
  /** Every executor decision (attempts, retries, hedges, budget refusals), across live recalibrations. */
  on(listener: DependencyListener): Disposable;
  /** The validated options, defaults applied. */
  readonly options: ResolvedHttpClientOptions;
  /** undici.request-shaped: resolves at the response head; read or dump `body`. */
  request(path: string, options?: HttpRequestOptions): Promise<HttpResponse>;
  request(options: HttpRequestOptions): Promise<HttpResponse>;
  /** fetch()-compatible, on top of `request()`; see `fetch.ts` for the differences. */
  readonly fetch: HttpFetch;
  /**
   * Closes the pools gracefully (in-flight requests finish), one per instance, and stops discovery.
   * Nothing new is sent: an answer in flight is final (no retry, no hedge after it), and a call
   * between attempts (a backoff or Retry-After wait) ends at once with the answer it holds (a 503),
   * or with the failure it would have retried. Later calls reject at once with `UND_ERR_CLOSED`.
   * Called again, or after `destroy()`, it resolves once that ends. Your own `dispatcher` is left
   * open.
   */
  close(): Promise<void>;
  /**
   * Destroys every pool's connections now, and stops discovery: every call not answered yet rejects
   * at once with `UND_ERR_DESTROYED` (one waiting to retry too), as do later calls. Your own
   * `dispatcher` is left open.
   */
  destroy(): Promise<void>;
}

/**
 * The client's own pools arm none of undici's header and body timers (`0`): prazo's phase timer
 * bounds every phase of every attempt (queued, head, body, drain), to the call's deadline when the
 * attempt is patient. undici's timers run on 500 ms "fast timers" (a timer of a given delay can fire a
 * tick early or late), and as a backstop a second past prazo's they cut what prazo meant to wait for:
 * a patient attempt (`concurrencyLimit.patience`) waiting for its deadline, or the longer attempts of
 * a plan updated since the pool was made. A caller's own `headersTimeout` / `bodyTimeout` still applies.
 * On your own dispatcher its timers apply, and a per-call phase timeout is carried to them.
 */
/** How far past prazo's phase timeout a per-call one is carried to your dispatcher's undici timers. */
const UNDICI_TIMER_MARGIN_MS = 1_000;

function createPool(o: ResolvedHttpClientOptions, plan: CurrentPlan, origin: string): TrackedPool {
  return createTrackedPool(origin, {
    connect: createConnector({
      clock: o.clock,
      timeoutMs: () => plan.connectTimeoutMs,
      autoSelectFamily: o.autoSelectFamily,
      lookup: o.lookup,
    }),
    connections: o.connections ?? null,
    headersTimeout: 0,
    bodyTimeout: 0,
  });
}

/** undici's `request()`, run against a dispatcher of our own (the call, below it the pool). */
const requestApi = Dispatcher.prototype.request as unknown as (
  this: { dispatch: Dispatch },
  options: Dispatcher.RequestOptions,
) => Promise<Dispatcher.ResponseData>;

export function createHttpClient(options: HttpClientOptions): HttpClient {
  const o = resolveHttpClientOptions(options);
  // Several instances: a pool of its own for each one (created as it joins, closed as it leaves).
  const target = (origin: string, plan: CurrentPlan): Target => {
    if (o.dispatcher !== undefined) return { origin };
    const own = createPool(o, plan, origin);
    const dispatcher = own.dispatcher;
    return {
      origin,
      dispatch: mayReachCore(dispatcher.dispatch.bind(dispatcher)),
      close: own.close,
      destroy: own.destroy,
    };
  };
  // Its calls not answered yet and its drains: `close()` and `destroy()` reach them beyond the pools.
  const lifecycle: ClientLifecycle = { open: new OpenCalls(), drains: new Set(), closing: false };
  /** Set by the first `close()` or `destroy()`: later calls are refused before the executor. */
  let ended: 'closed' | 'destroyed' | undefined;
  let closed: Promise<void> | undefined;
  let destroyed: Promise<void> | undefined;
  const { route, plan } = buildRoute(o, o.origin, target, lifecycle);
  const instances = route.instances;
  const pool =
    o.dispatcher === undefined && instances === undefined ? createPool(o, plan, o.origin) : undefined;
  const below = o.dispatcher ?? pool?.dispatcher;
  const next: Dispatch =
    below === undefined
      ? () => {
          throw new Error('prazo/http: an attempt of a client with instances was sent without one');
        }
      : below.dispatch.bind(below);
  // A pool of its own, or a dispatcher of undici's own (its `dispatch` not replaced): undici's core.
  if (below !== undefined && (pool !== undefined || below.dispatch === Pool.prototype.dispatch))
    mayReachCore(next);
  // undici's request() calls `dispatch` synchronously: the call's own options ride along here.
  let given: CallInput | undefined;
  const face = {
    dispatch(dispatched: DispatchOptions, handler: DispatchHandler): boolean {
      const own = given;
      given = undefined;
      return callOn(route, dispatched, handler, next, own);
    },
  };

  const context = `${o.name}.request`;

  function request(input: string | HttpRequestOptions, more?: HttpRequestOptions): Promise<HttpResponse> {
    // Nothing can be sent: refused as undici refuses a closed dispatcher, before the executor, so
    // that the call is no original of the budget and no error of the recorder (a shared executor's).
    if (ended !== undefined) return Promise.reject(endedError(ended));
    try {
      let call = callOptions(input, more);
      checkCallOptions(context, HTTP_REQUEST_OPTIONS, call);
      const path = callPath(input, call, o.origin);
      const dispatched: Dispatcher.RequestOptions = {
        origin: o.origin,
        path,
        method: call.method ?? 'GET',
        headers: call.headers as Dispatcher.RequestOptions['headers'],
        body: call.body ?? null,
        query: call.query,
        highWaterMark: call.highWaterMark,
      };
      // On your own dispatcher its undici timers apply: a per-call phase timeout is carried to them,
      // a second past prazo's (undici's fast timers fire up to a tick off), as a longer wait asked for.
      if (o.dispatcher !== undefined) {
        if (call.responseTimeoutMs !== undefined)
          dispatched.headersTimeout = call.responseTimeoutMs + UNDICI_TIMER_MARGIN_MS;
        if (call.bodyTimeoutMs !== undefined)
          dispatched.bodyTimeout = call.bodyTimeoutMs + UNDICI_TIMER_MARGIN_MS;
      }
      // undici's own options, as given (its request() above the call, or the pool below, reads them).
      for (const key in call) {
        if (Object.hasOwn(UNDICI_REQUEST_OPTIONS.specs, key)) {
          const value = (call as Record<string, unknown>)[key];
          if (value !== undefined) (dispatched as unknown as Record<string, unknown>)[key] = value;
        }
      }
      if (call.signal === null) call = { ...call, signal: undefined };
      given = call as CallInput;
      return requestApi.call(face, dispatched);
    } catch (error) {
      return Promise.reject(error);
    } finally {
      given = undefined;
    }
  }

  return Object.freeze({
    name: o.name,
    origin: o.origin,
    get dependency() {
      return plan.dependency;
    },
    on: (listener: DependencyListener) => plan.on(listener),
    options: o,
    request: request as HttpClient['request'],
    instances: () => instances?.states() ?? [],
    fetch: createFetch(request, o.name, o.clock),
    // Once each, and a close() after either is that end: undici's pool rejects a second close() with
    // UND_ERR_DESTROYED ("destroyed", of a client that was closed), and a shutdown may well close twice.
    close: () => {
      closed ??= destroyed ?? closeNow();
      return closed;
    },
    destroy: () => {
      destroyed ??= destroyNow();
      return destroyed;
    },
  });

  async function closeNow(): Promise<void> {
    ended ??= 'closed';
    lifecycle.closing = true;
    for (const call of lifecycle.open.list()) call.wrapUp(endedError('closed'));
    const closing = new Error('prazo: drain given up: the client is closing');
    for (const drain of [...lifecycle.drains]) drain.abortRequest(closing);
    await Promise.all([pool?.close(), instances?.close()]);
  }

  async function destroyNow(): Promise<void> {
    ended = 'destroyed';
    lifecycle.closing = true;
    for (const call of lifecycle.open.list()) call.end(endedError('destroyed'));
    await Promise.all([pool?.destroy(), instances?.destroy()]);
  }
}
