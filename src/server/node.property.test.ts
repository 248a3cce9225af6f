import { createServer } from 'node:http';
import fc from 'fast-check';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../clock/fake.js';
import { withIncomingDeadline } from './node.js';
import { close, listen } from './server.test-helpers.js';

/**
 * Properties of the whole request path on a real server (SPEC D2, D3, D8): whatever deadline headers
 * arrive, the request is answered, never with a crash, and its deadline lies in [0, maxMs]; headers
 * that cannot be numbers give exactly the default.
 */
const EPOCH = 1_700_000_000_000;
const DEFAULT_MS = 700;
const MAX_MS = 3_000;
const clock = new FakeClock({ epoch: EPOCH });
const server = createServer(
  withIncomingDeadline((req, res) => res.end(JSON.stringify({ left: req.deadline.remainingMs() })), {
    clock,
    defaultMs: DEFAULT_MS,
    maxMs: MAX_MS,
  }),
);
const agent = new Agent({ connections: 4 });
let url = '';
beforeAll(async () => {
  url = await listen(server);
});
afterAll(async () => {
  await agent.close();
  await close(server);
});

/** Header-safe text (visible ASCII and spaces inside), as a proxy could forward it. */
const headerText = fc
  .array(fc.integer({ min: 0x20, max: 0x7e }), { minLength: 1, maxLength: 40 })
  .map((codes) => String.fromCharCode(...codes).trim())
  .filter((s) => s.length > 0);
const numericish = fc.oneof(
  fc.bigInt({ min: -(10n ** 20n), max: 10n ** 20n }).map(String),
  fc.double({ noNaN: false }).map(String),
  fc.integer({ min: 0, max: 2 ** 40 }).map((n) => String(EPOCH - 2 ** 20 + n)),
  fc
    .tuple(fc.integer({ min: 0, max: 999_999_999 }), fc.constantFrom('H', 'M', 'S', 'm', 'u', 'n', 'x', ''))
    .map(([n, u]) => `${n}${u}`),
);
const value = fc.oneof(headerText, numericish);
const NAMES = ['x-deadline-epoch-ms', 'grpc-timeout', 'x-envoy-expected-rq-timeout-ms'] as const;

async function leftFor(headers: Record<string, string>): Promise<{ status: number; left?: number }> {
  const res = await request(url, { headers, dispatcher: agent });
  const body = await res.body.text();
  return { status: res.statusCode, left: res.statusCode === 200 ? JSON.parse(body).left : undefined };
}

describe('incoming deadline headers, end to end (fast-check)', () => {
  it('any header values: answered 200 or 504, deadline within [0, maxMs], never NaN', async () => {
    await fc.assert(
      fc.asyncProperty(fc.record({ a: value, b: value, c: value }, { requiredKeys: [] }), async (picked) => {
        const headers: Record<string, string> = {};
        if (picked.a !== undefined) headers[NAMES[0]] = picked.a;
        if (picked.b !== undefined) headers[NAMES[1]] = picked.b;
        if (picked.c !== undefined) headers[NAMES[2]] = picked.c;
        const { status, left } = await leftFor(headers);
        expect([200, 504]).toContain(status);
        if (status === 200) {
          expect(Number.isFinite(left)).toBe(true);
          expect(left).toBeGreaterThan(0);
          expect(left).toBeLessThanOrEqual(MAX_MS);
        }
      }),
      { numRuns: 150 },
    );
  });

  it('values with a letter where digits belong give exactly the default deadline (SPEC D3)', async () => {
    const junk = fc.tuple(headerText, fc.constantFrom('q', 'Z', '#', 'e')).map(([s, c]) => `${c}${s}`);
    await fc.assert(
      fc.asyncProperty(junk, junk, junk, async (a, b, c) => {
        const { status, left } = await leftFor({ [NAMES[0]]: a, [NAMES[1]]: b, [NAMES[2]]: c });
        expect(status).toBe(200);
        expect(left).toBe(DEFAULT_MS);
      }),
      { numRuns: 100 },
    );
  });
});
