import { afterEach, describe, expect, it } from 'vitest';
import { RETRY_BUDGET_OPTIONS } from '../../../src/options-entry.js';

const BUDGET_DEFAULTS = RETRY_BUDGET_OPTIONS.defaults;

import { createHttpClient, type HttpClient, type HttpRequestOptions } from '../../../src/http/index.js';
import { type Behaviour, type FaultServer, startHttpFault, statusThenOk } from '../faults/http-faults.js';

/**
 * A hostile (or broken) dependency cannot force prazo's client to repeat work (SPEC R1-R5): no status
 * or Retry-After makes an unkeyed POST go twice, a deliberate 4xx is never retried whatever it says,
 * a Retry-After past the deadline is not waited for, and a dependency that always asks for an
 * immediate retry gets at most what the retry budget allows, not `attempts ×` the traffic.
 */

const ALWAYS = Number.POSITIVE_INFINITY;
let server: FaultServer | undefined;
let client: HttpClient | undefined;
afterEach(async () => {
  await client?.destroy();
  await server?.close();
  client = undefined;
  server = undefined;
});

async function stage(behaviour: Behaviour, attempts = 3): Promise<{ s: FaultServer; c: HttpClient }> {
  server = await startHttpFault('hostile', behaviour);
  // The budget's bound alone (the adaptive throttle of issue 23 would refuse most of these calls).
  client = createHttpClient({
    name: 'hostile',
    origin: server.origin,
    p99Ms: 100,
    attempts,
    throttle: false,
  });
  return { s: server, c: client };
}

async function call(c: HttpClient, path: string, options: HttpRequestOptions = {}) {
  const t0 = performance.now();
  try {
    const res = await c.request(path, { deadline: 1_000, ...options });
    await res.body.dump();
    return { status: res.statusCode, ms: performance.now() - t0 };
  } catch (error) {
    return { status: (error as { code?: string }).code ?? 'error', ms: performance.now() - t0 };
  }
}

const resetBefore: Behaviour = ({ res }) => res.socket?.resetAndDestroy();
const answers: ReadonlyArray<[string, Behaviour]> = [
  ['503 + Retry-After: 0', statusThenOk(503, '0', ALWAYS)],
  ['429 + Retry-After: 0', statusThenOk(429, '0', ALWAYS)],
  ...[408, 500, 502, 504].map((s): [string, Behaviour] => [`${s}`, statusThenOk(s, '0', ALWAYS)]),
  ['connection reset before any byte', resetBefore],
];

describe('a dependency cannot force a retry', () => {
  it.each(answers)('%s: an unkeyed POST is received exactly once', async (_name, behaviour) => {
    const { s, c } = await stage(behaviour);
    for (let i = 0; i < 5; i += 1) await call(c, `/post/${i}`, { method: 'POST', body: 'charge' });
    expect(s.log.total).toBe(5);
    expect(s.log.duplicateWrites()).toBe(0);
  });

  it.each([400, 401, 403, 404, 409, 422])('%i + Retry-After: 0 on a GET is never retried', async (status) => {
    const { s, c } = await stage(statusThenOk(status, '0', ALWAYS));
    expect((await call(c, '/get')).status).toBe(status);
    expect(s.log.total).toBe(1);
  });

  it.each(['2', 'Fri, 31 Dec 9999 23:59:59 GMT', '99999999999999'])(
    'Retry-After: %s (past the 1 s deadline) is not waited for: one copy, answered at once',
    async (retryAfter) => {
      const { s, c } = await stage(statusThenOk(503, retryAfter, ALWAYS));
      const r = await call(c, '/get');
      expect(r.status).toBe(503);
      expect(r.ms).toBeLessThan(100);
      expect(s.log.total).toBe(1);
    },
  );

  it('a dependency that always answers 503 + Retry-After: 0 gets at most the budget, not 3×', async () => {
    const { s, c } = await stage(statusThenOk(503, '0', ALWAYS));
    const originals = 300;
    const t0 = performance.now();
    for (let i = 0; i < originals; i += 1) await call(c, `/get/${i}`);
    const seconds = (performance.now() - t0) / 1000;
    const floor = BUDGET_DEFAULTS.minPerSecond * (BUDGET_DEFAULTS.windowMs / 1000) * Math.ceil(seconds / 10);
    const allowed = Math.max(floor, Math.ceil(BUDGET_DEFAULTS.maxRatio * originals));
    console.log(
      `always-503: ${originals} calls → ${s.log.total} requests (${s.log.total - originals} extra, ` +
        `budget allows ${allowed}; naive 3 attempts: ${originals * 3})`,
    );
    expect(s.log.total).toBeGreaterThan(originals); // the budget does allow some retries
    expect(s.log.total - originals).toBeLessThanOrEqual(allowed);
  });
});
