import { describe, expect, it } from 'vitest';
import { calibrateTimeout } from '../../src/calibrate/timeout.js';
import { createHttpClient } from '../../src/http/client.js';
import { interceptor } from '../../src/http/interceptor.js';
import { ATTR, METRICS } from '../../src/otel/constants.js';
import { instrumentPrazo } from '../../src/otel/instrument.js';
import { createSdk, pointValue } from '../../src/otel/sdk.test-helpers.js';

/**
 * One connect timeout (SPEC C2, issue 14): what the calibration recommends, what the executor says
 * (`dependency.timeouts.connectMs`), what the HTTP client arms and what the OpenTelemetry gauge
 * reports are the same number. Before: 252, 252, 126 and 252 for a p99 of 180 ms.
 */
describe('one connect timeout, everywhere', () => {
  it('p99 180 ms: calibration, executor, client and gauge agree', async () => {
    const calibrated = calibrateTimeout({ p99Ms: 180 }).connectMs;
    const client = createHttpClient({ name: 'balance', origin: 'http://127.0.0.1:9', p99Ms: 180 });
    const prazo = interceptor({ dependencies: { 'http://127.0.0.1:9': { name: 'ledger', p99Ms: 180 } } });
    const sdk = createSdk();
    instrumentPrazo({
      meterProvider: sdk.provider,
      dependencies: [client.dependency, ...prazo.dependencies()],
    });
    const gauge = async (name: string) =>
      pointValue((await sdk.collect()).get(METRICS.timeoutConfigured.name), {
        [ATTR.dependency]: name,
        [ATTR.timeoutPhase]: 'connect',
      });
    expect(calibrated).toBe(126);
    expect(client.dependency.timeouts.connectMs).toBe(calibrated);
    expect(client.options.connectTimeoutMs).toBe(calibrated);
    expect(prazo.dependency('http://127.0.0.1:9')?.timeouts.connectMs).toBe(calibrated);
    expect(await gauge('balance')).toBeCloseTo(calibrated / 1_000, 12);
    expect(await gauge('ledger')).toBeCloseTo(calibrated / 1_000, 12);
    await Promise.all([client.close(), sdk.shutdown()]);
  });
});
