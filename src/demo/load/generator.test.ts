import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { systemClock } from '../../clock/system.js';
import { DemoHeaders } from '../constants.js';
import { runLoad, schedule } from './generator.js';

describe('open-loop user load (SPEC X1)', () => {
  it('schedules rate × duration requests per route, evenly, in time order', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ rate: fc.integer({ min: 0, max: 200 }), path: fc.constantFrom('/a', '/b') }), {
          maxLength: 3,
        }),
        fc.integer({ min: 0, max: 5_000 }),
        (routes, durationMs) => {
          const loads = routes.map((r) => ({ route: 'checkout' as const, path: r.path, rate: r.rate }));
          const plan = schedule(loads, durationMs);
          const expected = loads.reduce((t, l) => t + Math.floor((l.rate * durationMs) / 1000), 0);
          expect(plan).toHaveLength(expected);
          for (let i = 1; i < plan.length; i += 1)
            expect(plan[i]!.atMs).toBeGreaterThanOrEqual(plan[i - 1]!.atMs);
          for (const due of plan) expect(due.atMs).toBeLessThan(durationMs);
        },
      ),
    );
  });

  it('keeps sending while answers do not come, and gives up each request at the deadline (real sockets)', async () => {
    const seen: string[] = [];
    const server = createServer((req) => {
      seen.push(String(req.headers[DemoHeaders.giveUp]));
      // never answers
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const results = await runLoad({
        origin,
        routes: [{ route: 'checkout', path: '/x', rate: 20 }],
        durationMs: 500,
        deadlineMs: 200,
        clock: systemClock,
      });
      expect(results).toHaveLength(10); // open loop: every request left, none waited for an answer
      for (const r of results) {
        expect(r.outcome).toBe('timeout');
        expect(r.latencyMs).toBe(200);
      }
      expect(seen).toHaveLength(10);
      for (const giveUp of seen) expect(Number(giveUp)).toBeGreaterThan(0);
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });

  it('stops at once when aborted', async () => {
    const server = createServer((_req, res) => res.end('ok'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const controller = new AbortController();
      setTimeout(() => controller.abort(), 100);
      const t0 = performance.now();
      const results = await runLoad({
        origin,
        routes: [{ route: 'catalog', path: '/', rate: 50 }],
        durationMs: 10_000,
        deadlineMs: 2_000,
        clock: systemClock,
        signal: controller.signal,
      });
      expect(performance.now() - t0).toBeLessThan(2_000);
      expect(results.length).toBeLessThan(100);
    } finally {
      server.close();
    }
  });
});
