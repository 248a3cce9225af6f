import { ProxyTracerProvider, type TracerProvider } from '@opentelemetry/api';
import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import { describe, expect, it } from 'vitest';
import { createDependency } from '../../src/dependency/index.js';
import { instrumentPrazo } from '../../src/otel/index.js';

/**
 * What tracing costs per executor call (issue #26): `execute(resolved operation)` untraced; traced
 * through a tracer that records nothing (the API's no-op tracer behind a provider prazo cannot tell
 * from a real one, so its tracer *is* installed: the seam's whole cost, one span started and found not
 * recording); and through the SDK recording every span (no exporter). With no SDK registered at all
 * nothing is installed (`tracing: false`), the cost of the untraced case. Medians of rotated rounds.
 */

const noopTracing: TracerProvider = {
  getTracer: (name) => new ProxyTracerProvider().getDelegate().getTracer(name),
};

const now = (): number => Number(process.hrtime.bigint());
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function perCall(tracing: 'off' | 'noop' | 'sdk', calls: number): Promise<number> {
  const dependency = createDependency({ name: 'd', p99Ms: 50 });
  const sdk = tracing === 'sdk' ? new BasicTracerProvider() : undefined;
  const otel =
    tracing === 'off'
      ? undefined
      : instrumentPrazo({ dependencies: [dependency], tracerProvider: sdk ?? noopTracing });
  const op = () => Promise.resolve(1);
  const options = { idempotent: true } as const;
  for (let i = 0; i < 2_000; i += 1) await dependency.execute(op, options);
  const start = now();
  for (let i = 0; i < calls; i += 1) await dependency.execute(op, options);
  const ns = (now() - start) / calls;
  otel?.dispose();
  await sdk?.shutdown();
  return ns;
}

describe('prazo/otel tracing cost (issue #26)', () => {
  it('a no-op tracer adds a few percent to a call; nothing installed without an SDK', async () => {
    expect(instrumentPrazo({ dependencies: [] }).tracing).toBe(false);
    const out = { off: [] as number[], noop: [] as number[], sdk: [] as number[] };
    const kinds = ['off', 'noop', 'sdk'] as const;
    for (const kind of kinds) await perCall(kind, 10_000);
    for (let r = 0; r < 7; r += 1) {
      for (let v = 0; v < kinds.length; v += 1) {
        const kind = kinds[(v + r) % kinds.length]!;
        out[kind].push(await perCall(kind, 20_000));
      }
    }
    const off = median(out.off);
    const noop = median(out.noop);
    const sdk = median(out.sdk);
    process.stdout.write(
      `| execute() (resolved op) | untraced ${off.toFixed(1)} ns | no-op tracer ${noop.toFixed(1)} ns (×${(noop / off).toFixed(3)}) | SDK, every span recorded ${sdk.toFixed(1)} ns (×${(sdk / off).toFixed(2)}) |\n`,
    );
    // Generous bounds for a shared 2-core machine; the printed line is the measurement.
    expect(noop).toBeLessThan(off * 1.5);
    expect(noop).toBeLessThan(sdk);
  }, 120_000);
});
