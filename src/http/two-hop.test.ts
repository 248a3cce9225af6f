import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { runWithDeadline } from '../deadline/ambient.js';
import { createDeadlineReader } from '../deadline/headers.js';
import { isPrazoError } from '../errors/base.js';
import { createHttpClient, type HttpClient } from './client.js';
import { faults, startServer, type TestServer } from './servers.test-helpers.js';

/**
 * Two real HTTP hops on loopback (SPEC D1, D2, D4, D5): caller → service → dependency. The service
 * is a plain node:http server that reads the incoming deadline (capped by its own maximum) and calls
 * the dependency with prazo/http under it, as ambient deadline.
 */

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

async function chain(callerP99Ms: number, serviceMaxMs: number, dependencyP99Ms: number) {
  const dependency = await startServer(faults.ok('stock: 7'));
  const toDependency = createHttpClient({
    name: 'inventory',
    origin: dependency.origin,
    p99Ms: dependencyP99Ms,
  });
  const read = createDeadlineReader({ maxMs: serviceMaxMs });
  const service = http.createServer((req: IncomingMessage, res: ServerResponse) => {
    const { deadline } = read(req.headers);
    void runWithDeadline(deadline, async () => {
      try {
        const answer = await toDependency.request('/stock');
        res.end(await answer.body.text());
      } catch (error) {
        res.statusCode = 504;
        res.end(isPrazoError(error) ? error.code : 'ERROR');
      }
    });
  });
  await new Promise<void>((resolve) => service.listen(0, '127.0.0.1', resolve));
  const { port } = service.address() as AddressInfo;
  const caller = createHttpClient({ name: 'orders', origin: `http://127.0.0.1:${port}`, p99Ms: callerP99Ms });
  cleanup.push(
    () => dependency.close(),
    () => new Promise<void>((resolve) => service.close(() => resolve())),
    () => toDependency.destroy(),
    () => caller.destroy(),
  );
  service.on('connection', (socket) =>
    cleanup.push(async () => {
      socket.destroy();
    }),
  );
  return { dependency, caller };
}

const deadlineSeen = (dependency: TestServer): number =>
  Number(dependency.seen[0]!.headers['x-deadline-epoch-ms']) - Date.now();

/*
 * Each hop sends min(its deadline, its attempt's end): an attempt timeout ceil(p99 × 1.4) at or past
 * the deadline lets the whole deadline travel, which is what these tests choose their p99s for.
 */
const call = async (caller: HttpClient, deadline: number) => {
  const response = await caller.request('/order', { deadline });
  return { status: response.statusCode, text: await response.body.text() };
};

describe('deadline across two hops', () => {
  it('the dependency sees the caller’s deadline when it is below the service’s maximum', async () => {
    const { dependency, caller } = await chain(1_000, 5_000, 1_000);
    expect(await call(caller, 1_200)).toEqual({ status: 200, text: 'stock: 7' });
    const left = deadlineSeen(dependency);
    expect(left).toBeLessThanOrEqual(1_200);
    expect(left).toBeGreaterThan(1_000); // the same instant, minus the two hops' few ms
  });

  it('the dependency sees the caller’s deadline capped by the service’s maximum (SPEC D2)', async () => {
    const { dependency, caller } = await chain(2_000, 1_000, 800); // service max 1000 ms
    expect(await call(caller, 2_500)).toEqual({ status: 200, text: 'stock: 7' });
    const left = deadlineSeen(dependency);
    expect(left).toBeLessThanOrEqual(1_000); // min(caller's 2500, service's max 1000)
    expect(left).toBeGreaterThan(850);
  });

  it('with too little time left, the dependency is never called (SPEC D4)', async () => {
    const { dependency, caller } = await chain(240, 5_000, 300); // the dependency's p99: 300 ms
    expect(await call(caller, 250)).toEqual({ status: 504, text: 'DEADLINE_INSUFFICIENT' });
    expect(await call(caller, 1_500)).toEqual({ status: 200, text: 'stock: 7' });
    expect(dependency.seen).toHaveLength(1); // only the second call reached it
    expect(dependency.connections).toBe(1);
  });
});
