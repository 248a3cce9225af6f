import type { Dispatcher } from 'undici';
import type { InstanceState } from '../balance/instances.js';
import { normalizeOrigin, shownOrigin } from '../balance/options.js';
import type { Clock } from '../clock/clock.js';
import { systemClock } from '../clock/system.js';
import { currentDeadline } from '../deadline/ambient.js';
import { Deadline, type HeaderFormat } from '../deadline/deadline.js';
import { fitsDeadline } from '../deadline/fits.js';
import type { Dependency } from '../dependency/dependency.js';
import { type DependencyListener, Relay } from '../dependency/events.js';
import { resolveDeadline } from '../dependency/options.js';
import type { Disposable } from '../dependency/types.js';
import { thrownText } from '../errors/base.js';
import { DeadlineExceededError } from '../errors/deadline.js';
import { InvalidOptionsError } from '../errors/options.js';
import { defineOptions, option } from '../options/declare.js';
import { checkCallOptions, OptionsValidator } from '../options/validator.js';
import { handing } from './call.js';
import { HTTP_LIMITS } from './constants.js';
import { type Dispatch, type DispatchHandler, type DispatchOptions, mayReachCore } from './handler.js';
import type { HttpDependencyOptions, InterceptorOptions } from './options.js';
import type { CurrentPlan, Route } from './plan.js';
import { type CallOptions, HTTP_CALL_OPTIONS } from './request.js';
import { buildRoute, callOn, fail, passThroughPlan, routeHeaders } from './route.js';
import { readHeaderFormat, resolveRouteOptions } from './validate.js';

/**
 * `interceptor(options)`: prazo/http inside the caller's own HTTP stack (SPEC X4). An undici
 * interceptor, for `new Agent().compose(interceptor({...}))`, `setGlobalDispatcher(...)` (Node's
 * global `fetch` and `undici.request` then go through it) or `fetch(url, { dispatcher })`.
 *
 * Each origin it knows is a dependency: every call to it runs as `createHttpClient` runs its own
 * (the same route, call and attempt classes): DEADLINE_INSUFFICIENT before any socket, phase-split
 * timeouts with typed errors, retries and hedges paid from the dependency's budget, Retry-After, a
 * POST sent once unless keyed, latency recorded, events for prazo/otel. An origin it does not know
 * passes through untouched, except that the ambient deadline (and a per-call one) still bounds the
 * call and travels in the outgoing header, and a per-call `idempotencyKey` travels and a per-call
 * `responseTimeoutMs`/`bodyTimeoutMs` bounds it (still one attempt, nothing retried). Per call, `{ prazo: { deadline, idempotent, ... } }` in
 * the dispatch options (`undici.request(url, { dispatcher, prazo })`) overrides the defaults.
 *
 * Next to undici's own interceptors (docs/http.md, "Composing with undici's interceptors"): a
 * managed call's failure reads `aborted`, so a retry interceptor above passes it down rather than
 * repeating prazo's plan after a backoff outside the deadline and the budget; a request an
 * interceptor above sends again from inside its call's end keeps that call's deadline (see
 * `handing`); an address whose `Host` names a managed origin (undici's dns interceptor above) is
 * that origin's call; and an attempt a dispatcher below starts again (retry, redirect) goes on.
 */

/** What `interceptor()` returns: an undici interceptor, with its dependencies to observe. */
export interface PrazoInterceptor extends Dispatcher.DispatcherComposeInterceptor {
  /** Every executor decision on every origin it manages (across live recalibrations). */
  on(listener: DependencyListener): Disposable;
  /** The executor calls to `origin` run through now, once the origin is known. */
  dependency(origin: string | URL): Dependency | undefined;
  /** Each managed origin's dependency as prazo/otel reads it (`instrumentPrazo({ dependencies })`). */
  dependencies(): readonly DependencyView[];
  /**
   * Stops the DNS discovery of every dependency that has it (its timer never keeps the process alive,
   * but a test or a shutdown may want it gone), and lets go of the instances of every dependency that
   * has several, origins met after it included: a call to such an origin fails at once with
   * `UND_ERR_CLOSED` (not recorded as the dependency failing). The dispatcher below is yours to close.
   */
  close(): Promise<void>;
}

