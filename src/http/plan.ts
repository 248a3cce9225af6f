import { coreOf } from '../dependency/core.js';
import type { Dependency } from '../dependency/dependency.js';
import type { DependencyListener } from '../dependency/events.js';
import type { DependencyEvent, Disposable } from '../dependency/types.js';
import type { CallPlan } from './call.js';
import { HTTP_DEFAULTS } from './constants.js';

/**
 * What a client plans with right now: its executor and the phase timeouts derived from it (those not
 * given explicitly). Live calibration recalibrates the executor in place (`adopt` with the same one
 * re-derives the timeouts); in-flight calls keep the plan they started with. Event listeners are held
 * here, so they also survive an executor replaced by another.
 */
export class CurrentPlan {
  dependency: Dependency;
  connectMs = 0;
  responseMs = 0;
  bodyMs = 0;
  /** What a call starting now runs with (a snapshot: a call keeps the plan it started with). */
  current!: CallPlan;
  readonly #explicit: { connectMs?: number; responseMs?: number; bodyMs?: number };
  readonly #listeners = new Set<DependencyListener>();
  /** Forwarders on the current executor and the previous one (whose calls may still be finishing). */
  #forwards: Disposable[] = [];

  constructor(
    dependency: Dependency,
    explicit: { connectMs?: number; responseMs?: number; bodyMs?: number },
  ) {
    this.dependency = dependency;
    this.#explicit = explicit;
    this.#derive();
  }

  /** Plans with `dependency` from now on. */
  adopt(dependency: Dependency): void {
    const same = dependency === this.dependency; // recalibrated in place: its listeners are the same
    this.dependency = dependency;
    this.#derive();
    if (!same && this.#listeners.size > 0) this.#forward();
  }

  /** Subscribes to the events of every executor this client uses. */
  on(listener: DependencyListener): Disposable {
    this.#listeners.add(listener);
    if (this.#forwards.length === 0) this.#forward();
    return {
      dispose: () => {
        this.#listeners.delete(listener);
        if (this.#listeners.size > 0) return;
        for (const f of this.#forwards) f.dispose(); // no listener: the executors build no events
        this.#forwards = [];
      },
    };
  }

  #forward(): void {
    const listeners = this.#listeners;
    const deliver = (event: DependencyEvent): void => {
      for (const listener of listeners) listener(event);
    };
    this.#forwards.push(this.dependency.on(deliver));
    while (this.#forwards.length > 2) this.#forwards.shift()?.dispose();
  }

  #derive(): void {
    const { connectMs, responseMs, bodyMs } = this.#explicit;
    this.connectMs = connectMs ?? defaultConnectMs(this.dependency);
    this.responseMs = responseMs ?? this.dependency.timeouts.responseMs;
    this.bodyMs = bodyMs ?? this.responseMs;
    const core = coreOf(this.dependency);
    if (core === undefined)
      throw new TypeError('prazo/http: the dependency was not made by createDependency()');
    this.current = Object.freeze({
      core,
      connectMs: this.connectMs,
      responseMs: this.responseMs,
      bodyMs: this.bodyMs,
    });
  }
}

/**
 * The connect timeout (SPEC C2, R4): the dependency's calibrated one (`calibrateTimeout`: at most
 * 400 ms and at most half the attempt timeout), the one number its timeouts, its gauge and the
 * client agree on.
 */
export function defaultConnectMs(dependency: Dependency | undefined): number {
  return dependency === undefined ? HTTP_DEFAULTS.connectTimeoutMs : dependency.timeouts.connectMs;
}
