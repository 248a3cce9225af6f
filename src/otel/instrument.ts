import { createNoopMeter, metrics } from '@opentelemetry/api';
import type { Disposable } from '../dependency/types.js';
import { InvalidOptionsError } from '../errors/options.js';
import { METER_NAME, OTEL_LIMITS } from './constants.js';
import { type InstrumentableDependency, recordDependencyEvents } from './dependency.js';
import { DependencyGauges } from './gauges.js';
import { createInstruments, type PrazoInstruments } from './instruments.js';
import { type InstrumentableServer, recordServerEvents, type ServerEventSource } from './server.js';
import { countingTracker, type OverrunObserver } from './slices.js';
import { type InstrumentPrazoOptions, validateOptions } from './validate.js';

export type { InstrumentPrazoOptions } from './validate.js';

/**
 * `instrumentPrazo(...)`: prazo's metrics in one call (SPEC X3). Everything goes through the
 * OpenTelemetry **API**; without an SDK the global meter is the API's no-op and instrumenting costs
 * next to nothing, so a library can instrument unconditionally and let the application decide.
 *
 * Call it after the application registers its SDK (or pass `meterProvider`): the OpenTelemetry JS
 * metrics API has no proxy, so instruments taken from the global no-op meter stay no-ops. Knowing that,
 * an instrumentation whose meter *is* the API's no-op subscribes to nothing at all (`active: false`):
 * no listener, so the executor does not even build its events, and the cost is zero rather than small.
 */

/** A live instrumentation: `dispose()` unsubscribes from every source and removes the gauge callback. */
export interface PrazoInstrumentation extends Disposable {
  readonly instruments: PrazoInstruments;
  /** False when the meter is the API's no-op (no SDK): nothing is subscribed, nothing is recorded. */
  readonly active: boolean;
  addDependency(dependency: InstrumentableDependency): Disposable;
  addServer(server: InstrumentableServer | ServerEventSource): Disposable;
  /**
   * Counts slice observations and overruns of one endpoint's latency budget (SPEC B3): returns a
   * tracker that behaves like `tracker` (e.g. `createOverrunTracker({ budget })`) and also records
   * every `observe` as `prazo.endpoint.slice.*` with `prazo.endpoint = endpoint`. Use the returned one.
   */
  trackSlices<T extends OverrunObserver>(tracker: T, endpoint: string): T;
}

const hasObserve = (value: unknown): value is OverrunObserver =>
  typeof (value as OverrunObserver | null)?.observe === 'function';

const asServer = (server: InstrumentableServer | ServerEventSource): InstrumentableServer =>
  'events' in server ? server : { events: server };

export function instrumentPrazo(options: InstrumentPrazoOptions = {}): PrazoInstrumentation {
  const resolved = validateOptions(options);
  const meter = resolved.meter ?? (resolved.meterProvider ?? metrics.getMeterProvider()).getMeter(METER_NAME);
  const active = meter !== createNoopMeter();
  const instruments = createInstruments(meter);
  const gauges = active ? new DependencyGauges(meter, instruments) : undefined;
  const live = new Set<Disposable>();
  const names = new Set<string>();
  let disposed = false;

  const track = (...parts: Disposable[]): Disposable => {
    if (disposed) {
      for (const part of parts) part.dispose();
      return { dispose: () => {} };
    }
    const handle: Disposable = {
      dispose: () => {
        if (!live.delete(handle)) return;
        for (const part of parts) part.dispose();
      },
    };
    live.add(handle);
    return handle;
  };

  const instrumentation: PrazoInstrumentation = {
    instruments,
    active,
    addDependency: (dependency) => {
      const name = dependency.name;
      if (names.has(name)) {
        throw new InvalidOptionsError('instrumentPrazo.addDependency', [
          `dependency ${JSON.stringify(name)} is already instrumented: names must be unique`,
        ]);
      }
      names.add(name);
      const forget = { dispose: () => void names.delete(name) };
      if (gauges === undefined) return track(forget);
      return track(recordDependencyEvents(instruments, dependency), gauges.add(dependency), forget);
    },
    addServer: (server) => (active ? track(recordServerEvents(instruments, asServer(server))) : track()),
    trackSlices: (tracker, endpoint) => {
      if (!hasObserve(tracker) || typeof endpoint !== 'string' || endpoint.length === 0) {
        throw new InvalidOptionsError('instrumentPrazo.trackSlices', [
          'give an overrun tracker (with `observe(component, elapsedMs)`) and a non-empty endpoint name',
        ]);
      }
      if (!active) return tracker;
      return countingTracker(instruments, tracker, endpoint, OTEL_LIMITS.attributeCacheSize, () => !disposed);
    },
    dispose: () => {
      if (disposed) return;
      for (const handle of [...live]) handle.dispose();
      disposed = true;
      gauges?.dispose();
    },
  };
  for (const dependency of resolved.dependencies) instrumentation.addDependency(dependency);
  for (const server of resolved.servers) instrumentation.addServer(server);
  return instrumentation;
}