/** A managed origin's dependency, following its live recalibrations (what prazo/otel instruments). */
export interface DependencyView {
  readonly name: string;
  readonly origin: string;
  /** The executor calls to the origin run through (`update` it, or bind it to a config watcher). */
  readonly dependency: Dependency;
  on(listener: DependencyListener): Disposable;
  readonly budget: Dependency['budget'];
  readonly recorder: Dependency['recorder'];
  readonly timeouts: Dependency['timeouts'];
  /** The concurrency limit's state, when it has one (SPEC X7). */
  concurrency(): ReturnType<Dependency['concurrency']>;
  /** Its instances now, when it has several (SPEC X5); empty otherwise. */
  instances(): readonly InstanceState[];
}

type Resolver = (origin: string) => HttpDependencyOptions | undefined;

interface Managed {
  readonly route: Route;
  readonly plan: CurrentPlan;
  readonly origin: string;
}

/** `http(s)://host:port` of an origin as undici passes it (a string or a URL), or undefined. */
function originOf(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (value instanceof URL) return value.origin;
  return undefined;
}

/** The origin a dispatch names, normalised (`HTTP://Inventory:80/x` → `http://inventory`), or undefined. */
function dispatchOrigin(value: string): string | undefined {
  try {
    const url = new URL(value);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
    return url.origin;
  } catch {
    return undefined;
  }
}

/**
 * The origins an interceptor has met, each mapped to its route (managed, or passing through), with a
 * bound: an application that calls ever new origins cannot grow it without limit (the oldest origins
 * met at run time are forgotten first; configured ones stay).
 */
class OriginTable {
  readonly #configured = new Map<string, Managed>();
  readonly #met = new Map<string, Managed | Route | Error>();
  /** `origin Host` pairs met (an address and the name it stands for): the managed origin, or null. */
  readonly #hosts = new Map<string, Managed | Error | null>();
  readonly #resolve: Resolver | undefined;
  readonly #clock: Clock;
  readonly #passFormat: HeaderFormat;
  /** Relays the events of every managed origin remembered. */
  readonly #relay = new Relay<Managed>();
  /**
   * Set by the interceptor's `close()`: an origin met after it gets no discovery of its own (it looked
   * its name up every interval for the life of the process, after a close meant to stop that).
   */
  #closed = false;

  constructor(clock: Clock, passFormat: HeaderFormat, resolve: Resolver | undefined) {
    this.#clock = clock;
    this.#passFormat = passFormat;
    this.#resolve = resolve;
  }

  configure(origin: string, managed: Managed): void {
    this.#configured.set(origin, managed);
    this.#relay.attach(managed, (deliver) => managed.plan.on(deliver));
  }

