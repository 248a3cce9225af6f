import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock/fake.js';
import { createDependency } from '../../src/dependency/dependency.js';
import type { AttemptContext } from '../../src/dependency/types.js';
import { createHttpClient } from '../../src/http/client.js';
import { startServer } from '../../src/http/servers.test-helpers.js';
import { createLatencyRecorder } from '../../src/latency/recorder.js';
import type { LatencySource } from '../../src/latency/types.js';

/**
 * SPEC H2, both halves: hedges only for reads or writes protected end to end by an idempotency key.
 * The "never an unkeyed write" half is pinned elsewhere; this pins the other half — a keyed write
 * *is* hedged, and both copies carry the same key — against the unkeyed write as the control.
 */

/** A latency source whose live p95 is fixed, so the hedge delay is known. */
const fixedP95 = (ms: number): LatencySource => ({
  record: () => {},
  quantile: (q) => (q === 0.95 ? ms : undefined),
  lastWindow: () => undefined,
  currentWindow: () => {
    throw new Error('unused');
  },
});

async function slowWrite(idempotencyKey: string | undefined) {
  const clock = new FakeClock();
  const dep = createDependency({ name: 'payments', p99Ms: 100, clock, hedge: true, recorder: fixedP95(30) });
  const copies: { kind: string; at: number; key: string | undefined }[] = [];
  const operation = (ctx: AttemptContext) => {
    copies.push({ kind: ctx.kind, at: clock.now(), key: ctx.headers['idempotency-key'] });
    const ms = ctx.kind === 'original' ? 80 : 10;
    return new Promise<string>((resolve) => clock.setTimer(() => resolve(ctx.kind), ms));
  };
  const options =
    idempotencyKey === undefined ? { idempotent: false } : { idempotent: false, idempotencyKey };
  const result = dep.execute(operation, options);
  await clock.runAllAsync();
  return { value: await result, copies, extras: dep.budget.state().extras };
}

describe('SPEC H2: a write is hedged only with an idempotency key', () => {
  it('executor: a keyed write slower than the live p95 gets one hedge, with the same key; an unkeyed one none', async () => {
    const keyed = await slowWrite('charge-7');
    expect(keyed.copies).toEqual([
      { kind: 'original', at: 0, key: 'charge-7' },
      { kind: 'hedge', at: 30, key: 'charge-7' },
    ]);
    expect(keyed.value).toBe('hedge');
    expect(keyed.extras).toBe(1);

    const unkeyed = await slowWrite(undefined);
    expect(unkeyed.copies).toEqual([{ kind: 'original', at: 0, key: undefined }]);
    expect(unkeyed.value).toBe('original');
    expect(unkeyed.extras).toBe(0);
  });
});

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

describe('SPEC H2 through the HTTP client (real loopback server)', () => {
  it('a POST with an idempotency key is hedged, both copies carrying the key', async () => {
    const windows = new FakeClock(); // the recorder's windows: the test decides when one is full
    const recorder = createLatencyRecorder({ clock: windows, windowMs: 1_000, minSamples: 5 });
    let slow = -1;
    const server = await startServer((_req, res, index) => {
      if (index === slow) setTimeout(() => res.end('slow'), 1_000);
      else res.end('fast');
    });
    const client = createHttpClient({
      name: 'payments',
      origin: server.origin,
      p99Ms: 1_500,
      hedge: { minDelayMs: 30 },
      recorder,
    });
    cleanup.push(
      () => server.close(),
      () => client.destroy(),
    );
    for (let i = 0; i < 8; i += 1) await (await client.request('/warm')).body.dump();
    windows.advance(1_000); // the warm-up window becomes the last full one: a live p95 exists

    slow = 8;
    const started = performance.now();
    const response = await client.request('/pay', { method: 'POST', body: 'x', idempotencyKey: 'pay-42' });
    expect(await response.body.text()).toBe('fast');
    expect(performance.now() - started).toBeLessThan(600); // not the slow copy's 1 s
    const writes = server.seen.slice(8);
    expect(writes.map((r) => [r.method, r.url, r.headers['idempotency-key']])).toEqual([
      ['POST', '/pay', 'pay-42'],
      ['POST', '/pay', 'pay-42'],
    ]);
  });
});
