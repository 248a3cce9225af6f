import { type Dispatcher, Pool } from 'undici';
import type { Dependency } from '../dependency/dependency.js';
import type { DependencyListener } from '../dependency/events.js';
import type { AttemptContext, Disposable } from '../dependency/types.js';
import { IDEMPOTENCY_KEY_HEADER } from '../retry/constants.js';
import { generateIdempotencyKey, isIdempotentMethod } from '../retry/idempotency.js';
import { Attempt, type AttemptScope } from './attempt.js';
import { callOptions, callPath, checkCallOptions, type HttpRequestOptions, resolveDeadline } from './call.js';
import { createConnector } from './connector.js';
import { createFetch, type HttpFetch } from './fetch.js';
import { appendCallerHeaders, appendRecord, ownedDeadlineNames } from './headers.js';
import { isReplayableBody } from './idempotency.js';
import type { HttpClientOptions, ResolvedHttpClientOptions } from './options.js';
import { CurrentPlan } from './plan.js';
import { createSend, type DispatchRequest } from './transport.js';
import { resolveHttpClientOptions } from './validate.js';
import { createClassify, discardResponse } from './verdict.js';

/**
 * `createHttpClient`: one dependency reached over HTTP. Every call runs through the dependency's
 * executor (`dependency.execute`: deadline check, attempt slices, budgeted retries, Retry-After,
 * hedging, latency recording; SPEC R1-R6, H1-H3, D4); each attempt is one undici request whose
 * phases are timed here (SPEC C2, D5, D6). Options are validated once; the per-call path only reads.
 */

/** What `request()` resolves with: undici's own response (status, headers, body stream). */
export type HttpResponse = Dispatcher.ResponseData;

export interface HttpClient {
  /** The dependency's name. */
  readonly name: string;
  /** The origin every request goes to. */
  readonly origin: string;
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

/** The largest slack the executor accepts without `forceSlack` (SPEC C1). */
const MAX_SLACK = 1.5;

function createPool(o: ResolvedHttpClientOptions, plan: CurrentPlan): Dispatcher {
  // Backstops past the largest attempt timeout this client can plan with (live calibration moves it).
  const headMs = o.live === undefined ? o.responseTimeoutMs : Math.ceil(o.live.p99.maxP99Ms * MAX_SLACK);
  return new Pool(o.origin, {
    connect: createConnector({
      clock: o.clock,
      timeoutMs: () => plan.connectMs,
      autoSelectFamily: o.autoSelectFamily,
      lookup: o.lookup,
    }),
    connections: o.connections ?? null,
    headersTimeout: Math.max(headMs, o.responseTimeoutMs) + BACKSTOP_MS,
    bodyTimeout: Math.max(o.explicit.bodyMs ?? headMs, o.bodyTimeoutMs) + BACKSTOP_MS,
  });
}

export function createHttpClient(options: HttpClientOptions): HttpClient {
  const o = resolveHttpClientOptions(options);
  const plan = new CurrentPlan(o.dependency, o.explicit);
  const live = o.live;
  if (live !== undefined) {
    live.onWindow = (window) => {
      const p99Ms = live.p99.observe(window, plan.dependency.p99Ms);
      const next = p99Ms === undefined ? undefined : live.rebuild(p99Ms, plan.dependency);
      if (next !== undefined) plan.adopt(next);
    };
  }
  const dispatcher = o.dispatcher ?? createPool(o, plan);
  const send = createSend(dispatcher);
  const scope: AttemptScope = {
    name: o.name,
    clock: o.clock,
    get connectTimeoutMs() {
      return plan.connectMs;
    },
  };
  const dropped = ownedDeadlineNames(o.deadlineHeaders);
  const classify = createClassify(o.clock);

  function request(input: string | HttpRequestOptions, more?: HttpRequestOptions): Promise<HttpResponse> {
    try {
      const call = callOptions(input, more);
      const path = callPath(input, call, o.origin);
      checkCallOptions(call);
      const method = call.method ?? 'GET';
      const headers: string[] = [];
      let key =
        appendCallerHeaders(headers, call.headers, dropped, IDEMPOTENCY_KEY_HEADER) ?? call.idempotencyKey;
      if (key === undefined && o.generateIdempotencyKey && !isIdempotentMethod(method)) key = true;
      const body = call.body ?? null;
      const replayable = isReplayableBody(body);
      if (key !== undefined && !replayable) {
        // A stream is sent once: the key still travels, but the executor must not repeat the call.
        headers.push(IDEMPOTENCY_KEY_HEADER, key === true ? generateIdempotencyKey() : key);
        key = undefined;
      }
      const deadline = resolveDeadline(call.deadline, o);
      const responseMs = call.responseTimeoutMs ?? plan.responseMs;
      const bodyMs = call.bodyTimeoutMs ?? plan.bodyMs;
      const baseLength = headers.length;
      let primary: Attempt | undefined;
      let primaryContext: AttemptContext | undefined;
      const operation = (ctx: AttemptContext) => {
        // The first attempt extends the caller's array; later ones (retries, hedge) copy its base.
        const own = ctx.attempt === 1 ? headers : headers.slice(0, baseLength);
        appendRecord(own, ctx.headers);
        const dispatch: DispatchRequest = {
          origin: o.origin,
          path,
          method,
          headers: own,
          body,
          query: call.query,
          highWaterMark: call.highWaterMark,
        };
        if (call.responseTimeoutMs !== undefined) dispatch.headersTimeout = responseMs + BACKSTOP_MS;
        if (call.bodyTimeoutMs !== undefined) dispatch.bodyTimeout = bodyMs + BACKSTOP_MS;
        const attempt = new Attempt(scope, deadline, ctx.timeoutMs, responseMs, bodyMs, call.signal);
        if (ctx.kind === 'hedge') {
          // Two copies race: now, and only now, each needs the executor's signal (the loser is
          // cancelled with it). Reading `ctx.signal` creates an AbortController: never on the
          // common path, where the attempt's own timer mirrors the executor's.
          attempt.follow(ctx.signal);
          if (primary !== undefined && !primary.done) primary.follow(primaryContext!.signal);
        } else if (ctx.kind === 'original') {
          primary = attempt;
          primaryContext = ctx;
        }
        return send(dispatch, attempt);
      };
      return plan.dependency.execute(operation, {
        idempotent: replayable && isIdempotentMethod(method),
        idempotencyKey: key,
        deadline,
        signal: call.signal,
        classify,
        discard: discardResponse,
        retryResponseTimeout: call.retryResponseTimeout,
      });
    } catch (error) {
      return Promise.reject(error);
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
    fetch: createFetch(request),
    close: async () => {
      if (o.dispatcher === undefined) await dispatcher.close();
    },
    destroy: async () => {
      if (o.dispatcher === undefined) await dispatcher.destroy();
    },
  });
}