  /** The route for an origin: managed, passing through, or the error of a resolver that failed. */
  find(raw: string): Managed | Route | Error {
    const known = this.#configured.get(raw) ?? this.#met.get(raw);
    if (known !== undefined) return known;
    const origin = dispatchOrigin(raw);
    let found = origin === undefined ? undefined : (this.#configured.get(origin) ?? this.#met.get(origin));
    if (found === undefined) {
      found = this.#meet(origin ?? raw);
      // Known by its normalised origin too: another spelling of it is the same dependency.
      if (origin !== undefined && origin !== raw) this.#remember(origin, found);
    }
    this.#remember(raw, found);
    return found;
  }

  /**
   * The managed origin a request to an address stands for: undici's dns interceptor, above prazo,
   * rewrites `http://inventory:8080` to `http://10.0.0.7:8080` and keeps the name in the `Host`
   * header (and TLS's servername). An origin nobody configured whose `Host` names a managed origin of
   * the same scheme and port is that origin's request, sent to the address already chosen. Undefined
   * when there is no such `Host`, or it names no managed origin.
   */
  byHost(origin: string, headers: DispatchOptions['headers']): Managed | Error | undefined {
    const host = hostHeader(headers);
    if (host === undefined) return undefined;
    const key = `${origin} ${host}`;
    let found = this.#hosts.get(key);
    if (found === undefined) {
      found = this.#named(origin, host);
      this.#hosts.set(key, found);
      if (this.#hosts.size > HTTP_LIMITS.maxOrigins) this.#hosts.delete(this.#hosts.keys().next().value!);
    }
    return found ?? undefined;
  }

  #named(origin: string, host: string): Managed | Error | null {
    let url: URL;
    let named: URL;
    try {
      url = new URL(origin);
      named = new URL(`${url.protocol}//${host}`);
    } catch {
      return null;
    }
    if (named.port !== url.port || named.host === url.host) return null;
    const found = this.find(named.origin);
    return found instanceof Error || isManaged(found) ? found : null;
  }

  #meet(origin: string): Managed | Route | Error {
    const entry = this.#resolve === undefined ? undefined : this.#ask(origin);
    if (entry instanceof Error) return entry;
    if (entry === undefined) return this.#passThrough(origin);
    try {
      const managed = managedRoute(origin, resolveRouteOptions(entry, `interceptor: ${origin}`, this.#clock));
      this.#relay.attach(managed, (deliver) => managed.plan.on(deliver));
      if (this.#closed) void managed.route.instances?.close();
      return managed;
    } catch (error) {
      return error as Error;
    }
  }

  #ask(origin: string): HttpDependencyOptions | undefined | Error {
    try {
      return this.#resolve!(origin) ?? undefined;
    } catch (error) {
      return new InvalidOptionsError(`interceptor: ${origin}`, [
        `\`dependencies(origin)\` threw: ${thrownText(error)}`,
      ]);
    }
  }

  #passThrough(origin: string): Route {
    return {
      name: origin,
      clock: this.#clock,
      plan: { current: passThroughPlan(origin, this.#clock) },
      ...routeHeaders(this.#passFormat),
      generateIdempotencyKey: false,
      managed: false,
      instances: undefined,
    };
  }

  #remember(origin: string, found: Managed | Route | Error): void {
    const met = this.#met;
    met.set(origin, found);
    if (met.size <= HTTP_LIMITS.maxOrigins) return;
    const oldest = met.keys().next().value as string;
    const gone = met.get(oldest)!;
    met.delete(oldest);
    // Still met under another key (its normalised origin, or a configured one): still relayed.
    // Forgotten: no longer relayed, and its discovery stops (`close()` no longer reaches it, and its
    // timer would look the name up every interval for the life of the process).
    if (isManaged(gone) && !this.#holds(gone)) {
      this.#relay.detach(gone);
      gone.route.instances?.stopDiscovery();
    }
  }

  #holds(managed: Managed): boolean {
    for (const value of this.#configured.values()) if (value === managed) return true;
    for (const value of this.#met.values()) if (value === managed) return true;
    return false;
  }

  managed(): Managed[] {
    return [...this.#relay.sources()];
  }

  /** Stops every managed origin's discovery and lets go of its instances, and of those met later. */
  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all(this.managed().map((managed) => managed.route.instances?.close()));
  }

  on(listener: DependencyListener): Disposable {
    return this.#relay.on(listener);
  }
}

/** The `Host` header of a dispatch's headers (an object, flat pairs or a list of pairs), if any. */
function hostHeader(headers: DispatchOptions['headers']): string | undefined {
  if (headers == null || typeof headers !== 'object') return undefined;
  if (Array.isArray(headers)) {
    const list = headers as unknown[];
    if (list.length > 0 && Array.isArray(list[0])) {
      for (const pair of list as unknown[][]) if (isHost(pair[0])) return stringOf(pair[1]);
      return undefined;
    }
    for (let i = 0; i + 1 < list.length; i += 2) if (isHost(list[i])) return stringOf(list[i + 1]);
    return undefined;
  }
  if (Symbol.iterator in headers) return undefined; // an iterable is read once, by undici: not here
  for (const key of Object.keys(headers)) {
    if (isHost(key)) return stringOf((headers as Record<string, unknown>)[key]);
  }
  return undefined;
}

const isHost = (name: unknown): boolean => typeof name === 'string' && name.toLowerCase() === 'host';
const stringOf = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

const isManaged = (value: Managed | Route | Error): value is Managed =>
  !(value instanceof Error) && 'route' in value;

function managedRoute(origin: string, resolved: ReturnType<typeof resolveRouteOptions>): Managed {
  const { route, plan } = buildRoute(resolved, origin);
  return { route, plan, origin };
}

/** Reads `{ prazo: {...} }` of one dispatch: checked, or the error to fail the dispatch with. */
function callOptionsOf(given: unknown): CallOptions | Error {
  if (given === null || typeof given !== 'object') {
    return new InvalidOptionsError('prazo', ['`prazo` (per-call options) must be an object']);
  }
  try {
    checkCallOptions('prazo', HTTP_CALL_OPTIONS, given);
  } catch (error) {
    return error as Error;
  }
  return given as CallOptions;
}

/** What the unmanaged plan needs of a deadline: nothing beyond the floor of SPEC D4's rule. */
const PASS_THROUGH_P99_MS = 0;

/**
 * True when per-call options change a call passed through without a deadline: its idempotency key
 * is written, its phase timeouts bound it. `idempotent` and `retryResponseTimeout` do not (one
 * attempt, nothing retried).
 */
function shapesCall(call: CallOptions | undefined): boolean {
  return (
    call !== undefined &&
    (call.idempotencyKey !== undefined ||
      call.responseTimeoutMs !== undefined ||
      call.bodyTimeoutMs !== undefined)
  );
}

/** The dispatch options without `prazo`, for a dispatch passed through (the same object without one). */
function withoutPrazo(options: DispatchOptions, given: unknown): DispatchOptions {
  if (given === undefined) return options;
  const { prazo: _prazo, ...rest } = options as DispatchOptions & { prazo?: unknown };
  return rest as DispatchOptions;
}

/**
 * The interceptor's own options, declared once (their documentation is `InterceptorOptions`'): each
 * entry of `dependencies` is then read as a route, and `deadlineHeaders` with the deadline's
 * declaration, their problems listed with the rest.
 */
const INTERCEPTOR_OPTIONS = defineOptions({
  dependencies: option.value<InterceptorOptions['dependencies']>(
    'a map of origins to dependency options, or a function of the origin',
    (v) => typeof v === 'function' || (v !== null && typeof v === 'object'),
  ),
  deadlineHeaders: option.value<HeaderFormat>('the headers to write', () => true),
  clock: option.clock(),
});

/** Validates the interceptor's options once; every problem is listed in one InvalidOptionsError. */
function resolveInterceptor(options: InterceptorOptions): OriginTable {
  const v = new OptionsValidator('interceptor');
  const o = v.read(INTERCEPTOR_OPTIONS, options);
  const clock = o.clock ?? systemClock;
  const passFormat = readHeaderFormat(v, o.deadlineHeaders);
  const dependencies = o.dependencies;
  const resolver = typeof dependencies === 'function' ? (dependencies as Resolver) : undefined;
  const table = new OriginTable(clock, passFormat, resolver);
  if (dependencies !== undefined && resolver === undefined) {
    const keys = new Map<string, string>(); // each origin's first key
    for (const [key, entry] of Object.entries(dependencies)) {
      const origin = normalizeOrigin(key);
      if (origin === undefined) {
        v.problem(
          `\`dependencies\`: ${JSON.stringify(shownOrigin(key))} is not an origin such as "http://inventory:8080" (http or https, no path)`,
        );
        continue;
      }
      // Two spellings of one origin would be two dependencies of which calls reach only one.
      const first = keys.get(origin);
      if (first !== undefined) {
        v.problem(
          `\`dependencies\`: ${JSON.stringify(shownOrigin(key))} repeats ${JSON.stringify(shownOrigin(first))} (both are ${origin}): give each origin once`,
        );
      } else keys.set(origin, key);
      const resolved = v.absorb(
        () => resolveRouteOptions(entry, `dependencies['${key}']`, clock),
        `\`dependencies['${key}']\`: `,
      );
      if (resolved !== undefined && first === undefined)
        table.configure(origin, managedRoute(origin, resolved));
    }
  }
  v.done();
  return table;
}

/**
 * An undici interceptor that runs calls to the origins in `options.dependencies` through their
 * dependency's executor, and bounds every other call by the ambient deadline. Validated once, here.
 *
 * @example
 * // `Agent` and `setGlobalDispatcher` from undici, `interceptor` from prazo/http:
 * setGlobalDispatcher(new Agent().compose(interceptor({
 *   dependencies: { 'http://inventory:8080': { name: 'inventory', p99Ms: 85, attempts: 2, hedge: true } },
 * })));
 * await fetch('http://inventory:8080/stock/42'); // deadline, budgeted retries, hedging, typed errors
 */
export function interceptor(options: InterceptorOptions = {}): PrazoInterceptor {
  const table = resolveInterceptor(options);

  const compose = (dispatch: Dispatch): Dispatch => {
    // What `compose` hands its innermost interceptor: the dispatcher's own `dispatch`, bound.
    if (dispatch.name === 'bound dispatch') mayReachCore(dispatch);
    return function prazo(options: DispatchOptions, handler: DispatchHandler): boolean {
      const given = (options as { prazo?: unknown }).prazo;
      let call: CallOptions | undefined;
      if (given !== undefined) {
        const checked = callOptionsOf(given);
        if (checked instanceof Error) return fail(handler, checked);
        call = checked;
      }
      // A call's attempts are dispatched without `prazo` (see HttpCall); a dispatch passed straight
      // through drops it here.
      const origin = originOf(options.origin);
      if (origin === undefined) return dispatch(withoutPrazo(options, given), handler); // nothing to know it by
      let found = table.find(origin);
      if (found instanceof Error) return fail(handler, found);
      // The same request sent again by an interceptor above, from inside its end: its deadline goes on.
      const carried = handing.handler === handler ? handing.deadline : undefined;
      if (!isManaged(found)) found = table.byHost(origin, options.headers) ?? found;
      if (found instanceof Error) return fail(handler, found);
      if (isManaged(found)) {
        const input = carried === undefined ? call : { ...call, continued: carried };
        return callOn(found.route, options, handler, dispatch, input);
      }
      // An origin nobody configured: untouched, unless a deadline (ambient or per call) bounds it or
      // a per-call option shapes it. Resolved here by the executor's rule, once: the call then takes
      // it as it is.
      const deadline: Deadline | undefined =
        carried ??
        (call?.deadline === undefined
          ? currentDeadline()
          : resolveDeadline(call.deadline, origin, HTTP_LIMITS.maxMs, found.clock, found.clock.now()));
      if (deadline === undefined) {
        if (!shapesCall(call)) return dispatch(withoutPrazo(options, given), handler);
        // No limit to carry: an endless deadline writes no header and bounds nothing.
        const endless = Deadline.after(Number.POSITIVE_INFINITY, { clock: found.clock });
        return callOn(found, options, handler, dispatch, { ...call, continued: endless });
      }
      // SPEC D4's one rule (fits.ts), for a call that needs no more than the rule's floor: with less
      // than 1 ms left (or a time left that cannot be read) the deadline is spent before a request
      // could be answered, and the executor's refusal would say it needed 0 ms.
      if (!fitsDeadline(deadline.remainingMs(), PASS_THROUGH_P99_MS)) {
        return fail(
          handler,
          new DeadlineExceededError({ dependency: origin, deadlineEpochMs: deadline.epochMs() }),
        );
      }
      // The caller's per-call options go with it (the key travels end to end, SPEC R5; the phase
      // timeouts bound it): the plan stays one attempt, nothing retried.
      return callOn(found, options, handler, dispatch, { ...call, continued: deadline });
    };
  };

  const view = (managed: Managed): DependencyView => ({
    name: managed.route.name,
    origin: managed.origin,
    on: (listener) => managed.plan.on(listener),
    get dependency() {
      return managed.plan.dependency;
    },
    get budget() {
      return managed.plan.dependency.budget;
    },
    get recorder() {
      return managed.plan.dependency.recorder;
    },
    get timeouts() {
      return managed.plan.dependency.timeouts;
    },
    concurrency: () => managed.plan.dependency.concurrency(),
    instances: () => managed.route.instances?.states() ?? [],
  });

  return Object.assign(compose, {
    on: (listener: DependencyListener) => table.on(listener),
    dependency: (origin: string | URL) => {
      const raw = originOf(origin);
      if (raw === undefined) return undefined;
      const found = table.find(raw);
      return isManaged(found) ? found.plan.dependency : undefined;
    },
    dependencies: () => table.managed().map(view),
    close: () => table.close(),
  }) as unknown as PrazoInterceptor;
}
