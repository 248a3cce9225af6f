import type { Clock } from '../clock/clock.js';
import type { HeaderFormat } from '../deadline/deadline.js';
import type { Dependency } from '../dependency/dependency.js';
import { type DependencyListener, Relay } from '../dependency/events.js';
import { type Executor, type ExecutorPlan, executorOf, type PlanFollower } from '../dependency/transport.js';
import type { Disposable } from '../dependency/types.js';
import { HTTP_DEFAULTS } from './constants.js';
import type { RouteInstances } from './instances.js';

/** What one call runs with, fixed when it starts (live calibration may replace it for later calls). */
export interface CallPlan {
  /** The executor's plan the call is opened on. */
  readonly executor: ExecutorPlan;
  /** From the request written to the response head, in ms (never past the attempt's own limit). */
  readonly responseTimeoutMs: number;
  /** Longest silence between body chunks while the consumer reads, in ms. */
  readonly bodyTimeoutMs: number;
  /** The connect timeout in force, in ms (to name it in a CONNECT_TIMEOUT). */
  readonly connectTimeoutMs: number;
  /** The deadline of a call given none and running outside any ambient one, in ms. */
  readonly defaultDeadlineMs: number;
}

/**
 * A route: how calls to one origin run (SPEC C2, D1, D4-D6, R1-R6, H1-H3). `createHttpClient` has
 * one; an interceptor has one per origin it knows, and one more for the origins it does not (which
 * only the ambient deadline bounds). `callOn` (route.ts) turns one dispatch into one `HttpCall`.
 */
export interface Route {
  readonly name: string;
  readonly clock: Clock;
  /** The executor and timeouts calls start with (live calibration replaces them). */
  readonly plan: Pick<CurrentPlan, 'current'>;
  readonly headerFormat: HeaderFormat;
  /** The absolute deadline header's name, or undefined when the format omits it. */
  readonly epochHeader: string | undefined;
  /** True when a relative deadline header is written (valued when the request is written). */
  readonly relative: boolean;
  /** Lower-cased deadline header names the route writes: a caller's own are dropped. */
  readonly owned: readonly string[];
  readonly generateIdempotencyKey: boolean;
  /** False for an origin nobody configured: statuses are not judged, nothing is retried. */
  readonly managed: boolean;
  /** The dependency's instances, when it is several (SPEC X5): each attempt is sent to one of them. */
  readonly instances: RouteInstances | undefined;
  /** What its client's `close()` and `destroy()` reach (`createHttpClient`); none for an interceptor. */
  readonly lifecycle?: ClientLifecycle | undefined;
}

/** The calls and drains a client's `close()` and `destroy()` must reach beyond its pools. */
export interface ClientLifecycle {
  /** The calls not answered yet: a call between attempts holds no request its pool could end. */
  readonly open: OpenCalls;
  /**
   * Answers released and still being drained (a retried 503): prazo's own requests that nobody waits
   * for; a graceful close would wait for each up to the drain's bound (1 s).
   */
  readonly drains: Set<Drain>;
  /** True once the client is closing: a released answer is not drained, its connection is closing. */
  closing: boolean;
}

/** A released answer being drained, as `close()` gives it up. */
export interface Drain {
  abortRequest(reason: Error): void;
}

/** A call as its client's `close()` and `destroy()` reach it. */
export interface OpenCall {
  /** The client is closing: no retry or hedge is sent; a call between attempts ends now. */
  wrapUp(reason: Error): void;
  /** The client is destroyed: the call ends now with `reason`, its attempts torn down. */
  end(reason: Error): void;
  /** Its neighbours in its client's {@link OpenCalls} while it is open (written by that list only). */
  openPrev: OpenCall | undefined;
  openNext: OpenCall | undefined;
}

/**
 * A client's open calls, linked through the calls themselves: a call joins and leaves by writing two
 * fields, and a call that left is referenced by nothing of the client's. Not a `Set`, for what it was
 * measured to cost: with one here, under load every call's objects were promoted to the old
 * generation at young-generation collections (50 calls in flight on an in-process undici core:
 * 4.2 MB promoted per scavenge instead of none, 2.5 times the CPU per call; the bench's
 * "50 in flight" cases watch it).
 */
export class OpenCalls {
  #head: OpenCall | undefined;

  add(call: OpenCall): void {
    const head = this.#head;
    call.openPrev = undefined;
    call.openNext = head;
    if (head !== undefined) head.openPrev = call;
    this.#head = call;
  }

