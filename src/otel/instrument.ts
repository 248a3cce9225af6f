import { createNoopMeter, metrics } from '@opentelemetry/api';
import { executorOf } from '../dependency/transport.js';
import type { Disposable } from '../dependency/types.js';
import { InvalidOptionsError } from '../errors/options.js';
import { METER_NAME, OTEL_LIMITS, TRACER_NAME } from './constants.js';
import { type InstrumentableDependency, recordDependencyEvents } from './dependency.js';
import { DependencyGauges } from './gauges.js';
import { createInstruments, type PrazoInstruments } from './instruments.js';
import {
  type InstrumentableServer,
  recordServerEvents,
  type ServerEventSource,
  traceServer,
} from './server.js';
import { countingTracker, type OverrunObserver } from './slices.js';
import { activeTracerProvider, OtelCallTracer } from './traces.js';
import { type InstrumentPrazoOptions, validateAdded, validateOptions } from './validate.js';

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
 *
 * Traces (issue #26) likewise: when the tracer provider is the API's no-op (no SDK), no tracer is
 * installed on any executor (`tracing: false`); otherwise each instrumented dependency's calls get a
 * call span and attempt spans (src/otel/traces.ts), and each server's admitted requests their
 * incoming deadline on the active server span. `traces: false` keeps metrics only.
 */

/** A live instrumentation: `dispose()` unsubscribes from every source and removes the gauge callback. */
export interface PrazoInstrumentation extends Disposable {
  readonly instruments: PrazoInstruments;
  /** False when the meter is the API's no-op (no SDK): nothing is subscribed, nothing is recorded. */
  readonly active: boolean;
  /** True when calls are traced: a tracer provider other than the API's no-op, and `traces` not false. */
  readonly tracing: boolean;
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
  typeof (server as ServerEventSource).onServerEvent === 'function'
    ? { events: server as ServerEventSource }
    : (server as InstrumentableServer);

/**
 * Disposes every part, each whatever the others do: a source's subscription is the source's own
 * object (a user's `on` may hand back nothing, or a `dispose` that throws), and one such part stopped
 * `dispose()` half-way, leaving every later source subscribed and the gauge callback registered.
 */
function disposeAll(parts: readonly Disposable[]): void {
  for (const part of parts) {
    try {
      part.dispose();
    } catch {
      // That source's own failure; the rest are undone.
    }
  }
}

/**
 * Runs a step of the set-up that asks the application's meter or tracer provider for something: one
 * that throws (a broken or half-shut SDK, a wrong object) is named as the option it came from, with
 * its own message, rather than escaping as an anonymous error from inside prazo.
 */
function fromProvider<T>(option: string, step: () => T): T {
  try {
    return step();
  } catch (error) {
    throw new InvalidOptionsError('instrumentPrazo', [
      `\`${option}\` threw while prazo set up its instruments: ${error instanceof Error ? error.message : String(error)}`,
    ]);
  }
}

export function instrumentPrazo(options: InstrumentPrazoOptions = {}): PrazoInstrumentation {
  const resolved = validateOptions(options);
  const meterOption = resolved.meter !== undefined ? 'meter' : 'meterProvider';
  const meter = fromProvider(
    meterOption,
    () => resolved.meter ?? (resolved.meterProvider ?? metrics.getMeterProvider()).getMeter(METER_NAME),
  );
  const active = meter !== createNoopMeter();
  const instruments = fromProvider(meterOption, () => createInstruments(meter));
  // The tracer first: a provider that throws then leaves no gauge callback registered behind.
  const tracerProvider = resolved.traces ? activeTracerProvider(resolved.tracerProvider) : undefined;
  const tracer = fromProvider('tracerProvider', () => tracerProvider?.getTracer(TRACER_NAME));
  const gauges = active
    ? fromProvider(meterOption, () => new DependencyGauges(meter, instruments))
    : undefined;
  const live = new Set<Disposable>();
  const names = new Set<string>();
  const serverNames = new Set<string>();
  let disposed = false;

  /** Builds the parts of one source; if one throws, those built are undone and its name is free again. */
  const build = (name: string, taken: Set<string>, make: (parts: Disposable[]) => void): Disposable => {
    taken.add(name);
    const parts: Disposable[] = [{ dispose: () => void taken.delete(name) }];
    try {
      make(parts);
    } catch (error) {
      disposeAll(parts);
      throw error;
    }
    return track(...parts);
  };

  const track = (...parts: Disposable[]): Disposable => {
    if (disposed) {
      disposeAll(parts);
      return { dispose: () => {} };
    }
    const handle: Disposable = {
      dispose: () => {
        if (live.delete(handle)) disposeAll(parts);
      },
    };
    live.add(handle);
    return handle;
  };

  const instrumentation: PrazoInstrumentation = {
    instruments,
    active,
    tracing: tracer !== undefined,
    addDependency: (dependency) => {
      const name = validateAdded('dependency', dependency);
      if (names.has(name)) {
        throw new InvalidOptionsError('instrumentPrazo.addDependency', [
          `dependency ${JSON.stringify(name)} is already instrumented: names must be unique`,
        ]);
      }
      return build(name, names, (parts) => {
        if (tracer !== undefined) parts.push(traceDependency(dependency, new OtelCallTracer(tracer, name)));
        if (gauges === undefined) return;
        parts.push(recordDependencyEvents(instruments, dependency));
        parts.push(gauges.add(dependency));
      });
    },
    addServer: (server) => {
      const name = validateAdded('server', server);
      if (serverNames.has(name)) {
        throw new InvalidOptionsError('instrumentPrazo.addServer', [
          `server ${JSON.stringify(name)} is already instrumented: names must be unique`,
        ]);
      }
      const resolvedServer = asServer(server);
      return build(name, serverNames, (parts) => {
        if (active) parts.push(recordServerEvents(instruments, resolvedServer));
        if (tracer !== undefined) parts.push(traceServer(resolvedServer.events));
      });
    },
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
  try {
    for (const dependency of resolved.dependencies) instrumentation.addDependency(dependency);
    for (const server of resolved.servers) instrumentation.addServer(server);
  } catch (error) {
    // One source that refuses (its `on` throws) fails the call: the ones already subscribed, and the
    // gauge callback, are undone, since the caller never gets the handle that would dispose them.
    instrumentation.dispose();
    throw error;
  }
  return instrumentation;
}

/**
 * The tracers prazo/otel installed on each executor's listener list, oldest first: the newest one
 * traces (one span per call, never two), and when it is removed the one before it takes over again.
 * With one slot and no memory, an instrumentation disposed while an older one of the same dependency
 * lived switched the older one's tracing off for good.
 */
const installed = new WeakMap<object, OtelCallTracer[]>();

/**
 * Installs `tracer` on the executor `dependency` runs through (its own, or a client's `dependency`):
 * disposing removes it and hands tracing back to the tracer installed before it, unless a tracer of
 * another origin replaced it meanwhile. An object that is not an executor of this copy of prazo (a
 * user's own event source) is not traced: nothing to hook.
 */
function traceDependency(dependency: InstrumentableDependency, tracer: OtelCallTracer): Disposable {
  const events = (executorOf(dependency.dependency) ?? executorOf(dependency))?.plan.events;
  if (events === undefined) return { dispose: () => {} };
  const tracers = installed.get(events) ?? [];
  installed.set(events, tracers);
  tracers.push(tracer);
  events.tracer = tracer;
  return {
    dispose: () => {
      const at = tracers.indexOf(tracer);
      if (at < 0) return;
      tracers.splice(at, 1);
      if (events.tracer === tracer) events.tracer = tracers.at(-1);
    },
  };
}
