import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { systemClock } from '../../clock/system.js';
import { SUPPLIER_PROFILE } from '../constants.js';
import { createRandom } from '../random.js';
import { answerDelayMs, SUPPLIER_P99_MS, startSupplier } from './supplier.js';

describe('the supplier double (SPEC X1)', () => {
  it('answers according to its behaviour', () => {
    const random = createRandom(3);
    const draw = (behaviour: Parameters<typeof answerDelayMs>[0], n = 2_000) =>
      Array.from({ length: n }, () => answerDelayMs(behaviour, random));
    for (const ms of draw({ kind: 'slow', factor: 6 }) as number[]) {
      expect(ms).toBeGreaterThanOrEqual(SUPPLIER_P99_MS * 6 * (1 - SUPPLIER_PROFILE.jitter));
      expect(ms).toBeLessThanOrEqual(SUPPLIER_P99_MS * 6 * (1 + SUPPLIER_PROFILE.jitter));
    }
    const stalled = (draw({ kind: 'stall', probability: 0.15, stallMs: 1_500 }) as number[]).filter(
      (ms) => ms > 1_000,
    );
    expect(stalled.length / 2_000).toBeGreaterThan(0.12);
    expect(stalled.length / 2_000).toBeLessThan(0.18);
    expect(draw({ kind: 'hang' }, 3)).toEqual([undefined, undefined, undefined]);
    expect(draw({ kind: 'refuse' }, 1)).toEqual([undefined]);
  });

  it('refuses connections when down, listens again on the same port when reset (real socket)', async () => {
    const supplier = await startSupplier(
      { role: 'supplier', stack: 'naive', instance: 0, behaviour: { kind: 'refuse' }, seed: 1 },
      systemClock,
    );
    const url = `http://127.0.0.1:${supplier.port}/quote`;
    try {
      await expect(request(url)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
      await supplier.reset({ behaviour: { kind: 'healthy' } });
      const res = await request(url);
      expect(res.statusCode).toBe(200);
      expect(await res.body.json()).toMatchObject({ item: 'sku-1', instance: 0 });
      expect(supplier.report(false)).toMatchObject({
        role: 'supplier',
        ledger: { requests: 1, inFlight: 0 },
      });
    } finally {
      await supplier.close();
    }
  });

  it('hangs without answering until the caller hangs up, and counts that time as work', async () => {
    const supplier = await startSupplier(
      { role: 'supplier', stack: 'prazo', instance: 1, behaviour: { kind: 'hang' }, seed: 1 },
      systemClock,
    );
    try {
      const signal = AbortSignal.timeout(150);
      await expect(request(`http://127.0.0.1:${supplier.port}/quote`, { signal })).rejects.toThrow();
      await new Promise((r) => setTimeout(r, 50));
      expect(supplier.report(false).ledger).toMatchObject({ requests: 1, inFlight: 0 });
    } finally {
      await supplier.close();
    }
  });
});
