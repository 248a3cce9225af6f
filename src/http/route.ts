import type { Clock } from '../clock/clock.js';
import { Deadline, type HeaderFormat } from '../deadline/deadline.js';
import { unmanagedPlan } from '../dependency/dependency.js';
import { InvalidOptionsError } from '../errors/options.js';
import { IDEMPOTENCY_KEY_HEADER } from '../retry/constants.js';
import { generateIdempotencyKey, isIdempotentMethod, isValidIdempotencyKey } from '../retry/idempotency.js';
import { HttpCall } from './call.js';
import { HTTP_LIMITS } from './constants.js';
import type { Dispatch, DispatchHandler, DispatchOptions } from './handler.js';
import { speaksCurrentApi } from './handler.js';
import { appendCallerHeaders, type CallerHeaders, epochHeaderName, ownedDeadlineNames } from './headers.js';
import { RouteInstances, type Target } from './instances.js';
import type { ResolvedRoute } from './options.js';
import { type CallPlan, type ClientLifecycle, CurrentPlan, type Route } from './plan.js';
import type { CallOptions } from './request.js';

/** What a call is started with: the per-call options, and the caller's signal when prazo holds it. */
export interface CallInput extends CallOptions {
  /**
   * The deadline of the request this dispatch sends again (an interceptor above re-dispatching it
   * from inside its end, see `handing` in call.ts): taken as it is, over `deadline` and the ambient
   * one, which, read there, is the context of whichever request opened the socket.
   */
  readonly continued?: Deadline;
  /**
   * The caller's own cancellation: the call ends with the signal's reason. Listened to once per
   * signal however many calls share it (no MaxListenersExceededWarning).
   */
  readonly signal?: AbortSignal;
}

/** Builds a route's fixed parts from its header format. */
export function routeHeaders(
  format: HeaderFormat,
): Pick<Route, 'headerFormat' | 'epochHeader' | 'relative' | 'owned'> {
  return {
    headerFormat: format,
    epochHeader: epochHeaderName(format),
    relative: format.grpcTimeout === true || format.envoy === true,
    owned: ownedDeadlineNames(format),
  };
}

/**
 * Runs one dispatch as a call on `route`: the caller's headers (its deadline headers taken out and
 * read, its idempotency key taken out), the deadline, whether it may be repeated, then the executor's
 * plan, each attempt dispatched with `dispatch`. Returns what `dispatch` returns.
 */
export function callOn(
  route: Route,
  options: DispatchOptions,
  handler: DispatchHandler,
  dispatch: Dispatch,
  given: CallInput | undefined,
): boolean {
  // The wall clock first, then the monotonic one: the offset between them errs low, so a deadline
  // header written from it is never later than the caller's deadline (SPEC D5).
  const clock = route.clock;
  const epochNow = clock.epochNow();
  const now = clock.now();
  const method = options.method ?? 'GET';
  const headers: string[] = [];
  let key: string | true | undefined;
  let caller: CallerHeaders;
  try {
    caller = appendCallerHeaders(
      headers,
      options.headers,
      route.owned,
      IDEMPOTENCY_KEY_HEADER,
      route.epochHeader,
    );
    key = caller.key ?? given?.idempotencyKey;
    if (key === undefined && route.generateIdempotencyKey && !isIdempotentMethod(method)) key = true;
    if (key === true) key = generateIdempotencyKey();
    else if (key !== undefined && !isValidIdempotencyKey(key)) {
      throw new InvalidOptionsError(route.name, [
        '`idempotency-key` must be 1 to 255 visible ASCII characters',
      ]);
    }
  } catch (error) {
    return fail(handler, error as Error);
  }
  // A stream is sent once: the key still travels, but the executor must not repeat the call.
  const upgrade = options.upgrade != null && options.upgrade !== false;
  const repeatable = route.managed && !upgrade && method !== 'CONNECT' && isReplayableBody(options.body);
  if (key !== undefined && !repeatable) {
    headers.push(IDEMPOTENCY_KEY_HEADER, key);
    key = undefined;
  }
  // A discovered instance is an address: the request still names the Service (virtual hosts, SNI).
  const host = route.instances?.host;
  if (host !== undefined && !hasHost(headers)) headers.push('host', host);
  const idempotent = repeatable && (given?.idempotent ?? isIdempotentMethod(method));
  const base = route.plan.current; // the plan in force now: the call keeps it, whatever updates follow
  const plan: CallPlan =
    given?.responseTimeoutMs === undefined && given?.bodyTimeoutMs === undefined
      ? base
      : {
          ...base,
          responseTimeoutMs: given.responseTimeoutMs ?? base.responseTimeoutMs,
          bodyTimeoutMs: given.bodyTimeoutMs ?? base.bodyTimeoutMs,
        };
  // The caller's own deadline header (forwarded from its caller): the call ends no later (SPEC D1, D5).
  const callersMs = Math.min(caller.epochMs - epochNow, caller.relativeMs);
  const ceiling = callersMs < Number.POSITIVE_INFINITY ? Deadline.afterAt(now, callersMs, clock) : undefined;
  let call: HttpCall;
  try {
    // The deadline goes to the executor, which resolves it (SPEC D1, D3, D5).
    call = new HttpCall(
      route,
      plan,
      {
        deadline: given?.deadline,
        continued: given?.continued,
        ceiling,
        defaultDeadlineMs: base.defaultDeadlineMs,
        idempotent,
        key,
        retryResponseTimeout: given?.retryResponseTimeout,
        signal: given?.signal,
      },
      now,
      options,
      headers,
      handler,
      speaksCurrentApi(handler),
      dispatch,
    );
  } catch (error) {
    return fail(handler, error as Error);
  }
  return call.run(now, epochNow);
}

