import { createNoopMeter, type Meter, metrics } from '@opentelemetry/api';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { createDependency } from '../../src/dependency/index.js';
import type { DependencyEvent, Disposable } from '../../src/dependency/types.js';
import { instrumentPrazo } from '../../src/otel/index.js';

/**
 * What prazo/otel costs when the application installed no OpenTelemetry SDK:
 * 1. per call: `createDependency(...).execute(resolved operation)` alone, then observed by
 *    `instrumentPrazo()` with no SDK (the API's no-op meter: nothing is subscribed, `active: false`),
 *    then with an SDK installed (a MeterProvider without exporter);
 * 2. per event: a mix of executor events delivered to the instrumentation's listener recording into
 *    no-op instruments (a no-op meter that is not the API's singleton, so the listener is subscribed),
 *    against an empty listener (the dispatch alone), and into an SDK.
 * Order rotated per round; medians reported. Run: `npx vitest run test/otel/noop-cost.test.ts`.
 */

const EVENTS: readonly DependencyEvent[] = [
  { type: 'attempt', dependency: 'd', kind: 'original', attempt: 1 },
  { type: 'attempt-end', dependency: 'd', kind: 'original', attempt: 1, latencyMs: 12.5, outcome: 'success' },
  { type: 'attempt', dependency: 'd', kind: 'retry', attempt: 2 },
  {
    type: 'attempt-end',
    dependency: 'd',
    kind: 'retry',
    attempt: 2,
    latencyMs: 400,
    outcome: 'timeout',
    phase: 'connect',
  },
  { type: 'budget-refused', dependency: 'd', kind: 'retry' },
  { type: 'hedge-won', dependency: 'd', attempt: 3 },
];

class Source {
  readonly name = 'd';
  listener: (event: DependencyEvent) => void = () => {};
  on(listener: (event: DependencyEvent) => void): Disposable {
    this.listener = listener;
    return { dispose: () => {} };
  }
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const now = (): number => Number(process.hrtime.bigint());

/** ns per event delivered to `source.listener`. */
function perEvent(source: Source, events: number): number {
  const n = EVENTS.length;
  const start = now();
  for (let i = 0; i < events; i += 1) source.listener(EVENTS[i % n]!);
  return (now() - start) / events;
}

async function perCall(instrument: 'none' | 'noop' | 'sdk', calls: number): Promise<number> {
  const dependency = createDependency({ name: 'd', p99Ms: 50 });
  const provider = instrument === 'sdk' ? new MeterProvider() : undefined;
  const otel =
    instrument === 'none'
      ? undefined
      : instrumentPrazo({ dependencies: [dependency], meterProvider: provider });
  const op = () => Promise.resolve(1);
  const options = { idempotent: true } as const;
  for (let i = 0; i < 2_000; i += 1) await dependency.execute(op, options); // warm up
  const start = now();
  for (let i = 0; i < calls; i += 1) await dependency.execute(op, options);
  const ns = (now() - start) / calls;
  otel?.dispose();
  await provider?.shutdown();
  return ns;
}

export interface NoopCost {
  /** ns per event: the dispatch alone, prazo/otel without SDK, prazo/otel with an SDK. */
  readonly eventEmptyNs: number;
  readonly eventNoopNs: number;
  readonly eventSdkNs: number;
  /** ns per executor call (resolved operation): no listener, prazo/otel without SDK, with an SDK. */
  readonly callPlainNs: number;
  readonly callNoopNs: number;
  readonly callSdkNs: number;
}

export async function measureNoopCost(
  options: { events?: number; calls?: number; rounds?: number } = {},
): Promise<NoopCost> {
  const events = options.events ?? 1_000_000;
  const calls = options.calls ?? 50_000;
  const rounds = options.rounds ?? 5;
  metrics.disable(); // no global SDK: the API's no-op meter
  const empty = new Source();
  const noop = new Source();
  // A distinct object over the API's no-op meter: its instruments are no-ops, but prazo subscribes.
  instrumentPrazo({ dependencies: [noop], meter: Object.create(createNoopMeter()) as Meter });
  const sdkProvider = new MeterProvider();
  const sdk = new Source();
  instrumentPrazo({ dependencies: [sdk], meterProvider: sdkProvider });
  const out = {
    eventEmptyNs: [] as number[],
    eventNoopNs: [] as number[],
    eventSdkNs: [] as number[],
    callPlainNs: [] as number[],
    callNoopNs: [] as number[],
    callSdkNs: [] as number[],
  };
  const variants = [
    async () => out.callPlainNs.push(await perCall('none', calls)),
    async () => out.callNoopNs.push(await perCall('noop', calls)),
    async () => out.callSdkNs.push(await perCall('sdk', calls)),
  ];
  for (const warm of ['none', 'noop', 'sdk'] as const) await perCall(warm, calls);
  for (let r = 0; r < rounds; r += 1) {
    out.eventEmptyNs.push(perEvent(empty, events));
    out.eventNoopNs.push(perEvent(noop, events));
    out.eventSdkNs.push(perEvent(sdk, events));
    // Order rotated each round, so JIT warm-up and machine noise do not favour one variant.
    for (let v = 0; v < variants.length; v += 1) await variants[(v + r) % variants.length]!();
  }
  await sdkProvider.shutdown();
  return {
    eventEmptyNs: median(out.eventEmptyNs),
    eventNoopNs: median(out.eventNoopNs),
    eventSdkNs: median(out.eventSdkNs),
    callPlainNs: median(out.callPlainNs),
    callNoopNs: median(out.callNoopNs),
    callSdkNs: median(out.callSdkNs),
  };
}

export function formatNoopCost(c: NoopCost): string {
  const f = (ns: number) => `${ns.toFixed(1)} ns`;
  return [
    '| what | without prazo/otel | prazo/otel, no SDK | prazo/otel, SDK installed |',
    '| --- | --- | --- | --- |',
    `| one execute() call (resolved op) | ${f(c.callPlainNs)} | ${f(c.callNoopNs)} (×${(c.callNoopNs / c.callPlainNs).toFixed(2)}, nothing subscribed) | ${f(c.callSdkNs)} (×${(c.callSdkNs / c.callPlainNs).toFixed(2)}) |`,
    `| one event into the listener | ${f(c.eventEmptyNs)} (empty listener) | ${f(c.eventNoopNs)} (no-op instruments) | ${f(c.eventSdkNs)} |`,
  ].join('\n');
}
