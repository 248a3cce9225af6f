import { thrownText } from '../errors/base.js';
import type { CallTracer } from './trace.js';
import type { DependencyEvent, Disposable } from './types.js';

export type DependencyListener = (event: DependencyEvent) => void;

/**
 * A tiny listener list. Emitters test `active` before building an event, so a dependency nobody
 * listens to allocates nothing for its events (the HTTP hot path). Subscribing and disposing cost
 * O(1) (an entry of a map, one per subscription: the same function subscribed twice hears twice);
 * an event is delivered to a snapshot of the list, made again only after it changed, so a listener
 * may dispose itself (or add another) while an event is being delivered.
 */
export class Listeners {
  readonly #entries = new Map<object, DependencyListener>();
  #snapshot: readonly DependencyListener[] = [];
  #stale = false;
  /** True when at least one listener is subscribed: build the event only then. */
  active = false;
  /**
   * The tracer calls are traced with (prazo/otel installs one through the seam: `executorOf(d).plan
   * .events`): here because this list is the dependency's observers, shared by every version of its
   * plan. Undefined: no tracing.
   */
  tracer: CallTracer | undefined = undefined;

  add(listener: DependencyListener): Disposable {
    if (typeof listener !== 'function') throw new TypeError('on(listener): listener must be a function');
    const entry = {};
    this.#entries.set(entry, listener);
    this.#stale = true;
    this.active = true;
    return {
      dispose: (): void => {
        if (!this.#entries.delete(entry)) return;
        this.#stale = true;
        this.active = this.#entries.size > 0;
      },
    };
  }

  /** Delivers an event to every listener. A listener that throws is reported as a warning, never rethrown. */
  emit(event: DependencyEvent): void {
    if (this.#stale) {
      this.#snapshot = [...this.#entries.values()];
      this.#stale = false;
    }
    for (const listener of this.#snapshot) {
      try {
        listener(event);
      } catch (error) {
        process.emitWarning(`prazo: a dependency event listener threw: ${thrownText(error)}`, 'PrazoWarning');
      }
    }
  }
}

/**
 * Listeners that hear several sources of events (the executors a client planned with, as live
 * calibration or an update replaces them; the origins an interceptor manages): a source is
 * subscribed to only while someone listens, so an executor nobody observes builds no events.
 */
export class Relay<K> {
  readonly #listeners = new Set<DependencyListener>();
  readonly #sources = new Map<K, (deliver: DependencyListener) => Disposable>();
  readonly #forwards = new Map<K, Disposable>();
  readonly #deliver = (event: DependencyEvent): void => {
    for (const listener of this.#listeners) listener(event);
  };

  on(listener: DependencyListener): Disposable {
    this.#listeners.add(listener);
    if (this.#listeners.size === 1) for (const key of this.#sources.keys()) this.#subscribe(key);
    return {
      dispose: () => {
        if (!this.#listeners.delete(listener) || this.#listeners.size > 0) return;
        for (const forward of this.#forwards.values()) forward.dispose();
        this.#forwards.clear();
      },
    };
  }

  /** Relays the events of the source `key`, which `subscribe` listens to (once heard by anyone). */
  attach(key: K, subscribe: (deliver: DependencyListener) => Disposable): void {
    if (this.#sources.has(key)) return;
    this.#sources.set(key, subscribe);
    if (this.#listeners.size > 0) this.#subscribe(key);
  }

  /** Stops relaying `key`'s events. */
  detach(key: K): void {
    this.#sources.delete(key);
    this.#forwards.get(key)?.dispose();
    this.#forwards.delete(key);
  }

  /** The sources relayed, oldest first. */
  sources(): IterableIterator<K> {
    return this.#sources.keys();
  }

  #subscribe(key: K): void {
    if (!this.#forwards.has(key)) this.#forwards.set(key, this.#sources.get(key)!(this.#deliver));
  }
}

/**
 * The events of a store integration (prazo/mysql's `createStoreEvents`, prazo/pg's `createPgEvents`):
 * the executor's own events (SPEC X3), so `instrumentPrazo().addDependency(events)` counts a store as
 * it counts any dependency. The stores do not run through the executor, so they emit through this
 * handle; its brand is a global symbol, so two installed copies of prazo recognise each other's.
 */
export interface StoreEvents {
  readonly name: string;
  on(listener: DependencyListener): Disposable;
}

const STORE_LISTENERS = Symbol.for('prazo.storeEvents');

/** A store's events named `name`; `factory` names the public function in its error. */
export function storeEvents(factory: string, name: string): StoreEvents {
  if (typeof name !== 'string' || name.length === 0)
    throw new TypeError(`${factory}(name): a name is required`);
  const listeners = new Listeners();
  return Object.freeze({
    name,
    on: (listener: DependencyListener) => listeners.add(listener),
    [STORE_LISTENERS]: listeners,
  });
}

export const isStoreEvents = (value: unknown): boolean =>
  value !== null &&
  typeof value === 'object' &&
  (value as Record<symbol, unknown>)[STORE_LISTENERS] instanceof Listeners;

/** The emitter behind a store's `events`, or none: an event is built only when someone listens. */
export function emitterOf(
  events: StoreEvents | undefined,
): ((event: () => DependencyEvent) => void) | undefined {
  const listeners = (events as Record<symbol, unknown> | undefined)?.[STORE_LISTENERS] as
    | Listeners
    | undefined;
  if (listeners === undefined) return undefined;
  return (make) => {
    if (listeners.active) listeners.emit(make());
  };
}
