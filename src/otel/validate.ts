import type { Meter, MeterProvider } from '@opentelemetry/api';
import { OptionsValidator } from '../options/validator.js';
import type { InstrumentableDependency } from './dependency.js';
import type { InstrumentPrazoOptions } from './instrument.js';
import { DEFAULT_SERVER_NAME, type InstrumentableServer, type ServerEventSource } from './server.js';

/** `instrumentPrazo`'s options, checked once; every problem is reported together. */
export interface ResolvedOptions {
  readonly meter: Meter | undefined;
  readonly meterProvider: MeterProvider | undefined;
  readonly dependencies: readonly InstrumentableDependency[];
  readonly servers: readonly (InstrumentableServer | ServerEventSource)[];
}

const hasMethod = (value: unknown, method: string): boolean =>
  typeof value === 'object' &&
  value !== null &&
  typeof (value as Record<string, unknown>)[method] === 'function';

function list(v: OptionsValidator, name: string, value: unknown): unknown[] {
  if (value === undefined) return [];
  if (
    typeof value === 'string' ||
    value === null ||
    typeof (value as Iterable<unknown>)[Symbol.iterator] !== 'function'
  ) {
    v.problem(`\`${name}\` must be an array (or any iterable)`);
    return [];
  }
  return [...(value as Iterable<unknown>)];
}

function unique(v: OptionsValidator, what: string, names: readonly string[]): void {
  const seen = new Set<string>();
  for (const name of names) {
    if (seen.has(name)) v.problem(`${what} names must be unique: ${JSON.stringify(name)} appears twice`);
    seen.add(name);
  }
}

function dependencies(v: OptionsValidator, value: unknown): InstrumentableDependency[] {
  const items = list(v, 'dependencies', value);
  items.forEach((item, i) => {
    const name = (item as { name?: unknown } | null)?.name;
    if (typeof name !== 'string' || name.length === 0)
      v.problem(`\`dependencies[${i}].name\` must be a non-empty string`);
    if (!hasMethod(item, 'on'))
      v.problem(`\`dependencies[${i}]\` must have an \`on(listener)\` method (createDependency's)`);
  });
  unique(
    v,
    'dependency',
    items.map((d) => String((d as { name?: unknown } | null)?.name)),
  );
  return items as InstrumentableDependency[];
}

function servers(v: OptionsValidator, value: unknown): (InstrumentableServer | ServerEventSource)[] {
  const items = list(v, 'servers', value);
  const names: string[] = [];
  items.forEach((item, i) => {
    if (hasMethod(item, 'onServerEvent')) {
      names.push(DEFAULT_SERVER_NAME);
      return;
    }
    const server = item as Partial<InstrumentableServer> | null;
    if (!hasMethod(server?.events, 'onServerEvent')) {
      v.problem(`\`servers[${i}]\` must be a server event hub or \`{ name, events: hub }\``);
    }
    const name = server?.name ?? DEFAULT_SERVER_NAME;
    if (typeof name !== 'string' || name.length === 0)
      v.problem(`\`servers[${i}].name\` must be a non-empty string`);
    names.push(String(name));
  });
  unique(v, 'server', names);
  return items as (InstrumentableServer | ServerEventSource)[];
}

export function validateOptions(options: InstrumentPrazoOptions): ResolvedOptions {
  const v = new OptionsValidator('instrumentPrazo');
  const given = (options ?? {}) as Partial<InstrumentPrazoOptions>;
  if (given.meter !== undefined && given.meterProvider !== undefined) {
    v.problem('give `meter` or `meterProvider`, not both');
  }
  if (given.meter !== undefined && !hasMethod(given.meter, 'createCounter')) {
    v.problem('`meter` must be an OpenTelemetry Meter');
  }
  if (given.meterProvider !== undefined && !hasMethod(given.meterProvider, 'getMeter')) {
    v.problem('`meterProvider` must be an OpenTelemetry MeterProvider');
  }
  const resolved: ResolvedOptions = {
    meter: given.meter,
    meterProvider: given.meterProvider,
    dependencies: dependencies(v, given.dependencies),
    servers: servers(v, given.servers),
  };
  v.done();
  return resolved;
}