  delete(call: OpenCall): void {
    const { openPrev: prev, openNext: next } = call;
    if (prev !== undefined) prev.openNext = next;
    else if (this.#head === call) this.#head = next;
    else return; // not in the list
    if (next !== undefined) next.openPrev = prev;
    call.openPrev = undefined;
    call.openNext = undefined;
  }

  /** The calls open now (a copy: ending one removes it from the list). */
  list(): OpenCall[] {
    const out: OpenCall[] = [];
    for (let call = this.#head; call !== undefined; call = call.openNext) out.push(call);
    return out;
  }
}

/**
 * What a client plans with right now: its executor and the phase timeouts derived from it (those not
 * given explicitly). It follows its executor's updates (`dependency.update`, `recalibrate`, a config
 * reload, live calibration: SPEC X2, X9): before one is made it says whether the new plan suits the
 * timeouts given explicitly (an explicit response timeout above the new attempt timeout, or a connect
 * timeout not below it, refuses the update), and once made it re-derives the phase timeouts. Calls in
 * flight keep the plan they started with. Event listeners are held here, so they also survive an
 * executor replaced by another.
 */
export class CurrentPlan implements PlanFollower {
  dependency: Dependency;
  connectTimeoutMs = 0;
  responseTimeoutMs = 0;
  bodyTimeoutMs = 0;
  /** What a call starting now runs with (a snapshot: a call keeps the plan it started with). */
  current!: CallPlan;
  readonly #explicit: { connectMs?: number; responseMs?: number; bodyMs?: number };
  /**
   * The route's own default deadline when it differs from its executor's (a client given a
   * `dependency` and a `defaultDeadlineMs` of its own); undefined: the executor's, followed live.
   */
  readonly #defaultDeadlineMs: number | undefined;
  /** Relays the current executor's events and the previous one's (whose calls may still be finishing). */
  readonly #relay = new Relay<Dependency>();

  constructor(
    dependency: Dependency,
    explicit: { connectMs?: number; responseMs?: number; bodyMs?: number },
    defaultDeadlineMs?: number,
  ) {
    this.dependency = dependency;
    this.#explicit = explicit;
    const executor = executorFor(dependency);
    this.#defaultDeadlineMs =
      defaultDeadlineMs === undefined || defaultDeadlineMs === executor.plan.defaultDeadlineMs
        ? undefined
        : defaultDeadlineMs;
    this.#derive(executor.plan);
    executor.follow(this);
    this.#relay.attach(dependency, (deliver) => dependency.on(deliver));
  }

  /** Plans with `dependency` from now on (another executor: it is followed instead). */
  adopt(dependency: Dependency): void {
    const same = dependency === this.dependency; // updated in place: its listeners are the same
    this.dependency = dependency;
    const executor = executorFor(dependency);
    this.#derive(executor.plan);
    if (same) return;
    executor.follow(this);
    const relay = this.#relay;
    relay.attach(dependency, (deliver) => dependency.on(deliver));
    const sources = [...relay.sources()];
    if (sources.length > 2) relay.detach(sources[0]!);
  }

  /** The problems an update of the executor would cause this client (SPEC C2, R4). */
  check(next: ExecutorPlan): readonly string[] {
    const { connectMs, responseMs } = this.#explicit;
    const problems: string[] = [];
    if (responseMs !== undefined && responseMs > next.attemptTimeoutMs) {
      problems.push(
        `the client's \`responseTimeoutMs\` (${responseMs}) would exceed the attempt timeout ceil(p99 × slack) = ${next.attemptTimeoutMs} ms`,
      );
    }
    if (connectMs !== undefined && connectMs >= next.attemptTimeoutMs) {
      problems.push(
        `the client's \`connectTimeoutMs\` (${connectMs}) would not be below the attempt timeout (${next.attemptTimeoutMs} ms)`,
      );
    }
    return problems;
  }

  /** The executor was updated in place: later calls plan with `next`. */
  follow(next: ExecutorPlan): void {
    this.#derive(next);
  }

  /** Subscribes to the events of every executor this client uses. */
  on(listener: DependencyListener): Disposable {
    return this.#relay.on(listener);
  }

  #derive(executor: ExecutorPlan): void {
    const { connectMs, responseMs, bodyMs } = this.#explicit;
    this.connectTimeoutMs = connectMs ?? executor.connectTimeoutMs;
    this.responseTimeoutMs = responseMs ?? executor.attemptTimeoutMs;
    this.bodyTimeoutMs = bodyMs ?? this.responseTimeoutMs;
    this.current = Object.freeze({
      executor,
      connectTimeoutMs: this.connectTimeoutMs,
      responseTimeoutMs: this.responseTimeoutMs,
      bodyTimeoutMs: this.bodyTimeoutMs,
      defaultDeadlineMs: this.#defaultDeadlineMs ?? executor.defaultDeadlineMs,
    });
  }
}

function executorFor(dependency: Dependency): Executor {
  const executor = executorOf(dependency);
  if (executor === undefined)
    throw new TypeError('prazo/http: the dependency was not made by createDependency()');
  return executor;
}

/**
 * The connect timeout (SPEC C2, R4): the dependency's calibrated one (`calibrateTimeout`: at most
 * 400 ms and at most half the attempt timeout), the one number its timeouts, its gauge and the
 * client agree on.
 */
export function defaultConnectMs(dependency: Dependency | undefined): number {
  return dependency === undefined ? HTTP_DEFAULTS.connectTimeoutMs : dependency.timeouts.connectMs;
}
