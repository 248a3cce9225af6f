import { InvalidOptionsError } from '../errors/options.js';
import { type DrillTarget, startDemoTarget } from './demo-target.js';
import { startDouble } from './double.js';
import { runDrillLoad } from './load.js';
import { type DrillOptions, resolveDrillOptions } from './options.js';
import { buildReport, type DrillReport } from './report.js';

/**
 * The degradation drill (SPEC V2; the seed's second verification): replace one dependency with a
 * double that answers at the configured timeout, put a bounded load on the service, and pass only if
 * the routes that do not use that dependency keep answering, i.e. the pool they share did not run
 * dry. Everything the drill starts (the double, the demo's processes) is stopped before it returns.
 * Throws `InvalidOptionsError` for bad options or a bad config (every problem listed).
 */
export async function runDrill(options: DrillOptions = {}): Promise<DrillReport> {
  const plan = resolveDrillOptions(options);
  const say = options.onProgress ?? (() => {});
  const double = await startDouble({
    latencyMs: plan.doubleLatencyMs,
    port: plan.doublePort,
    clock: plan.clock,
  });
  let target: DrillTarget | undefined;
  try {
    say(`double for ${plan.dependency} on ${double.origin}, answering at ${plan.doubleLatencyMs} ms`);
    if (plan.target.kind === 'demo') {
      const latency = (name: string): number => plan.config.dependencies.get(name)?.options.p99Ms ?? 1;
      target = await startDemoTarget({
        stack: plan.target.stack,
        latencies: {
          orders: latency('orders'),
          inventory: latency('inventory'),
          supplier: latency('supplier'),
        },
        doubleOrigin: double.origin,
        naiveTimeoutMs: plan.naiveTimeoutMs,
        poolConnections: plan.poolSize ?? 15,
        clock: plan.clock,
      });
      say(`demo services started (${plan.target.stack} stack): gateway on ${target.origin}`);
    }
    const origin = target?.origin ?? (plan.target.kind === 'url' ? plan.target.origin : '');
    say(
      `load: ${plan.rate} req/s on ${plan.routes.join(', ') || '(none)'}, probe ${plan.independentRate} req/s on ${plan.independent.join(', ')}, ${plan.durationS} s`,
    );
    const load = await runDrillLoad({
      origin,
      dependent: plan.routes,
      independent: plan.independent,
      durationS: plan.durationS,
      rate: plan.rate,
      independentRate: plan.independentRate,
      connections: plan.connections,
      probeTimeoutMs: plan.probeTimeoutMs,
      clock: plan.clock,
      ...(options.signal ? { signal: options.signal } : {}),
    });
    if (options.signal?.aborted) throw options.signal.reason;
    if (plan.routes.length > 0 && double.arrivals() === 0) {
      throw new InvalidOptionsError('prazo drill', [
        `the double never got a request: point the target's ${plan.dependency} at ${double.origin} (use --double-port to fix its port)`,
      ]);
    }
    const samples = await target?.poolSamples();
    return buildReport(plan, load, double.arrivals(), samples, target?.poolConnections);
  } finally {
    await target?.close();
    await double.close();
  }
}
