import type { Meter, MeterProvider, TracerProvider } from '@opentelemetry/api';
import { defineOptions, type OptionsOf, option } from '../options/declare.js';
import { OptionsValidator } from '../options/validator.js';
import type { InstrumentableDependency } from './dependency.js';
import { DEFAULT_SERVER_NAME, type InstrumentableServer, type ServerEventSource } from './server.js';

/** `instrumentPrazo`'s options, checked once; every problem is reported together. */
export interface ResolvedOptions {
  readonly meter: Meter | undefined;
  readonly meterProvider: MeterProvider | undefined;
  readonly tracerProvider: TracerProvider | undefined;
  readonly traces: boolean;
  readonly dependencies: readonly InstrumentableDependency[];
  readonly servers: readonly (InstrumentableServer | ServerEventSource)[];
}

const hasMethod = (value: unknown, method: string): boolean =>
  typeof value === 'object' &&
  value !== null &&
  typeof (value as Record<string, unknown>)[method] === 'function';

const list = (value: Iterable<unknown> | undefined): unknown[] => (value === undefined ? [] : [...value]);

function unique(v: OptionsValidator, what: string, names: readonly string[]): void {
  const seen = new Set<string>();
  for (const name of names) {
    if (seen.has(name)) v.problem(`${what} names must be unique: ${JSON.stringify(name)} appears twice`);
    seen.add(name);
  }
}

/** Checks one dependency (`where` names it in the problems); returns its name. */
function checkDependency(v: OptionsValidator, item: unknown, where: string): string {
  const name = (item as { name?: unknown } | null)?.name;
  if (typeof name !== 'string' || name.length === 0)
    v.problem(`\`${where}.name\` must be a non-empty string`);
  if (!hasMethod(item, 'on'))
    v.problem(`\`${where}\` must have an \`on(listener)\` method (createDependency's)`);
  return String(name);
}

/** Checks one server (a hub, or `{ name, events }`); returns its name. */
function checkServer(v: OptionsValidator, item: unknown, where: string): string {
  if (hasMethod(item, 'onServerEvent')) return DEFAULT_SERVER_NAME;
  const server = item as Partial<InstrumentableServer> | null;
  if (!hasMethod(server?.events, 'onServerEvent')) {
    v.problem(`\`${where}\` must be a server event hub or \`{ name, events: hub }\``);
  }
  const name = server?.name ?? DEFAULT_SERVER_NAME;
  if (typeof name !== 'string' || name.length === 0)
    v.problem(`\`${where}.name\` must be a non-empty string`);
  return String(name);
}

function dependencies(v: OptionsValidator, value: Iterable<unknown> | undefined): InstrumentableDependency[] {
  const items = list(value);
  unique(
    v,
    'dependency',
    items.map((item, i) => checkDependency(v, item, `dependencies[${i}]`)),
  );
  return items as InstrumentableDependency[];
}

function servers(
  v: OptionsValidator,
  value: Iterable<unknown> | undefined,
): (InstrumentableServer | ServerEventSource)[] {
  const items = list(value);
  unique(
    v,
    'server',
    items.map((item, i) => checkServer(v, item, `servers[${i}]`)),
  );
  return items as (InstrumentableServer | ServerEventSource)[];
}

/**
 * `addDependency`'s and `addServer`'s argument, checked as the options' lists are (a plain TypeError
 * from deep inside, or a number for a name, was what a wrong argument got): the name it goes by.
 */
export function validateAdded(kind: 'dependency' | 'server', item: unknown): string {
  const v = new OptionsValidator(
    kind === 'dependency' ? 'instrumentPrazo.addDependency' : 'instrumentPrazo.addServer',
  );
  const name =
    kind === 'dependency' ? checkDependency(v, item, 'dependency') : checkServer(v, item, 'server');
  v.done();
  return name;
}

const iterable = <T>(what: string) =>
  option.value<Iterable<T>>(
    `an array (or any iterable) of ${what}`,
    (v) =>
      v !== null && typeof v === 'object' && typeof (v as Iterable<unknown>)[Symbol.iterator] === 'function',
  );

/** `instrumentPrazo`'s options, declared once. */
export const INSTRUMENT_OPTIONS = defineOptions(
  {
    /** Where meters come from. Default: the global one (`metrics.getMeterProvider()`) at call time. */
    meterProvider: option.value<MeterProvider>(
      'an OpenTelemetry MeterProvider',
      option.hasMethods('getMeter'),
    ),
    /**
     * Where spans come from. Default: the global one (`trace.getTracerProvider()`) at call time: with
     * no SDK registered then (the API's no-op), nothing is traced and tracing costs nothing.
     */
    tracerProvider: option.value<TracerProvider>(
      'an OpenTelemetry TracerProvider',
      option.hasMethods('getTracer'),
    ),
    /** Traces calls (a span per call, one per attempt) as well as metrics. Default true. */
    traces: option.boolean({ default: true }),
    /** A meter to record into directly (instead of `meterProvider.getMeter('prazo')`). */
    meter: option.value<Meter>('an OpenTelemetry Meter', option.hasMethods('createCounter')),
    /**
     * Dependencies (`createDependency(...)`, or a client: an HTTP client is followed through its
     * recalibrations) to observe; more with `addDependency`. Names must be unique.
     */
    dependencies: iterable<InstrumentableDependency>('dependencies'),
    /**
     * Servers to observe: `{ name, events }` with a `prazo/server` event hub, or a hub alone (named
     * `default`); more with `addServer`. Names must be unique.
     */
    servers: iterable<InstrumentableServer | ServerEventSource>('servers'),
  },
  (_values, report, { given }) => {
    if (given.meter !== undefined && given.meterProvider !== undefined) {
      report([], 'give `meter` or `meterProvider`, not both');
    }
  },
);

export type InstrumentPrazoOptions = OptionsOf<typeof INSTRUMENT_OPTIONS>;

export function validateOptions(options: InstrumentPrazoOptions): ResolvedOptions {
  const v = new OptionsValidator('instrumentPrazo');
  const given = v.read(INSTRUMENT_OPTIONS, options);
  const resolved: ResolvedOptions = {
    meter: given.meter,
    meterProvider: given.meterProvider,
    tracerProvider: given.tracerProvider,
    traces: given.traces !== false,
    dependencies: dependencies(v, given.dependencies),
    servers: servers(v, given.servers),
  };
  v.done();
  return resolved;
}