/**
 * A body that can be sent again as is (SPEC R5, H2): none, a string, bytes, a FormData or a Blob
 * (undici reads them afresh for each attempt). Never a stream: anything with `pipe` and `on`
 * functions (undici's own test, which also covers `form-data` and legacy `Stream`s that are not
 * `Readable`s), nor an (async) iterable, which a first attempt consumes: a request with one is sent
 * once even when its method is idempotent.
 */
export function isReplayableBody(body: unknown): boolean {
  if (body == null || typeof body === 'string' || body instanceof Uint8Array) return true;
  if (typeof body !== 'object') return false;
  const b = body as Record<string | symbol, unknown>;
  if (isFunction(b.pipe) && isFunction(b.on)) return false;
  if (body instanceof ArrayBuffer || ArrayBuffer.isView(body)) return true;
  const tag = b[Symbol.toStringTag];
  if (tag === 'FormData') return true;
  if ((tag === 'Blob' || tag === 'File') && isFunction(b.stream) && isFunction(b.arrayBuffer)) return true;
  return !(Symbol.asyncIterator in body || Symbol.iterator in body);
}

const isFunction = (value: unknown): boolean => typeof value === 'function';

function hasHost(headers: readonly string[]): boolean {
  for (let i = 0; i < headers.length; i += 2) if (headers[i]!.toLowerCase() === 'host') return true;
  return false;
}

/** Fails a dispatch before any attempt, through whichever handler API the caller speaks. */
export function fail(handler: DispatchHandler, error: Error): boolean {
  if (speaksCurrentApi(handler)) handler.onResponseError?.(null as never, error);
  else if (handler.onError) handler.onError(error);
  else throw error;
  return false;
}

/**
 * The plan of an origin nobody configured: the executor's one unmanaged plan (one attempt, bounded
 * by the deadline alone, nothing recorded, nothing retried, every status the server's answer), named
 * for the origin.
 */
export function passThroughPlan(name: string, clock: Clock): CallPlan {
  return Object.freeze({
    executor: unmanagedPlan(name, clock),
    connectTimeoutMs: Number.POSITIVE_INFINITY,
    responseTimeoutMs: Number.POSITIVE_INFINITY,
    bodyTimeoutMs: Number.POSITIVE_INFINITY,
    defaultDeadlineMs: HTTP_LIMITS.maxMs,
  });
}

/**
 * A managed route from validated options: its plan follows live calibration when `live` is on (a
 * healthy window that moves the p99 gives later calls a new executor; calls in flight keep theirs).
 * With several instances, `target` makes what dispatches to each one (the client's pools); without
 * it, attempts go to the dispatcher below the call with the instance's origin (the interceptor).
 */
export function buildRoute(
  o: ResolvedRoute,
  origin: string,
  target: (origin: string, plan: CurrentPlan) => Target = (instance) => ({ origin: instance }),
  lifecycle?: ClientLifecycle,
): { readonly route: Route; readonly plan: CurrentPlan } {
  const plan = new CurrentPlan(o.dependency, o.explicit, o.defaultDeadlineMs);
  const live = o.live;
  if (live !== undefined) {
    live.onWindow = (window) => {
      const p99Ms = live.p99.observe(window, plan.dependency.p99Ms);
      const next = p99Ms === undefined ? undefined : live.rebuild(p99Ms, plan.dependency);
      if (next !== undefined) plan.adopt(next);
    };
  }
  const route: Route = {
    name: o.name,
    clock: o.clock,
    plan,
    ...routeHeaders(o.deadlineHeaders),
    generateIdempotencyKey: o.generateIdempotencyKey,
    managed: true,
    lifecycle,
    instances:
      o.instances === undefined
        ? undefined
        : new RouteInstances(
            o.name,
            origin,
            o.instances,
            o.clock,
            () => plan.current.executor,
            (instance) => target(instance, plan),
          ),
  };
  return { route, plan };
}
