import { describe, expect, it } from 'vitest';
import { ATTR, METRICS } from './constants.js';
import { P99_ASSUMED_ATTRIBUTE } from './gauges.js';
import { instrumentPrazo } from './instrument.js';
import { createSdk, EventSource } from './sdk.test-helpers.js';

/**
 * SPEC C8: a configured timeout derived from an assumed p99 (a `kind`'s starting value, never
 * measured) carries `prazo.p99.assumed: true` on its gauge series while it is assumed, and the
 * measured one keeps the series it always had.
 */
describe('the configured-timeout gauge marks an assumed p99 (issue 27)', () => {
  it('marks both phases while the source says p99Assumed, and drops the mark once measured', async () => {
    const sdk = createSdk();
    const state = { p99Assumed: true };
    const source = Object.assign(new EventSource('supplier'), { timeouts: { connectMs: 7, responseMs: 14 } });
    // A getter, as the executor's would be: read anew at each collection.
    Object.defineProperty(source, 'p99Assumed', { get: () => state.p99Assumed });
    const otel = instrumentPrazo({ meterProvider: sdk.provider, dependencies: [source] });
    const points = async () => {
      const gauge = (await sdk.collect()).get(METRICS.timeoutConfigured.name);
      return ((gauge?.dataPoints ?? []) as { attributes: Record<string, unknown>; value: number }[]).map(
        (p) => ({
          phase: p.attributes[ATTR.timeoutPhase],
          assumed: p.attributes[P99_ASSUMED_ATTRIBUTE],
          value: p.value,
        }),
      );
    };
    expect(await points()).toEqual([
      { phase: 'connect', assumed: true, value: 0.007 },
      { phase: 'response', assumed: true, value: 0.014 },
    ]);
    // Live calibration (or a measured config) replaced the assumption: the plain series, no mark.
    state.p99Assumed = false;
    source.timeouts.connectMs = 60;
    source.timeouts.responseMs = 120;
    // (A cumulative reader may still list the marked series' last value; it is no longer observed.)
    const after = await points();
    expect(after).toContainEqual({ phase: 'connect', assumed: undefined, value: 0.06 });
    expect(after).toContainEqual({ phase: 'response', assumed: undefined, value: 0.12 });
    expect(after.filter((p) => p.assumed === true && p.value !== 0.007 && p.value !== 0.014)).toEqual([]);
    otel.dispose();
    await sdk.shutdown();
  });
});
