import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { Pool } from 'undici';
import { describe, expect, it } from 'vitest';
import { sleep } from '../../src/clock/index.js';
import { systemClock } from '../../src/clock/system.js';
import { DependencyFailedError } from '../../src/errors/dependency.js';
import { createHttpClient } from '../../src/http/client.js';
import type { HttpClientOptions } from '../../src/http/options.js';
import { withIncomingDeadline } from '../../src/server/node.js';
import { closingAfterEach } from './loopback.test-helpers.js';

/**
 * SPEC V2 at five times the load (issue 23), on real loopback sockets:
 *
 *   load ──▶ gateway pool (undici Pool, 10 connections, shared by both routes)
 *              ──▶ orders  /checkout ──▶ supplier (healthy ~10 ms, then hung)
 *                          /catalog  (answered at once: the independent route)
 *
 * 100 checkouts/s and 10 catalogs/s. Each checkout holds one of the gateway's 10 connections while
 * orders waits for the supplier. With prazo's protection (the adaptive throttle, on by default, and
 * a concurrency limit of 5 with patience: what the pool can give the checkout), a hung supplier holds
 * at most 5 connections, the other checkouts fail in milliseconds, and the catalog answers as fast as
 * when the supplier was healthy, measured in the same test. Without it (no limit, no throttle), each
 * checkout waits its calibrated 140 ms: 14 in flight for 10 connections, the pool runs dry and the
 * catalog waits behind it — the control that shows the test can fail.
 */

const CHECKOUT_PER_S = 100;
const CATALOG_PER_S = 10;
const PHASE_MS = 1_500;
const POOL = 10;

const { closers, listen } = closingAfterEach();

async function chain(protection: Partial<HttpClientOptions>) {
  let hung = false;
  const supplier = await listen(
    createServer((_req, res) => {
      if (hung) return; // accepts, never answers
      setTimeout(() => res.end('ok'), 10);
    }),
  );
  const toSupplier = createHttpClient({ name: 'supplier', origin: supplier, p99Ms: 100, ...protection });
  closers.push(() => toSupplier.destroy());
  const orders = await listen(
    createServer(
      withIncomingDeadline(
        async (req: IncomingMessage & { prazoSignal?: AbortSignal }, res: ServerResponse) => {
          if (req.url === '/catalog') {
            res.end('catalog');
            return;
          }
          const answer = await toSupplier.request('/', { signal: req.prazoSignal });
          if (answer.statusCode >= 500) {
            await answer.body.dump();
            throw new DependencyFailedError({ dependency: 'supplier', httpStatus: answer.statusCode });
          }
          res.end(await answer.body.text());
        },
        { defaultMs: 1_500, maxMs: 1_500 },
      ),
    ),
  );
  const pool = new Pool(orders, { connections: POOL });
  closers.push(() => pool.destroy());
  return {
    pool,
    hang: () => {
      hung = true;
    },
  };
}

/** Open-loop load through the pool for PHASE_MS; the catalog's latencies and the pool's busiest instant. */
async function load(pool: Pool) {
  const catalog: { ms: number; ok: boolean }[] = [];
  const checkouts: Promise<unknown>[] = [];
  let maxBusy = 0;
  const sampler = setInterval(() => {
    maxBusy = Math.max(maxBusy, pool.stats.running);
  }, 5);
  const start = systemClock.now();
  const one = (path: string) => {
    const t0 = systemClock.now();
    return pool.request({ path, method: 'GET', headersTimeout: 3_000 }).then(
      async (r) => {
        await r.body.dump();
        return { ms: systemClock.now() - t0, ok: r.statusCode === 200 };
      },
      () => ({ ms: systemClock.now() - t0, ok: false }),
    );
  };
  const pending: Promise<unknown>[] = [];
  let sentCheckouts = 0;
  let sentCatalogs = 0;
  while (systemClock.now() - start < PHASE_MS) {
    const elapsed = systemClock.now() - start;
    while (sentCheckouts < (elapsed / 1000) * CHECKOUT_PER_S) {
      sentCheckouts += 1;
      checkouts.push(one('/checkout'));
    }
    while (sentCatalogs < (elapsed / 1000) * CATALOG_PER_S) {
      sentCatalogs += 1;
      pending.push(one('/catalog').then((r) => catalog.push(r)));
    }
    await sleep(systemClock, 2);
  }
  await Promise.all(pending);
  clearInterval(sampler);
  const sorted = catalog.map((c) => c.ms).sort((a, b) => a - b);
  return {
    catalogOk: catalog.filter((c) => c.ok).length / catalog.length,
    catalogP99: sorted[Math.ceil(0.99 * sorted.length) - 1]!,
    maxBusy,
    checkouts: () => Promise.allSettled(checkouts),
  };
}

describe('SPEC V2 at 5× load: a hung dependency leaves the independent route at its healthy latency', () => {
  it('with the throttle and a patient limit of 5: catalog as fast as healthy, the pool never full', async () => {
    const { pool, hang } = await chain({
      concurrencyLimit: { maxInFlight: 5, maxQueue: 0, patience: true },
    });
    const healthy = await load(pool);
    await healthy.checkouts();
    hang();
    const incident = await load(pool);
    expect(healthy.catalogOk).toBe(1);
    expect(incident.catalogOk).toBe(1);
    // Relative to the healthy phase of the same test, with a floor for a loopback's few-ms noise.
    expect(incident.catalogP99).toBeLessThanOrEqual(
      Math.max(2 * healthy.catalogP99, healthy.catalogP99 + 25),
    );
    expect(incident.maxBusy).toBeLessThan(POOL);
  }, 30_000);

  it('the control: without them the pool runs dry and the catalog waits (the test can fail)', async () => {
    const { pool, hang } = await chain({ throttle: false });
    const healthy = await load(pool);
    await healthy.checkouts();
    hang();
    const incident = await load(pool);
    expect(incident.maxBusy).toBe(POOL);
    expect(incident.catalogP99).toBeGreaterThan(Math.max(2 * healthy.catalogP99, healthy.catalogP99 + 25));
  }, 30_000);
});
