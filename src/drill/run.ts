import { InvalidOptionsError } from '../errors/options.js';
import { type DrillTarget, startDemoTarget } from './demo-target.js';
import { startDouble } from './double.js';
import { runDrillLoad } from './load.js';
import { type DrillOptions, resolveDrillOptions } from './options.js';
import { buildReport, type DrillReport, type HealthyPhase, poolOccupancy } from './report.js';
import { type StallProbe, startStallProbe } from './stall.js';

/**
 * The degradation drill (SPEC V2; the seed's second verification): replace one dependency with a
 * double that answers at the configured timeout, put a bounded load on the service, and pass only if
 * the routes that do not use that dependency keep answering, i.e. the pool they share did not run
 * dry. A short healthy phase comes first (the same loads, the double answering at once): the
 * independent routes' p99 under the incident is judged against theirs in it (issue 23). Everything
 * the drill starts (the double, the demo's processes) is stopped before it returns.
 * Throws `InvalidOptionsError` for bad options or a bad config (every problem listed).
 */
export async function runDrill(options: DrillOptions = {}): Promise<DrillReport> {
  const plan = resolveDrillOptions(options);
  const say = options.onProgress ?? (() => {});
  // At once until the incident: the demo target's warm-up and the healthy phase see a healthy double.
  const double = await startDouble({
    latencyMs: 0,
    port: plan.doublePort,
    clock: plan.clock,
  });
  let target: DrillTarget | undefined;
  let probe: StallProbe | undefined;
  try {
    say(
      `double for ${plan.dependency} on ${double.origin}, answering at ${plan.doubleLatencyMs} ms` +
        (plan.healthyS > 0 ? ` after a healthy phase of ${plan.healthyS} s answering at once` : ''),
    );
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
        warmUpRate: plan.rate,
        clock: plan.clock,
      });
      say(`demo services started (${plan.target.stack} stack): gateway on ${target.origin}`);
    }
    const origin = target?.origin ?? (plan.target.kind === 'url' ? plan.target.origin : '');
    const times = plan.load !== 1 ? ` (${plan.load}× ${plan.baseRate})` : '';
    const phase = (durationS: number) =>
      runDrillLoad({
        origin,
        dependent: plan.routes,
        independent: plan.independent,
        durationS,
        rate: plan.rate,
        independentRate: plan.independentRate,
        connections: plan.connections,
        probeTimeoutMs: plan.probeTimeoutMs,
        clock: plan.clock,
        ...(options.signal ? { signal: options.signal } : {}),
      });
    const neverCalled = (): void => {
      if (plan.routes.length > 0 && double.arrivals() === 0) {
        throw new InvalidOptionsError('prazo drill', [
          `the double never got a request: point the target's ${plan.dependency} at ${double.origin} (use --double-port to fix its port)`,
        ]);
      }
    };
    say(
      `load: ${plan.rate} req/s${times} on ${plan.routes.join(', ') || '(none)'}, probe ${plan.independentRate} req/s on ${plan.independent.join(', ')}`,
    );
    // How much the machine stalls meanwhile (the drill's own timer): what it adds to the latencies.
    probe = startStallProbe(plan.clock);
    let healthySpan: [number, number] | undefined;
    let healthy: HealthyPhase | undefined;
    if (plan.healthyS > 0) {
      say(`healthy phase: ${plan.healthyS} s, the double answering at once`);
      const since = plan.clock.epochNow();
      const measured = await phase(plan.healthyS);
      healthySpan = [since, plan.clock.epochNow()];
      if (options.signal?.aborted) throw options.signal.reason;
      neverCalled();
      healthy = {
        durationS: plan.healthyS,
        ...measured,
        pool: poolOccupancy(await target?.poolSamples(since), target?.poolConnections),
      };
    }
    // The incident: every request arriving from now on is held for the configured timeout.
    double.setLatency(plan.doubleLatencyMs);
    const arrivedBefore = double.arrivals();
    say(`incident: ${plan.durationS} s, the double answering at ${plan.doubleLatencyMs} ms`);
    const since = plan.clock.epochNow();
    const load = await phase(plan.durationS);
    const incidentSpan: [number, number] = [since, plan.clock.epochNow()];
    const stalls = probe.stop();
    if (options.signal?.aborted) throw options.signal.reason;
    neverCalled();
    const samples = await target?.poolSamples(since);
    return buildReport(
      plan,
      load,
      double.arrivals() - arrivedBefore,
      samples,
      target?.poolConnections,
      healthy,
      {
        stalls,
        healthy: healthySpan,
        incident: incidentSpan,
      },
    );
  } finally {
    probe?.stop();
    await target?.close();
    await double.close();
  }
}
